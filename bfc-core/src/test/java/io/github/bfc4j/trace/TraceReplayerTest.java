/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static io.github.bfc4j.trace.TraceReaderTest.HEADER;
import static io.github.bfc4j.trace.TraceReaderTest.NAME;
import static io.github.bfc4j.trace.TraceReaderTest.SOURCE;
import static io.github.bfc4j.trace.TraceReaderTest.SUBALLOCATOR;
import static io.github.bfc4j.trace.TraceReaderTest.WORKLOAD_HEADER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.SubAllocator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.UnaryOperator;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replays small hand-made traces. The expected answers follow the reference's rules (see
 * docs/trace-format.md): memory_limit 1 MiB with growth, so the first allocation
 * extends by min(limit, 2 MiB) = 1 MiB at the sim's base, and chunks are rounded to 256 bytes.
 */
class TraceReplayerTest {

    private static final String FIRST_ALLOC = "alloc 1 1 => 0x7f0000000000\n"   // line 6
            + "sub alloc 1048576 => 0x7f0000000000\n";                            // line 7

    private static final String GOOD = HEADER
            + FIRST_ALLOC
            + "chunk 1 size=256 requested=1 allocation_id=1\n"                     // 8
            + "stats num_allocs=1 bytes_in_use=256 peak_bytes_in_use=256 largest_alloc_size=256"
            + " bytes_limit=1048576 bytes_reserved=0 peak_bytes_reserved=0 largest_free_block_bytes=0"
            + " pool_bytes=1048576 peak_pool_bytes=1048576\n"                      // 9
            + "alloc 2 1000 => 0x7f0000000100\n"                                   // 10
            + "chunk 2 size=1024 requested=1000 allocation_id=2\n"                 // 11
            + "free 1\n"                                                           // 12
            + "# 0 bytes: null, no allocation id used\n"                           // 13
            + "alloc 3 0 => null\n"                                                // 14
            + "free 3\n"                                                           // 15
            + "alloc 4 256 align=4096 => 0x7f0000000000\n"                         // 16
            + "chunk 4 size=256 requested=256 allocation_id=3\n"                   // 17
            + "clear_stats\n"                                                      // 18
            + "stats num_allocs=0 bytes_in_use=1280 peak_bytes_in_use=1280 largest_alloc_size=0\n" // 19
            + "frontier 3\n"                                                       // 20
            + "# the rest of the 1 MiB region is free: 2 MiB cannot be had\n"
            + "alloc 5 2097152 => null\n"                                          // 22
            + "free 2\n"
            + "free 4\n";

    private static ReplayResult replay(String text) throws IOException {
        return TraceReplayer.replay(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "t.bfctrace");
    }

    private static String replace(String text, String from, String to) {
        assertThat(text).contains(from);
        return text.replace(from, to);
    }

    @Test
    void passesWhenEveryAnswerMatches() throws IOException {
        ReplayResult r = replay(GOOD);
        assertThat(r.passed()).as(r.message()).isTrue();
        // alloc 1, alloc 2, free 1, alloc 3, free 3, alloc 4, clear_stats, frontier, alloc 5, free 2, free 4
        assertThat(r.calls()).isEqualTo(11);
        assertThat(r.failureLine()).isZero();
        assertThat(r.expected()).isNull();
        assertThat(r.actual()).isNull();
        assertThat(r.error()).isNull();
        assertThat(r.message()).isEqualTo("11 calls replayed, all answers as expected");
    }

    @Test
    void reportsAWrongAddress() throws IOException {
        ReplayResult r = replay(replace(GOOD, "alloc 2 1000 => 0x7f0000000100", "alloc 2 1000 => 0x7f0000000400"));
        assertThat(r.passed()).isFalse();
        assertThat(r.failureLine()).isEqualTo(10);
        assertThat(r.expected()).isEqualTo("0x7f0000000400");
        assertThat(r.actual()).isEqualTo("0x7f0000000100");
        assertThat(r.calls()).isEqualTo(2);
        assertThat(r.message()).isEqualTo(
                "line 10 (alloc 2 1000 => 0x7f0000000400): expected 0x7f0000000400, got 0x7f0000000100");
    }

