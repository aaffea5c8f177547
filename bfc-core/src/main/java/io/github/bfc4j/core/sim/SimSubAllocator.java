package io.github.bfc4j.core.sim;

import io.github.bfc4j.core.SubAllocator;

/** STUB: being written; the signatures are final. The trace format's simulated address space (docs/trace-format.md). */
public final class SimSubAllocator implements SubAllocator {
    /** @throws IllegalArgumentException if base is not a positive multiple of 256, capacity <= 0, gap < 0, or base+capacity overflows */
    public SimSubAllocator(long base, long capacity, long gap, boolean coalescing) { throw new UnsupportedOperationException(); }
    public long base() { throw new UnsupportedOperationException(); }
    public long capacity() { throw new UnsupportedOperationException(); }
    public long gap() { throw new UnsupportedOperationException(); }
    @Override public Block alloc(long alignment, long numBytes) { throw new UnsupportedOperationException(); }
    @Override public void free(long ptr, long numBytes) { throw new UnsupportedOperationException(); }
    @Override public boolean supportsCoalescing() { throw new UnsupportedOperationException(); }
    /** Bytes currently reserved (including gaps). */
    public long reservedBytes() { throw new UnsupportedOperationException(); }
}
