/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;

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
                });
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
                for (Thread th : threads) {
                    th.join();
                }
            }
        }
    }
}
