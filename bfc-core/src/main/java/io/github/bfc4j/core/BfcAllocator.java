package io.github.bfc4j.core;

/** STUB: being written; the signatures are final. */
public final class BfcAllocator implements AutoCloseable {
    public static final int MIN_ALLOCATION_BITS = 8;
    public static final long MIN_ALLOCATION_SIZE = 1L << MIN_ALLOCATION_BITS;
    public static final int NUM_BINS = 21;

    /** @throws IllegalArgumentException on bad values (negative limit, null sub, fraction whose threshold truncates to 0) */
    public BfcAllocator(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts) { throw new UnsupportedOperationException(); }
    public String name() { throw new UnsupportedOperationException(); }
    /** Returns address or 0 (null) on failure or numBytes == 0. Throws IllegalArgumentException on negative numBytes or alignment not a power of two. Uses AllocationAttributes.DEFAULT. */
    public long allocateRaw(long alignment, long numBytes) { throw new UnsupportedOperationException(); }
    public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) { throw new UnsupportedOperationException(); }
    /** ptr 0 is a no-op. Unknown or double free: IllegalArgumentException, allocator unchanged. */
    public void deallocateRaw(long ptr) { throw new UnsupportedOperationException(); }
    public boolean tracksAllocationSizes() { return true; }
    /** Throws IllegalArgumentException when ptr is not the start of a chunk of this allocator. */
    public long requestedSize(long ptr) { throw new UnsupportedOperationException(); }
    public long allocatedSize(long ptr) { throw new UnsupportedOperationException(); }
    public long allocationId(long ptr) { throw new UnsupportedOperationException(); }
    public AllocatorStats getStats() { throw new UnsupportedOperationException(); }
    public boolean clearStats() { throw new UnsupportedOperationException(); }
    public void setTimingCounter(SharedCounter sc) { throw new UnsupportedOperationException(); }
    public void setSafeFrontier(long count) { throw new UnsupportedOperationException(); }
    public MemoryType getMemoryType() { throw new UnsupportedOperationException(); }
    public static long roundedBytes(long bytes) { throw new UnsupportedOperationException(); }
    public static int binNumForSize(long bytes) { throw new UnsupportedOperationException(); }
    /** Upstream's RenderOccupancy (100 chars). */
    public String renderOccupancy() { throw new UnsupportedOperationException(); }
    /** Upstream's DumpMemoryLog, returned as text. */
    public String dumpMemoryLog(long numBytes) { throw new UnsupportedOperationException(); }
    /** Upstream destructor: frees every region to the sub-allocator. Later calls throw IllegalStateException. */
    @Override public void close() { throw new UnsupportedOperationException(); }
}
