/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/** A growable list of {@code long}s, reused across calls so that it creates nothing once grown. */
public final class LongList {
    private long[] elements;
    private int size;

    /** @param initialCapacity the number of elements to make room for up front */
    public LongList(int initialCapacity) {
        elements = new long[Math.max(8, initialCapacity)];
    }

    /** @param v the element to append */
    public void add(long v) {
        if (size == elements.length) {
            elements = Arrays.copyOf(elements, size * 2);
        }
        elements[size++] = v;
    }

    /**
     * @param i a position in {@code [0, size)}
     * @return the element there
     */
    public long get(int i) {
        if (i >= size) {
            throw new IndexOutOfBoundsException("i=" + i + " (expected: < " + size + ")");
        }
        return elements[i];
    }

    /** @return the number of elements */
    public int size() {
        return size;
    }

    /** @return a copy of the elements, in order */
    public long[] toArray() {
        return Arrays.copyOf(elements, size);
    }

    /** Removes every element. */
    public void clear() {
        size = 0;
    }
}
