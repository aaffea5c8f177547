/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;

/**
 * bfc4j's {@link ShardedBfcAllocator} (one shard per available processor, growth on) on the sim
 * sub-allocator: 1 GiB in all, on a 2 GiB sim address space.
 */
final class ShardedImpl implements Impl {

    final ShardedBfcAllocator allocator;
    private final long[] ptrs;

    ShardedImpl(int slots) {
        this.allocator = ShardedBfcAllocator.builder()
                .name("bench")
                .memoryLimit(1L << 30)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true))
                .build();
        this.ptrs = new long[slots];
    }

    @Override
    public void alloc(int slot, long bytes, long alignment) {
        ptrs[slot] = allocator.allocateRaw(alignment, bytes);
    }

    @Override
    public void free(int slot) {
        long p = ptrs[slot];
        ptrs[slot] = 0;
        allocator.deallocateRaw(p);
    }

    @Override
    public void freeAll() {
        for (int s = 0; s < ptrs.length; s++) {
            if (ptrs[s] != 0) {
                free(s);
            }
        }
    }

    @Override
    public void close() {
        freeAll();
        allocator.close();
    }
}
