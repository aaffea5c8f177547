/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::AllocationRegion (Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * A range of memory obtained from the sub-allocator (or several adjacent ranges merged into one
 * when the sub-allocator supports coalescing). Port of {@code BFCAllocator::AllocationRegion};
 * its per-256-byte-slot handle array is made sparse: the region keeps one directory entry per
 * 64 KiB of its memory, and {@link AddressHandleMap} the pages of slots those entries point to.
 */
public final class AllocationRegion {
    private final long ptr;
    private long memorySize;
    private long endPtr;

    /**
     * One entry per 64 KiB of the region ({@link AddressHandleMap#PIECE_SHIFT}): 0 when no chunk
     * starts there, {@code h + 1} when exactly one chunk (h) does and has no page, or
     * {@code ~index} of the page of slots in {@link AddressHandleMap}. Written by that class.
     */
    int[] dir;

    /**
     * Whether every chunk start is a multiple of 256 bytes from {@link #ptr()}: then an
     * address that is not cannot be a chunk start, and a page's slot needs no check against the
     * chunk's address. False once the region was extended at an odd size (a sub-allocator may
     * hand out more bytes than asked, not a multiple of 256).
     */
    boolean exactSlots = true;

    /**
     * @param ptr the start address
     * @param memorySize the size in bytes
     */
    public AllocationRegion(long ptr, long memorySize) {
        this.ptr = ptr;
        this.memorySize = memorySize;
        this.endPtr = ptr + memorySize;
        this.dir = new int[dirLength(memorySize)];
    }

    private static int dirLength(long memorySize) {
        long n = (memorySize + (1L << AddressHandleMap.PIECE_SHIFT) - 1) >>> AddressHandleMap.PIECE_SHIFT;
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("memorySize=" + memorySize
                    + " (expected: a region below 128 TiB)");
        }
        return (int) n;
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
     * Port of {@code AllocationRegion::extend}: grows the region at its end (slow path: the
     * directory is copied, as upstream reallocates its slot array).
     *
     * @param size the bytes added
     */
    public void extend(long size) {
        if ((memorySize & (AddressHandleMap.SLOT_BYTES - 1)) != 0) {
            exactSlots = false;
        }
        memorySize += size;
        endPtr += size;
        dir = Arrays.copyOf(dir, dirLength(memorySize));
    }

    /** @return bytes of heap held by the directory */
    long dirHeapBytes() {
        return 16 + 4L * dir.length;
    }

    @Override
    public String toString() {
        return "AllocationRegion[0x" + Long.toHexString(ptr) + ", 0x" + Long.toHexString(endPtr)
                + "), " + memorySize + " bytes";
    }
}
