/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcAllocator;

/**
 * Watches a {@link WorkloadRunner} replay, one call at a time: for timelines, progress bars,
 * snapshots of the memory map at chosen calls.
 */
@FunctionalInterface
public interface WorkloadListener {

    /**
     * Called after each call line ({@code alloc}, {@code free}, {@code frontier},
     * {@code clear_stats}) has been made on the allocator.
     *
     * @param step what the call did; the same object is reused for every call, so it is valid
     *     only until this method returns
     */
    void afterCall(WorkloadStep step);

    /**
     * Called once before the first call, with the allocator the trace runs on: for instance to
     * start recording its history ({@link BfcAllocator#recordHistory}).
     *
     * @param allocator the allocator, empty
     */
    default void beforeRun(BfcAllocator allocator) {
    }

    /**
     * Called once after the last call, before the allocator is closed (not when the replay
     * failed): for instance to take its snapshot.
     *
     * @param allocator the allocator, as the trace left it
     */
    default void afterRun(BfcAllocator allocator) {
    }
}
