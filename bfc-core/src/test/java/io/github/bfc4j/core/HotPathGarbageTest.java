/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The allocate/free hot path creates no Java object in steady state: the current thread's
 * allocated-bytes counter ({@code com.sun.management.ThreadMXBean}) must not move at all over
 * a million warmed-up {@code allocateRaw}/{@code deallocateRaw} calls of mixed sizes (splits,
 * merges, bin searches across bins, several live chunks), in one of up to three such windows. Deterministic and untimed; the JMH
 * {@code -prof gc} figures in docs/performance.md are the same claim measured there.
 */
class HotPathGarbageTest {

    private static final long BASE = 0x7f0000000000L;
    private static final int LIVE = 64;
    private static final int CALLS = 1_000_000;

    /**
     * Off (the default), with annotations recorded inside an open annotation, and with the
     * history recorded without Java stacks (the ring and the per-chunk arrays are allocated when
     * recording starts; each event then stores primitives and references that already exist);
     * with stacks recorded only for requests larger than any made here ({@code stackMinBytes}:
     * a sampled recording's other allocations walk no stack); and through a
     * {@link ShardedBfcAllocator} (its home-shard lookup and its address-to-shard
     * table); and with JFR allocation samples every 64th allocation but no recording running
     * (the event object never escapes, so the JIT removes it).
     */
    @ParameterizedTest
    @ValueSource(strings = {"off", "annotations", "history", "sampled", "sharded", "jfr-sampled"})
    void allocateAndFreeCreateNoObjectsInSteadyState(String provenance) {
        com.sun.management.ThreadMXBean threads = allocationCounter("the plain hot path");
        long self = Thread.currentThread().getId();

        // A fixed workload (sizes and which live slot to replace), generated before measuring.
        Random rnd = new Random(6);
        long[] sizes = new long[1 << 16];
        int[] victims = new int[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            int kind = rnd.nextInt(10);
            sizes[i] = kind < 6 ? 1 + rnd.nextInt(4096) // small: bins 0..4
                    : kind < 9 ? 1 + rnd.nextInt(1 << 20) // up to 1 MiB
                    : 1 + rnd.nextInt(16 << 20); // up to 16 MiB
            victims[i] = rnd.nextInt(LIVE);
        }
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false)
                .jfrAllocationSamplePeriod(provenance.equals("jfr-sampled") ? 64 : 0).build();
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true), 1L << 30, "hot", opts);
        ShardedBfcAllocator sharded = !provenance.equals("sharded") ? null : ShardedBfcAllocator.builder()
                .name("hot").memoryLimit(1L << 30).subAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true))
                .shards(2).build();
        RawCalls calls = sharded == null ? new RawCalls() {
            @Override
            public long allocate(long bytes) {
                return a.allocateRaw(256, bytes, AllocationAttributes.NO_RETRY);
            }

            @Override
            public void free(long ptr) {
                a.deallocateRaw(ptr);
            }
        } : new RawCalls() {
            @Override
            public long allocate(long bytes) {
                return sharded.allocateRaw(256, bytes);
            }

            @Override
            public void free(long ptr) {
                sharded.deallocateRaw(ptr);
            }
        };
        long[] live = new long[LIVE];
        MemoryAnnotation scope = null;
        if (provenance.equals("annotations")) {
            a.recordAnnotations(true);
            scope = MemoryAnnotation.push("hot/path", 1);
        } else if (provenance.equals("history")) {
            a.recordHistory(HistoryOptions.builder().maxEntries(1 << 12).stacks(false).build());
            scope = MemoryAnnotation.push("hot/path", 1);
        } else if (provenance.equals("sampled")) {
            a.recordHistory(HistoryOptions.builder().maxEntries(1 << 12).stackMinBytes(32 << 20).build());
            scope = MemoryAnnotation.push("hot/path", 1);
        }

        run(calls, live, sizes, victims, CALLS); // warm-up: the region exists, the JIT has compiled
        // One window in a full `mvn verify` once saw 1,672 bytes for the sharded case.
        List<Long> windows = windowsUntilOneIsClean(threads, self, CALLS, () -> run(calls, live, sizes, victims, CALLS));
        assertThat(windows.get(windows.size() - 1))
                .as("bytes of Java heap allocated by %d allocateRaw + deallocateRaw pairs (windows: %s)", CALLS,
                        windows)
                .isZero();
        if (scope != null) {
            scope.close();
        }
        a.close();
        if (sharded != null) {
            for (long ptr : live) {
                sharded.deallocateRaw(ptr);
            }
            sharded.close();
        }
    }

    /**
     * The sharded slow path, where the home shard cannot serve a call and another shard does,
     * creates no object either, so nothing can fail between the serving shard and the caller
     * (an {@link OutOfMemoryError} of the Java heap there would lose the address, and for a
     * loan its number): the calling thread's home shard is full up to the common limit, so
     * every {@code allocateRaw}, {@code allocateRawOrThrow} and loan allocation of 1 to 4 MiB is
     * served by the other shard, from a region it keeps; each is freed by the call that frees it
     * (the loan's own free for lent memory). Measured as above, in windows of 400,000 pairs.
     */
    @org.junit.jupiter.api.Test
    void allocationsServedByAnotherShardCreateNoObjectsInSteadyState() {
        com.sun.management.ThreadMXBean threads = allocationCounter("the sharded slow path");
        long self = Thread.currentThread().getId();
        long mib = 1L << 20;
        try (ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("slow").memoryLimit(64 * mib)
                .subAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true)).shards(2)
                .closePolicy(ClosePolicy.FORCE).build()) { // a failed check leaves memory in use
            BfcAllocator home = sharded.homeShard();
            BfcAllocator other = sharded.shards().get(1 - sharded.shards().indexOf(home));
            // The other shard keeps a free 32 MiB region; the home shard fills the rest of the
            // limit with 1 MiB chunks until it can serve no more of them.
            other.deallocateRaw(other.allocateRaw(256, 32 * mib));
            List<Long> filler = new ArrayList<>();
            for (long p; (p = home.tryAllocateRaw(256, mib, AllocationAttributes.NO_RETRY, 0)) != 0; ) {
                filler.add(p);
            }
            assertThat(filler).as("the home shard's 1 MiB chunks").isNotEmpty();
            MemoryAllocator.Loan loan = sharded.lendTo("a runtime of this test", "free what it lent");

            Random rnd = new Random(48);
            long[] sizes = new long[1 << 12];
            int[] victims = new int[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = mib + rnd.nextInt(3 * (int) mib + 1);
                victims[i] = rnd.nextInt(4);
            }
            long[] live = new long[4];
            boolean[] lent = new boolean[live.length];
            int calls = 400_000;
            assertThat(runElsewhere(sharded, loan, live, lent, sizes, victims, calls)).isEqualTo(calls); // warm-up
            for (long p : live) {
                assertThat(sharded.shardOf(p)).as("the shard that served 0x%x", p).isSameAs(other);
            }
            List<Long> windows = windowsUntilOneIsClean(threads, self, calls,
                    () -> runElsewhere(sharded, loan, live, lent, sizes, victims, calls));
            long allocated = windows.get(windows.size() - 1);

            assertThat(allocated).as("bytes of Java heap allocated by %d allocations served by another shard,"
                    + " and their frees (windows: %s)", calls, windows).isZero();
            assertThat(home.memoryStats().oomsTotal()).as("the home shard's failures, not reported").isZero();
            for (int v = 0; v < live.length; v++) {
                if (lent[v]) {
                    loan.deallocateRaw(live[v]);
                } else {
                    sharded.deallocateRaw(live[v]);
                }
            }
            loan.close();
            filler.forEach(home::deallocateRaw);
        }
    }

    /**
     * Replaces a random live allocation by a new one, {@code n} times, by turns through
     * {@code allocateRaw}, {@code allocateRawOrThrow} and the loan's two; returns the successes.
     */
    private static long runElsewhere(ShardedBfcAllocator a, MemoryAllocator.Loan loan, long[] live, boolean[] lent,
            long[] sizes, int[] victims, int n) {
        long ok = 0;
        int mask = sizes.length - 1;
        for (int i = 0; i < n; i++) {
            int v = victims[i & mask];
            if (lent[v]) {
                loan.deallocateRaw(live[v]);
            } else {
                a.deallocateRaw(live[v]);
            }
            long bytes = sizes[i & mask];
            switch (i & 3) {
                case 0 -> live[v] = a.allocateRaw(256, bytes);
                case 1 -> live[v] = a.allocateRawOrThrow(256, bytes);
                case 2 -> live[v] = loan.allocateRaw(256, bytes, AllocationAttributes.DEFAULT);
                default -> live[v] = loan.allocateRawOrThrow(256, bytes);
            }
            lent[v] = (i & 3) >= 2;
            if (live[v] != 0) {
                ok++;
            }
        }
        return ok;
    }

    /**
     * An uncontended {@link Allocation#close()} (no other thread closing the handle) creates no
     * object, as its javadoc's state machine promises: the handles are made before the measured
     * window (the handle object is the allocate side's), and only their closes are measured,
     * after a warm-up that compiles the close path. Leak detection off, as in HandleBenchmark.
     */
    @org.junit.jupiter.api.Test
    void anUncontendedHandleCloseCreatesNoObjects() {
        com.sun.management.ThreadMXBean threads = allocationCounter("the plain close");
        long self = Thread.currentThread().getId();
        BfcAllocator a = BfcAllocator.builder().name("hot-close").memoryLimit(1L << 30).allowGrowth(false)
                .subAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true)).leakDetection(LeakDetection.DISABLED)
                .build();
        int n = 20_000;
        Allocation[] handles = new Allocation[n];
        List<Long> windows = new ArrayList<>();
        long allocated;
        int round = 0;
        do {
            for (int i = 0; i < n; i++) {
                handles[i] = a.allocate(256L << (i % 9));
            }
            long before = threads.getThreadAllocatedBytes(self);
            for (int i = 0; i < n; i++) {
                handles[i].close();
            }
            allocated = threads.getThreadAllocatedBytes(self) - before;
            if (++round > 20) { // the first rounds warm up the close path
                windows.add(allocated);
            }
        } while (round <= 20 || allocated != 0 && windows.size() < 3);
        assertThat(allocated).as("bytes of Java heap allocated by %d uncontended Allocation.close() (windows: %s)",
                n, windows).isZero();
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
    }

    /** The two calls measured, on a {@link BfcAllocator} or a {@link ShardedBfcAllocator}. */
    private interface RawCalls {
        long allocate(long bytes);

        void free(long ptr);
    }

    /** Replaces a random live allocation by a new one, {@code n} times; returns the successes. */
    private static long run(RawCalls a, long[] live, long[] sizes, int[] victims, int n) {
        long ok = 0;
        int mask = sizes.length - 1;
        for (int i = 0; i < n; i++) {
            int v = victims[i & mask];
            a.free(live[v]);
            live[v] = a.allocate(sizes[i & mask]);
            if (live[v] != 0) {
                ok++;
            }
        }
        return ok;
    }

    /**
     * Up to three measured windows of {@code run} (which answers the allocations that
     * succeeded, all {@code calls} of them), until one allocates no byte: an allocation on the
     * path shows in every window; a one-time event of the JVM (a recompilation after a
     * deoptimization, in a suite whose earlier tests left other profiles) in one only.
     *
     * @return the bytes each window allocated, the last one 0 if any was
     */
    private static List<Long> windowsUntilOneIsClean(com.sun.management.ThreadMXBean threads, long self, long calls,
            java.util.function.LongSupplier run) {
        long baseline = threads.getThreadAllocatedBytes(self);
        long calibration = threads.getThreadAllocatedBytes(self) - baseline;
        List<Long> windows = new ArrayList<>();
        long allocated;
        do {
            long before = threads.getThreadAllocatedBytes(self);
            long succeeded = run.getAsLong();
            allocated = threads.getThreadAllocatedBytes(self) - before - calibration;
            assertThat(succeeded).as("allocations that succeeded").isEqualTo(calls);
            windows.add(allocated);
        } while (allocated != 0 && windows.size() < 3);
        return windows;
    }

    /**
     * The counter of the bytes each thread allocates; the test is skipped where the JVM has none,
     * or in the execution that checks invariants after every call (its checks allocate, on
     * purpose: they build diagnostics; -Dtest=HotPathGarbageTest also runs this class there).
     *
     * @param claim what the test's claim is about, for the skip's reason
     */
    private static com.sun.management.ThreadMXBean allocationCounter(String claim) {
        com.sun.management.ThreadMXBean threads = AllocatedBytes.counter();
        assumeTrue(!Boolean.getBoolean("bfc4j.checkInvariants"),
                "checkInvariants() after every call allocates; the claim is about " + claim);
        return threads;
    }
}
