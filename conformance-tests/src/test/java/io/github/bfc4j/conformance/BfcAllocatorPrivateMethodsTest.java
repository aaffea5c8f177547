/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's tensorflow/core/common_runtime/gpu/gpu_bfc_allocator_test.cc
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static io.github.bfc4j.conformance.UpstreamTestSupport.checkInvariants;
import static io.github.bfc4j.conformance.UpstreamTestSupport.gpuBfcOptions;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.conformance.BfcAllocatorTest.SubAllocatorKind;
import io.github.bfc4j.conformance.UpstreamTestSupport.DumpBin;
import io.github.bfc4j.conformance.UpstreamTestSupport.DumpRegion;
import io.github.bfc4j.conformance.UpstreamTestSupport.MemoryDump;
import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocator.BinDebugInfo;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Ports of {@code GPUBFCAllocatorPrivateMethodsTest} and
 * {@code GPUBFCAllocatorPrivateMethodsTest_SubAllocatorSpecific} from
 * tensorflow/core/common_runtime/gpu/gpu_bfc_allocator_test.cc (233739d9, plus the tests only the
 * 0f563557 version has). Upstream is a friend of {@code BFCAllocator} and reads private state;
 * the port observes the same facts through the public API:
 *
 * <ul>
 *   <li>{@code get_bin_debug_info()}: {@link BfcAllocator#getBinDebugInfo()};
 *   <li>{@code RecordMemoryMap()} (a {@code MemoryDump} protobuf, not ported): the bin and chunk
 *       lines of {@link BfcAllocator#dumpMemoryLog}, which carry the same figures;
 *   <li>{@code curr_region_allocation_bytes_}: the size of the first region the allocator asks
 *       its {@link SimSubAllocator} for;
 *   <li>{@code DeallocateFreeRegions(0)}: garbage collection as an allocation triggers it, with a
 *       sub-allocator too small for the retried Extend, so only the collection's effect stays;
 *   <li>{@code region_manager_.regions()}: the dump's {@code Next region of size} sections.
 * </ul>
 */
class BfcAllocatorPrivateMethodsTest {

    static Stream<SubAllocatorKind> subAllocators() {
        return BfcAllocatorTest.subAllocators();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("subAllocators")
    void binDebugInfo(SubAllocatorKind kind) {
        try (BfcAllocator a = new BfcAllocator(kind.create(1L << 32), 1 << 30, "GPU_0_bfc",
                gpuBfcOptions(false))) {
            List<Long> initialPtrs = new ArrayList<>();
            List<Long> initialPtrsAllocatedSizes = new ArrayList<>();
            final int kNumTestSizes = 5;
            final int kNumChunksPerSize = 2;
            for (int i = 0; i < kNumTestSizes; i++) {
                for (int j = 0; j < kNumChunksPerSize; j++) {
                    long size = 256L << i;
                    long raw = a.allocateRaw(1, size);
                    assertThat(raw).isNotZero();
                    initialPtrs.add(raw);
                    initialPtrsAllocatedSizes.add(a.allocatedSize(raw));
                }
            }

            List<BinDebugInfo> binInfos = a.getBinDebugInfo();

            {
                // MemoryDump md = a.RecordMemoryMap(): its chunks and bin summaries, as
                // DumpMemoryLog prints them.
                MemoryDump md = checkInvariants(a, false, "after allocations");
                assertThat(md.chunkCount()).isEqualTo(1 + (kNumTestSizes * kNumChunksPerSize));
                for (int i = 0; i < BfcAllocator.NUM_BINS; i++) {
                    BinDebugInfo binInfo = binInfos.get(i);
                    DumpBin binSummary = md.bins().get(i);
                    if (i < kNumTestSizes) {
                        final long requestedSize = 2 * (256L << i);
                        assertThat(a.requestedSize(initialPtrs.get(2 * i))
                                + a.requestedSize(initialPtrs.get(2 * i + 1)))
                                .isEqualTo(requestedSize);
                        long allocatedSize = initialPtrsAllocatedSizes.get(2 * i)
                                + initialPtrsAllocatedSizes.get(2 * i + 1);
                        assertThat(binInfo.totalBytesInUse()).as("bin %d", i)
                                .isEqualTo(allocatedSize);
                        assertThat(binSummary.totalBytesInUse()).as("bin %d", i)
                                .isEqualTo(allocatedSize);
                        assertThat(binInfo.totalBytesInBin()).as("bin %d", i)
                                .isEqualTo(allocatedSize);
                        assertThat(binSummary.totalBytesInBin()).as("bin %d", i)
                                .isEqualTo(allocatedSize);
                        assertThat(binInfo.totalRequestedBytesInUse()).as("bin %d", i)
                                .isEqualTo(requestedSize);
                        assertThat(binInfo.totalChunksInUse()).as("bin %d", i)
                                .isEqualTo(kNumChunksPerSize);
                        assertThat(binSummary.totalChunksInUse()).as("bin %d", i)
                                .isEqualTo(kNumChunksPerSize);
                        assertThat(binInfo.totalChunksInBin()).as("bin %d", i)
                                .isEqualTo(kNumChunksPerSize);
                        assertThat(binSummary.totalChunksInBin()).as("bin %d", i)
                                .isEqualTo(kNumChunksPerSize);
                    } else {
                        assertThat(binInfo.totalBytesInUse()).as("bin %d", i).isZero();
                        assertThat(binSummary.totalBytesInUse()).as("bin %d", i).isZero();
                        assertThat(binInfo.totalRequestedBytesInUse()).as("bin %d", i).isZero();
                        assertThat(binInfo.totalChunksInUse()).as("bin %d", i).isZero();
                        assertThat(binSummary.totalChunksInUse()).as("bin %d", i).isZero();
                        if (i == BfcAllocator.NUM_BINS - 1) {
                            assertThat(binInfo.totalBytesInBin()).as("bin %d", i).isPositive();
                            assertThat(binSummary.totalBytesInBin()).as("bin %d", i).isPositive();
                            assertThat(binInfo.totalChunksInBin()).as("bin %d", i).isEqualTo(1);
                            assertThat(binSummary.totalChunksInBin()).as("bin %d", i)
                                    .isEqualTo(1);
                        } else {
                            assertThat(binInfo.totalBytesInBin()).as("bin %d", i).isZero();
                            assertThat(binSummary.totalBytesInBin()).as("bin %d", i).isZero();
                            assertThat(binInfo.totalChunksInBin()).as("bin %d", i).isZero();
                            assertThat(binSummary.totalChunksInBin()).as("bin %d", i).isZero();
                        }
                    }
                }
            }

            for (int i = 1; i < initialPtrs.size(); i += 2) {
                a.deallocateRaw(initialPtrs.get(i));
                initialPtrs.set(i, 0L);
            }
            checkInvariants(a, false, "after frees");
            binInfos = a.getBinDebugInfo();
            for (int i = 0; i < BfcAllocator.NUM_BINS; i++) {
                BinDebugInfo binInfo = binInfos.get(i);
                if (i < 5) {
                    // We cannot assert the exact number of bytes or chunks in the bin, because it
                    // depends on what chunks were coalesced.
                    long requestedSize = 256L << i;
                    assertThat(a.requestedSize(initialPtrs.get(2 * i))).isEqualTo(requestedSize);
                    assertThat(binInfo.totalBytesInUse()).as("bin %d", i)
                            .isEqualTo(initialPtrsAllocatedSizes.get(2 * i));
                    assertThat(binInfo.totalBytesInBin()).as("bin %d", i)
                            .isGreaterThanOrEqualTo(initialPtrsAllocatedSizes.get(2 * i));
                    assertThat(binInfo.totalRequestedBytesInUse()).as("bin %d", i)
                            .isEqualTo(requestedSize);
                    assertThat(binInfo.totalChunksInUse()).as("bin %d", i).isEqualTo(1);
                    assertThat(binInfo.totalChunksInBin()).as("bin %d", i)
                            .isGreaterThanOrEqualTo(1);
                } else {
                    assertThat(binInfo.totalBytesInUse()).as("bin %d", i).isZero();
                    assertThat(binInfo.totalRequestedBytesInUse()).as("bin %d", i).isZero();
                    assertThat(binInfo.totalChunksInUse()).as("bin %d", i).isZero();
                }
            }
        }
    }

    /**
     * Port of {@code Log2FloorNonZeroSlow} (0f563557 version; later versions dropped it). The
     * private helper has no Java counterpart; the closest public behaviour is
     * {@code binNumForSize(v << 8) = Log2FloorNonZero(v)} for {@code v >= 1}. Upstream's
     * {@code Log2FloorNonZeroSlow(0) == -1} has no public counterpart (sizes below 256 map to bin
     * 0) and is not ported.
     */
    @Test
    void log2FloorNonZeroSlow() {
        long[][] cases = {{1, 0}, {2, 1}, {3, 1}, {1023, 9}, {1024, 10}, {1025, 10}};
        for (long[] c : cases) {
            assertThat(BfcAllocator.binNumForSize(c[0] << BfcAllocator.MIN_ALLOCATION_BITS))
                    .as("Log2FloorNonZero(%d)", c[0]).isEqualTo((int) c[1]);
        }
    }

    /**
     * Port of {@code ForceAllowGrowth}. {@code TF_FORCE_GPU_ALLOW_GROWTH} is read by
     * {@code GPUBFCAllocator}, not by the core allocator, so the port constructs each of
     * upstream's four allocators with the {@code allow_growth} the variable leads to (unset:
     * option true; unparseable: option true; "true": forced true over option false; "false":
     * forced false over option true) and checks upstream's numbers for
     * {@code curr_region_allocation_bytes_}, observed as the first region requested.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("subAllocators")
    void forceAllowGrowth(SubAllocatorKind kind) {
        // Unset flag value uses provided option.
        assertThat(firstRegionBytes(kind, 1L << 31, "GPU_0_bfc", true))
                .isEqualTo(BfcAllocator.roundedBytes(2 << 20));
        // Unparseable flag value uses provided option.
        assertThat(firstRegionBytes(kind, 1L << 31, "GPU_1_bfc", true))
                .isEqualTo(BfcAllocator.roundedBytes(2 << 20));
        // Max of 2GiB total memory. Env variable set forces allow_growth, which does an initial
        // allocation of 1MiB.
        assertThat(firstRegionBytes(kind, 1L << 31, "GPU_2_bfc", true))
                .isEqualTo(BfcAllocator.roundedBytes(2 << 20));
        // If env variable forces allow_growth disabled, all available memory is allocated.
        assertThat(firstRegionBytes(kind, 1L << 31, "GPU_3_bfc", false))
                .isEqualTo(BfcAllocator.roundedBytes(1L << 31));
    }

    private static long firstRegionBytes(SubAllocatorKind kind, long totalMemory, String name,
            boolean allowGrowth) {
        SimSubAllocator sim = kind.create(1L << 32);
        try (BfcAllocator a = new BfcAllocator(sim, totalMemory, name, gpuBfcOptions(allowGrowth))) {
            assertThat(sim.reservedBytes()).isZero();
            long p = a.allocateRaw(1, 1);
            assertThat(p).isNotZero();
            assertThat(a.getStats().poolBytes()).isEqualTo(sim.reservedBytes());
            a.deallocateRaw(p);
            return sim.reservedBytes();
        }
    }

    /**
     * Port of {@code TestRegionDeallocation}. Upstream calls the private
     * {@code DeallocateFreeRegions(0)} directly; here an allocation triggers it: its request is
     * larger than {@code limit - pool_bytes} (so Extend fails) but not larger than that plus the
     * free regions (so garbage collection runs), and the simulated device has no room for the
     * Extend retried after the collection, so the allocation fails and the state is the
     * collection's. The 2 GiB limit, growth and the 128 allocations of 4 MiB are upstream's.
     */
    @Test
    void testRegionDeallocation() {
        // Max of 2GiB, but starts out small. The device (sim) holds 512 MiB.
        SimSubAllocator sim = BfcAllocatorTest.DEVICE_MEM.create(512L << 20);
        BfcOptions options = gpuBfcOptions(true).toBuilder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(sim, 1L << 31, "GPU_0_bfc", options)) {
            // Allocate 128 raw pointers of 4 megs.
            final long size = 1L << 22;
            List<Long> initialPtrs = new ArrayList<>();
            for (int s = 0; s < 128; s++) {
                long raw = a.allocateRaw(1, size);
                assertThat(raw).isNotZero();
                initialPtrs.add(raw);
            }

            // Make sure there are more than 1 regions in preparation for the test.
            MemoryDump md = checkInvariants(a, false, "after allocations");
            assertThat(md.regions().size()).isGreaterThan(1);
            long lastRegionBytes = md.regions().get(md.regions().size() - 1).size();

            // Deallocate all the memories except the last one.
            for (int i = 0; i < initialPtrs.size() - 1; i++) {
                a.deallocateRaw(initialPtrs.get(i));
            }

            // Deallocate free regions and there shall be only one region left.
            AllocatorStats before = a.getStats();
            long available = before.bytesLimit() - before.poolBytes();
            long gcTrigger = available + (1L << 20);
            assertThat(a.allocateRaw(1, gcTrigger)).as("allocation that triggers GC").isZero();
            AllocatorStats after = a.getStats();
            assertThat(after.poolBytes()).as("pool_bytes after GC").isEqualTo(lastRegionBytes);
            assertThat(after.peakPoolBytes()).as("peak_pool_bytes after GC")
                    .isEqualTo(before.peakPoolBytes());
            assertThat(sim.reservedBytes()).isEqualTo(lastRegionBytes);
            md = checkInvariants(a, false, "after GC");
            assertThat(md.regions()).hasSize(1);

            // There should be only one chunk left in bins.
            long numChunksInBins = 0;
            for (BinDebugInfo bin : a.getBinDebugInfo()) {
                numChunksInBins += bin.totalChunksInBin() - bin.totalChunksInUse();
            }
            assertThat(numChunksInBins).isEqualTo(1);
        }
    }

    /**
     * Port of {@code TestNoRegionDeallocation} (0f563557 version, CUDA >= 10.2): with a
     * coalescing sub-allocator the 128 allocations live in one region, and garbage collection
     * finds nothing to free. Triggered as in {@link #testRegionDeallocation()}.
     */
    @Test
    void testNoRegionDeallocation() {
        // Max of 2GiB, but starts out small. The device (sim) holds 512 MiB.
        SimSubAllocator sim = BfcAllocatorTest.VIRTUAL_MEM.create(512L << 20);
        BfcOptions options = gpuBfcOptions(true).toBuilder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(sim, 1L << 31, "GPU_0_bfc", options)) {
            // Allocate 128 raw pointers of 4 megs.
            final long size = 1L << 22;
            List<Long> initialPtrs = new ArrayList<>();
            for (int s = 0; s < 128; s++) {
                long raw = a.allocateRaw(1, size);
                assertThat(raw).isNotZero();
                initialPtrs.add(raw);
            }

            MemoryDump md = checkInvariants(a, false, "after allocations");
            assertThat(md.regions()).hasSize(1);

            // Deallocate all the memories except the last one.
            for (int i = 0; i < initialPtrs.size() - 1; i++) {
                a.deallocateRaw(initialPtrs.get(i));
            }

            // Deallocate free regions and there should still be only one.
            AllocatorStats before = a.getStats();
            long gcTrigger = before.bytesLimit() - before.poolBytes() + (1L << 20);
            assertThat(a.allocateRaw(1, gcTrigger, AllocationAttributes.NO_RETRY)).isZero();
            assertThat(a.getStats().poolBytes()).isEqualTo(before.poolBytes());
            assertThat(sim.reservedBytes()).isEqualTo(before.poolBytes());
            md = checkInvariants(a, false, "after failed GC");
            assertThat(md.regions()).hasSize(1);
            DumpRegion region = md.regions().get(0);
            assertThat(region.size()).isEqualTo(512L << 20);
        }
    }
}
