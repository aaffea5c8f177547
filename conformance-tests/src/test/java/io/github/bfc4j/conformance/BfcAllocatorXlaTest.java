/*
 * Copyright 2026 The bfc4j Authors.
 * Port of third_party/xla/xla/tsl/framework/bfc_allocator_test.cc (Copyright 2026 The OpenXLA
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static io.github.bfc4j.conformance.UpstreamTestSupport.checkInvariants;
import static io.github.bfc4j.conformance.UpstreamTestSupport.seed;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Ports of the {@code BFCAllocatorTest} tests of third_party/xla/xla/tsl/framework/
 * bfc_allocator_test.cc (read at tensorflow/tensorflow 0eb4958023ea37857ad09a1fb57d4fcebb4f154a;
 * the file is newer than the reference commit) that apply to the classic algorithm. The
 * spatial-partitioning tests, the allocation-annotation log test and the cases of alignments
 * above 256 bytes are not ported: the reference has neither feature (its alignment is
 * only passed on to the sub-allocator). See docs/conformance.md.
 *
 * <p>Upstream's {@code FakeSubAllocator} bump-allocates from {@code 1 << 40} without
 * coalescing; a non-coalescing {@link SimSubAllocator} at that base stands in for it.
 * {@code BFCAllocator::Options{}} is {@link BfcOptions#defaults()}.
 */
class BfcAllocatorXlaTest {

    /** Upstream's {@code kAlignment = Allocator::kAllocatorAlignment}. */
    private static final long K_ALIGNMENT = 64;

    /** Upstream's {@code FakeSubAllocator::kBase}. */
    private static final long K_BASE = 1L << 40;

    private static SimSubAllocator fakeSubAllocator() {
        return new SimSubAllocator(K_BASE, 1L << 36, 0, false);
    }

    private static boolean isAligned(long ptr, long alignment) {
        return (ptr & (alignment - 1)) == 0;
    }

