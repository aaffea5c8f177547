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
 * <p>Each thread that reads the meters has its own snapshot (a registry scrapes on the thread
 * that asks for the scrape), so that two scrapes at once, on two threads, each read one snapshot
 * of their own instead of renewing the other's half way through it. A thread's snapshot is
 * replaced when that thread reads a meter it has already read from it (its next scrape has
 * begun) or when it is older than {@link #MAX_AGE_NANOS}, so that direct reads of single meters
 * stay fresh. Holds the allocator (or its read-only view) weakly, like Micrometer's own gauges:
 * once it is unreachable every meter reads NaN.
 *
 * @param <T> what the statistics are read from: a {@code BfcAllocatorView} or a
 *     {@code ShardedBfcAllocator}
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
    private final ThreadLocal<Round> rounds = ThreadLocal.withInitial(Round::new);

    /** One thread's snapshot, and which meters that thread has read from it. */
    private static final class Round {
        final boolean[] read = new boolean[BfcAllocatorMeters.values().length];
        MemoryStats current;
        long takenAtNanos;
    }

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
     * The meter's value from the calling thread's snapshot (taking a new one if due).
     *
     * @param meter the meter
     * @return its value, NaN if the allocator is gone
     */
    double read(BfcAllocatorMeters meter) {
        Round r = rounds.get();
        int i = meter.ordinal();
        long now = nanoTime.getAsLong();
        if (r.current == null || r.read[i] || now - r.takenAtNanos > MAX_AGE_NANOS) {
            T a = allocator.get();
            if (a == null) {
                r.current = null;
                return Double.NaN;
            }
            r.current = stats.apply(a);
            r.takenAtNanos = now;
            java.util.Arrays.fill(r.read, false);
        }
        r.read[i] = true;
        return meter.valueOf(r.current);
    }
}
