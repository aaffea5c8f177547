/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::AllocationRegion (Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * A range of memory obtained from the sub-allocator (or several adjacent ranges merged into one
 * when the sub-allocator supports coalescing). Port of {@code BFCAllocator::AllocationRegion},
 * without its per-256-byte-slot handle array: the handles of all regions are in one
 * {@link AddressHandleMap}, keyed by absolute address.
 */
public final class AllocationRegion {
    private final long ptr;
    private long memorySize;
    private long endPtr;

    /**
     * @param ptr the start address
     * @param memorySize the size in bytes
     */
    public AllocationRegion(long ptr, long memorySize) {
        this.ptr = ptr;
        this.memorySize = memorySize;
        this.endPtr = ptr + memorySize;
    }

    /** @return the start address */
    public long ptr() {
        return ptr;
    }

    /** @return the address one past the end */
    public long endPtr() {
        return endPtr;
    }

    /** @return the size in bytes */
    public long memorySize() {
        return memorySize;
    }

    /**
     * Port of {@code AllocationRegion::extend}: grows the region at its end (upstream also
     * reallocates its slot array; here there is none).
     *
     * @param size the bytes added
     */
    public void extend(long size) {
        memorySize += size;
        endPtr += size;
    }

    @Override
    public String toString() {
        return "AllocationRegion[0x" + Long.toHexString(ptr) + ", 0x" + Long.toHexString(endPtr)
                + "), " + memorySize + " bytes";
    }
}