    @Test
    void allocateAndFree() {
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 1 << 20, "test",
                BfcOptions.defaults())) {
            long ptr = alloc.allocateRaw(64, 512);
            assertThat(ptr).isNotZero();
            alloc.deallocateRaw(ptr);
        }
    }

    @Test
    void defaultAlignment() {
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 1 << 20, "test",
                BfcOptions.defaults())) {
            // BFC always returns pointers aligned to at least kAllocatorAlignment (64).
            long ptr = alloc.allocateRaw(K_ALIGNMENT, 1);
            assertThat(ptr).isNotZero();
            assertThat(isAligned(ptr, K_ALIGNMENT)).isTrue();
            alloc.deallocateRaw(ptr);
        }
    }

    /**
     * Upstream requests {@code SIZE_MAX - 1}; the Java counterpart of the largest size is
     * {@code Long.MAX_VALUE - 1}, whose rounding up to 256 would overflow a {@code long}.
     */
    @Test
    void rejectsAllocationWhoseRoundedSizeWouldOverflow() {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 1 << 20, "test", opts)) {
            assertThat(alloc.allocateRaw(K_ALIGNMENT, Long.MAX_VALUE - 1)).isZero();
        }
    }

    /**
     * Upstream's {@code AlwaysFailingSubAllocator}: fails every {@code alloc}; after
     * {@value #K_FUSE} calls it records a failure and starts succeeding, so that a backpedal loop
     * that makes no progress ends the test instead of hanging it.
     */
    private static final int K_FUSE = 1000;

    private static final class AlwaysFailingSubAllocator implements SubAllocator {
        int calls;
        boolean fuseBlown;
        long next = K_BASE;

        @Override
        public Block alloc(long alignment, long numBytes) {
            if (++calls > K_FUSE) {
                fuseBlown = true;
                long aligned = (next + (alignment - 1)) & ~(alignment - 1);
                next = aligned + numBytes;
                return new Block(aligned, numBytes);
            }
            return null;
        }

        @Override
        public void free(long ptr, long numBytes) {
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    /**
     * Regression test for the backpedal loop of {@code Extend} (upstream's fix is newer than the
     * reference, which loops forever here; the port's fix is deviation #1
     * in docs/deviations.md). A pool of 8 * 256 = 2048 bytes makes the first backpedal attempt
     * land where rounding undoes the shrink: RoundedBytes(0.9 * 2048) == 2048.
     */
    @Test
    void extendTerminatesWhenSubAllocatorAlwaysFails() {
        final long kPool = 8 * BfcAllocator.MIN_ALLOCATION_SIZE;
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false)
                .build();
        AlwaysFailingSubAllocator sub = new AlwaysFailingSubAllocator();
        try (BfcAllocator alloc = new BfcAllocator(sub, kPool, "backpedal", opts)) {
            assertThat(alloc.allocateRaw(K_ALIGNMENT, 100)).isZero();
            assertThat(sub.fuseBlown).as("Extend retried %d times; the backpedal loop is making"
                    + " no progress", K_FUSE).isFalse();
            assertThat(sub.calls).isLessThanOrEqualTo(K_FUSE);
        }
    }

    /**
     * Port of {@code BFCAllocatorAlignmentTest.RespectsRequestedAlignment} for the alignments
     * the classic algorithm guarantees (every chunk starts at a multiple of 256 from a region
     * start the sub-allocator aligned to at least 256). Upstream's 512..4096 cases are not
     * ported: the reference does not honour alignments above 256 for chunks.
     */
    @ParameterizedTest(name = "alignment={0}")
    @ValueSource(longs = {32, 64, 128, 256})
    void respectsRequestedAlignment(long alignment) {
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 1 << 20, "test",
                BfcOptions.defaults())) {
            // Allocate a small block first to push the arena cursor off any "lucky" alignment,
            // then allocate with the requested alignment.
            long filler = alloc.allocateRaw(K_ALIGNMENT, 256);
            assertThat(filler).isNotZero();

            final int kTrials = 8;
            long[] ptrs = new long[kTrials];
            for (int i = 0; i < kTrials; ++i) {
                ptrs[i] = alloc.allocateRaw(alignment, 256);
                assertThat(ptrs[i]).isNotZero();
                assertThat(isAligned(ptrs[i], alignment)).as("Allocation %d at 0x%x not aligned to"
                        + " %d", i, ptrs[i], alignment).isTrue();
            }
            for (int i = 0; i < kTrials; ++i) {
                alloc.deallocateRaw(ptrs[i]);
            }
            alloc.deallocateRaw(filler);
        }
    }

    /**
     * Port of {@code StressAllocFree}: allocate and free chunks of varying sizes and alignments in
     * randomised order. Upstream shuffles with {@code std::mt19937(42)} and
     * {@code std::shuffle}, whose sequence is library-specific; the port shuffles with a seeded
     * {@link Random} (seed 42 unless {@code -Dbfc4j.test.seed}). The alignment check is kept for
     * the alignments the classic algorithm guarantees (up to 256); see
     * {@link #respectsRequestedAlignment}.
     */
    @Test
    void stressAllocFree() {
        long seed = seed("stressAllocFree", 42);
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 16 << 20, "stress",
                BfcOptions.defaults())) {
            final long[] kAlignments = {64, 256, 512, 1024, 4096};
            final long[] kSizes = {1, 128, 256, 700, 1024, 4096, 8192};
            final int kIterations = 20;
            final int kCopies = 10;

            // Build 10 copies of each (alignment, size) pair = 350 allocations.
            List<long[]> specs = new ArrayList<>();
            for (int c = 0; c < kCopies; ++c) {
                for (long align : kAlignments) {
                    for (long size : kSizes) {
                        specs.add(new long[] {align, size});
                    }
                }
            }

            Random rng = new Random(seed);
            for (int iter = 0; iter < kIterations; ++iter) {
                // Shuffle allocation order each iteration.
                Collections.shuffle(specs, rng);

                List<Long> ptrs = new ArrayList<>(specs.size());
                UpstreamTestSupport.Shadow shadow =
                        new UpstreamTestSupport.Shadow(alloc, "seed=" + seed + " iter=" + iter);
                // Allocate all.
                for (long[] spec : specs) {
                    long ptr = alloc.allocateRaw(spec[0], spec[1]);
                    assertThat(ptr).as("seed=%d: Failed at iter=%d size=%d alignment=%d", seed,
                            iter, spec[1], spec[0]).isNotZero();
                    if (spec[0] <= BfcAllocator.MIN_ALLOCATION_SIZE) {
                        assertThat(isAligned(ptr, spec[0])).as("seed=%d iter=%d ptr=0x%x"
                                + " alignment=%d", seed, iter, ptr, spec[0]).isTrue();
                    }
                    shadow.allocated(ptr, spec[1]);
                    ptrs.add(ptr);
                }
                checkInvariants(alloc, false, "seed=" + seed + " iter=" + iter + " allocated");

                // Shuffle deallocation order so free/coalesce paths vary.
                Collections.shuffle(ptrs, rng);
                for (long ptr : ptrs) {
                    alloc.deallocateRaw(ptr);
                    shadow.freed(ptr);
                }
                checkInvariants(alloc, false, "seed=" + seed + " iter=" + iter + " freed");
            }
        }
    }

    /**
     * Upstream's {@code FakeSubAllocator(hardcoded_alignment)}: bump-allocates from
     * {@code kBase}, aligning every block to {@code hardcodedAlignment} whatever alignment the
     * allocator asks for (as GPU sub-allocators do: cudaMalloc returns 256-byte aligned memory).
     */
    private static final class HardcodedAlignmentSubAllocator implements SubAllocator {
        private final long hardcodedAlignment;
        private long next = K_BASE;

        HardcodedAlignmentSubAllocator(long hardcodedAlignment) {
            this.hardcodedAlignment = hardcodedAlignment;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            long aligned = (next + (hardcodedAlignment - 1)) & ~(hardcodedAlignment - 1);
            next = aligned + numBytes;
            return new Block(aligned, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    /**
     * Port of {@code AlignmentWithHardcodedSubAllocatorAlignment} (called
     * {@code AlignmentWithGpuLikeSubAllocator} in an earlier version of the file): the
     * sub-allocator ignores the requested alignment and returns 256-byte aligned blocks. Upstream
     * loops over the alignments 256, 512, 1024 and 4096; only 256 is ported, as in
     * {@link #respectsRequestedAlignment}: the reference does not honour alignments above 256
     * for chunks.
     */
    @Test
    void alignmentWithHardcodedSubAllocatorAlignment() {
        final long kHardcodedAlignment = 256;
        try (BfcAllocator alloc = new BfcAllocator(
                new HardcodedAlignmentSubAllocator(kHardcodedAlignment), 1 << 20,
                "hardcoded_alignment", BfcOptions.defaults())) {
            // Push the cursor off any lucky alignment.
            long filler = alloc.allocateRaw(K_ALIGNMENT, 256);
            assertThat(filler).isNotZero();

            final long[] kAlignments = {kHardcodedAlignment}; // upstream: also 512, 1024, 4096
            final int kTrials = 8;
            for (long alignment : kAlignments) {
                for (int i = 0; i < kTrials; ++i) {
                    long ptr = alloc.allocateRaw(alignment, 256);
                    assertThat(ptr).isNotZero();
                    assertThat(isAligned(ptr, alignment))
                            .as("ptr=0x%x alignment=%d", ptr, alignment).isTrue();
                    alloc.deallocateRaw(ptr);
                }
            }
            alloc.deallocateRaw(filler);
        }
    }

    /**
     * Port of {@code GetAndClearMemoryStats}. Upstream also checks
     * {@code peak_allocated_bytes}, a field the classic {@code AllocatorStats} does not have;
     * those checks are not ported.
     */
    @Test
    void getAndClearMemoryStats() {
        try (BfcAllocator alloc = new BfcAllocator(fakeSubAllocator(), 256 << 20, "test_stats",
                BfcOptions.defaults())) {
            AllocatorStats initialStats = alloc.getStats();
            assertThat(initialStats).isNotNull();
            assertThat(initialStats.bytesInUse()).isZero();
            assertThat(initialStats.peakBytesInUse()).isZero();

            final long kAllocSize1 = 1024;
            long ptr1 = alloc.allocateRaw(K_ALIGNMENT, kAllocSize1);
            assertThat(ptr1).isNotZero();

            AllocatorStats statsAfterAlloc1 = alloc.getStats();
            assertThat(statsAfterAlloc1.bytesInUse()).isEqualTo(1024);
            assertThat(statsAfterAlloc1.peakBytesInUse()).isEqualTo(1024);

            final long kAllocSize2 = 2048;
            long ptr2 = alloc.allocateRaw(K_ALIGNMENT, kAllocSize2);
            assertThat(ptr2).isNotZero();

            AllocatorStats statsAfterAlloc2 = alloc.getStats();
            assertThat(statsAfterAlloc2.bytesInUse()).isEqualTo(3072);
            assertThat(statsAfterAlloc2.peakBytesInUse()).isEqualTo(3072);

            alloc.deallocateRaw(ptr2);

            AllocatorStats statsAfterFree = alloc.getStats();
            assertThat(statsAfterFree.bytesInUse()).isEqualTo(1024);
            assertThat(statsAfterFree.peakBytesInUse()).isEqualTo(3072);

            assertThat(alloc.clearStats()).isTrue();
            AllocatorStats statsAfterClear = alloc.getStats();
            assertThat(statsAfterClear.bytesInUse()).isEqualTo(1024);
            assertThat(statsAfterClear.peakBytesInUse()).isEqualTo(1024);

            alloc.deallocateRaw(ptr1);
        }
    }
}
