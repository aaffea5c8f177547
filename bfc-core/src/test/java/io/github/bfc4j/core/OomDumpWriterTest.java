/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The out-of-memory dumps are rate-limited (a storm of failures cannot fill a disk), and a
 * snapshot that cannot be written leaves the memory map written and says why.
 */
class OomDumpWriterTest {

    @TempDir
    Path dir;

    private static long files(Path dir, String suffix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(f -> f.getFileName().toString().endsWith(suffix)).count();
        }
    }

    private static OutOfMemoryReport report(String name) {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false), 1 << 20,
                name, BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(null).build())) {
            return new OutOfMemoryReport(name, 2 << 20, 2 << 20, Provenance.UNKNOWN, a.snapshot(),
                    a.memorySummary());
        }
    }

    @Test
    void theFirstTenFailuresAreDumpedThenOneAMinute() throws IOException {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        OomDumpWriter writer = new OomDumpWriter(dir, now::get);
        OutOfMemoryReport report = report("storm");
        for (int i = 0; i < OomDumpWriter.FIRST_DUMPS; i++) {
            OomDumpWriter.Result r = writer.write(report);
            assertThat(r.file()).isNotNull();
            assertThat(r.note()).startsWith(" Memory map and summary written to ");
            now.addAndGet(1_000_000L);
        }
        OomDumpWriter.Result skipped = writer.write(report);
        assertThat(skipped.file()).isNull();
        assertThat(skipped.note()).isEqualTo(" No memory dump written (10 written, 1 skipped: at most one a minute after"
                + " the first 10); memorySummary() tells the state now.");
        assertThat(files(dir, ".json")).isEqualTo(10);
        assertThat(files(dir, ".pickle")).as("each with its PyTorch snapshot").isEqualTo(10);
        now.addAndGet(OomDumpWriter.INTERVAL_NANOS);
        assertThat(writer.write(report).file()).isNotNull();
        assertThat(writer.write(report).file()).isNull();
        assertThat(files(dir, ".json")).isEqualTo(11);
        assertThat(files(dir, ".pickle")).isEqualTo(11);
        try (Stream<Path> s = Files.list(dir)) {
            String json = Files.readString(s.filter(f -> f.toString().endsWith(".json")).findFirst().orElseThrow());
            assertThat(json).startsWith("{\n\"schema\": \"bfc4j.oom-dump/1\",\n\"allocatorName\": \"storm\"")
                    .contains("\"requestedBytes\": 2097152");
        }
    }

    /**
     * An allocator name longer than a file name can be (255 bytes on common file systems) is cut
     * to its first 100 characters in the dump's file name, so that its dumps are written (every
     * one failed with "File name too long"); the dump itself names the allocator in full.
     */
    @Test
    void aLongAllocatorNameIsCutInTheFileNameNotInTheDump() throws IOException {
        String name = "layer/" + "n".repeat(300);
        try (BfcAllocator a = BfcAllocator.builder().name(name).memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .options(BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(dir).build()).build()) {
            assertThatThrownBy(() -> a.allocate(2 << 20)).isInstanceOf(BfcOutOfMemoryException.class)
                    .satisfies(e -> assertThat(((BfcOutOfMemoryException) e).dumpFile()).isNotNull())
                    .hasMessageContaining(" Memory map and summary written to ");
        }
        try (Stream<Path> s = Files.list(dir)) {
            List<String> names = s.map(f -> f.getFileName().toString()).sorted().toList();
            assertThat(names).hasSize(2).allSatisfy(f -> assertThat(f)
                    .startsWith("bfc-oom-layer_" + "n".repeat(94) + "-").doesNotContain("n".repeat(95)));
            String json = Files.readString(dir.resolve(names.get(0)));
            assertThat(json).contains("\"allocatorName\": \"" + name + "\"");
        }
    }

    /**
     * A failure whose dump the rate limit will skip needs no picture (with a long history it
     * costs heap and time under the lock), unless a listener wants it; its message still says
     * the dump was skipped.
     */
    @Test
    void noPictureIsTakenForADumpThatWillBeSkipped() throws IOException {
        try (BfcAllocator a = BfcAllocator.builder().name("storm").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .options(BfcOptions.builder().dumpOnOomDirectory(dir).build()).build()) {
            OutOfMemoryListeners listeners = a.oomListeners;
            for (int i = 0; i < OomDumpWriter.FIRST_DUMPS; i++) {
                assertThat(listeners.pictureWanted()).isTrue();
                assertThat(catchThrowable(() -> a.allocate(2 << 20))).isInstanceOf(BfcOutOfMemoryException.class)
                        .hasMessageContaining("Memory map and summary written to");
            }
            assertThat(listeners.pictureWanted()).as("the next dump is a minute away").isFalse();
            assertThat(catchThrowable(() -> a.allocate(2 << 20))).hasMessageContaining(" No memory dump written (10"
                    + " written, 1 skipped: at most one a minute after the first 10)");
            OutOfMemoryListener listener = r -> { };
            a.addOutOfMemoryListener(listener);
            assertThat(listeners.pictureWanted()).as("a listener wants it").isTrue();
            assertThat(catchThrowable(() -> a.allocate(2 << 20))).hasMessageContaining("(10 written, 2 skipped");
            assertThat(files(dir, ".json")).isEqualTo(OomDumpWriter.FIRST_DUMPS);
        }
    }

    /** Opens files as the writer does, the one named {@code *suffix} filling the disk after 16 bytes. */
    private static OomDumpWriter.FileOpener diskFullAfter16Bytes(String suffix) {
        return file -> {
            OutputStream out = Files.newOutputStream(file, StandardOpenOption.CREATE_NEW);
            return !file.toString().endsWith(suffix) ? out : new FilterOutputStream(out) {
                private int written;

                @Override
                public void write(int b) throws IOException {
                    if (++written > 16) {
                        throw new IOException("No space left on device");
                    }
                    super.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    for (int i = 0; i < len; i++) {
                        write(b[off + i]);
                    }
                }
            };
        };
    }

    @Test
    void aMapThatCannotBeWrittenLeavesNoPartialFile() throws IOException {
        OomDumpWriter writer = new OomDumpWriter(dir, System::nanoTime, diskFullAfter16Bytes(".json"));
        OomDumpWriter.Result r = writer.write(report("full"));
        assertThat(r.file()).isNull();
        assertThat(r.note()).startsWith(" Could not write the memory dump to " + dir.toAbsolutePath())
                .contains(": java.io.IOException: No space left on device (set BfcOptions.dumpOnOomDirectory");
        assertThat(files(dir, ".json")).as("the partial map is deleted").isZero();
        assertThat(files(dir, ".pickle")).isZero();
    }

    @Test
    void aSnapshotThatCannotBeWrittenLeavesTheMapAndNoPartialFile() throws IOException {
        // The disk fills up after the first 16 bytes of the pickle.
        OomDumpWriter writer = new OomDumpWriter(dir, System::nanoTime, diskFullAfter16Bytes(".pickle"));
        OomDumpWriter.Result r = writer.write(report("full"));
        assertThat(r.file()).as("the memory map is written").isNotNull().endsWith(".json");
        assertThat(Files.readString(Path.of(r.file()))).contains("\"allocatorName\": \"full\"");
        String pickle = r.file().replaceFirst("\\.json$", ".pickle");
        assertThat(r.note()).isEqualTo(" Memory map and summary written to " + r.file() + "; could not write"
                + " PyTorch's memory snapshot to " + pickle + ": java.io.IOException: No space left on device.");
        assertThat(files(dir, ".pickle")).as("the partial snapshot is deleted").isZero();
    }

    @Test
    void aSnapshotFileThatExistsIsLeftAlone() throws IOException {
        OomDumpWriter writer = new OomDumpWriter(dir, System::nanoTime, file -> {
            if (file.toString().endsWith(".json")) {
                return Files.newOutputStream(file, StandardOpenOption.CREATE_NEW);
            }
            Files.writeString(file, "another's file"); // what CREATE_NEW refuses to replace
            throw new FileAlreadyExistsException(file.toString());
        });
        OomDumpWriter.Result r = writer.write(report("taken"));
        assertThat(r.file()).isNotNull();
        String pickle = r.file().replaceFirst("\\.json$", ".pickle");
        assertThat(r.note()).endsWith("; could not write PyTorch's memory snapshot to " + pickle
                + ": java.nio.file.FileAlreadyExistsException: " + pickle + ".");
        assertThat(Files.readString(Path.of(pickle))).isEqualTo("another's file");
    }
}
