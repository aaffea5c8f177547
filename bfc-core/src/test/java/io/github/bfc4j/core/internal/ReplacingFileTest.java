/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.PipeLinks;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link ReplacingFile} checks again just before the move (its other behaviour is tested
 * through its users: TraceWriterTest, PyTorchSnapshotTest, and bfc-cli's ReportCommandTest).
 */
class ReplacingFileTest {

    /**
     * access(2) as it answers the files' owner when that owner is not root: whether the owner may
     * write. Root may write every file, so a test run as root asks this instead.
     */
    private static final Predicate<Path> OWNER_MAY_WRITE = p -> {
        try {
            return Files.getPosixFilePermissions(p).contains(PosixFilePermission.OWNER_WRITE);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    };

    /**
     * A file made read-only while its new content is written is refused at the move, as it would
     * have been before the content, and kept as it is; it was replaced, as the file's
     * writability was asked only before the content.
     */
    @Test
    void aFileMadeReadOnlyWhileWrittenIsRefusedAtTheMove(@TempDir Path dir) throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Path file = Files.writeString(dir.resolve("t.bfctrace"), "keep me\n");
        assertThatThrownBy(() -> ReplacingFile.write(file, false, tmp -> {
            Files.writeString(tmp, "new\n");
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
        }, OWNER_MAY_WRITE)).isInstanceOf(AccessDeniedException.class).hasMessage(file + ": permission denied: the"
                + " file exists and may not be written (expected: a file you may write to: make it writable, e.g."
                + " chmod u+w, or write another file); nothing was written");
        assertKept(dir, file);
    }

    /** As {@link #aFileMadeReadOnlyWhileWrittenIsRefusedAtTheMove}, with access(2) itself. */
    @Test
    void aFileMadeReadOnlyWhileWrittenIsRefusedAtTheMoveByAccess(@TempDir Path dir) throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Path file = Files.writeString(dir.resolve("t.bfctrace"), "keep me\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
        assumeFalse(Files.isWritable(file), "run as root, who may write a read-only file (a shell's > writes it too)");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> ReplacingFile.write(file, tmp -> {
            Files.writeString(tmp, "new\n");
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
        })).isInstanceOf(AccessDeniedException.class).hasMessageStartingWith(file + ": permission denied: the file"
                + " exists and may not be written");
        assertKept(dir, file);
    }

    /**
     * A writer's failure is what the caller gets, even where the file beside it then cannot be
     * deleted (as for a user other than root whose directory was made read-only meanwhile; here
     * the file beside it became a directory that is not empty): the deletion's failure was
     * thrown instead, naming the file beside it, a name the caller never gave, and hiding why
     * the write failed.
     */
    @Test
    void aWritersFailureIsNotReplacedByAFailureToDeleteTheFileBesideIt(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("t.bfctrace"), "keep me\n");
        Path[] beside = new Path[1];
        IOException full = new IOException("No space left on device");
        assertThatThrownBy(() -> ReplacingFile.write(file, tmp -> {
            beside[0] = tmp;
            Files.delete(tmp);
            Files.createDirectory(tmp);
            Files.writeString(tmp.resolve("x"), "x");
            throw full;
        })).isSameAs(full);
        assertThat(full.getSuppressed()).singleElement().isInstanceOf(java.nio.file.DirectoryNotEmptyException.class);
        assertThat(file).hasContent("keep me");
        Files.delete(beside[0].resolve("x"));
        Files.delete(beside[0]);
    }

    /**
     * A pipe reached through a link of /proc/self/fd (as /dev/stdout and a shell's {@code >(...)},
     * /dev/fd/63, reach one) is written in place, as a named pipe is: the link names no path
     * ({@code pipe:[4026]}), and the write failed with NoSuchFileException naming the link.
     */
    @Test
    void aPipeReachedThroughProcSelfFdIsWrittenInPlace() throws IOException {
        Path fds = Path.of("/proc/self/fd");
        assumeTrue(Files.isDirectory(fds), "no /proc/self/fd here");
        java.util.Set<Path> before = PipeLinks.in(fds);
        try (java.nio.channels.Pipe.SourceChannel source = java.nio.channels.Pipe.open().source()) {
            java.util.Set<Path> opened = PipeLinks.in(fds);
            opened.removeAll(before);
            assumeFalse(opened.isEmpty(), "the new pipe is not among /proc/self/fd's links");
            // Either end: opening a pipe's /proc link for writing opens the pipe anew, for writing.
            Path link = opened.iterator().next();
            byte[] content = "written through the link\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ReplacingFile.write(link, tmp -> {
                assertThat(tmp).isEqualTo(link);
                Files.write(tmp, content);
            });
            java.nio.ByteBuffer got = java.nio.ByteBuffer.allocate(content.length);
            while (got.hasRemaining() && source.read(got) >= 0) {
                // a pipe gives what was written, perhaps in pieces
            }
            assertThat(got.array()).isEqualTo(content);
        }
    }

    /** The file as it was, read-only, and nothing beside it. */
    private static void assertKept(Path dir, Path file) throws IOException {
        assertThat(file).hasContent("keep me");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("r--r--r--");
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files).containsExactly(file);
        }
    }
}