    @Test
    void reportsNullWhereAnAddressWasExpected() throws IOException {
        ReplayResult r = replay(replace(GOOD, "alloc 5 2097152 => null", "alloc 5 2097152 => 0x7f0000100000"));
        assertThat(r.failureLine()).isEqualTo(22);
        assertThat(r.expected()).isEqualTo("0x7f0000100000");
        assertThat(r.actual()).isEqualTo("null");
    }

    @Test
    void reportsAnAddressWhereNullWasExpected() throws IOException {
        ReplayResult r = replay(replace(GOOD, "alloc 3 0 => null", "alloc 3 1 => null"));
        assertThat(r.failureLine()).isEqualTo(14);
        assertThat(r.expected()).isEqualTo("null");
        assertThat(r.actual()).startsWith("0x7f");
    }

    @Test
    void reportsAStatsDifference() throws IOException {
        ReplayResult r = replay(replace(GOOD, "stats num_allocs=0 bytes_in_use=1280", "stats num_allocs=0 bytes_in_use=256"));
        assertThat(r.failureLine()).isEqualTo(19);
        assertThat(r.expected()).isEqualTo("stats bytes_in_use=256");
        assertThat(r.actual()).isEqualTo("1280");
        assertThat(r.message()).startsWith("line 19 (stats num_allocs=0 bytes_in_use=256 ")
                .endsWith("): expected stats bytes_in_use=256, got 1280");
    }

    @Test
    void reportsAChunkDifference() throws IOException {
        ReplayResult r = replay(replace(GOOD, "chunk 2 size=1024 requested=1000 allocation_id=2",
                "chunk 2 size=1024 requested=1000 allocation_id=7"));
        assertThat(r.failureLine()).isEqualTo(11);
        assertThat(r.expected()).isEqualTo("chunk 2 allocation_id=7");
        assertThat(r.actual()).isEqualTo("2");

        r = replay(replace(GOOD, "chunk 1 size=256 requested=1", "chunk 1 size=512 requested=1"));
        assertThat(r.failureLine()).isEqualTo(8);
        assertThat(r.expected()).isEqualTo("chunk 1 size=512");
        assertThat(r.actual()).isEqualTo("256");
    }

    @Test
    void reportsAMissingSubLineAtTheCallThatMadeTheCall() throws IOException {
        ReplayResult r = replay(replace(GOOD, FIRST_ALLOC, "alloc 1 1 => 0x7f0000000000\n"));
        assertThat(r.failureLine()).isEqualTo(6);
        assertThat(r.expected()).isEqualTo("no further sub-allocator call");
        assertThat(r.actual()).isEqualTo("sub alloc 1048576 => 0x7f0000000000");
        assertThat(r.message()).isEqualTo("line 6 (alloc 1 1 => 0x7f0000000000): made 1 more sub-allocator call than the trace lists:"
                + " expected no further sub-allocator call, got sub alloc 1048576 => 0x7f0000000000");
    }

    @Test
    void reportsAMissingSubLineAtTheEndOfTheTrace() throws IOException {
        ReplayResult r = replay(HEADER + "alloc 1 1 => 0x7f0000000000\n");
        assertThat(r.passed()).isFalse();
        assertThat(r.failureLine()).isEqualTo(6);
        assertThat(r.actual()).isEqualTo("sub alloc 1048576 => 0x7f0000000000");
        assertThat(r.calls()).isEqualTo(1);
    }

    @Test
    void reportsAnExtraSubLine() throws IOException {
        ReplayResult r = replay(replace(GOOD, FIRST_ALLOC, FIRST_ALLOC + "sub free 0x7f0000000000 1048576\n"));
        assertThat(r.failureLine()).isEqualTo(8);
        assertThat(r.expected()).isEqualTo("sub free 0x7f0000000000 1048576");
        assertThat(r.actual()).isEqualTo("no further sub-allocator call");
    }

