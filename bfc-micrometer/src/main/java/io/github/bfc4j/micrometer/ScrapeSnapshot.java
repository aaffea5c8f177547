/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import io.github.bfc4j.core.MemoryStats;
import java.lang.ref.WeakReference;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * One {@link MemoryStats} snapshot shared by all meters of one allocator during a scrape, so that
 * the series of one scrape agree with each other (frees never exceed allocations, used never
 * exceeds the pool) and a scrape takes the allocator's lock once.
 *
 * <p>A snapshot is replaced when a meter that has already read it reads again (the next scrape
 * has begun) or when it is older than {@link #MAX_AGE_NANOS}, so that direct reads of single
 * meters stay fresh. Holds the allocator (or its read-only view) weakly, like Micrometer's own
 * gauges: once it is unreachable every meter reads NaN.
 *
 * @param <T> what the statistics are read from: a {@code BfcAllocator} or a
 *     {@code BfcAllocatorView}
 */
final class ScrapeSnapshot<T> {

    /**
     * How long one snapshot may serve: longer than a scrape (a few ms warm; a first scrape on a
     * loaded 2-core machine was measured at 250 ms), and it bounds how stale a meter read on its
     * own can be.
     */
    static final long MAX_AGE_NANOS = 1_000_000_000L;

    private final WeakReference<T> allocator;
    private final Function<? super T, MemoryStats> stats;
    private final Predicate<? super T> closed;
    private final LongSupplier nanoTime;
    private final boolean[] read = new boolean[BfcAllocatorMeters.values().length];
    private MemoryStats current;
    private long takenAtNanos;

    ScrapeSnapshot(T allocator, Function<? super T, MemoryStats> stats, Predicate<? super T> closed,
            LongSupplier nanoTime) {
        this.allocator = new WeakReference<>(allocator);
        this.stats = stats;
        this.closed = closed;
        this.nanoTime = nanoTime;
    }

    /**
     * Whether the meters read {@code target}.
     *
     * @param target an allocator or a view
     * @return true if it is the one this snapshot reads (the same object)
     */
    boolean reads(Object target) {
        return allocator.get() == target;
    }

    /**
     * Whether what the meters read is still open: neither closed nor collected.
     *
     * @return true while the allocator can still change
     */
    boolean readsAnOpenAllocator() {
        T a = allocator.get();
        return a != null && !closed.test(a);
    }

    /**
     * The meter's value from the current snapshot (taking a new one if due).
     *
     * @param meter the meter
     * @return its value, NaN if the allocator is gone
     */
    synchronized double read(BfcAllocatorMeters meter) {
        int i = meter.ordinal();
        long now = nanoTime.getAsLong();
        if (current == null || read[i] || now - takenAtNanos > MAX_AGE_NANOS) {
            T a = allocator.get();
            if (a == null) {
                current = null;
                return Double.NaN;
            }
            current = stats.apply(a);
            takenAtNanos = now;
            java.util.Arrays.fill(read, false);
        }
        read[i] = true;
        return meter.valueOf(current);
    }
}
