/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::AllocatorStats (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.Serializable;
import java.util.Locale;

/**
 * A snapshot of an allocator's statistics, exactly as TensorFlow's classic
 * {@code BFCAllocator::GetStats()} reports them. Port of {@code tsl::AllocatorStats}.
 *
 * <p>In this (classic) version {@code bytesReserved}, {@code peakBytesReserved} and
 * {@code largestFreeBlockBytes} are never set and are always 0.
 *
 * @param numAllocs successful allocations since creation or the last {@code clearStats}
 * @param bytesInUse bytes of chunks in use (chunk sizes, not requests)
 * @param peakBytesInUse the largest {@code bytesInUse} since creation or {@code clearStats}
 * @param largestAllocSize the largest chunk handed out since creation or {@code clearStats}
 * @param bytesLimit the memory limit
 * @param bytesReserved always 0 in the classic allocator
 * @param peakBytesReserved always 0 in the classic allocator
 * @param largestFreeBlockBytes always 0 in the classic allocator
 * @param poolBytes the total size of the regions currently held from the sub-allocator
 * @param peakPoolBytes the largest {@code poolBytes} since creation (upstream never resets it;
 *     here {@code BfcAllocator.resetPeakStats()} does, {@code clearStats()} does not)
 */
public record AllocatorStats(
        long numAllocs,
        long bytesInUse,
        long peakBytesInUse,
        long largestAllocSize,
        long bytesLimit,
        long bytesReserved,
        long peakBytesReserved,
        long largestFreeBlockBytes,
        long poolBytes,
        long peakPoolBytes) implements Serializable {

    /**
     * Renders the stats the way upstream's {@code AllocatorStats::DebugString} does: eight lines,
     * each a label padded to 18 characters and a number right-aligned in 20, ended by
     * {@code '\n'} on every platform, in ASCII digits whatever the default locale.
     *
     * @return a multi-line, human-readable summary
     */
    public String debugString() {
        return String.format(Locale.ROOT,
                "Limit:            %20d\n"
                        + "InUse:            %20d\n"
                        + "MaxInUse:         %20d\n"
                        + "NumAllocs:        %20d\n"
                        + "MaxAllocSize:     %20d\n"
                        + "Reserved:         %20d\n"
                        + "PeakReserved:     %20d\n"
                        + "LargestFreeBlock: %20d\n",
                bytesLimit, bytesInUse, peakBytesInUse, numAllocs, largestAllocSize,
                bytesReserved, peakBytesReserved, largestFreeBlockBytes);
    }
}
