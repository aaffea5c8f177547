/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Arrays;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * A sub-allocator that makes chosen {@link #alloc} calls fail ({@code null}) as if the memory
 * could not be had, and passes everything else to another. For tests, and for users who want to
 * rehearse out-of-memory handling. Frees are passed on, never failed here (a sub-allocator
 * reports a failed free by throwing, as bfc-cuda's do on a driver error; what the allocator then
 * does is in docs/deviations.md #27).
 *
 * <p>Which calls fail (calls are numbered from 1, in the order they reach this object):
 * <ul>
 *   <li>{@link #failCalls(long...)}: exactly the calls with these numbers;</li>
 *   <li>{@link #failCallsFrom(long)}: every call from this number on;</li>
 *   <li>{@link #failFraction(double, long)}: each call with this probability, from a seeded
 *       generator, so a run can be repeated.</li>
 * </ul>
 * A call fails if any rule says so. Thread-safe: every method is synchronized.
 */
public final class FaultInjectingSubAllocator extends ForwardingSubAllocator {

    /** Guarded by this. */
    private long[] failCalls = new long[0];
    private long failFrom = Long.MAX_VALUE;
    private double fraction;
    private SplittableRandom random;
    private long calls;
    private long injected;

    /** @param upstream where the memory comes from when a call is not failed */
    public FaultInjectingSubAllocator(SubAllocator upstream) {
        super(upstream);
    }

    /**
     * Fails exactly the {@code alloc} calls with these numbers (replacing an earlier list).
     *
     * @param callNumbers 1-based call numbers, counted since this object was made
     * @return this
     * @throws IllegalArgumentException if a number is below 1
     * @throws NullPointerException if {@code callNumbers} is null
     */
    public synchronized FaultInjectingSubAllocator failCalls(long... callNumbers) {
        Objects.requireNonNull(callNumbers, "callNumbers=null (expected: call numbers; none: failCalls())");
        for (long n : callNumbers) {
            if (n < 1) {
                throw new IllegalArgumentException("callNumber=" + n + " (expected: >= 1, calls are numbered from 1)");
            }
        }
        long[] sorted = callNumbers.clone();
        Arrays.sort(sorted);
        this.failCalls = sorted;
        return this;
    }

    /**
     * Fails every {@code alloc} call from this number on; {@link Long#MAX_VALUE} turns it off.
     *
     * @param callNumber 1-based call number
     * @return this
     * @throws IllegalArgumentException if the number is below 1
     */
    public synchronized FaultInjectingSubAllocator failCallsFrom(long callNumber) {
        if (callNumber < 1) {
            throw new IllegalArgumentException("callNumber=" + callNumber + " (expected: >= 1, calls are numbered from 1)");
        }
        this.failFrom = callNumber;
        return this;
    }

    /**
     * Fails each {@code alloc} call with probability {@code fraction}, drawn from a generator
     * seeded with {@code seed}.
     *
     * @param fraction the probability of failure, in [0, 1]; 0 turns it off
     * @param seed the generator's seed
     * @return this
     * @throws IllegalArgumentException if {@code fraction} is outside [0, 1]
     */
    public synchronized FaultInjectingSubAllocator failFraction(double fraction, long seed) {
        if (!(fraction >= 0.0 && fraction <= 1.0)) {
            throw new IllegalArgumentException("fraction=" + fraction + " (expected: a probability in [0, 1])");
        }
        this.fraction = fraction;
        this.random = new SplittableRandom(seed);
        return this;
    }

    /**
     * Stops failing calls: clears every rule. The call count goes on.
     *
     * @return this
     */
    public synchronized FaultInjectingSubAllocator failNothing() {
        failCalls = new long[0];
        failFrom = Long.MAX_VALUE;
        fraction = 0.0;
        random = null;
        return this;
    }

    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        long n = ++calls;
        boolean fail = n >= failFrom || Arrays.binarySearch(failCalls, n) >= 0;
        if (random != null && fraction > 0.0) {
            // Drawn on every call, so a call's fate depends only on the seed and its number.
            fail |= random.nextDouble() < fraction;
        }
        if (fail) {
            injected++;
            return null;
        }
        return upstream.alloc(alignment, numBytes);
    }

    /** @return the {@code alloc} calls received so far, failed or not */
    public synchronized long allocCalls() {
        return calls;
    }

    /** @return the {@code alloc} calls failed on purpose so far */
    public synchronized long injectedFailures() {
        return injected;
    }

    @Override
    public synchronized String toString() {
        return "FaultInjectingSubAllocator[calls=" + calls + ", injected=" + injected + ", upstream=" + upstream + "]";
    }
}
