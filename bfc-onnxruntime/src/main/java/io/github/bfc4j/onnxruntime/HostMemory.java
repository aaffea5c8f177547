/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.ShardedBfcAllocator;

/**
 * The bfc4j allocator behind a {@link BfcOrtAllocator}: one {@link BfcAllocator}, or a
 * {@link ShardedBfcAllocator} for sessions run from many threads at once. What the callbacks
 * and their messages need of it.
 */
interface HostMemory {

    /** @return the allocator's name */
    String name();

    /** @return the kind of memory it hands out */
    MemoryType memoryType();

    /** @return what closing it does with live allocations */
    ClosePolicy closePolicy();

    /** As {@link BfcAllocator#allocateRaw(long, long)}: the address, or 0 if out of memory. */
    long allocateRaw(long alignment, long bytes);

    /** As {@link BfcAllocator#deallocateRaw(long)}. */
    void deallocateRaw(long ptr);

    /** @return bytes of chunks in use */
    long bytesInUse();

    /** @return "in use, reserved, limit, largest free chunk", for an out-of-memory message */
    String figures();

    /** @return the allocator itself */
    Object allocator();

    static HostMemory of(BfcAllocator bfc) {
        return new Plain(bfc);
    }

    static HostMemory of(ShardedBfcAllocator sharded) {
        return new Sharded(sharded);
    }

    private static String figures(long inUse, long reserved, long limit, long largestFree) {
        return BfcAllocator.humanReadableNumBytes(inUse) + " in use, " + BfcAllocator.humanReadableNumBytes(reserved)
                + " reserved, limit " + BfcAllocator.humanReadableNumBytes(limit) + ", largest free chunk "
                + BfcAllocator.humanReadableNumBytes(largestFree);
    }

    /** One {@link BfcAllocator}. */
    record Plain(BfcAllocator allocator) implements HostMemory {
        @Override
        public String name() {
            return allocator.name();
        }

        @Override
        public MemoryType memoryType() {
            return allocator.getMemoryType();
        }

        @Override
        public ClosePolicy closePolicy() {
            return allocator.closePolicy();
        }

        @Override
        public long allocateRaw(long alignment, long bytes) {
            return allocator.allocateRaw(alignment, bytes);
        }

        @Override
        public void deallocateRaw(long ptr) {
            allocator.deallocateRaw(ptr);
        }

        @Override
        public long bytesInUse() {
            return allocator.bytesInUse();
        }

        @Override
        public String figures() {
            MemoryStats s = allocator.memoryStats();
            return HostMemory.figures(s.bytesInUse(), s.reservedBytes(), s.bytesLimit(), s.largestFreeChunkBytes());
        }
    }

    /** A {@link ShardedBfcAllocator}: each calling thread allocates from its own shard. */
    record Sharded(ShardedBfcAllocator allocator) implements HostMemory {
        @Override
        public String name() {
            return allocator.name();
        }

        @Override
        public MemoryType memoryType() {
            return allocator.getMemoryType();
        }

        @Override
        public ClosePolicy closePolicy() {
            return allocator.closePolicy();
        }

        @Override
        public long allocateRaw(long alignment, long bytes) {
            return allocator.allocateRaw(alignment, bytes);
        }

        @Override
        public void deallocateRaw(long ptr) {
            allocator.deallocateRaw(ptr);
        }

        @Override
        public long bytesInUse() {
            return allocator.bytesInUse();
        }

        @Override
        public String figures() {
            return HostMemory.figures(allocator.bytesInUse(), allocator.reservedBytes(), allocator.memoryLimit(),
                    allocator.largestFreeChunkBytes());
        }
    }
}
