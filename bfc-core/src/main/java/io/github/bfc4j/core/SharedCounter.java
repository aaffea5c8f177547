/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::SharedCounter (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A counter shared between allocators and the code that knows when memory freed at a given
 * count is safe to reuse (e.g. a GPU stream's completed work). Port of {@code tsl::SharedCounter}.
 * Starts at 0; the first {@link #next()} returns 1.
 */
public final class SharedCounter {
    private final AtomicLong value = new AtomicLong();

    /** Creates a counter at 0. */
    public SharedCounter() {
    }

    /**
     * The current value.
     *
     * @return the value last returned by {@link #next()}, or 0
     */
    public long get() {
        return value.get();
    }

    /**
     * Advances the counter.
     *
     * @return the new value
     */
    public long next() {
        return value.incrementAndGet();
    }
}
