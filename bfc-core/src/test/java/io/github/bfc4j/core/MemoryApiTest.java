/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The memory API PyTorch users look for ({@code torch.cuda.memory_allocated},
 * {@code max_memory_allocated}, {@code memory_reserved}, {@code max_memory_reserved},
 * {@code reset_peak_memory_stats}, {@code empty_cache}) and the fragmentation that region
 * boundaries do not count.
 */
class MemoryApiTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator allocator(SimSubAllocator sim, long limit) {
        return BfcAllocator.builder().name("torch_like").memoryLimit(limit).subAllocator(sim)
                .leakDetection(LeakDetection.DISABLED).build();
    }

    @Test
    void emptyCacheGivesEveryIdleRegionBackWhateverTheGarbageCollectionOption() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 1024 * MIB, 0, false);
        try (BfcAllocator a = allocator(sim, 512 * MIB)) {
            assertThat(a.options().garbageCollection()).isFalse();
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                all.add(a.allocate(16 * MIB));
            }
            Allocation kept = a.allocate(MIB);
            all.forEach(Allocation::close);
            long reserved = a.reservedBytes();
            assertThat(reserved).isGreaterThan(128 * MIB);
            assertThat(a.regionCount()).isGreaterThan(1);
            // Every region but the one holding 'kept' goes back, and only those.
            long keptRegion = a.memoryMap().regions().stream()
                    .filter(r -> r.chunks().stream().anyMatch(MemoryMap.Chunk::inUse))
                    .mapToLong(MemoryMap.Region::size).sum();
            long released = a.emptyCache();
            assertThat(released).isEqualTo(reserved - keptRegion);
            assertThat(a.reservedBytes()).isEqualTo(keptRegion);
            assertThat(sim.reservedBytes()).isEqualTo(keptRegion);
            assertThat(a.regionCount()).isEqualTo(1);
            assertThat(a.memoryStats().releasedBytesTotal()).isEqualTo(released);
            assertThat(a.emptyCache()).isZero();
            a.checkInvariants();
            kept.close();
            assertThat(a.emptyCache()).isEqualTo(keptRegion);
            assertThat(a.reservedBytes()).isZero();
            assertThat(sim.reservedBytes()).isZero();
            // It works on afterwards, obtaining regions as needed.
            try (Allocation again = a.allocate(20 * MIB)) {
                assertThat(a.reservedBytes()).isGreaterThanOrEqualTo(20 * MIB);
            }
            a.checkInvariants();
        }
    }

    @Test
    void emptyCacheKeepsARegionWhoseFreeChunkIsNotYetSafeAndTheSummarySaysSo() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, false);
        try (BfcAllocator a = new BfcAllocator(sim, 64 * MIB, "stamped",
                BfcOptions.builder().allowRetryOnFailure(false).build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            long p = a.allocateRaw(64, MIB);
            a.deallocateRaw(p); // stamped, not safe until the frontier passes its count
            assertThat(a.emptyCache()).isZero();
            assertThat(a.reservedBytes()).isEqualTo(2 * MIB);
            assertThat(a.memorySummary()).as("what the free memory waits for")
                    .contains("| Not yet safe: 1.00MiB in 1 free chunk (freed on busy streams)");
            // As upstream's MergeTimestampedChunks (freed_at_count < safe_frontier_): a frontier
            // equal to the stamp does not make the chunk safe yet.
            a.setSafeFrontier(counter.get());
            assertThat(a.emptyCache()).isZero();
            a.setSafeFrontier(counter.next() + 1);
            assertThat(a.memorySummary()).doesNotContain("Not yet safe");
            assertThat(a.emptyCache()).isEqualTo(2 * MIB);
            assertThat(a.reservedBytes()).isZero();
            a.checkInvariants();
        }
    }

    @Test
    void emptyCacheOnAClosedAllocatorDoesNothing() {
        BfcAllocator a = allocator(new SimSubAllocator(BASE, 256 * MIB, 0, false), 64 * MIB);
        a.allocate(MIB).close();
        a.close();
        assertThat(a.emptyCache()).isZero();
    }

    @Test
    void resetPeakStatsResetsThePeaksOnlyAndClearStatsTheOthers() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, false), 512 * MIB)) {
            Allocation big = a.allocate(100 * MIB);
            Allocation small = a.allocate(MIB);
            long bigChunk = big.size();
            long smallChunk = small.size();
            big.close();
            a.emptyCache(); // the big region goes: reserved drops below its peak
            assertThat(a.bytesInUse()).isEqualTo(smallChunk);
            assertThat(a.peakBytesInUse()).isEqualTo(bigChunk + smallChunk);
            assertThat(a.peakReservedBytes()).isGreaterThan(a.reservedBytes());
            assertThat(a.memoryStats().peakActiveAllocations()).isEqualTo(2);
            AllocatorStats before = a.getStats();

            a.resetPeakStats();
            assertThat(a.peakBytesInUse()).isEqualTo(smallChunk);
            assertThat(a.peakReservedBytes()).isEqualTo(a.reservedBytes());
            assertThat(a.memoryStats().peakActiveAllocations()).isEqualTo(1);
            AllocatorStats after = a.getStats();
            assertThat(after.numAllocs()).isEqualTo(before.numAllocs()).isEqualTo(2);
            assertThat(after.largestAllocSize()).isEqualTo(before.largestAllocSize()).isEqualTo(bigChunk);
            assertThat(a.memoryStats().allocationsTotal()).isEqualTo(2);

            // clearStats is upstream's: the allocation counters and the in-use peak, not the pool peak.
            Allocation more = a.allocate(10 * MIB);
            more.close();
            long peakReserved = a.peakReservedBytes();
            a.clearStats();
            assertThat(a.getStats().numAllocs()).isZero();
            assertThat(a.getStats().largestAllocSize()).isZero();
            assertThat(a.peakBytesInUse()).isEqualTo(smallChunk);
            assertThat(a.peakReservedBytes()).isEqualTo(peakReserved);
            small.close();
            a.checkInvariants();
        }
    }

    @Test
    void anIdlePoolOfSeveralRegionsIsNotFragmentedWithinItsRegions() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, false), 512 * MIB)) {
            // Growth: a 2 MiB region, then a 4 MiB one; all free.
            a.allocate(MIB).close();
            a.allocate(3 * MIB).close();
            assertThat(a.regionCount()).isEqualTo(2);
            assertThat(a.bytesInUse()).isZero();
            assertThat(a.fragmentation()).isCloseTo(1 - 4.0 / 6, within(1e-12));
            assertThat(a.fragmentationWithinRegions()).isZero();
            assertThat(a.memoryStats().fragmentationWithinRegions()).isZero();
            // A hole inside a region is fragmentation either way: [1 MiB free][1 MiB used] in the
            // 2 MiB region, [2 MiB used][2 MiB free] in the 4 MiB one.
            Allocation x = a.allocate(MIB);
            Allocation y = a.allocate(MIB);
            x.close();
            Allocation z = a.allocate(2 * MIB);
            MemoryStats m = a.memoryStats();
            long free = m.freeBytesInPool();
            assertThat(free).isEqualTo(3 * MIB);
            assertThat(m.fragmentationWithinRegions()).isZero(); // each region: one free chunk
            assertThat(m.fragmentation()).isCloseTo(1 - 2.0 / 3, within(1e-12));
            y.close();
            z.close();
            assertThat(a.fragmentationWithinRegions()).isZero();
        }
    }

    @Test
    void aHoleInsideARegionCountsWithinRegions() {
        try (BfcAllocator a = BfcAllocator.builder().name("one_region").memoryLimit(8 * MIB).allowGrowth(false)
                .subAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false)).build()) {
            Allocation[] x = new Allocation[8];
            for (int i = 0; i < 8; i++) {
                x[i] = a.allocate(MIB);
            }
            x[1].close();
            x[4].close();
            x[5].close();
            // One region: free chunks of 1 MiB and 2 MiB.
            assertThat(a.fragmentationWithinRegions()).isCloseTo(1 - 2.0 / 3, within(1e-12))
                    .isEqualTo(a.fragmentation());
            for (int i : new int[] {0, 2, 3, 6, 7}) {
                x[i].close();
            }
            assertThat(a.fragmentationWithinRegions()).isZero();
        }
    }
}
