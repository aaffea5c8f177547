/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static io.github.bfc4j.trace.TraceReaderTest.HEADER;
import static io.github.bfc4j.trace.TraceReaderTest.WORKLOAD_HEADER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceWriterTest {

    private static final TraceHeader H = new TraceHeader("t: a test trace", "test", 1048576, true, false, 0, false,
            0x7f0000000000L, 69206016, 0, true);

    /** Reads a trace and writes it back; returns the text written. */
    private static String roundTrip(String text, boolean gzip) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceReader r = TraceReaderTest.open(text); TraceWriter w = TraceWriter.of(out, gzip)) {
            w.header(r.header());
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                w.write(e);
            }
        }
        if (!gzip) {
            return out.toString(StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream plain = new ByteArrayOutputStream();
        try (var in = new java.util.zip.GZIPInputStream(new ByteArrayInputStream(out.toByteArray()))) {
            in.transferTo(plain);
        }
        return plain.toString(StandardCharsets.UTF_8);
    }

    private static String withoutComments(String text) {
        return text.lines().filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .map(l -> l + "\n").collect(Collectors.joining());
    }

    private static final String EVERY_KIND = HEADER
            + "# comment\n"
            + "alloc 1 100 => 0x7f0000000000\n"
            + "sub alloc 1048576 => 0x7f0000000000\n"
            + "sub alloc 2097152 => null\n"
            + "sub free 0x7f0000100000 4096\n"
            + "chunk 1 size=256 requested=100 allocation_id=1\n"
            + "\n"
            + "stats bytes_in_use=256 num_allocs=1\n"
            + "stats num_allocs=1 bytes_in_use=256 peak_bytes_in_use=256 largest_alloc_size=256 bytes_limit=1048576"
            + " bytes_reserved=0 peak_bytes_reserved=0 largest_free_block_bytes=0 pool_bytes=1048576"
            + " peak_pool_bytes=1048576\n"
            + "alloc 2 0 align=4096 freed_before=3 => null\n"
            + "alloc 3 7 align=64 freed_before=0 => 0x7f0000000100\n"
            + "alloc 4 9 freed_before=18446744 => 0xffffffffffffff00\n"
            + "free 2\n"
            + "frontier 12\n"
            + "clear_stats\n"
            + "free 1\n";

    @Test
    void roundTripReproducesNonCommentLines() throws IOException {
        assertThat(roundTrip(EVERY_KIND, false)).isEqualTo(withoutComments(EVERY_KIND));
        assertThat(roundTrip(EVERY_KIND, true)).isEqualTo(withoutComments(EVERY_KIND));
    }

    @Test
    void roundTripOfAWorkloadTrace() throws IOException {
        String text = WORKLOAD_HEADER + "alloc 1 100\nalloc 2 5 align=128 freed_before=2\nfree 1\nfrontier 3\n"
                + "clear_stats\nfree 2\n";
        assertThat(roundTrip(text, false)).isEqualTo(text);
    }

    @Test
    void roundTripKeepsOptionsSpelling() throws IOException {
        for (String fraction : new String[] {"0", "0.01", "0.1", "0.000001", "0.5"}) {
            String text = TraceReaderTest.NAME + TraceReaderTest.SOURCE
                    + "options memory_limit=10000123 allow_growth=false garbage_collection=true"
                    + " fragmentation_fraction=" + fraction + " timing_counter=true\n"
                    + "suballocator sim base=0x100000000 capacity=68720525312 gap=4096 coalescing=false\n";
            assertThat(roundTrip(text, false)).isEqualTo(text);
        }
    }

    @Test
    void typedMethodsWriteCanonicalLines() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = TraceWriter.of(out, false)) {
            w.header(H);
            w.comment("first call");
            w.alloc(1, 100, 64, 0, 0x7f0000000000L);
            w.subAlloc(1048576, 0x7f0000000000L);
            w.subAlloc(1048576, 0);
            w.subFree(0x7f0000100000L, 1048576);
            w.chunk(1, 256, 100, 1);
            w.stats(new AllocatorStats(1, 256, 256, 256, 1048576, 0, 0, 0, 1048576, 1048576));
            w.alloc(2, 0, 4096, 7, 0);
            w.free(2);
            w.frontier(5);
            w.clearStats();
            w.free(1);
        }
        assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo(HEADER
                + "# first call\n"
                + "alloc 1 100 => 0x7f0000000000\n"
                + "sub alloc 1048576 => 0x7f0000000000\n"
                + "sub alloc 1048576 => null\n"
                + "sub free 0x7f0000100000 1048576\n"
                + "chunk 1 size=256 requested=100 allocation_id=1\n"
                + "stats num_allocs=1 bytes_in_use=256 peak_bytes_in_use=256 largest_alloc_size=256"
                + " bytes_limit=1048576 bytes_reserved=0 peak_bytes_reserved=0 largest_free_block_bytes=0"
                + " pool_bytes=1048576 peak_pool_bytes=1048576\n"
                + "alloc 2 0 align=4096 freed_before=7 => null\n"
                + "free 2\n"
                + "frontier 5\n"
                + "clear_stats\n"
                + "free 1\n");
    }

    @Test
    void writesWorkloadTraces() throws IOException {
        TraceHeader workload = new TraceHeader("w", "workload: a test", 1 << 20, true, false, 0, false,
                0x7f0000000000L, 1 << 26, 0, true);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = TraceWriter.of(out, false)) {
            w.header(workload);
            w.workloadAlloc(1, 100, 64, 0);
            w.workloadAlloc(2, 100, 256, 3);
            w.free(1);
            assertThatThrownBy(() -> w.alloc(3, 1, 64, 0, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> w.subAlloc(1, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> w.chunk(1, 256, 1, 1)).isInstanceOf(IllegalStateException.class);
        }
        assertThat(out.toString(StandardCharsets.UTF_8)).endsWith(
                "source workload: a test\n"
                        + "options memory_limit=1048576 allow_growth=true garbage_collection=false"
                        + " fragmentation_fraction=0 timing_counter=false\n"
                        + "suballocator sim base=0x7f0000000000 capacity=67108864 gap=0 coalescing=true\n"
                        + "alloc 1 100\nalloc 2 100 align=256 freed_before=3\nfree 1\n");
    }

    @Test
    void gzipFilesAreRecognisedByName(@TempDir Path dir) throws IOException {
        Path gz = dir.resolve("t.bfctrace.gz");
        Path plain = dir.resolve("t.bfctrace");
        for (Path p : new Path[] {gz, plain}) {
            try (TraceWriter w = TraceWriter.create(p)) {
                w.header(H);
                for (int i = 1; i <= 50_000; i++) {
                    w.alloc(i, i, 64, 0, 0);
                }
            }
        }
        byte[] gzBytes = Files.readAllBytes(gz);
        assertThat(gzBytes[0] & 0xff).isEqualTo(0x1f);
        assertThat(gzBytes[1] & 0xff).isEqualTo(0x8b);
        assertThat(Files.readString(plain)).startsWith("bfctrace 1\n");
        for (Path p : new Path[] {gz, plain}) {
            try (TraceReader r = TraceReader.open(p)) {
                assertThat(r.header()).isEqualTo(H);
                long n = 0;
                for (TraceEvent e = r.next(); e != null; e = r.next()) {
                    n++;
                    assertThat(e.id()).isEqualTo(n);
                }
                assertThat(n).isEqualTo(50_000);
            }
        }
    }

    @Test
    void aPathNamingADirectoryIsRefusedAndNothingIsWrittenBesideIt(@TempDir Path parent) throws IOException {
        Path dir = Files.createDirectory(parent.resolve("out"));
        try (BfcAllocator a = BfcAllocator.builder().name("dir").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            for (ThrowingCallable write : new ThrowingCallable[] {
                () -> TraceWriter.write(dir, w -> w.header(H)),
                () -> a.snapshot().writePyTorchPickle(dir),
            }) {
                assertThatThrownBy(write).isInstanceOf(FileSystemException.class)
                        .hasMessage(dir + ": is a directory (expected: the path of a file to create or replace,"
                                + " e.g. a file name inside that directory); nothing was written");
                // Before, a new file was made beside the directory (in its parent), then the move
                // over the directory failed.
                try (Stream<Path> files = Files.list(parent)) {
                    assertThat(files).containsExactly(dir);
                }
                try (Stream<Path> files = Files.list(dir)) {
                    assertThat(files).isEmpty();
                }
            }
        }
    }

    /**
     * A named pipe given as the file is written to, as a shell's '>' writes to it: the reader at
     * its other end gets the whole trace (and pickle), and the pipe stays a pipe. Before, a new
     * file was moved over it: the pipe (or, for root, a device such as /dev/null) was replaced by
     * a regular file, and its reader got nothing.
     */
    @Test
    void aNamedPipeIsWrittenToNotReplaced(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("pipe");
        try {
            ChildProcess.Result mkfifo = ChildProcess.run(List.of("mkfifo", fifo.toString()), Duration.ofSeconds(30));
            assumeTrue(mkfifo.status() == 0, "mkfifo failed: " + mkfifo.output());
        } catch (IOException e) {
            assumeTrue(false, "no mkfifo here: " + e.getMessage());
        }
        Path plain = dir.resolve("plain.bfctrace");
        TraceWriter.Content content = w -> {
            w.header(H);
            w.alloc(1, 100, 64, 0, 0);
        };
        TraceWriter.write(plain, content);
        try (BfcAllocator a = BfcAllocator.builder().name("fifo").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            Path plainPickle = dir.resolve("plain.pickle");
            a.snapshot().writePyTorchPickle(plainPickle);
            for (Path expected : new Path[] {plain, plainPickle}) {
                CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
                    try {
                        return Files.readAllBytes(fifo);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                if (expected == plain) {
                    TraceWriter.write(fifo, content);
                } else {
                    a.snapshot().writePyTorchPickle(fifo);
                }
                assertThat(fifo).as("still there").exists();
                assertThat(Files.isRegularFile(fifo)).as("%s replaced the pipe by a file", expected).isFalse();
                assertThat(TestThreads.getOrFail(Duration.ofSeconds(10), "the pipe's reader reading to its end", read))
                        .isEqualTo(Files.readAllBytes(expected));
            }
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("pipe",
                    "plain.bfctrace", "plain.pickle");
        }
    }

    /** A symbolic link is followed: the file it names is replaced, the link stays a link. */
    @Test
    void aSymbolicLinkIsFollowed(@TempDir Path dir) throws IOException {
        Path runs = Files.createDirectory(dir.resolve("runs"));
        Path real = Files.writeString(runs.resolve("t.bfctrace"), "old\n");
        // Relative targets, resolved against the link's directory (not the working directory).
        Path link = Files.createSymbolicLink(dir.resolve("latest.bfctrace"), dir.relativize(real));
        Path dangling = Files.createSymbolicLink(dir.resolve("next.bfctrace"),
                dir.relativize(runs.resolve("new.bfctrace")));
        for (Path l : new Path[] {link, dangling}) {
            TraceWriter.write(l, w -> w.header(H));
            assertThat(Files.isSymbolicLink(l)).as("%s is still a link", l).isTrue();
        }
        assertThat(Files.readString(real)).startsWith("bfctrace 1\n");
        assertThat(Files.readString(runs.resolve("new.bfctrace"))).startsWith("bfctrace 1\n");
    }

    /**
     * A dangling link is followed as the system follows it, through a linked directory: its
     * relative target ('../latest.bfctrace') is read from where the link really lies. It was
     * read from the path as given ('work/../latest.bfctrace', 'latest.bfctrace' beside 'work'):
     * the trace replaced an unrelated file of that name, and the file the link names was never
     * written.
     */
    @Test
    void aDanglingLinkInALinkedDirectoryIsFollowedWhereItLies(@TempDir Path dir) throws IOException {
        Path real = Files.createDirectories(dir.resolve("data").resolve("a"));
        Path work = Files.createSymbolicLink(dir.resolve("work"), Path.of("data", "a"));
        Files.createSymbolicLink(real.resolve("out.bfctrace"), Path.of("..", "latest.bfctrace"));
        Path unrelated = Files.writeString(dir.resolve("latest.bfctrace"), "keep me\n");
        Path out = work.resolve("out.bfctrace");
        TraceWriter.write(out, w -> w.header(H));
        assertThat(Files.isSymbolicLink(out)).as("still a link").isTrue();
        assertThat(unrelated).as("a file the link does not name").hasContent("keep me");
        assertThat(Files.readString(dir.resolve("data").resolve("latest.bfctrace"))).startsWith("bfctrace 1\n");
    }

    /**
     * Links that name each other ('a' names 'b', 'b' names 'a') are refused, as the system
     * refuses them, and both stay links; one of them was replaced by a file.
     */
    @Test
    void aLoopOfLinksIsRefusedNotReplaced(@TempDir Path dir) throws IOException {
        Path a = Files.createSymbolicLink(dir.resolve("a.bfctrace"), Path.of("b.bfctrace"));
        Path b = Files.createSymbolicLink(dir.resolve("b.bfctrace"), Path.of("a.bfctrace"));
        assertThatThrownBy(() -> TraceWriter.write(a, w -> w.header(H))).isInstanceOf(FileSystemException.class)
                .hasMessageContaining(a.toString()).hasMessageContaining("too many levels of symbolic links")
                .hasMessageContaining("nothing was written");
        assertThat(Files.isSymbolicLink(a) && Files.isSymbolicLink(b)).as("both still links").isTrue();
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("a.bfctrace",
                    "b.bfctrace");
        }
    }

    /**
     * A file in a directory that does not exist is named as given, with the directory; it named
     * the temporary file beside it, a name the caller never gave ("/x/.t.bfctrace.1a2b.tmp").
     */
    @Test
    void aMissingDirectoryIsNamedNotTheTemporaryFile(@TempDir Path dir) throws IOException {
        Path missing = dir.resolve("missing").resolve("t.bfctrace");
        Path file = Files.writeString(dir.resolve("file"), "not a directory\n");
        Path underFile = file.resolve("t.bfctrace");
        try (BfcAllocator a = BfcAllocator.builder().name("missing").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            for (Path out : new Path[] {missing, underFile}) {
                String why = out == missing ? "no such directory: " : "not a directory: ";
                for (ThrowingCallable write : new ThrowingCallable[] {
                    () -> TraceWriter.write(out, w -> w.header(H)),
                    () -> a.snapshot().writePyTorchPickle(out),
                }) {
                    assertThatThrownBy(write).isInstanceOf(FileSystemException.class).hasMessage(out
                            + ": " + why + out.getParent() + "; nothing was written");
                }
            }
        }
        assertThat(missing.getParent()).doesNotExist();
        assertThat(file).hasContent("not a directory");
    }

    /**
     * A file whose name is long, yet one the file system takes, is written like any other, as
     * {@code TraceWriter.create} writes it; the name of the file beside it (the whole name with
     * a dot before and a random part after) went past the file system's 255 bytes, and the write
     * was refused ("File name too long: no file can be created in DIR"). Where the start that
     * name keeps ends inside a character of two UTF-16 units (an emoji), the character is kept
     * whole or not at all, not cut in two (a name no path takes).
     */
    @Test
    void aFileWithALongNameIsWritten(@TempDir Path dir) throws IOException {
        String[] names = {
            "t".repeat(240) + ".bfctrace",
            "x".repeat(49) + "\uD83D\uDE00" + "y".repeat(190) + ".bfctrace",
        };
        try (BfcAllocator a = BfcAllocator.builder().name("long").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            for (String name : names) {
                Path file = dir.resolve(name);
                try {
                    Files.delete(Files.createFile(file));
                } catch (FileSystemException e) {
                    assumeTrue(false, "this file system does not take the name " + name + ": " + e.getReason());
                }
                TraceWriter.write(file, w -> w.header(H));
                assertThat(Files.readString(file)).startsWith("bfctrace 1\n");
                Path pickle = dir.resolve(name.replace(".bfctrace", ".pickle"));
                a.snapshot().writePyTorchPickle(pickle);
                assertThat(Files.size(pickle)).isPositive();
            }
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files).as("nothing left beside them").hasSize(2 * names.length);
        }
    }

    @Test
    void writeReplacesAFileWholeOrNotAtAll(@TempDir Path dir) throws IOException {
        for (String name : new String[] {"t.bfctrace", "t.bfctrace.gz"}) {
            Path file = dir.resolve(name);
            TraceWriter.write(file, w -> {
                w.header(H);
                w.alloc(1, 100, 64, 0, 0);
            });
            byte[] whole = Files.readAllBytes(file);
            // A content that fails after some lines: the file keeps its whole trace, and no
            // trace cut short (which would read as a whole one) is left beside it.
            assertThatThrownBy(() -> TraceWriter.write(file, w -> {
                w.header(H);
                for (int i = 1; i <= 50_000; i++) {
                    w.alloc(i, i, 64, 0, 0);
                }
                throw new IOException("injected: the disk is full");
            })).isInstanceOf(IOException.class).hasMessage("injected: the disk is full");
            assertThat(Files.readAllBytes(file)).isEqualTo(whole);
            assertThatThrownBy(() -> TraceWriter.write(file, w -> w.alloc(1, 100, 64, 0, 0)))
                    .isInstanceOf(IllegalStateException.class);
            assertThat(Files.readAllBytes(file)).isEqualTo(whole);
            try (TraceReader r = TraceReader.open(file)) {
                assertThat(r.header()).isEqualTo(H);
                assertThat(r.next().id()).isEqualTo(1);
                assertThat(r.next()).isNull();
            }
            Path absent = dir.resolve("absent-" + name);
            assertThatThrownBy(() -> TraceWriter.write(absent, w -> {
                w.header(H);
                throw new IllegalArgumentException("injected");
            })).hasMessage("injected");
            assertThat(absent).doesNotExist();
        }
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("t.bfctrace",
                    "t.bfctrace.gz");
        }
    }

    /**
     * An existing file that may not be written (read-only) is refused, as a shell's {@code >}
     * refuses it, directly or through a symbolic link, and kept as it was; it was replaced, as
     * its directory may be written.
     */
    @Test
    void aReadOnlyFileIsRefusedNotReplaced(@TempDir Path dir) throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Path file = Files.writeString(dir.resolve("t.bfctrace"), "keep me\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
        assumeFalse(Files.isWritable(file), "run as root, who may write a read-only file (a shell's > writes it too)");
        Path link = Files.createSymbolicLink(dir.resolve("latest.bfctrace"), file.getFileName());
        try (BfcAllocator a = BfcAllocator.builder().name("read-only").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            for (Path out : new Path[] {file, link}) {
                for (ThrowingCallable write : new ThrowingCallable[] {
                    () -> TraceWriter.write(out, w -> w.header(H)),
                    () -> a.snapshot().writePyTorchPickle(out),
                }) {
                    assertThatThrownBy(write).isInstanceOf(AccessDeniedException.class)
                            .hasMessageStartingWith(out + ": permission denied: the file exists and may not be written")
                            .hasMessageEndingWith("; nothing was written");
                }
            }
        }
        assertThat(file).hasContent("keep me");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("r--r--r--");
        assertThat(Files.isSymbolicLink(link)).as("still a link").isTrue();
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("t.bfctrace",
                    "latest.bfctrace");
        }
    }

    /**
     * A file replaced keeps its permissions (a trace kept private stays private); it got what
     * the umask gives ({@code rw-r--r--} under umask 022), as a new file does.
     */
    @Test
    void aReplacedFileKeepsItsPermissions(@TempDir Path dir) throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Set<PosixFilePermission> umasked = Files.getPosixFilePermissions(Files.createFile(dir.resolve("plain")));
        System.out.println("a new file gets " + PosixFilePermissions.toString(umasked));
        try (BfcAllocator a = BfcAllocator.builder().name("perms").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(1L << 40, 1 << 20, 0, false)).build()) {
            // Two of them differ from what any umask gives.
            for (String perms : new String[] {"rw-------", "rw-rw-rw-", "rwxr-x---"}) {
                Path trace = Files.writeString(dir.resolve(perms + ".bfctrace"), "old\n");
                Path pickle = Files.writeString(dir.resolve(perms + ".pickle"), "old\n");
                Path real = Files.writeString(dir.resolve(perms + "-real.bfctrace"), "old\n");
                Path link = Files.createSymbolicLink(dir.resolve(perms + "-link.bfctrace"), real.getFileName());
                for (Path p : new Path[] {trace, pickle, real}) {
                    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
                }
                TraceWriter.write(trace, w -> w.header(H));
                a.snapshot().writePyTorchPickle(pickle);
                TraceWriter.write(link, w -> w.header(H));
                for (Path p : new Path[] {trace, pickle, real}) {
                    assertThat(Files.readAllBytes(p)).as("%s replaced", p).isNotEqualTo("old\n".getBytes(
                            StandardCharsets.UTF_8));
                    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).as("%s", p)
                            .isEqualTo(perms);
                }
            }
        }
        Path created = dir.resolve("new.bfctrace");
        TraceWriter.write(created, w -> w.header(H));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(created)))
                .isEqualTo(PosixFilePermissions.toString(umasked));
    }

    @Test
    void headerComesFirstAndOnce() throws IOException {
        try (TraceWriter w = TraceWriter.of(new ByteArrayOutputStream(), false)) {
            assertThatThrownBy(() -> w.free(1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("header");
            w.header(H);
            assertThatThrownBy(() -> w.header(H)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> w.workloadAlloc(1, 1, 64, 0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void rejectsValuesTheReaderWouldReject() throws IOException {
        try (TraceWriter w = TraceWriter.of(new ByteArrayOutputStream(), false)) {
            w.header(H);
            assertThatThrownBy(() -> w.alloc(-1, 1, 64, 0, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("id=-1 (expected: >= 0)");
            assertThatThrownBy(() -> w.alloc(1, 1, 48, 0, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("alignment=48");
            assertThatThrownBy(() -> w.subFree(0, 256)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> w.frontier(-1)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> w.comment("two\nlines")).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void closedWriterRejectsLines() throws IOException {
        TraceWriter w = TraceWriter.of(new ByteArrayOutputStream(), true);
        w.header(H);
        w.close();
        w.close();
        w.flush();
        assertThatThrownBy(() -> w.free(1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void headerValidation() {
        assertThatThrownBy(() -> new TraceHeader("", "s", 1, true, false, 0, false, 256, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "a\nb", 1, true, false, 0, false, 256, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 0, true, false, 0, false, 256, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 1, true, false, Double.NaN, false, 256, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 1, true, false, 0, false, 100, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 1, true, false, 0, false, 256, 0, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 1, true, false, 0, false, 256, 256, -1, true))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new TraceHeader("n", "s", 1, true, false, 0, false, 256, Long.MAX_VALUE, 0, true))
                .isInstanceOf(IllegalArgumentException.class);
        TraceHeader h = new TraceHeader("n", "s", 1 << 20, false, true, 0.01, true, 256, 256, 0, true);
        assertThat(h.bfcOptions().allowRetryOnFailure()).isFalse();
        assertThat(h.bfcOptions().allowGrowth()).isFalse();
        assertThat(h.bfcOptions().garbageCollection()).isTrue();
        assertThat(h.bfcOptions().fragmentationFraction()).isEqualTo(0.01);
    }

    @Test
    void fractionFormatting() {
        assertThat(LineBuffer.formatFraction(0)).isEqualTo("0");
        assertThat(LineBuffer.formatFraction(0.01)).isEqualTo("0.01");
        assertThat(LineBuffer.formatFraction(0.000001)).isEqualTo("0.000001");
        assertThat(LineBuffer.formatFraction(1)).isEqualTo("1");
        assertThat(LineBuffer.formatFraction(1e-10)).isEqualTo("0.0000000001");
    }

    @Test
    void numberFormatting() {
        assertThat(new LineBuffer(1).dec(0).ch(' ').dec(Long.MAX_VALUE).ch(' ').hex(1).ch(' ').hex(-1)
                .ch(' ').address(0).toString())
                .isEqualTo("0 9223372036854775807 0x1 0xffffffffffffffff null");
    }
}
