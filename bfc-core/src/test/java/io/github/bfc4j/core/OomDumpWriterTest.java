/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The out-of-memory dumps are rate-limited: a storm of failures cannot fill a disk. */
class OomDumpWriterTest {

    @TempDir
    Path dir;

    private static long files(Path dir, String suffix) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(f -> f.getFileName().toString().endsWith(suffix)).count();
        }
    }

    @Test
    void theFirstTenFailuresAreDumpedThenOneAMinute() throws IOException {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        OomDumpWriter writer = new OomDumpWriter(dir, now::get);
        OutOfMemoryReport report;
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false), 1 << 20,
                "storm", BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(null).build())) {
            report = new OutOfMemoryReport("storm", 2 << 20, 2 << 20, Provenance.UNKNOWN, a.snapshot(),
                    a.memorySummary());
        }
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
}
