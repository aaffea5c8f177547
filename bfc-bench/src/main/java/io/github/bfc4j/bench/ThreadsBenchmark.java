/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Aggregate allocate+free pairs per second from 1, 2, 4 and 8 threads on one allocator (JMH's
 * throughput score of a multi-threaded benchmark is the sum over its threads). Each thread
 * holds {@value #LIVE_PER_THREAD} live allocations of 64 KiB to 1 MiB and, per operation, frees
 * its oldest and allocates the next size of its own seeded sequence in its place; so the
 * allocator splits, merges and searches as the threads' blocks come and go. bfc4j is a 1 GiB
 * allocator without growth (one region) on the sim sub-allocator; bfc4j-sharded is a 1 GiB
 * {@code ShardedBfcAllocator} (one shard per available processor, each growing) on the sim
 * sub-allocator; bfc4j-shard-per-thread is the same with {@value #MAX_THREADS} shards, so that
 * each thread has a shard (and a lock) of its own: the control of the thread counts above the
 * cores, where whatever the threads lose is lost to sharing the cores, not a lock; Netty is
 * {@code PooledByteBufAllocator} with direct buffers and its per-thread caches.
 *
 * <p>{@code serial2} is the control of {@code threads2}: one thread making the calls of both
 * of its threads (the same sequences, the same live allocations), a pair of each in turn. The
 * two differ by what the second thread itself costs (the lock, the allocator's data moving
 * between cores); {@code serial2} and {@code threads1} differ by the allocator's work with
 * twice the live allocations.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-Dio.netty.leakDetection.level=disabled",
    "-Dio.netty.tryReflectionSetAccessible=true", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class ThreadsBenchmark {

    static final int MAX_THREADS = 8;
    static final int LIVE_PER_THREAD = 4;
    /**
     * Slots between two lanes' first slots, and before lane 0's: at least 256 bytes (a slot is
     * a long or a reference of 4 or more bytes), so that no lane shares a cache line, or the
     * pair of lines that an adjacent-line prefetcher fetches together, with another lane or
     * with the header of the slots array, which every thread reads (its length) on every call.
     * With lane 0 in the header's line, the other threads' reads of the length kept taking the
     * line from the thread writing lane 0: two threads on two shards then did between one and
     * two threads' work, varying from fork to fork.
     */
    static final int SLOT_STRIDE = 64;
    /** Slots in the allocator's slot array: a stride before each lane's first slot. */
    static final int SLOTS = (MAX_THREADS + 1) * SLOT_STRIDE;
    static final int SIZES = 1024;
    static final long MIN_BYTES = 64 << 10;
    static final long MAX_BYTES = 1 << 20;

    /** The allocator shared by every thread. */
    @State(Scope.Benchmark)
    public static class Shared {
        /** The allocator: bfc4j, bfc4j-sharded, bfc4j-shard-per-thread or netty. */
        @Param({Impl.BFC4J, Impl.BFC4J_SHARDED, Impl.BFC4J_SHARD_PER_THREAD, Impl.NETTY})
        public String impl;

        Impl allocator;
        final AtomicInteger nextThread = new AtomicInteger();

        /** Creates the allocator. */
        @Setup(Level.Trial)
        public void setUp() {
            allocator = Impl.create(impl, SLOTS, null);
        }

        /** Frees everything and closes the allocator. */
        @TearDown(Level.Trial)
        public void tearDown() {
            allocator.close();
        }
    }

    /** @return a size log-uniform from 64 KiB to 1 MiB */
    static long drawSize(SplittableRandom r) {
        return (long) (MIN_BYTES * Math.pow(MAX_BYTES / (double) MIN_BYTES, r.nextDouble()));
    }

    /** One sequence of calls: a thread's slots and sizes. */
    static final class Lane {
        final int firstSlot;
        final long[] sizes = new long[SIZES];
        int next;

        /**
         * @param t a lane, 0 to {@value #MAX_THREADS} - 1
         * @return the lane's first slot: a whole stride after the previous lane's (or after
         *     the slot array's start)
         */
        static int firstSlot(int t) {
            return (t + 1) * SLOT_STRIDE;
        }

        /** Draws lane {@code t}'s sizes and fills its live allocations. */
        Lane(int t, Impl allocator) {
            firstSlot = firstSlot(t);
            SplittableRandom r = new SplittableRandom(1000 + t);
            for (int i = 0; i < SIZES; i++) {
                sizes[i] = drawSize(r);
            }
            for (int i = 0; i < LIVE_PER_THREAD; i++) {
                step(allocator);
            }
        }

        /** Frees the oldest live allocation and allocates the next size in its place. */
        void step(Impl allocator) {
            int i = next++;
            int slot = firstSlot + (i & (LIVE_PER_THREAD - 1));
            allocator.free(slot);
            allocator.alloc(slot, sizes[i & (SIZES - 1)], 64);
        }
    }

    /** One thread's lane. */
    @State(Scope.Thread)
    public static class PerThread {
        Lane lane;

        /** Takes the next lane (thread t of a run has lane t). */
        @Setup(Level.Trial)
        public void setUp(Shared shared) {
            int t = shared.nextThread.getAndIncrement();
            if (t >= MAX_THREADS) {
                throw new IllegalStateException("threads=" + (t + 1) + " (expected: at most " + MAX_THREADS + ")");
            }
            lane = new Lane(t, shared.allocator);
        }
    }

    /** The two lanes of a {@code threads2} run, for one thread. */
    @State(Scope.Thread)
    public static class TwoLanes {
        Lane first;
        Lane second;
        boolean secondNext;

        /** Takes lanes 0 and 1. */
        @Setup(Level.Trial)
        public void setUp(Shared shared) {
            first = new Lane(0, shared.allocator);
            second = new Lane(1, shared.allocator);
        }
    }

    /** One thread. */
    @Benchmark
    @Threads(1)
    public void threads1(Shared shared, PerThread t) {
        t.lane.step(shared.allocator);
    }

    /** Two threads. */
    @Benchmark
    @Threads(2)
    public void threads2(Shared shared, PerThread t) {
        t.lane.step(shared.allocator);
    }

    /** Four threads. */
    @Benchmark
    @Threads(4)
    public void threads4(Shared shared, PerThread t) {
        t.lane.step(shared.allocator);
    }

    /** Eight threads. */
    @Benchmark
    @Threads(8)
    public void threads8(Shared shared, PerThread t) {
        t.lane.step(shared.allocator);
    }

    /** One thread making the calls of two threads' lanes in turn: the control of {@link #threads2}. */
    @Benchmark
    @Threads(1)
    public void serial2(Shared shared, TwoLanes lanes) {
        (lanes.secondNext ? lanes.second : lanes.first).step(shared.allocator);
        lanes.secondNext = !lanes.secondNext;
    }
}
