/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Random;

/**
 * The address-to-chunk lookup in isolation: ns per {@code allocatedSize(ptr)} (the lock, the
 * lookup of the chunk starting at {@code ptr}, one read of its size) at 4M random live
 * addresses, timed by thread CPU time, median and minimum of 9 passes, for four layouts: a
 * 1 GiB region cut into 2^20 chunks of 256 bytes (every lookup a cache miss), 16K chunks of
 * 64 KiB, random sizes from 256 B to 1 MiB in 4 GiB, and the same grown region by region (12
 * regions, so the lookup must find the region first). Uses the public API only, so the same
 * class measures any version of bfc-core (docs/performance.md compares the address maps so).
 *
 * <p>Run: {@code java -Xmx3g -cp bfc-bench/target/benchmarks.jar io.github.bfc4j.bench.AddressLookup}
 */
public final class AddressLookup {

    private static final long BASE = 0x7f0000000000L;

    private AddressLookup() {
    }

    /**
     * Prints one line per layout.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        String[] layouts = {"256 B x 2^20 in 1 GiB", "64 KiB x 16K in 1 GiB", "256 B..1 MiB in 4 GiB",
            "256 B..1 MiB in 4 GiB, growth"};
        System.out.println("layout | chunks | regions | median ns/lookup (CPU time) | min");
        for (int c = 0; c < layouts.length; c++) {
            long gib = c >= 2 ? 4 : 1;
            // The last layout grows region by region (2 MiB, 4 MiB, ... as upstream's Extend
            // doubles, the sub-allocator not coalescing them): the lookup must find the region.
            boolean growth = c == 3;
            BfcOptions opts = BfcOptions.builder().allowGrowth(growth).allowRetryOnFailure(false).build();
            BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, (gib + 1) << 30, growth ? 4096 : 0, !growth),
                    gib << 30, "lookup", opts);
            Random rnd = new Random(6);
            long[] ptrs = new long[1 << 20];
            int n = 0;
            while (n < ptrs.length) {
                long bytes = c == 0 ? 256 : c == 1 ? 65536 : 1 + rnd.nextInt(1 << 20);
                long p = a.allocateRaw(256, bytes, AllocationAttributes.NO_RETRY);
                if (p == 0) {
                    break;
                }
                ptrs[n++] = p;
            }
            int[] order = new int[1 << 22];
            for (int i = 0; i < order.length; i++) {
                order[i] = rnd.nextInt(n);
            }
            long sink = 0;
            for (int w = 0; w < 3; w++) {
                sink += pass(a, ptrs, order);
            }
            double[] ns = new double[9];
            for (int p = 0; p < ns.length; p++) {
                long t0 = mx.getCurrentThreadCpuTime();
                sink += pass(a, ptrs, order);
                ns[p] = (mx.getCurrentThreadCpuTime() - t0) / (double) order.length;
            }
            Arrays.sort(ns);
            System.out.printf("%s | %d | %d | %.1f | %.1f%s%n", layouts[c], n, a.regionCount(), ns[ns.length / 2], ns[0],
                    sink == 42 ? " " : "");
            a.close();
        }
    }

    private static long pass(BfcAllocator a, long[] ptrs, int[] order) {
        long sum = 0;
        for (int i : order) {
            sum += a.allocatedSize(ptrs[i]);
        }
        return sum;
    }
}
