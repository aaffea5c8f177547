/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Several threads on one allocator: mixed allocations (with and without timestamp constraints),
 * frees, safe-frontier moves, and the read-only calls ({@code getStats}, {@code getBinDebugInfo},
 * {@code renderOccupancy}, {@code dumpMemoryLog}). Every allocation is checked at once against
 * the live allocations of all threads (a concurrent interval map: two overlapping allocations
 * cannot both escape, the later check sees the earlier entry). At quiescent points (all
 * threads at a barrier, every {@value #OPS_PER_ROUND} calls per thread) the barrier action
 * runs {@link BfcAllocator#checkInvariants()} and checks that the stats and the chunks in use
 * equal the live set.
 *
 * <p>Seeded ({@code -Dbfc4j.test.seed}); the seed is printed. Longer runs:
 * {@code -Dbfc4j.stress.rounds=1000}.
 */
class BfcAllocatorStressTest {

    private static final long BASE = 0x7f0000000000L;
    private static final int OPS_PER_ROUND = 1_000;
    private static final int ROUNDS = Integer.getInteger("bfc4j.stress.rounds", 8);
    private static final AtomicLong TOTAL_CALLS = new AtomicLong();
    private static final AtomicLong QUIESCENT_CHECKS = new AtomicLong();

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(ints = {2, 4, 8})
    void threadsSharingOneAllocatorNeverOverlapAndKeepTheInvariants(int threads) throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("BfcAllocatorStressTest " + threads + " threads, seed: " + seed
                + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        SplittableRandom setup = new SplittableRandom(seed);
        long limit = 32L << 20;
        BfcOptions opts = BfcOptions.builder().allowGrowth(setup.nextBoolean())
                .garbageCollection(setup.nextBoolean()).allowRetryOnFailure(false).build();
        SimSubAllocator sim = new SimSubAllocator(BASE, 2 * limit, setup.nextBoolean() ? 0 : 4096,
                setup.nextBoolean());
        BfcAllocator a = new BfcAllocator(sim, limit, "stress", opts);
        SharedCounter counter = new SharedCounter();
        boolean timing = setup.nextBoolean();
        if (timing) {
            a.setTimingCounter(counter);
        }
        // start -> end of every live allocation, all threads.
        ConcurrentSkipListMap<Long, Long> live = new ConcurrentSkipListMap<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CyclicBarrier barrier = new CyclicBarrier(threads, () -> {
            try {
                checkQuiescent(a, live);
                QUIESCENT_CHECKS.incrementAndGet();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final SplittableRandom rnd = setup.split();
            Thread w = new Thread(() -> {
                List<Long> mine = new ArrayList<>();
                try {
                    for (int round = 0; round < ROUNDS && failure.get() == null; round++) {
                        for (int i = 0; i < OPS_PER_ROUND; i++) {
                            step(a, rnd, mine, live, counter, timing);
                        }
                        TOTAL_CALLS.addAndGet(OPS_PER_ROUND);
                        barrier.await();
                    }
                    for (long p : mine) {
                        live.remove(p);
                        a.deallocateRaw(p);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    barrier.reset();
                }
            }, "stress-" + t);
            w.setDaemon(true);
            workers.add(w);
            w.start();
        }
        TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, workers.toArray(new Thread[0]));
        if (failure.get() != null) {
            throw new AssertionError("seed " + seed + ", " + threads + " threads: " + failure.get(),
                    failure.get());
        }
        checkQuiescent(a, live);
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
        a.checkInvariants();
        assertThat(sim.reservedBytes()).isZero();
    }

    private static void step(BfcAllocator a, SplittableRandom rnd, List<Long> mine,
            ConcurrentSkipListMap<Long, Long> live, SharedCounter counter, boolean timing) {
        int op = rnd.nextInt(100);
        if (op < 50 || mine.isEmpty() && op < 90) {
            long n = rnd.nextInt(10) == 0 ? rnd.nextLong(2L << 20) : 1 + rnd.nextLong(16 * 1024);
            long freedBefore = timing && rnd.nextInt(4) == 0 ? 1 + rnd.nextLong(counter.get() + 1) : 0;
            AllocationAttributes attr = freedBefore == 0 ? AllocationAttributes.NO_RETRY
                    : new AllocationAttributes(false, () -> freedBefore);
            long p = a.allocateRaw(1L << rnd.nextInt(10), n, attr);
            if (p != 0) {
                long end = p + a.allocatedSize(p);
                if (live.putIfAbsent(p, end) != null) {
                    throw new AssertionError("0x" + Long.toHexString(p) + " handed out twice");
                }
                Map.Entry<Long, Long> below = live.lowerEntry(p);
                if (below != null && below.getValue() > p) {
                    throw new AssertionError("[0x" + Long.toHexString(p) + ", 0x" + Long.toHexString(end)
                            + ") overlaps the live allocation [0x" + Long.toHexString(below.getKey())
                            + ", 0x" + Long.toHexString(below.getValue()) + ")");
                }
                Map.Entry<Long, Long> above = live.higherEntry(p);
                if (above != null && above.getKey() < end) {
                    throw new AssertionError("[0x" + Long.toHexString(p) + ", 0x" + Long.toHexString(end)
                            + ") overlaps the live allocation at 0x" + Long.toHexString(above.getKey()));
                }
                mine.add(p);
            }
        } else if (op < 88) {
            if (!mine.isEmpty()) {
                int i = rnd.nextInt(mine.size());
                long p = mine.get(i);
                mine.set(i, mine.get(mine.size() - 1));
                mine.remove(mine.size() - 1);
                live.remove(p);
                a.deallocateRaw(p);
            }
        } else if (op < 92) {
            a.setSafeFrontier(counter.get() + 1 - rnd.nextInt(2));
        } else if (op < 96) {
            AllocatorStats s = a.getStats();
            if (s.bytesInUse() < 0 || s.peakBytesInUse() < s.bytesInUse() || s.poolBytes() > s.bytesLimit()) {
                throw new AssertionError("inconsistent stats " + s);
            }
        } else if (op < 98) {
            assertThat(a.getBinDebugInfo()).hasSize(BfcAllocator.NUM_BINS);
        } else if (op < 99) {
            assertThat(a.renderOccupancy()).hasSizeBetween(1, 100);
        } else {
            assertThat(a.dumpMemoryLog(4096)).contains("BFCAllocator dump for stress");
        }
    }

    /** All threads wait at the barrier: the allocator must agree with the live set exactly. */
    private static void checkQuiescent(BfcAllocator a, ConcurrentSkipListMap<Long, Long> live) {
        a.checkInvariants();
        long bytes = 0;
        long prevEnd = 0;
        for (Map.Entry<Long, Long> e : live.entrySet()) {
            if (e.getKey() < prevEnd) {
                throw new AssertionError("live allocations overlap at 0x" + Long.toHexString(e.getKey()));
            }
            prevEnd = e.getValue();
            bytes += e.getValue() - e.getKey();
            if (a.allocatedSize(e.getKey()) != e.getValue() - e.getKey() || a.allocationId(e.getKey()) < 1) {
                throw new AssertionError("0x" + Long.toHexString(e.getKey()) + " is no longer the"
                        + " allocation handed out");
            }
        }
        long chunksInUse = 0;
        for (BfcAllocator.BinDebugInfo info : a.getBinDebugInfo()) {
            chunksInUse += info.totalChunksInUse();
        }
        if (a.getStats().bytesInUse() != bytes || chunksInUse != live.size()) {
            throw new AssertionError("at a quiescent point: bytes_in_use=" + a.getStats().bytesInUse()
                    + " and " + chunksInUse + " chunks in use, but the threads hold " + live.size()
                    + " allocations of " + bytes + " bytes");
        }
    }

    @AfterAll
    static void report() {
        System.out.println("BfcAllocatorStressTest: " + TOTAL_CALLS.get() + " calls by 2, 4 and 8"
                + " threads, " + QUIESCENT_CHECKS.get() + " quiescent invariant checks");
    }
}
