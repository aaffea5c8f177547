/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.SubAllocator;
import java.util.Arrays;

/**
 * A sub-allocator that records every call it passes on to its upstream (in parallel primitive
 * arrays, so recording creates no garbage once they are large enough), so that a replay can
 * compare them with a trace's {@code sub} lines.
 */
final class RecordingSubAllocator extends ForwardingSubAllocator {
    static final int ALLOC = 0;
    static final int FREE = 1;

    private int[] kinds = new int[8];
    private long[] bytes = new long[8];
    private long[] ptrs = new long[8];
    private int size;

    RecordingSubAllocator(SubAllocator upstream) {
        super(upstream);
    }

    @Override
    public Block alloc(long alignment, long numBytes) {
        Block b = upstream.alloc(alignment, numBytes);
        record(ALLOC, numBytes, b == null ? 0 : b.ptr());
        return b;
    }

    @Override
    public void free(long ptr, long numBytes) {
        record(FREE, numBytes, ptr);
        upstream.free(ptr, numBytes);
    }

    private void record(int kind, long numBytes, long ptr) {
        if (size == kinds.length) {
            kinds = Arrays.copyOf(kinds, size * 2);
            bytes = Arrays.copyOf(bytes, size * 2);
            ptrs = Arrays.copyOf(ptrs, size * 2);
        }
        kinds[size] = kind;
        bytes[size] = numBytes;
        ptrs[size] = ptr;
        size++;
    }

    /** The number of calls recorded since the last {@link #clear()}. */
    int size() {
        return size;
    }

    /** {@link #ALLOC} or {@link #FREE}. */
    int kind(int i) {
        return kinds[i];
    }

    /** The bytes asked for ({@code alloc}) or returned ({@code free}). */
    long bytes(int i) {
        return bytes[i];
    }

    /** The address returned by {@code alloc} (0 for null), or passed to {@code free}. */
    long ptr(int i) {
        return ptrs[i];
    }

    /** A recorded call in trace syntax: {@code sub alloc <bytes> => <hex|null>} or {@code sub free <hex> <bytes>}. */
    String describe(int i) {
        LineBuffer b = new LineBuffer(48);
        return (kinds[i] == ALLOC ? b.subAlloc(bytes[i], ptrs[i]) : b.subFree(ptrs[i], bytes[i])).toString();
    }

    void clear() {
        size = 0;
    }
}
