/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's BFCAllocator (tensorflow/tensorflow @ 5263072435bf,
 * third_party/xla/xla/tsl/framework/bfc_allocator.{h,cc}; Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/** The port of TensorFlow's {@code BFCAllocator}. */
final class BfcPort {

    /** Upstream's {@code kMinAllocationBits}. */
    static final int MIN_ALLOCATION_BITS = 8;

    /** Upstream's {@code kMinAllocationSize}: every chunk size is a multiple of it. */
    static final long MIN_ALLOCATION_SIZE = 1L << MIN_ALLOCATION_BITS;

    /** Upstream's {@code kNumBins}. */
    static final int NUM_BINS = 21;

    /**
     * The largest request that is served by the algorithm: {@code 2^62} bytes. DEVIATION(port):
     * a larger request fails at once (returns 0). Upstream runs any {@code size_t} through the
     * algorithm, where sizes near {@code SIZE_MAX} wrap around in the rounding (newer upstream
     * versions reject them as here); in Java they would overflow the rounding and the region
     * doubling, and no memory that large exists.
     */
    static final long MAX_ALLOCATION_BYTES = 1L << 62;

    private BfcPort() {
    }

    /** Port of {@code BFCAllocator::RoundedBytes}: rounds up to a multiple of 256. */
    static long roundedBytes(long bytes) {
        return ((bytes + MIN_ALLOCATION_SIZE - 1) >>> MIN_ALLOCATION_BITS) << MIN_ALLOCATION_BITS;
    }

    /** Port of {@code BFCAllocator::BinNumForSize}: {@code min(20, floor(log2(max(bytes, 256) >> 8)))}. */
    static int binNumForSize(long bytes) {
        long v = Math.max(bytes, 256) >>> MIN_ALLOCATION_BITS;
        return Math.min(NUM_BINS - 1, 63 - Long.numberOfLeadingZeros(v));
    }

    /** Port of {@code BFCAllocator::BinNumToSize}. */
    static long binNumToSize(int index) {
        return 256L << index;
    }

    /** Upstream's {@code CHECK}: an always-on check of an internal invariant. */
    static void check(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("BFC allocator invariant violated: " + what);
        }
    }
}
