/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * A sub-allocator that passes every call to another: the base of adaptors that change a few
 * calls (cap them, fail them, record them) and forward the rest.
 */
public abstract class ForwardingSubAllocator implements SubAllocator {

    /** Where calls go. */
    protected final SubAllocator upstream;

    /** @param upstream where calls go */
    protected ForwardingSubAllocator(SubAllocator upstream) {
        this.upstream = Objects.requireNonNull(upstream, "upstream=null (expected: the SubAllocator to forward to)");
    }

    @Override
    public Block alloc(long alignment, long numBytes) {
        return upstream.alloc(alignment, numBytes);
    }

    @Override
    public void free(long ptr, long numBytes) {
        upstream.free(ptr, numBytes);
    }

    @Override
    public boolean supportsCoalescing() {
        return upstream.supportsCoalescing();
    }

    @Override
    public MemoryType memoryType() {
        return upstream.memoryType();
    }

    @Override
    public int deviceId() {
        return upstream.deviceId();
    }
}
