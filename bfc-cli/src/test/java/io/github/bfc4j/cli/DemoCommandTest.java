/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DemoCommandTest {

    @TempDir
    Path dir;

    private final Cli cli = new Cli();

    /** The same calls on the simulated address space: the host replay must decide alike. */
    private static long[] simulate() throws IOException {
        try (InputStream in = DemoCommand.class.getResourceAsStream(DemoCommand.BUNDLED_TRACE);
                TraceReader r = TraceReader.open(in, "bundled")) {
            TraceHeader h = r.header();
            BfcAllocator a = new BfcAllocator(new SimSubAllocator(1L << 40, 1L << 40, 4096, false), h.memoryLimit(),
                    "sim", h.bfcOptions().toBuilder().allowRetryOnFailure(false).build());
            Map<Long, Long> live = new HashMap<>();
            long allocs = 0;
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC && e.bytes() > 0) {
                    live.put(e.id(), a.allocateRaw(64, e.bytes()));
                    allocs++;
                } else if (e.kind() == TraceEvent.Kind.FREE && live.containsKey(e.id())) {
                    a.deallocateRaw(live.remove(e.id()));
                }
            }
            return new long[] {allocs, a.getStats().peakBytesInUse(), a.getStats().peakPoolBytes()};
        }
    }

    @Test
    void replaysTheBundledTrainingLoopOnRealMemoryAndSummarises() throws IOException {
        long[] sim = simulate();
        assertThat(cli.run("demo")).isZero();
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).startsWith("bfc demo: tf-resnet-train: small ResNet")
                .contains("on real host memory (AlignedHostSubAllocator, 256-byte aligned regions), writing every allocated byte")
                .containsPattern("  allocations +" + sim[0] + "\n")
                .containsPattern("  frees +" + sim[0] + "\n")
                .containsPattern("  out of memory +0\n")
                .containsPattern("  peak in use +" + java.util.regex.Pattern.quote(BfcAllocator.humanReadableNumBytes(sim[1])))
                .containsPattern("  peak reserved +" + java.util.regex.Pattern.quote(BfcAllocator.humanReadableNumBytes(sim[2])))
                .containsPattern("  reserved at exit +0B  \\(all returned(\\)|, but for the views' regions below\\))");
        assertThat(sim[0]).isGreaterThan(2000);
    }

    @Test
    void aTraceWithALimitCountsItsOutOfMemoryAnswers() throws IOException {
        Path t = dir.resolve("small.bfctrace");
        Files.writeString(t, "bfctrace 1\nname small\nsource workload: test\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x100000000 capacity=2097152 gap=0 coalescing=false\n"
                + "alloc 1 524288\nalloc 2 4194304\nalloc 3 1000\nfree 1\n");
        assertThat(cli.run("demo", "--trace", t)).as("stderr: %s", cli.err).isZero();
        assertThat(cli.out).containsPattern("  allocations +2\n").containsPattern("  out of memory +1\n")
                .contains("(1 still live at the end, closed then)");
        // The same trace from standard input.
        String fromFile = cli.out.replaceAll(" in [0-9.]+ s\\.", "");
        assertThat(cli.runWithStdin(Files.readAllBytes(t), "demo", "--trace", "-")).as("stderr: %s", cli.err).isZero();
        assertThat(cli.out.replaceAll(" in [0-9.]+ s\\.", "")).isEqualTo(fromFile);
        // Cut inside its last line ("free 1" without its line break): replayed, and said so.
        Files.writeString(t, Files.readString(t).strip());
        assertThat(cli.run("demo", "--trace", t)).isZero();
        assertThat(cli.err.lines()).containsExactly("bfc demo: warning: " + t + " line 9: the last line has no line"
                + " break after it: the file may be truncated (the demo replayed the lines read)");
    }

    /**
     * The demo writes every byte: a trace whose regions would outgrow the memory the machine has
     * available stops with a sentence (exit 1) when a region past it is needed, instead of
     * bringing the OOM killer; below that, the trace's own out-of-memory answers are counted as
     * before.
     */
    @Test
    void aTraceThatOutgrowsTheHostsAvailableMemoryStopsWithASentence() throws IOException {
        Path t = dir.resolve("big.bfctrace");
        Files.writeString(t, "bfctrace 1\nname big\nsource workload: test\n"
                + "options memory_limit=1073741824 allow_growth=true garbage_collection=false fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x100000000 capacity=2147483648 gap=0 coalescing=false\n"
                + "alloc 1 41943040\nalloc 2 41943040\nfree 1\nalloc 3 41943040\nalloc 4 41943040\nalloc 5 41943040\n");
        java.util.function.LongSupplier real = AvailableMemoryGuard.availableBytes;
        // A cap of 88 MiB: the first allocation takes a 64 MiB region (allow_growth doubles from
        // 2 MiB up to the request), the second needs another 40 MiB at least.
        AvailableMemoryGuard.availableBytes = () -> 600L << 20;
        try {
            assertThat(cli.run("demo", "--trace", t)).isEqualTo(1);
            assertThat(cli.out).isEmpty();
            assertThat(cli.err).startsWith("bfc demo: line 7 (alloc of 41943040 bytes) needs a region beyond the"
                    + " host memory this machine had available when the demo started: 64.00MiB of regions held, ")
                    .contains("at most 88.00MiB (600.00MiB available less 512.00MiB), under the trace's limit of"
                            + " 1.00GiB. The demo writes every byte it allocates; replay this trace on simulated"
                            + " memory instead (bfc replay FILE), or free memory and run it again");
            assertThat(cli.err.lines()).hasSize(1);

            // Under the available memory, the same trace runs as before (no cap at all).
            AvailableMemoryGuard.availableBytes = () -> 2L << 30;
            assertThat(cli.run("demo", "--trace", t)).as("stderr: %s", cli.err).isZero();
            assertThat(cli.out).containsPattern("  allocations +5\n").containsPattern("  out of memory +0\n");
        } finally {
            AvailableMemoryGuard.availableBytes = real;
        }
    }

    @Test
    void theAvailableMemoryIsReadFromProcMeminfo() throws IOException {
        Path m = dir.resolve("meminfo");
        Files.writeString(m, "MemTotal:       24522712 kB\nMemFree:         1234567 kB\nMemAvailable:   17000000 kB\n");
        assertThat(AvailableMemoryGuard.memAvailable(m)).isEqualTo(17000000L * 1024);
        Files.writeString(m, "MemTotal:       24522712 kB\n");
        assertThat(AvailableMemoryGuard.memAvailable(m)).as("no such line").isEqualTo(-1);
        Files.writeString(m, "MemAvailable:   lots\n");
        assertThat(AvailableMemoryGuard.memAvailable(m)).isEqualTo(-1);
        assertThat(AvailableMemoryGuard.memAvailable(dir.resolve("none"))).isEqualTo(-1);
    }

    @Test
    void anAllocationLargerThanAnyAllocatorServesIsOutOfMemoryAsInReplay() throws IOException {
        // 2^62 + 1 and 9e18 bytes: above BfcAllocator.MAX_ALLOCATION_BYTES, which allocateRaw
        // (what replay calls) answers with null, as upstream answers what it cannot serve.
        Path t = dir.resolve("huge.bfctrace");
        Files.writeString(t, "bfctrace 1\nname huge\nsource workload: test\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x100000000 capacity=2097152 gap=0 coalescing=false\n"
                + "alloc 1 1000\nalloc 2 4611686018427387905\nalloc 3 9000000000000000000\nfree 1\n");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        assertThat(cli.out).contains("out of memory  2: line 7 (4.00EiB), line 8 (7.81EiB)");
        assertThat(cli.run("demo", "--trace", t)).as("stderr: %s", cli.err).isZero();
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).containsPattern("  allocations +1\n").containsPattern("  out of memory +2\n");
    }

    /**
     * A trace with the timing counter on: freed chunks are stamped and not coalesced, an
     * allocation with {@code freed_before=} may not take a chunk freed later, and a {@code
     * frontier} lets timestamped chunks merge. The demo makes those calls as replay does.
     */
    @Test
    void theTimingCounterFrontierAndFreedBeforeDecideAsInReplay() throws IOException {
        Path t = dir.resolve("timed.bfctrace");
        Files.writeString(t, "bfctrace 1\nname timed\nsource workload: test\n"
                + "options memory_limit=1048576 allow_growth=false garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=true\n"
                + "suballocator sim base=0x100000000 capacity=2097152 gap=0 coalescing=false\n"
                + "alloc 1 262144\nalloc 2 262144\nfree 1\nfree 2\n"
                // The region: 256 KiB freed at count 1, 256 KiB freed at count 2, 512 KiB never used.
                + "alloc 3 1048576 freed_before=1\n"   // nothing freed before count 1 is that large: none
                + "frontier 2\n"
                + "alloc 4 1048576\n"                  // the three merged: the whole region
                + "free 4\n");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        assertThat(cli.out).contains("out of memory  1: line 10 (1MiB)\n");
        assertThat(cli.run("demo", "--trace", t)).as("stderr: %s", cli.err).isZero();
        assertThat(cli.out).containsPattern("  allocations +3\n").containsPattern("  frees +3\n")
                .containsPattern("  out of memory +1\n").containsPattern("  peak in use +1\\.00MiB ");

        // A generated workload with the counter: the same answers as replay's, call for call
        // (one region, so host memory decides as the sim does).
        long seed = 2;
        Path g = dir.resolve("generated.bfctrace");
        assertThat(cli.run("generate", "--seed", seed, "--calls", 3000, "--timing-counter", "true", "--allow-growth",
                "false", "--memory-limit", "64MiB", "--capacity", "1GiB", "-o", g)).as(cli.err).isZero();
        cli.run("replay", g);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("out of memory  (\\d+)").matcher(cli.out);
        assertThat(m.find()).as(cli.out).isTrue();
        String ooms = m.group(1);
        assertThat(Long.parseLong(ooms)).as("the workload runs out of memory now and then").isPositive();
        assertThat(cli.run("demo", "--trace", g)).as("stderr: %s", cli.err).isZero();
        assertThat(cli.out).containsPattern("  out of memory +" + ooms + "\n");
    }

    @Test
    void controlCharactersOfTheTracesNameAndSourceAreShownAsEscapes() throws IOException {
        // A name or source line may hold any byte but a line break: an escape sequence in it
        // must not reach the terminal.
        Path t = dir.resolve("esc.bfctrace");
        Files.writeString(t, "bfctrace 1\nname gpu\u001b[31mred: a trace\nsource workload: \u0007bell\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\nsuballocator sim base=0x100000000 capacity=2097152 gap=0 coalescing=false\n"
                + "alloc 1 1000\nfree 1\n");
        assertThat(cli.run("demo", "--trace", t)).as("stderr: %s", cli.err).isZero();
        assertThat(cli.out).startsWith("bfc demo: gpu\\x1b[31mred: a trace\n  workload: \\x07bell\n")
                .doesNotContain("\u001b").doesNotContain("\u0007");
    }

    @Test
    void aMissingTraceIsOneClearLine() {
        assertThat(cli.run("demo", "--trace", dir.resolve("nope.bfctrace"))).isEqualTo(2);
        assertThat(cli.err).isEqualTo("bfc demo: " + dir.resolve("nope.bfctrace") + ": no such file\n");
    }
}
