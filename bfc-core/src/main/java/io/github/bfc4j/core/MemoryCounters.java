/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * The counters beyond upstream's statistics ({@link MemoryStats} reports them): plain
 * {@code long}s that the port bumps at its event points, with the allocator's lock held, on
 * paths that run anyway. Counted from the allocator's creation, never reset. Guarded by the
 * allocator's lock.
 */
final class MemoryCounters {
    private long allocationsTotal;
    private long allocatedBytesTotal;
    private long peakActiveAllocations;
    private long freesTotal;
    private long freedBytesTotal;
    private long oomsTotal;
    private long regionExtendsTotal;
    private long reservedBytesTotal;
    private long regionFreesTotal;
    private long releasedBytesTotal;

    /** An allocation of a chunk of {@code chunkBytes}. */
    void allocated(long chunkBytes) {
        allocatedBytesTotal += chunkBytes;
        ++allocationsTotal;
        peakActiveAllocations = Math.max(peakActiveAllocations, allocationsTotal - freesTotal);
    }

    /** A free of a chunk of {@code chunkBytes}. */
    void freed(long chunkBytes) {
        ++freesTotal;
        freedBytesTotal += chunkBytes;
    }

    /** A region of {@code bytes} obtained from the sub-allocator. */
    void regionObtained(long bytes) {
        ++regionExtendsTotal;
        reservedBytesTotal += bytes;
    }

    /** A region of {@code bytes} given back by garbage collection. */
    void regionReturned(long bytes) {
        ++regionFreesTotal;
        releasedBytesTotal += bytes;
    }

    /** The peaks restart from the current values ({@code resetPeakStats}). */
    void resetPeaks() {
        peakActiveAllocations = allocationsTotal - freesTotal;
    }

    /** A failed allocation. */
    void outOfMemory() {
        ++oomsTotal;
    }

    long allocationsTotal() {
        return allocationsTotal;
    }

    long allocatedBytesTotal() {
        return allocatedBytesTotal;
    }

    long peakActiveAllocations() {
        return peakActiveAllocations;
    }

    long freesTotal() {
        return freesTotal;
    }

    long freedBytesTotal() {
        return freedBytesTotal;
    }

    long oomsTotal() {
        return oomsTotal;
    }

    long regionExtendsTotal() {
        return regionExtendsTotal;
    }

    long reservedBytesTotal() {
        return reservedBytesTotal;
    }

    long regionFreesTotal() {
        return regionFreesTotal;
    }

    long releasedBytesTotal() {
        return releasedBytesTotal;
    }
}
