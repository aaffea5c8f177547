/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static io.github.bfc4j.trace.TraceReaderTest.NAME;
import static io.github.bfc4j.trace.TraceReaderTest.OPTIONS;
import static io.github.bfc4j.trace.TraceReaderTest.SUBALLOCATOR;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * Runs a hand-made workload whose memory is worked out by hand: limit 1 MiB with growth, so the
 * first alloc obtains one 1 MiB region and every request below is a multiple of 128 KiB.
 */
class WorkloadRunnerTest {
    private static final long K = 1024;

    static final String WORKLOAD = NAME + "source workload: hand-made\n" + OPTIONS + SUBALLOCATOR
            + "alloc 1 131072\n"     // 6: region of 1 MiB; [0,128K) in use
            + "alloc 2 131072\n"     // 7: [128K,256K)
            + "alloc 3 131072\n"     // 8
            + "alloc 4 131072\n"     // 9
            + "alloc 5 131072\n"     // 10: 640K in use, tail [640K,1M) free
            + "free 2\n"             // 11: hole of 128K
            + "free 4\n"             // 12: hole of 128K
            + "alloc 6 262144\n"     // 13: takes the 384K tail unsplit: 768K in use (the peak); free: 2 x 128K
            + "alloc 7 262144\n"     // 14: no 256K chunk and the limit is reached: out of memory
            + "free 1\n"             // 15
            + "alloc 8 0\n"          // 16: 0 bytes: null, not out of memory
            + "free 8\n";            // 17

    private static TraceReader open(String text) throws IOException {
        return TraceReader.open(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "t.bfctrace");
    }

    @Test
    void measuresPeakFragmentationRegionsAndOutOfMemory() throws IOException {
        WorkloadResult r;
        try (TraceReader reader = open(WORKLOAD)) {
            r = WorkloadRunner.forHeader(reader.header()).run(reader);
        }
        assertThat(r.calls()).isEqualTo(12);
        assertThat(r.allocations()).isEqualTo(6);
        assertThat(r.peakBytesInUse()).isEqualTo(768 * K);
        assertThat(r.peakLine()).isEqualTo(13);
        assertThat(r.peakCall()).isEqualTo(7);
        assertThat(r.poolBytesAtPeak()).isEqualTo(1024 * K);
        assertThat(r.freeBytesAtPeak()).isEqualTo(256 * K);
        assertThat(r.largestFreeChunkAtPeak()).isEqualTo(128 * K);
        assertThat(r.fragmentationAtPeak()).isCloseTo(0.5, within(1e-12));
        assertThat(r.peakPoolBytes()).isEqualTo(1024 * K);
        assertThat(r.regionsAtEnd()).isEqualTo(1);
        assertThat(r.maxRegions()).isEqualTo(1);
        assertThat(r.oomCount()).isEqualTo(1);
        assertThat(r.oomLine(0)).isEqualTo(14);
        assertThat(r.oomCall(0)).isEqualTo(8);
        assertThat(r.oomBytes(0)).isEqualTo(256 * K);
        assertThat(r.extendCount()).isEqualTo(1);
        assertThat(r.extendLine(0)).isEqualTo(6);
        assertThat(r.extendBytes(0)).isEqualTo(1024 * K);
    }