    @Test
    void reportsADifferentSubLine() throws IOException {
        ReplayResult r = replay(replace(GOOD, FIRST_ALLOC,
                "alloc 1 1 => 0x7f0000000000\nsub alloc 2097152 => 0x7f0000000000\n"));
        assertThat(r.failureLine()).isEqualTo(7);
        assertThat(r.expected()).isEqualTo("sub alloc 2097152 => 0x7f0000000000");
        assertThat(r.actual()).isEqualTo("sub alloc 1048576 => 0x7f0000000000");
        assertThat(r.message()).contains("sub-allocator call 1 of alloc 1 1 => 0x7f0000000000 on line 6");

        r = replay(replace(GOOD, FIRST_ALLOC, "alloc 1 1 => 0x7f0000000000\nsub free 0x7f0000000000 1048576\n"));
        assertThat(r.failureLine()).isEqualTo(7);
        assertThat(r.actual()).isEqualTo("sub alloc 1048576 => 0x7f0000000000");
    }

    @Test
    void setupFailureNamesTheOptionsLine() throws IOException {
        // threshold = (long) (1e-10 * 1 MiB) = 0: the allocator refuses such a fraction.
        String text = NAME + SOURCE + "options memory_limit=1048576 allow_growth=true garbage_collection=false"
                + " fragmentation_fraction=0.0000000001 timing_counter=false\n" + SUBALLOCATOR
                + "alloc 1 1 => 0x7f0000000000\n";
        ReplayResult r = replay(text);
        assertThat(r.passed()).isFalse();
        assertThat(r.failureLine()).isEqualTo(4);
        assertThat(r.actual()).startsWith("IllegalArgumentException: ");
        assertThat(r.error()).isInstanceOf(IllegalArgumentException.class);
        assertThat(r.calls()).isZero();
    }

    @Test
    void anExceptionDuringACallIsAFailureAtItsLine() throws IOException {
        // A sub-allocator that breaks on its second Alloc: the second Extend (line 9) throws.
        UnaryOperator<SubAllocator> breakSecondAlloc = sim -> new SubAllocator() {
            private int allocs;

            @Override
            public Block alloc(long alignment, long numBytes) {
                if (++allocs == 2) {
                    throw new IllegalStateException("boom");
                }
                return sim.alloc(alignment, numBytes);
            }

            @Override
            public void free(long ptr, long numBytes) {
                sim.free(ptr, numBytes);
            }

            @Override
            public boolean supportsCoalescing() {
                return sim.supportsCoalescing();
            }
        };
        String text = NAME + SOURCE + "options memory_limit=4194304 allow_growth=true garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\n" + SUBALLOCATOR
                + "alloc 1 1 => 0x7f0000000000\n"                      // 6
                + "sub alloc 2097152 => 0x7f0000000000\n"              // 7
                + "alloc 2 2096896 => 0x7f0000000100\n"                // 8: fills the 2 MiB region
                + "alloc 3 256 => null\n";                             // 9: needs a second Extend
        ReplayResult r;
        try (TraceReader reader = TraceReaderTest.open(text)) {
            r = TraceReplayer.replay(reader, breakSecondAlloc);
        }
        assertThat(r.passed()).isFalse();
        assertThat(r.failureLine()).isEqualTo(9);
        assertThat(r.expected()).isEqualTo("null");
        assertThat(r.actual()).isEqualTo("IllegalStateException: boom");
        assertThat(r.error()).hasMessage("boom");
        assertThat(r.calls()).isEqualTo(3);
        assertThat(r.message()).isEqualTo("line 9 (alloc 3 256 => null): expected null, got IllegalStateException: boom");
    }

    @Test
    void passesTimingCounterAndFreedBefore() throws IOException {
        // From timing-basic: frees are stamped 1, 2; freed_before=1 may only reuse the chunk stamped 1.
        String text = NAME + SOURCE + "options memory_limit=16777216 allow_growth=false garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=true\n"
                + "suballocator sim base=0x7f0000000000 capacity=100663296 gap=0 coalescing=true\n"
                + "alloc 1 4096 => 0x7f0000000000\n"
                + "sub alloc 16777216 => 0x7f0000000000\n"
                + "alloc 2 4096 => 0x7f0000001000\n"
                + "alloc 3 4096 => 0x7f0000002000\n"
                + "alloc 4 8192 => 0x7f0000003000\n"
                + "alloc 5 4096 => 0x7f0000005000\n"
                + "free 2\n"
                + "free 4\n"
                + "alloc 6 4096 freed_before=1 => 0x7f0000001000\n"
                + "alloc 7 8192 freed_before=1 => 0x7f0000006000\n"
                + "alloc 8 8192 freed_before=2 => 0x7f0000003000\n";
        ReplayResult r = replay(text);
        assertThat(r.passed()).as(r.message()).isTrue();
        assertThat(r.calls()).isEqualTo(10);
    }

