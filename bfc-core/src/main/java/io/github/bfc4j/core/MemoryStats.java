/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * A consistent snapshot (taken under the allocator's lock, in one acquisition) of every figure
 * bfc4j keeps beyond upstream's {@link AllocatorStats}. Returned by
 * {@link BfcAllocator#memoryStats()}; the metrics binder and {@link BfcAllocator#memorySummary()}
 * read it.
 *
 * <p>Terms. <b>In use</b>: bytes of chunks handed out (chunk sizes, multiples of 256, as
 * upstream's {@code bytes_in_use}). <b>Reserved</b>: bytes of the regions held from the
 * sub-allocator, i.e. upstream's {@code pool_bytes} (upstream's {@code bytes_reserved} is a
 * different, always-0 figure in the classic allocator). <b>Free in pool</b>:
 * {@code reserved - inUse}.
 *
 * <p>The {@code ...Total} counters count from the allocator's creation and are never reset
 * ({@link BfcAllocator#clearStats()} resets only upstream's figures, and
 * {@link BfcAllocator#resetPeakStats()} only the peaks).
 *
 * @param bytesInUse upstream's {@code bytes_in_use}
 * @param peakBytesInUse upstream's {@code peak_bytes_in_use} (reset by {@code clearStats} and
 *     {@code resetPeakStats})
 * @param allocatedBytesTotal sum of the chunk sizes of every successful allocation
 * @param freedBytesTotal sum of the chunk sizes of every free
 * @param reservedBytes bytes of regions held from the sub-allocator (upstream's pool bytes)
 * @param peakReservedBytes the largest {@code reservedBytes} since creation or
 *     {@code resetPeakStats} (upstream's peak pool bytes)
 * @param reservedBytesTotal sum of the bytes of every region extend
 * @param releasedBytesTotal sum of the bytes of every region given back by garbage collection
 *     or {@link BfcAllocator#emptyCache()}
 * @param activeAllocations allocations not yet freed ({@code allocationsTotal - freesTotal})
 * @param peakActiveAllocations the largest {@code activeAllocations} since creation or
 *     {@code resetPeakStats}
 * @param allocationsTotal successful allocations
 * @param freesTotal frees
 * @param oomsTotal allocation calls that returned 0 for a non-zero request
 * @param regionCount regions held now (adjacent ranges merged by a coalescing sub-allocator
 *     count once)
 * @param regionExtendsTotal successful {@code Extend} calls (sub-allocator {@code alloc}s)
 * @param regionFreesTotal regions given back by garbage collection ({@code DeallocateRegions})
 *     or {@link BfcAllocator#emptyCache()}; {@link BfcAllocator#close()} is not counted
 * @param largestFreeChunkBytes the largest free chunk, 0 if none
 * @param fragmentation {@code 1 - largestFreeChunkBytes / (reservedBytes - bytesInUse)}, 0 when
 *     nothing is free: upstream's {@code GetFragmentation} (0 = all free memory in one chunk,
 *     near 1 = free memory scattered in small chunks)
 * @param bytesLimit the memory limit
 * @param fragmentationWithinRegions {@code 1 - (sum over regions of each region's largest free
 *     chunk) / (reservedBytes - bytesInUse)}, 0 when nothing is free: fragmentation that region
 *     boundaries do not count (an idle pool of several regions reads 0, where
 *     {@code fragmentation} reads more); not in upstream
 * @param bytesHeldForViews bytes of regions given back (by garbage collection,
 *     {@link BfcAllocator#emptyCache()} or {@link BfcAllocator#close()}) whose memory waits for
 *     Java views of it to be collected before it goes to the sub-allocator
 *     ({@link BfcAllocator#bytesHeldForViews()}); not counted in {@code reservedBytes}; not in
 *     upstream
 */
public record MemoryStats(
        long bytesInUse,
        long peakBytesInUse,
        long allocatedBytesTotal,
        long freedBytesTotal,
        long reservedBytes,
        long peakReservedBytes,
        long reservedBytesTotal,
        long releasedBytesTotal,
        long activeAllocations,
        long peakActiveAllocations,
        long allocationsTotal,
        long freesTotal,
        long oomsTotal,
        long regionCount,
        long regionExtendsTotal,
        long regionFreesTotal,
        long largestFreeChunkBytes,
        double fragmentation,
        long bytesLimit,
        double fragmentationWithinRegions,
        long bytesHeldForViews) {

    /**
     * Bytes reserved but not in use.
     *
     * @return {@code reservedBytes - bytesInUse}
     */
    public long freeBytesInPool() {
        return reservedBytes - bytesInUse;
    }
}
