/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

/** An implementation whose slots hold raw addresses (0 for an empty slot): bfc4j's allocators. */
abstract class AddressSlots implements Impl {

    private final long[] ptrs;

    AddressSlots(int slots) {
        this.ptrs = new long[slots];
    }

    /** @return the address allocated, or 0 */
    abstract long allocate(long bytes, long alignment);

    /** Frees an address {@link #allocate} returned; 0 is a no-op. */
    abstract void deallocate(long ptr);

    /** Closes the allocator (every slot is empty by then). */
    abstract void closeAllocator();

    @Override
    public final void alloc(int slot, long bytes, long alignment) {
        ptrs[slot] = allocate(bytes, alignment);
    }

    @Override
    public final void free(int slot) {
        long p = ptrs[slot];
        ptrs[slot] = 0;
        deallocate(p);
    }

    @Override
    public final void freeAll() {
        for (int s = 0; s < ptrs.length; s++) {
            if (ptrs[s] != 0) {
                free(s);
            }
        }
    }

    @Override
    public final void close() {
        freeAll();
        closeAllocator();
    }
}
