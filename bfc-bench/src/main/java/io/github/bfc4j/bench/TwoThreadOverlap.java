/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;

/**
 * What two threads on one allocator do together while both are on a core, against what one
 * does alone: a measure of how the lock hands over that a busy machine does not blur (there,
 * a wall-clock benchmark mostly measures how much CPU the scheduler gave it). Two threads make
 * allocate+free pairs as {@link ThreadsBenchmark} does (4 live allocations of 64 KiB to 1 MiB
 * each) and note the time and their own CPU time every {@value #STEP} pairs. Afterwards the run
 * is cut into {@value #WINDOW_MICROS} microsecond windows: where both threads had the CPU for at
 * least 90% of a window (spinning on the lock counts, sleeping does not), the pairs both made
 * there, per second, are "both on a core"; where one had it and the other had it for at most
 * 10%, "one on a core". The ratio is 1 when two threads together do as much as one alone.
 *
 * <p>{@code java -cp benchmarks.jar io.github.bfc4j.bench.TwoThreadOverlap [pairs per thread]
 * [runs]}: one line per run.
 */
public final class TwoThreadOverlap {
    private static final int STEP = 256;
    private static final long WINDOW_MICROS = 100;

    private TwoThreadOverlap() {
    }

    /**
     * Runs the measurement.
     *
     * @param args pairs per thread (default 8,000,000), runs (default 5)
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        int pairs = args.length > 0 ? Integer.parseInt(args[0]) : 8_000_000;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        System.out.println("run | one on a core: M pairs/s (ms) | both on a core: M pairs/s (ms) | both / one");
        for (int run = 1; run <= runs; run++) {
            try (Impl allocator = Impl.create(Impl.BFC4J, 2 * ThreadsBenchmark.SLOT_STRIDE, null)) {
                System.out.println(run + " | " + summary(measure(allocator, pairs)));
            }
        }
    }

    /** Per thread: wall time and thread CPU time (ns) after every STEP pairs. */
    private static long[][][] measure(Impl allocator, int pairs) throws InterruptedException {
        int samples = pairs / STEP + 1;
        long[][][] t = new long[2][2][samples];
        CyclicBarrier start = new CyclicBarrier(2);
        Thread[] threads = new Thread[2];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 2; i++) {
            final int thread = i;
            threads[i] = new Thread(() -> {
                ThreadsBenchmark.PerThread p = new ThreadsBenchmark.PerThread();
                p.firstSlot = thread * ThreadsBenchmark.SLOT_STRIDE;
                SplittableRandom r = new SplittableRandom(1000 + thread);
                for (int k = 0; k < ThreadsBenchmark.SIZES; k++) {
                    p.sizes[k] = ThreadsBenchmark.drawSize(r);
                }
                for (int k = 0; k < 200_000; k++) {
                    p.step(allocator); // warm up
                }
                try {
                    start.await();
                } catch (InterruptedException | BrokenBarrierException e) {
                    throw new IllegalStateException(e);
                }
                long[] wall = t[thread][0];
                long[] cpu = t[thread][1];
                for (int s = 0; s < samples; s++) {
                    wall[s] = System.nanoTime();
                    cpu[s] = mx.getCurrentThreadCpuTime();
                    for (int k = 0; k < STEP; k++) {
                        p.step(allocator);
                    }
                }
            });
            threads[i].start();
        }
        for (Thread th : threads) {
            th.join();
        }
        return t;
    }

    /** Linear interpolation of ys at x over the increasing xs (clamped at the ends). */
    private static double at(long[] xs, long[] ys, double x) {
        int lo = 0;
        int hi = xs.length - 1;
        if (x <= xs[lo]) {
            return ys[lo];
        }
        if (x >= xs[hi]) {
            return ys[hi];
        }
        while (hi - lo > 1) {
            int mid = (lo + hi) >>> 1;
            if (xs[mid] <= x) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return ys[lo] + (ys[hi] - ys[lo]) * (x - xs[lo]) / (double) (xs[hi] - xs[lo]);
    }

    private static String summary(long[][][] t) {
        long from = Math.max(t[0][0][0], t[1][0][0]);
        long to = Math.min(t[0][0][t[0][0].length - 1], t[1][0][t[1][0].length - 1]);
        long window = WINDOW_MICROS * 1000;
        long[] pairIndex = new long[t[0][0].length];
        for (int s = 0; s < pairIndex.length; s++) {
            pairIndex[s] = (long) s * STEP;
        }
        double bothPairs = 0;
        double bothNanos = 0;
        double onePairs = 0;
        double oneNanos = 0;
        for (long w = from; w + window <= to; w += window) {
            double[] share = new double[2];
            double pairs = 0;
            for (int th = 0; th < 2; th++) {
                long[] wall = t[th][0];
                long[] cpu = t[th][1];
                share[th] = (at(wall, cpu, w + window) - at(wall, cpu, w)) / window;
                pairs += at(wall, pairIndex, w + window) - at(wall, pairIndex, w);
            }
            if (share[0] >= 0.9 && share[1] >= 0.9) {
                bothPairs += pairs;
                bothNanos += window;
            } else if ((share[0] >= 0.9 && share[1] <= 0.1) || (share[1] >= 0.9 && share[0] <= 0.1)) {
                onePairs += pairs;
                oneNanos += window;
            }
        }
        double one = onePairs * 1e3 / oneNanos;
        double both = bothPairs * 1e3 / bothNanos;
        return String.format("%.2f (%.0f) | %.2f (%.0f) | %.2f", one, oneNanos / 1e6, both, bothNanos / 1e6,
                both / one);
    }
}
