/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.SharedCounter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * {@link CpuTimeReplay}'s loop on one {@code BfcAllocator} with a timing counter set, as
 * {@code GpuBfcAllocator} runs it for stream-ordered frees: every free is stamped and held
 * back, and the safe frontier moves up to the counter after every {@code N}th free (the
 * stream's work completing) and at the end of each pass, so that allocations merge the
 * timestamped chunks that became safe. Prints the median and the minimum of the timed passes
 * in ns per call (CPU time).
 *
 * <p>Run: {@code java -cp bfc-bench/target/benchmarks.jar io.github.bfc4j.bench.TimestampedReplay
 * [trace,...] [passes] [N]} (defaults: the three traces of docs/performance.md; 15; 16).
 */
public final class TimestampedReplay {

    private TimestampedReplay() {
    }

    /**
     * Runs the replays.
     *
     * @param args traces (comma-separated), passes, frees between two moves of the frontier
     */
    public static void main(String[] args) {
        String[] traces = (args.length > 0 ? args[0]
                : "big-random-1m-s71,tf-resnet-train,infer-qwen1.5b-bf16-dynamic-16gib").split(",");
        int passes = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        int frontierEvery = args.length > 2 ? Integer.parseInt(args[2]) : 16;
        if (passes < 1 || frontierEvery < 1) {
            throw new IllegalArgumentException("passes=" + passes + ", N=" + frontierEvery
                    + " (expected: both at least 1)");
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        System.out.println("trace | impl | median ns/call (CPU time) | min ns/call");
        for (String trace : traces) {
            BenchTrace t = BenchTrace.load(trace);
            int repeat = Math.max(1, 2_000_000 / t.calls);
            try (BfcAllocator a = BfcImpl.forTrace(t.slots, t).allocator) {
                SharedCounter counter = new SharedCounter();
                a.setTimingCounter(counter);
                long[] ptrs = new long[t.slots];
                for (int w = 0; w < 5; w++) {
                    pass(a, counter, t, ptrs, repeat, frontierEvery);
                }
                double[] ns = new double[passes];
                for (int p = 0; p < passes; p++) {
                    long t0 = mx.getCurrentThreadCpuTime();
                    pass(a, counter, t, ptrs, repeat, frontierEvery);
                    ns[p] = (mx.getCurrentThreadCpuTime() - t0) / (double) t.calls / repeat;
                }
                Arrays.sort(ns);
                System.out.printf("%s | bfc4j, timestamped | %.1f | %.1f%n", trace, ns[passes / 2], ns[0]);
            }
        }
    }

    /**
     * One pass: every call of the trace, then a free of what is left.
     *
     * @return the bytes still in use after the pass (0: the pass freed everything)
     */
    static long pass(BfcAllocator a, SharedCounter counter, BenchTrace t, long[] ptrs, int repeat,
            int frontierEvery) {
        final long[] bytes = t.bytes;
        final long[] alignment = t.alignment;
        final int[] slot = t.slot;
        int frees = 0;
        for (int r = 0; r < repeat; r++) {
            for (int i = 0; i < bytes.length; i++) {
                long b = bytes[i];
                if (b >= 0) {
                    ptrs[slot[i]] = a.allocateRaw(alignment[i], b, AllocationAttributes.NO_RETRY);
                } else {
                    long p = ptrs[slot[i]];
                    ptrs[slot[i]] = 0;
                    if (p != 0) {
                        a.deallocateRaw(p);
                        if (++frees % frontierEvery == 0) {
                            a.setSafeFrontier(counter.get());
                        }
                    }
                }
            }
            for (int s = 0; s < ptrs.length; s++) {
                if (ptrs[s] != 0) {
                    a.deallocateRaw(ptrs[s]);
                    ptrs[s] = 0;
                }
            }
            a.setSafeFrontier(counter.get());
        }
        return a.bytesInUse();
    }
}
