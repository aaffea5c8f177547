/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.TestThreads;
import org.junit.jupiter.api.Test;

class ThreadsBenchmarkTest {

    /** An array's header before its first element, in bytes, with compressed class pointers. */
    private static final int ARRAY_HEADER_BYTES = 16;
    /** Two lines an adjacent-line prefetcher fetches together. */
    private static final int LINE_PAIR_BYTES = 128;

    @Test
    void noLaneSharesALinePairWithAnotherLaneOrTheArrayHeader() {
        for (int slotBytes : new int[] {4, 8}) { // a compressed reference, a long
            long previousEnd = ARRAY_HEADER_BYTES;
            for (int t = 0; t < ThreadsBenchmark.MAX_THREADS; t++) {
                long start = ARRAY_HEADER_BYTES + (long) ThreadsBenchmark.Lane.firstSlot(t) * slotBytes;
                long end = start + (long) ThreadsBenchmark.LIVE_PER_THREAD * slotBytes;
                assertThat(start - previousEnd)
                        .as("bytes between lane %d and what precedes it, %d-byte slots", t, slotBytes)
                        .isGreaterThanOrEqualTo(LINE_PAIR_BYTES);
                previousEnd = end;
            }
            assertThat(previousEnd).isLessThanOrEqualTo(ARRAY_HEADER_BYTES + (long) ThreadsBenchmark.SLOTS * slotBytes);
        }
    }

    @Test
    void theShardPerThreadControlGivesEachOfTheThreadsAShardOfItsOwn() throws Exception {
        try (Impl impl = Impl.create(Impl.BFC4J_SHARD_PER_THREAD, ThreadsBenchmark.SLOTS, null)) {
            ShardedImpl sharded = (ShardedImpl) impl;
            assertThat(sharded.allocator.shards()).hasSize(ThreadsBenchmark.MAX_THREADS);
            Thread[] threads = new Thread[ThreadsBenchmark.MAX_THREADS];
            for (int t = 0; t < threads.length; t++) {
                int lane = t;
                threads[t] = new Thread(() -> new ThreadsBenchmark.Lane(lane, impl), "lane-" + t);
                threads[t].setDaemon(true);
                threads[t].start();
            }
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, threads);
            assertThat(sharded.allocator.shards()).as("every shard serves one thread's live allocations")
                    .allMatch(s -> s.getStats().numAllocs() == ThreadsBenchmark.LIVE_PER_THREAD);
            impl.freeAll();
            assertThat(sharded.allocator.bytesInUse()).isZero();
        }
    }

    @Test
    void everyLaneFitsTheSlotsAndHoldsItsOwnAllocations() {
        try (Impl impl = Impl.create(Impl.BFC4J_SHARDED, ThreadsBenchmark.SLOTS, null)) {
            ThreadsBenchmark.Lane[] lanes = new ThreadsBenchmark.Lane[ThreadsBenchmark.MAX_THREADS];
            for (int t = 0; t < lanes.length; t++) {
                lanes[t] = new ThreadsBenchmark.Lane(t, impl);
            }
            for (int i = 0; i < 1000; i++) {
                for (ThreadsBenchmark.Lane lane : lanes) {
                    lane.step(impl);
                }
            }
            ShardedImpl sharded = (ShardedImpl) impl;
            assertThat(sharded.allocator.getStats().numAllocs())
                    .isEqualTo((long) lanes.length * (1000 + ThreadsBenchmark.LIVE_PER_THREAD));
            // Lanes whose slots overlapped would overwrite each other's addresses and lose them:
            // freeing every slot would then leave bytes in use.
            impl.freeAll();
            assertThat(sharded.allocator.bytesInUse()).isZero();
        }
    }
}
