/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PyTorch memory snapshot of a {@link ShardedBfcAllocator}, whose shards hand address ranges
 * to each other: each segment shows its own shard's owner, and the merged timeline replays
 * backwards from the segments as pytorch.org/memory_viz does ({@link MemoryVizReplay}).
 */
class ShardedPyTorchSnapshotTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1 << 20;

    /** Two shards under a limit of 4 MiB: a range one shard gives back is the other's next. */
    static ShardedBfcAllocator sharded(int maxEntries) {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sh").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 34, 0, false)).shards(2)
                .options(BfcOptions.builder().allowRetryOnFailure(false).build())
                .closePolicy(ClosePolicy.FORCE).build();
        a.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(maxEntries).build());
        return a;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> pickle(ShardedBfcAllocator a) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        a.writePyTorchPickle(out);
        return (Map<String, Object>) new Unpickler().loads(out.toByteArray());
    }

    @Test
    @SuppressWarnings("unchecked")
    void aSegmentShowsTheOwnerOfItsShardNotOfTheShardThatHeldItsAddressBefore() throws Exception {
        try (ShardedBfcAllocator a = sharded(1000)) {
            BfcAllocator s0 = a.shards().get(0);
            BfcAllocator s1 = a.shards().get(1);
            long before;
            try (MemoryAnnotation x = MemoryAnnotation.push("shard1-owner")) {
                before = s1.allocateRaw(64, MIB);
            }
            s1.deallocateRaw(before);
            s1.emptyCache();
            long now;
            try (MemoryAnnotation x = MemoryAnnotation.push("shard0-owner")) {
                now = s0.allocateRaw(64, MIB);
            }
            assertThat(now).as("shard 0 got the range shard 1 gave back").isEqualTo(before);

            List<Map<String, Object>> segments = (List<Map<String, Object>>) pickle(a).get("segments");
            assertThat(segments).singleElement().satisfies(seg -> {
                assertThat(MemoryVizReplay.num(seg.get("stream"))).isZero();
                assertThat(seg.get("frames").toString()).contains("shard0-owner").doesNotContain("shard1-owner");
            });
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void snapshotsTakenWhileShardsHandRangesToEachOtherNeverShowARangeTwice() throws Exception {
        try (ShardedBfcAllocator a = sharded(1000)) {
            AtomicBoolean done = new AtomicBoolean();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                Thread th = new Thread(() -> {
                    while (!done.get()) { // 3 MiB of the 4: each region is given back for the next
                        long p = a.allocateRaw(64, 3 * MIB);
                        if (p != 0) {
                            a.deallocateRaw(p);
                        }
                        a.emptyCache();
                    }
                }, "mover-" + t);
                th.setDaemon(true);
                threads.add(th);
                th.start();
            }
            try {
                long end = System.nanoTime() + 2_000_000_000L;
                int pictures = 0;
                while (System.nanoTime() < end) {
                    long regionEnd = Long.MIN_VALUE;
                    List<long[]> ranges = new ArrayList<>();
                    for (MemorySnapshot s : a.snapshots()) {
                        for (MemoryMap.Region r : s.memoryMap().regions()) {
                            ranges.add(new long[] {r.ptr(), r.size()});
                        }
                    }
                    ranges.sort(Comparator.comparingLong(r -> r[0]));
                    for (long[] r : ranges) {
                        assertThat(r[0]).as("picture %d: region 0x%x overlaps the one before it", pictures, r[0])
                                .isGreaterThanOrEqualTo(regionEnd);
                        regionEnd = r[0] + r[1];
                    }
                    pictures++;
                }
                assertThat(pictures).isPositive();
            } finally {
                done.set(true);
                TestThreads.joinOrFail(TestThreads.RUN_LIMIT, threads.toArray(new Thread[0]));
            }
        }
    }

    @Test
    void aRangeGivenBackByOneShardAndObtainedByAnotherIsFreedFirstInTheTimelineEvenWithinOneMicrosecond()
            throws Exception {
        int sameMicrosecond = 0;
        for (int i = 0; i < 300; i++) {
            try (ShardedBfcAllocator a = sharded(1000)) {
                BfcAllocator s1 = a.shards().get(1);
                s1.deallocateRaw(s1.allocateRaw(64, MIB));
                // The main thread's home shard (0) cannot grow under the limit: shard 1 gives its
                // free region back, and shard 0 obtains the range at once.
                long p = a.allocateRaw(64, 3 * MIB);
                assertThat(a.shardOf(p)).isSameAs(a.shards().get(0));
                MemoryEvent given = s1.snapshot().history().events().get(3);
                MemoryEvent obtained = a.shards().get(0).snapshot().history().events().get(0);
                assertThat(given.kind()).isEqualTo(MemoryEvent.Kind.REGION_FREE);
                assertThat(obtained.kind()).isEqualTo(MemoryEvent.Kind.REGION_ALLOC);
                assertThat(obtained.address()).isEqualTo(given.address());
                assertThat(given.sequence()).isLessThan(obtained.sequence());
                if (given.provenance().timeMicros() == obtained.provenance().timeMicros()) {
                    sameMicrosecond++;
                }
                Map<String, Object> pickle = pickle(a);
                assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action") + " " + t.get("stream"))
                        .containsSubsequence("segment_free 1", "segment_alloc 0");
                MemoryVizReplay.check(pickle);
                a.deallocateRaw(p);
            }
        }
        System.out.println("handovers within one microsecond: " + sameMicrosecond + " of 300");
    }

    @Test
    void aRegionGivenBackIsRecordedBeforeAnotherAllocatorCanObtainItsRange() throws Exception {
        // Two allocators on one address space: while the first gives a region back, the second
        // obtains the range the moment the sub-allocator has it back.
        SimSubAllocator space = new SimSubAllocator(BASE, 1L << 30, 0, false);
        BfcOptions options = BfcOptions.builder().allowRetryOnFailure(false).build();
        AtomicReference<BfcAllocator> other = new AtomicReference<>();
        AtomicLong obtained = new AtomicLong();
        AtomicBoolean armed = new AtomicBoolean();
        SubAllocator handingOver = new ForwardingSubAllocator(space) {
            @Override
            public void free(long ptr, long numBytes) {
                super.free(ptr, numBytes);
                if (armed.getAndSet(false)) {
                    Thread t = new Thread(() -> obtained.set(other.get().allocateRaw(64, 1000)), "obtainer");
                    t.setDaemon(true);
                    t.start();
                    try {
                        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                }
            }
        };
        BfcAllocator first = new BfcAllocator(handingOver, 64 * MIB, "first", options);
        other.set(new BfcAllocator(handingOver, 64 * MIB, "second", options));
        HistoryOptions history = HistoryOptions.builder().stacks(false).build();
        first.recordHistory(history);
        other.get().recordHistory(history);
        first.deallocateRaw(first.allocateRaw(64, 1000));
        armed.set(true);
        first.emptyCache();
        assertThat(obtained.get()).isEqualTo(first.snapshot().history().events().get(0).address());

        List<Map.Entry<Integer, MemoryEvent>> timeline = MemoryHistory.mergeByTime(List.of(
                first.snapshot().history().events(), other.get().snapshot().history().events()));
        assertThat(timeline).extracting(e -> e.getKey() + " " + e.getValue().kind()).containsExactly(
                "0 REGION_ALLOC", "0 ALLOC", "0 FREE", "0 REGION_FREE", "1 REGION_ALLOC", "1 ALLOC");
        first.close();
        other.get().deallocateRaw(obtained.get());
        other.get().close();
    }

    @Test
    void eventsOfEqualTimesMergeInTheOrderTheyHappened() {
        Provenance at = new Provenance(1_000, "t", null, -1, List.of());
        MemoryEvent given = new MemoryEvent(MemoryEvent.Kind.REGION_FREE, 0x100, 4096, 0, 0, -1, -1, at, 7);
        MemoryEvent obtained = new MemoryEvent(MemoryEvent.Kind.REGION_ALLOC, 0x100, 4096, 0, 0, -1, -1, at, 8);
        // The lower history first only when it happened first.
        assertThat(MemoryHistory.mergeByTime(List.of(List.of(obtained), List.of(given))))
                .extracting(Map.Entry::getValue).containsExactly(given, obtained);
        assertThat(MemoryHistory.mergeByTime(List.of(List.of(given), List.of(obtained))))
                .extracting(Map.Entry::getValue).containsExactly(given, obtained);
    }

    @Test
    void theTimelineStartsWhereEveryShardThatDroppedEventsStillHasThem() throws Exception {
        try (ShardedBfcAllocator a = sharded(4)) {
            BfcAllocator s0 = a.shards().get(0);
            BfcAllocator s1 = a.shards().get(1);
            long p = s1.allocateRaw(64, MIB);
            s1.deallocateRaw(p);
            s1.emptyCache(); // shard 1's four events, all kept
            for (int i = 0; i < 5; i++) { // shard 0 obtains the range, and its ring drops that
                s0.deallocateRaw(s0.allocateRaw(64, MIB));
            }
            long q = s0.allocateRaw(64, MIB);
            assertThat(q).isEqualTo(p);
            assertThat(s0.snapshot().history().droppedEvents()).isPositive();

            Map<String, Object> pickle = pickle(a);
            List<Map<String, Object>> trace = MemoryVizReplay.trace(pickle);
            assertThat(trace).extracting(t -> MemoryVizReplay.num(t.get("stream"))).containsOnly(0L);
            assertThat(trace).filteredOn(t -> t.get("action").equals("alloc")).hasSize(2);
            MemoryVizReplay.check(pickle);
            s0.deallocateRaw(q);
        }
    }

    /**
     * Shard 1 gives a range back and shard 0 obtains it; then shard 0's recording restarts (as
     * while {@code recordHistory} goes from shard to shard under load, or by the shard's own
     * call), or stops. The timeline kept shard 1's giving back but not shard 0's obtaining, so
     * the viewer, replaying backwards, put the range back into shard 1 while shard 0 held it:
     * "segment overlaps the one before it".
     */
    @Test
    void theTimelineStartsWhereEveryShardsRecordingHasItsEvents() throws Exception {
        for (boolean restart : new boolean[] {true, false}) {
            try (ShardedBfcAllocator a = sharded(1000)) {
                BfcAllocator s0 = a.shards().get(0);
                BfcAllocator s1 = a.shards().get(1);
                long p = s1.allocateRaw(64, MIB);
                s1.deallocateRaw(p);
                s1.emptyCache(); // shard 1 gives the range back: recorded
                long q = s0.allocateRaw(64, MIB); // shard 0 obtains it: recorded, until
                assertThat(q).isEqualTo(p);
                if (restart) {
                    s0.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(1000).build());
                } else {
                    s0.stopHistory();
                }
                s0.deallocateRaw(s0.allocateRaw(64, 4096)); // shard 0's own events after its restart

                Map<String, Object> pickle = pickle(a);
                MemoryVizReplay.check(pickle);
                List<Map<String, Object>> trace = MemoryVizReplay.trace(pickle);
                if (restart) {
                    assertThat(trace).as("shard 0's events since its restart")
                            .extracting(t -> t.get("action") + "@" + MemoryVizReplay.num(t.get("stream")))
                            .containsExactly("alloc@0", "free_requested@0", "free_completed@0");
                } else {
                    assertThat(trace).as("no events while a shard's recording is stopped").isEmpty();
                }
                s0.deallocateRaw(q);
            }
        }
    }

    /**
     * A segment's frames are those of the Extend that obtained it, from its own shard's
     * recorded history, also where the timeline written starts after that Extend (another
     * shard's recording restarted since): who obtained the region is known, though its
     * {@code segment_alloc} is not in the timeline.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aSegmentNamesWhoObtainedItEvenWhereTheTimelineStartsAfterThat() throws Exception {
        try (ShardedBfcAllocator a = sharded(1000)) {
            BfcAllocator s0 = a.shards().get(0);
            BfcAllocator s1 = a.shards().get(1);
            long kept;
            try (MemoryAnnotation x = MemoryAnnotation.push("shard1-owner")) {
                kept = s1.allocateRaw(64, MIB);
            }
            s0.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(1000).build()); // the cut
            s0.deallocateRaw(s0.allocateRaw(64, 4096));

            Map<String, Object> pickle = pickle(a);
            MemoryVizReplay.check(pickle);
            assertThat(MemoryVizReplay.trace(pickle)).as("shard 1's events are before the cut")
                    .allSatisfy(t -> assertThat(MemoryVizReplay.num(t.get("stream"))).isZero());
            List<Map<String, Object>> segments = (List<Map<String, Object>>) pickle.get("segments");
            assertThat(segments).filteredOn(seg -> MemoryVizReplay.num(seg.get("stream")) == 1).singleElement()
                    .satisfies(seg -> assertThat(seg.get("frames").toString()).contains("shard1-owner"));
            s1.deallocateRaw(kept);
        }
    }

    @Test
    void anOutOfMemoryDumpNeverShowsARangeInTwoShards(@TempDir Path dir) throws Exception {
        try (ShardedBfcAllocator a = sharded(1000)) {
            BfcAllocator s0 = a.shards().get(0);
            BfcAllocator s1 = a.shards().get(1);
            long p = s0.allocateRaw(64, MIB);
            MemorySnapshot atFailure = s0.snapshot();
            OutOfMemoryReport report = new OutOfMemoryReport(atFailure.memoryMap().allocatorName(), 8 * MIB, 8 * MIB,
                    Provenance.UNKNOWN, atFailure, "summary");
            // Before the dump reads the other shards, the range moves from shard 0 to shard 1.
            s0.deallocateRaw(p);
            s0.emptyCache();
            long q = s1.allocateRaw(64, MIB);
            assertThat(q).isEqualTo(p);

            new OomDumpWriter(dir, System::nanoTime).write(report, a::snapshots);
            Path pickle;
            try (Stream<Path> files = Files.list(dir)) {
                pickle = files.filter(f -> f.toString().endsWith(".pickle")).findFirst().orElseThrow();
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(Files.readAllBytes(pickle));
            assertThat((List<?>) d.get("segments")).hasSize(1);
            MemoryVizReplay.check(d);
            s1.deallocateRaw(q);
        }
    }
}
