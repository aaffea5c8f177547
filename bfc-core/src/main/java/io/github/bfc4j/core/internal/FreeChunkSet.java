/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Bin::FreeChunkSet
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.TreeSet;

/**
 * The free chunks of one bin, ordered by upstream's {@code ChunkComparator}: size, then address
 * (both unsigned). Port of {@code BFCAllocator::Bin::FreeChunkSet}, an {@code std::set} of
 * chunk handles.
 *
 * <p>The API speaks {@code int} handles only, so the representation behind it can change
 * without touching the allocator. Walk a set in order with
 * {@code for (int h = s.first(); h != NONE; h = s.higher(h))}.
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class FreeChunkSet {

    /** Returned where there is no such handle. */
    public static final int NONE = ChunkTable.INVALID_CHUNK_HANDLE;

    private final ChunkTable chunks;
    private final TreeSet<Integer> set;

    /** @param chunks the table whose sizes and addresses order the handles */
    public FreeChunkSet(ChunkTable chunks) {
        this.chunks = chunks;
        this.set = new TreeSet<>(chunks::compare);
    }

    /** @return true if the set holds no chunk */
    public boolean isEmpty() {
        return set.isEmpty();
    }

    /** @return the number of chunks in the set */
    public int size() {
        return set.size();
    }

    /**
     * Adds a chunk, ordered by its current size and address (neither may change while it is in).
     *
     * @param h a live handle
     * @return false if it was already in
     */
    public boolean add(int h) {
        return set.add(chunks.box(h));
    }

    /**
     * @param h a live handle
     * @return false if it was not in
     */
    public boolean remove(int h) {
        return set.remove(chunks.box(h));
    }

    /**
     * @param h a live handle
     * @return true if it is in
     */
    public boolean contains(int h) {
        return set.contains(chunks.box(h));
    }

    /**
     * The first chunk at or after (size, ptr) in the order.
     *
     * @param size the size to search from
     * @param ptr the address to search from, among chunks of exactly {@code size}
     * @return its handle, or {@link #NONE}
     */
    public int ceiling(long size, long ptr) {
        return unbox(set.ceiling(chunks.setProbe(size, ptr)));
    }

    /**
     * @param h a handle in the set
     * @return the next chunk after {@code h} in the order, or {@link #NONE}
     */
    public int higher(int h) {
        return unbox(set.higher(chunks.box(h)));
    }

    /** @return the smallest chunk (lowest address among equals), or {@link #NONE} */
    public int first() {
        return set.isEmpty() ? NONE : set.first();
    }

    /** @return the largest chunk (highest address among equals), or {@link #NONE} */
    public int last() {
        return set.isEmpty() ? NONE : set.last();
    }

    /** Removes every chunk. */
    public void clear() {
        set.clear();
    }

    private static int unbox(Integer h) {
        return h == null ? NONE : h;
    }
}