    /**
     * The trace ends with three allocations live: they are freed before the close, which is then
     * a plain one (no "close() forced" warning), and every region goes back.
     */
    @Test
    void theAllocationsLiveAtTheEndAreFreedAndTheCloseIsQuiet() throws IOException {
        List<String> warnings = new ArrayList<>(); // of the close (the out-of-memory ones are expected)
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue() && r.getMessage().startsWith("close()")) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        List<long[]> obtained = new ArrayList<>();
        List<Long> freed = new ArrayList<>();
        Logger jul = Logger.getLogger(BfcAllocator.class.getName());
        jul.addHandler(handler);
        try (TraceReader reader = open(WORKLOAD)) {
            SubAllocator sim = WorkloadRunner.simFor(reader.header(), reader.header().memoryLimit());
            SubAllocator counting = new ForwardingSubAllocator(sim) {
                @Override
                public Block alloc(long alignment, long numBytes) {
                    Block b = upstream.alloc(alignment, numBytes);
                    obtained.add(new long[] {b.ptr(), b.bytes()});
                    return b;
                }

                @Override
                public void free(long ptr, long numBytes) {
                    freed.add(ptr);
                    upstream.free(ptr, numBytes);
                }
            };
            WorkloadResult r = new WorkloadRunner(reader.header().memoryLimit(), reader.header().bfcOptions(),
                    counting).run(reader);
            assertThat(r.peakBytesInUse()).isEqualTo(768 * K);
        } finally {
            jul.removeHandler(handler);
        }
        assertThat(warnings).isEmpty();
        assertThat(freed).containsExactly(obtained.get(0)[0]);
    }

    @Test
    void aLargerLimitUnderOtherOptionsAvoidsTheFailure() throws IOException {
        WorkloadResult r;
        try (TraceReader reader = open(WORKLOAD)) {
            TraceHeader h = reader.header();
            long limit = 4096 * K;
            r = new WorkloadRunner(limit, h.bfcOptions(), WorkloadRunner.simFor(h, limit)).run(reader);
        }
        // Growth starts with a 2 MiB region, which holds everything.
        assertThat(r.oomCount()).isZero();
        assertThat(r.peakPoolBytes()).isEqualTo(2048 * K);
        assertThat(r.peakBytesInUse()).isEqualTo(896 * K); // the 384K tail is split now: 384K + 256K + 256K
        assertThat(r.peakLine()).isEqualTo(14);
    }

    @Test
    void simForEnlargesTheSpaceOnlyForALargerLimit() throws IOException {
        try (TraceReader reader = open(WORKLOAD)) {
            TraceHeader h = reader.header();
            assertThat(WorkloadRunner.simFor(h, h.memoryLimit()).capacity()).isEqualTo(h.simCapacity());
            assertThat(WorkloadRunner.simFor(h, 1024).capacity()).isEqualTo(h.simCapacity());
            SimSubAllocator big = WorkloadRunner.simFor(h, 1L << 40);
            assertThat(big.capacity()).isEqualTo((1L << 40) + h.simGap() * WorkloadRunner.SIM_SLACK_REGIONS);
            assertThat(big.base()).isEqualTo(h.simBase());
        }
    }

    @Test
    void answersInAConformanceTraceAreIgnored() throws IOException {
        // Wrong addresses and a wrong null: the runner makes the calls and checks nothing.
        String answered = NAME + "source test\n" + OPTIONS + SUBALLOCATOR
                + "alloc 1 131072 => 0x7f0000001000\n"
                + "alloc 2 2097152 => 0x7f0000100000\n"
                + "stats bytes_in_use=1\n"
                + "alloc 3 256 => null\n"
                + "free 1\n";
        WorkloadResult r;
        try (TraceReader reader = open(answered)) {
            r = WorkloadRunner.forHeader(reader.header()).run(reader);
        }
        assertThat(r.calls()).isEqualTo(4);
        assertThat(r.oomCount()).isEqualTo(1);
        assertThat(r.oomLine(0)).isEqualTo(7);
        assertThat(r.allocations()).isEqualTo(2);
    }

    @Test
    void theListenerSeesEveryCall() throws IOException {
        List<String> seen = new ArrayList<>();
        try (TraceReader reader = open(WORKLOAD)) {
            WorkloadRunner.forHeader(reader.header())
                    .listener(s -> seen.add(s.callIndex() + "@" + s.lineNumber() + " " + s.kind() + " inUse="
                            + s.bytesInUse() / K + "K pool=" + s.poolBytes() / K + "K"
                            + (s.outOfMemory() ? " OOM" : "") + (s.regionsObtained() > 0 ? " +region" : "")
                            + " allocs=" + s.allocations()))
                    .run(reader);
        }
        assertThat(seen).hasSize(12);
        assertThat(seen.get(0)).isEqualTo("0@6 ALLOC inUse=128K pool=1024K +region allocs=1");
        assertThat(seen.get(7)).isEqualTo("7@13 ALLOC inUse=768K pool=1024K allocs=6");
        assertThat(seen.get(8)).isEqualTo("8@14 ALLOC inUse=768K pool=1024K OOM allocs=6");
        assertThat(seen.get(9)).isEqualTo("9@15 FREE inUse=640K pool=1024K allocs=6");
    }

    @Test
    void aThrowingSubAllocatorNamesTheLine() throws IOException {
        SubAllocator broken = new SubAllocator() {
            @Override
            public Block alloc(long alignment, long numBytes) {
                throw new IllegalStateException("device lost");
            }

            @Override
            public void free(long ptr, long numBytes) {
            }

            @Override
            public boolean supportsCoalescing() {
                return false;
            }
        };
        try (TraceReader reader = open(WORKLOAD)) {
            WorkloadRunner runner = new WorkloadRunner(1 << 20, BfcOptions.defaults(), broken);
            assertThatThrownBy(() -> runner.run(reader))
                    .isInstanceOf(WorkloadException.class)
                    .hasMessageStartingWith("line 6 (alloc 1 131072): ")
                    .hasMessageContaining("device lost")
                    .extracting(e -> ((WorkloadException) e).lineNumber()).isEqualTo(6L);
        }
    }

    @Test
    void aTraceErrorMidwayGivesTheRegionsBack() throws IOException {
        String broken = NAME + "source workload: broken\n" + OPTIONS + SUBALLOCATOR
                + "alloc 1 131072\n"
                + "free 2\n";  // line 7: an id no alloc line has
        try (TraceReader reader = open(broken)) {
            SimSubAllocator sim = WorkloadRunner.simFor(reader.header(), reader.header().memoryLimit());
            WorkloadRunner runner = new WorkloadRunner(1 << 20, reader.header().bfcOptions(), sim);
            assertThatThrownBy(() -> runner.run(reader))
                    .isInstanceOf(TraceFormatException.class)
                    .hasMessageContaining("line 7");
            assertThat(sim.reservedBytes()).isZero();
        }
    }

    @Test
    void aListenerThatThrowsAnErrorMidwayGivesTheRegionsBack() throws IOException {
        try (TraceReader reader = open(WORKLOAD)) {
            SimSubAllocator sim = WorkloadRunner.simFor(reader.header(), reader.header().memoryLimit());
            WorkloadRunner runner = new WorkloadRunner(1 << 20, reader.header().bfcOptions(), sim)
                    .listener(s -> {
                        if (s.callIndex() == 2) {
                            throw new StackOverflowError("listener at call 2");
                        }
                    });
            assertThatThrownBy(() -> runner.run(reader))
                    .isInstanceOf(StackOverflowError.class)
                    .hasMessage("listener at call 2");
            assertThat(sim.reservedBytes()).as("the region the trace's allocator obtained").isZero();
        }
    }

    /**
     * A trace whose first calls give no time, then times recorded long before the replay: the
     * calls before the first time were recorded on the replay's clock, so that the history (and
     * every export of it) went back in time at the first time the trace gave.
     */
    @Test
    void callsBeforeTheTracesFirstTimeShowNoLaterTimeThanIt() throws IOException {
        String trace = NAME + "source workload: hand-made\n" + OPTIONS + SUBALLOCATOR
                + "alloc 1 131072\n"   // no time: the replay's clock, until the trace gives one
                + "alloc 2 131072\n"
                + "free 2\n"
                + "#@ alloc 3 thread=worker-2 time_us=1000000000000000\n" // 2001, before the replay
                + "alloc 3 131072\n"
                + "free 3\n"
                + "#@ alloc 4 time_us=1000000000000500\n"
                + "alloc 4 131072\n";
        MemorySnapshot snapshot = replayedWithHistory(trace, a -> {
        });
        List<MemoryEvent> events = snapshot.history().events();
        assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE, MemoryEvent.Kind.ALLOC,
                MemoryEvent.Kind.FREE, MemoryEvent.Kind.ALLOC);
        assertThat(events).extracting(e -> e.provenance().timeMicros()).containsExactly(1000000000000000L,
                1000000000000000L, 1000000000000000L, 1000000000000000L, 1000000000000000L, 1000000000000000L,
                1000000000000500L);
        MemoryMap.Chunk first = snapshot.memoryMap().chunks().get(0);
        assertThat(first.inUse()).isTrue();
        assertThat(first.provenance().timeMicros()).as("alloc 1's chunk").isEqualTo(1000000000000000L);
    }

    /**
     * A replay with history recorded names the threads the trace recorded, not the replaying
     * thread: an {@code alloc} (and the region it obtained) its provenance's thread; a call the
     * trace names no thread for (a {@code free}, an {@code alloc} without one) no thread. Calls
     * made outside the replay, on the same thread, name it again.
     */
    @Test
    void aReplayedHistoryNamesTheTracesThreadsNotTheReplays() throws IOException {
        String trace = NAME + "source workload: hand-made\n" + OPTIONS + SUBALLOCATOR
                + "#@ alloc 1 thread=worker-2 time_us=1000\n"
                + "alloc 1 131072\n"
                + "alloc 2 131072\n"
                + "free 2\n";
        List<String> afterwards = new ArrayList<>();
        MemorySnapshot snapshot = replayedWithHistory(trace, a -> {
            a.deallocateRaw(a.allocateRaw(256, 1024)); // the application's own call
            List<MemoryEvent> all = a.snapshot().history().events();
            all.subList(all.size() - 2, all.size()).forEach(e -> afterwards.add(e.provenance().thread()));
        });
        List<MemoryEvent> events = snapshot.history().events();
        assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE);
        assertThat(events).extracting(e -> e.provenance().thread()).containsExactly("worker-2", "worker-2", null,
                null);
        MemoryMap map = snapshot.memoryMap();
        assertThat(map.chunks().get(0).provenance().thread()).isEqualTo("worker-2");
        assertThat(map.largestHolders(10)).extracting(MemoryMap.Holder::holder)
                .containsExactly("thread 'worker-2'");
        String self = Thread.currentThread().getName();
        assertThat(afterwards).containsExactly(self, self);
    }

    /**
     * memorySummary()'s largest holders say since when each holds its memory: the time of its
     * oldest chunk still in use, here the times the trace gives (UTC, to the millisecond); a
     * holder whose oldest chunk was freed shows its next oldest. Before, the section named the
     * holders and their bytes only, and "since when?" needed the memory map's chunks.
     */
    @Test
    void theSummarysHoldersSaySinceWhen() throws IOException {
        String trace = NAME + "source workload: hand-made\n" + OPTIONS + SUBALLOCATOR
                + "#@ alloc 1 annotation=weights time_us=1700000000000000\n" // 2023-11-14 22:13:20 UTC
                + "alloc 1 131072\n"
                + "#@ alloc 2 annotation=activations time_us=1700000000250000\n"
                + "alloc 2 65536\n"
                + "#@ alloc 3 annotation=activations time_us=1700000001500000\n"
                + "alloc 3 65536\n"
                + "#@ alloc 4 annotation=activations time_us=1700000002000000\n"
                + "alloc 4 65536\n"
                + "free 2\n";
        List<String> summary = new ArrayList<>();
        replayedWithHistory(trace, a -> summary.add(a.memorySummary()));
        String s = summary.get(0);
        assertThat(s.substring(s.indexOf("Largest holders")).lines().toList()).containsExactly(
                "Largest holders (in use, by annotation, else innermost frame outside org.bytedeco., else thread,"
                        + " else step, else runtime lent to):",
                "    128.0KiB in      2 chunks  activations  (since 2023-11-14 22:13:21.500 UTC, its oldest chunk)",
                "    128.0KiB in      1 chunk   weights  (since 2023-11-14 22:13:20.000 UTC)"); // ties by name
    }

    /**
     * Replays {@code trace} on an allocator recording its history (no stacks) and returns its
     * snapshot taken after the last call; {@code then} runs on the allocator after that, before
     * it is closed.
     */
    private static MemorySnapshot replayedWithHistory(String trace, Consumer<BfcAllocator> then) throws IOException {
        List<MemorySnapshot> snapshot = new ArrayList<>();
        try (TraceReader reader = open(trace)) {
            WorkloadRunner.forHeader(reader.header()).listener(new WorkloadListener() {
                @Override
                public void beforeRun(BfcAllocator a) {
                    a.recordHistory(HistoryOptions.builder().stacks(false).build());
                }

                @Override
                public void afterCall(WorkloadStep s) {
                }

                @Override
                public void afterRun(BfcAllocator a) {
                    snapshot.add(a.snapshot());
                    then.accept(a);
                }
            }).run(reader);
        }
        return snapshot.get(0);
    }
}
