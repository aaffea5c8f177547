/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.TestThreads;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Threads hammering one allocator on real memory. Every live allocation is entered in a shared
 * interval map (an overlap with another live one fails at once) and stamped at both ends with
 * its owner and id (checked before it is freed). Afterwards nothing is in use, every region is
 * one free chunk again, and the stats add up.
 */
class ConcurrentAllocationTest {

    private static final long MIB = 1L << 20;
    private static final int STEPS_PER_THREAD = 200_000;

    @ParameterizedTest(name = "{0} threads")
    @ValueSource(ints = {2, 4, 8})
    void threadsNeverGetOverlappingMemoryAndEverythingComesBack(int threads) throws Exception {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("concurrent").memoryLimit(2L << 30).subAllocator(sub).build();
        long allocations = runThreads("threadsNeverGetOverlappingMemoryAndEverythingComesBack", threads, a::allocate);
        AllocatorStats stats = a.getStats();
        assertThat(stats.bytesInUse()).isZero();
        assertThat(stats.numAllocs()).isEqualTo(allocations);
        assertThat(stats.poolBytes()).isEqualTo(sub.liveBytes());
        long chunks = 0;
        long chunkBytes = 0;
        for (BfcAllocator.BinDebugInfo info : a.getBinDebugInfo()) {
            assertThat(info.totalChunksInUse()).isZero();
            chunks += info.totalChunksInBin();
            chunkBytes += info.totalBytesInBin();
        }
        assertThat(chunks).as("one free chunk per region").isEqualTo(sub.liveRegions());
        assertThat(chunkBytes).isEqualTo(stats.poolBytes());
        a.close();
        Returned.assertAllReturned(sub, a::bytesHeldForViews);
    }

    /**
     * The same on a {@link ShardedBfcAllocator} of three shards (so that two threads share one),
     * whose shards take their regions from one host sub-allocator: afterwards every shard is
     * empty and consistent, and the shards hold exactly the bytes the sub-allocator handed out.
     */
    @ParameterizedTest(name = "{0} threads, sharded")
    @ValueSource(ints = {4})
    void threadsOnAShardedAllocatorNeverGetOverlappingMemory(int threads) throws Exception {
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded").memoryLimit(2L << 30)
                .subAllocator(sub).shards(3).build();
        long allocations = runThreads("threadsOnAShardedAllocatorNeverGetOverlappingMemory", threads, a::allocate);
        AllocatorStats stats = a.getStats();
        assertThat(stats.bytesInUse()).isZero();
        assertThat(stats.numAllocs()).isEqualTo(allocations);
        assertThat(a.reservedBytes()).isEqualTo(sub.liveBytes()).isEqualTo(stats.poolBytes());
        assertThat(a.shards()).allSatisfy(shard -> {
            shard.checkInvariants();
            assertThat(shard.getStats().numAllocs()).as("%s served", shard.name()).isPositive();
        });
        a.close();
        Returned.assertAllReturned(sub, a::bytesHeldForViews);
    }

    /**
     * Runs {@code threads} threads of {@link #run} (seeded, the seed printed) on one allocator.
     *
     * @return the allocations made
     */
    private static long runThreads(String test, int threads, LongFunction<Allocation> allocate) throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println(test + "[" + threads + "]: seed=" + seed + "; replay with -Dbfc4j.test.seed=" + seed);
        ConcurrentSkipListMap<Long, Long> liveRanges = new ConcurrentSkipListMap<>(Long::compareUnsigned);
        AtomicLong allocations = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long threadSeed = seed + t;
                int owner = t;
                done.add(pool.submit(() -> {
                    run(allocate, liveRanges, new SplittableRandom(threadSeed), owner, allocations);
                    return null;
                }));
            }
            for (int t = 0; t < threads; t++) {
                TestThreads.getOrFail(TestThreads.RUN_LIMIT, "seed " + seed + ": thread " + t + "'s allocations",
                        done.get(t));
            }
        } finally {
            pool.shutdownNow();
        }
        return allocations.get();
    }

    private static void run(LongFunction<Allocation> allocate, ConcurrentSkipListMap<Long, Long> liveRanges,
            SplittableRandom random, int owner, AtomicLong allocations) {
        List<Allocation> mine = new ArrayList<>();
        for (int step = 0; step < STEPS_PER_THREAD; step++) {
            if (!mine.isEmpty() && (mine.size() >= 64 || random.nextBoolean())) {
                Allocation x = mine.remove(random.nextInt(mine.size()));
                BytePointer p = x.asPointer();
                long stamp = stamp(owner, x);
                assertThat(p.getLong(0)).as("head stamp of %s", x).isEqualTo(stamp);
                assertThat(p.getLong(x.requestedSize() - 8)).as("tail stamp of %s", x).isEqualTo(~stamp);
                assertThat(liveRanges.remove(x.address())).isEqualTo(x.address() + x.size());
                x.close();
            } else {
                long bytes = random.nextInt(20) == 0 ? 16 + random.nextLong(MIB) : 16 + random.nextLong(16 << 10);
                Allocation x = allocate.apply(bytes);
                allocations.incrementAndGet();
                long start = x.address();
                long end = start + x.size();
                Map.Entry<Long, Long> below = liveRanges.floorEntry(start);
                Map.Entry<Long, Long> above = liveRanges.ceilingEntry(start);
                assertThat(liveRanges.putIfAbsent(start, end)).as("%s starts at a live allocation", x).isNull();
                if (below != null) {
                    assertThat(Long.compareUnsigned(below.getValue(), start)).as("%s overlaps the one below", x).isLessThanOrEqualTo(0);
                }
                if (above != null) {
                    assertThat(Long.compareUnsigned(end, above.getKey())).as("%s overlaps the one above", x).isLessThanOrEqualTo(0);
                }
                BytePointer p = x.asPointer();
                long stamp = stamp(owner, x);
                p.putLong(0, stamp);
                p.putLong(bytes - 8, ~stamp);
                mine.add(x);
            }
        }
        for (Allocation x : mine) {
            liveRanges.remove(x.address());
            x.close();
        }
    }

    /** Unique among live allocations: the owner and the address (ids are unique per shard only). */
    private static long stamp(int owner, Allocation x) {
        return ((long) owner << 48) ^ (x.address() >>> 6);
    }
}
