/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The wait for what a garbage collection brings about (an object collected, a cleaner's action
 * run, a leak reclaimed), for a time rather than a count of collections: a slow or loaded machine,
 * where each collection and each check takes longer and a cleaner's thread runs late, gets the
 * same time, and a wait that ends without it fails saying what was awaited.
 */
public final class GarbageCollection {

    /**
     * How long {@link #gcUntil(String, BooleanSupplier)} collects: generous, for a slow or loaded
     * machine, where a cleaner's thread may run long after the collection that found its object.
     */
    public static final Duration GC_LIMIT = Duration.ofSeconds(60);

    private GarbageCollection() {
    }

    /**
     * Runs the garbage collector until {@code condition} holds, for at most {@link #GC_LIMIT}.
     *
     * @param what what the condition says, for the failure
     * @param condition what is awaited
     * @throws AssertionError naming {@code what} if it still does not hold then
     * @throws InterruptedException if this thread is interrupted while it waits
     */
    public static void gcUntil(String what, BooleanSupplier condition) throws InterruptedException {
        gcUntil(what, condition, GC_LIMIT);
    }

    /**
     * Runs the garbage collector until {@code condition} holds, for at most {@code limit} (the
     * condition is checked once more when the limit is reached), however long each collection
     * and each check takes.
     *
     * @param what what the condition says, for the failure
     * @param condition what is awaited
     * @param limit how long to collect
     * @throws AssertionError naming {@code what} if it still does not hold then
     * @throws InterruptedException if this thread is interrupted while it waits
     */
    public static void gcUntil(String what, BooleanSupplier condition, Duration limit) throws InterruptedException {
        long start = System.nanoTime();
        int collections = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - start >= limit.toNanos()) {
                throw new AssertionError("gave up after " + limit + " (" + collections + " garbage collections)"
                        + " waiting for: " + what);
            }
            System.gc();
            collections++;
            Thread.sleep(20); // the cleaner's and the reference handler's threads run meanwhile
        }
    }
}