    @Test
    void replaysWorkloadTracesWithoutComparing() throws IOException {
        ReplayResult r = replay(WORKLOAD_HEADER + "alloc 1 1\nalloc 2 4194304\nalloc 3 100 align=256 freed_before=0\n"
                + "free 2\nfree 1\nfrontier 1\nclear_stats\nfree 3\n");
        assertThat(r.passed()).as(r.message()).isTrue();
        assertThat(r.calls()).isEqualTo(8);
    }

    @Test
    void formatErrorsBeforeTheFirstDifferenceAreThrown() {
        assertThatThrownBy(() -> replay(GOOD + "free 99\n")).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith("t.bfctrace line 25: found free of id 99");
    }

    @Test
    void aDifferenceStopsTheReplayBeforeLaterFormatErrors() throws IOException {
        ReplayResult r = replay(replace(GOOD, "alloc 2 1000 => 0x7f0000000100", "alloc 2 1000 => 0x7f0000000400")
                + "bogus line\n");
        assertThat(r.failureLine()).isEqualTo(10);
    }

    @Test
    void aTraceCutInsideItsLastLineIsRefusedThoughItsLinesPass(@TempDir Path dir) throws IOException {
        // Cut inside the comment of line 21: the lines read all pass, but 3 calls are missing.
        String cut = GOOD.substring(0, GOOD.indexOf("# the rest of the 1 MiB region") + 10);
        assertThatThrownBy(() -> replay(cut)).isInstanceOf(TraceFormatException.class)
                .hasMessage("t.bfctrace line 21: found no line break after the last line (the file may be truncated),"
                        + " expected one, as after every line (a whole trace ends with one: add it if nothing is"
                        + " missing)");
        Path file = dir.resolve("cut.bfctrace");
        Files.writeString(file, cut);
        assertThatThrownBy(() -> TraceReplayer.replay(file)).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith(file + " line 21: found no line break after the last line");
        // The same lines with their line break pass.
        ReplayResult whole = replay(cut + "\n");
        assertThat(whole.passed()).as(whole.message()).isTrue();
    }

    @Test
    void aDifferenceOnALastLineCutShortIsTheCutNotADifference() throws IOException {
        // Line 9's stats cut inside its last number: peak_pool_bytes=104857 is not the allocator's answer.
        String cut = GOOD.substring(0, GOOD.indexOf("peak_pool_bytes=1048576\n") + "peak_pool_bytes=104857".length());
        assertThatThrownBy(() -> replay(cut)).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith("t.bfctrace line 9: found no line break after the last line");
    }

    @Test
    void aReaderGivenToReplayIsLeftToItsCallerToCheckForACut() throws IOException {
        String cut = GOOD.substring(0, GOOD.indexOf("# the rest of the 1 MiB region") + 10);
        try (TraceReader reader = TraceReaderTest.open(cut)) {
            ReplayResult r = TraceReplayer.replay(reader);
            assertThat(r.passed()).as(r.message()).isTrue();
            assertThat(reader.lastLineUnterminated()).isTrue();
        }
    }

    @Test
    void replaysGzipFiles(@TempDir Path dir) throws IOException {
        Path p = dir.resolve("t.bfctrace.gz");
        try (GZIPOutputStream gz = new GZIPOutputStream(Files.newOutputStream(p))) {
            gz.write(GOOD.getBytes(StandardCharsets.UTF_8));
        }
        ReplayResult r = TraceReplayer.replay(p);
        assertThat(r.passed()).as(r.message()).isTrue();
        assertThat(r.calls()).isEqualTo(11);
    }

    @Test
    void replaysWhatTheWriterWrote() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceReader reader = TraceReaderTest.open(GOOD); TraceWriter w = TraceWriter.of(out, true)) {
            w.header(reader.header());
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                w.write(e);
            }
        }
        ReplayResult r = TraceReplayer.replay(new ByteArrayInputStream(out.toByteArray()), "written");
        assertThat(r.passed()).as(r.message()).isTrue();
    }
}
