/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

/**
 * A growable ring buffer of {@code int}s: the {@code std::deque<ChunkHandle>} of upstream's
 * timestamp queue without boxing. Grows (doubling) only when full. Not thread-safe.
 */
public final class IntDeque {
    /**
     * Runs before the array grows: a test's way to fail there (an {@link OutOfMemoryError}).
     * Null but in tests.
     */
    static volatile Runnable beforeGrowth;

    private int[] elements;
    private int head;
    private int size;

    /** @param initialCapacity the number of elements to make room for up front */
    public IntDeque(int initialCapacity) {
        elements = new int[Math.max(8, Integer.highestOneBit(Math.max(1, initialCapacity - 1)) << 1)];
    }

    /** @return true if there is no element */
    public boolean isEmpty() {
        return size == 0;
    }

    /** @return the number of elements */
    public int size() {
        return size;
    }

    /**
     * Appends an element, growing the array if it is full.
     *
     * @param v the element to append at the back
     * @throws OutOfMemoryError if the array must grow and cannot; the deque is unchanged then
     */
    public void pushBack(int v) {
        if (size == elements.length) {
            grow(elements.length * 2);
        }
        elements[(head + size) & (elements.length - 1)] = v;
        size++;
    }

    /**
     * Makes room for {@code n} elements in all, so that pushes up to that size do not grow
     * the array (and so cannot fail): for a caller that must grow before it changes anything.
     *
     * @param n the number of elements to hold
     * @throws OutOfMemoryError if the array must grow and cannot; the deque is unchanged then
     */
    public void ensureCapacity(int n) {
        if (n > elements.length) {
            grow(Integer.highestOneBit(n - 1) << 1);
        }
    }

    /** Moves the elements to a new array of {@code capacity} (a power of two, > size). */
    private void grow(int capacity) {
        final Runnable hook = beforeGrowth;
        if (hook != null) {
            hook.run();
        }
        int[] bigger = new int[capacity];
        for (int i = 0; i < size; i++) {
            bigger[i] = elements[(head + i) & (elements.length - 1)];
        }
        elements = bigger;
        head = 0;
    }

    /**
     * Removes the front element.
     *
     * @return the front element
     * @throws java.util.NoSuchElementException if empty
     */
    public int popFront() {
        if (size == 0) {
            throw new java.util.NoSuchElementException("IntDeque is empty");
        }
        int v = elements[head];
        head = (head + 1) & (elements.length - 1);
        size--;
        return v;
    }

    /**
     * The element at a position, 0 being the front.
     *
     * @param i the position
     * @return the element
     * @throws IndexOutOfBoundsException if {@code i} is not in {@code [0, size)}
     */
    public int get(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("i=" + i + " (expected: 0.." + (size - 1) + ")");
        }
        return elements[(head + i) & (elements.length - 1)];
    }

    /** Removes every element. */
    public void clear() {
        head = 0;
        size = 0;
    }
}
