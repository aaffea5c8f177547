/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;

/**
 * bfc4j's {@link ShardedBfcAllocator} (growth on) on the sim sub-allocator: 1 GiB in all, on a
 * 2 GiB sim address space.
 */
final class ShardedImpl extends AddressSlots {

    /** Shards of {@link Impl#BFC4J_SHARD_PER_THREAD}: one for each of the threads benchmark's threads. */
    static final int PER_THREAD_SHARDS = ThreadsBenchmark.MAX_THREADS;

    final ShardedBfcAllocator allocator;

    /**
     * @param slots the number of slots
     * @param shards the number of shards (threads get them in turn, one each)
     */
    ShardedImpl(int slots, int shards) {
        super(slots);
        this.allocator = ShardedBfcAllocator.builder()
                .name("bench")
                .memoryLimit(1L << 30)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true))
                .shards(shards)
                .build();
    }

    @Override
    long allocate(long bytes, long alignment) {
        return allocator.allocateRaw(alignment, bytes);
    }

    @Override
    void deallocate(long ptr) {
        allocator.deallocateRaw(ptr);
    }

    @Override
    void closeAllocator() {
        allocator.close();
    }
}
