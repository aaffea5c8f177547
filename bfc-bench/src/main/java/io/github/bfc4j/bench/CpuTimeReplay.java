/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * A cross-check of {@link ReplayBenchmark} for a busy machine: the same steady-state replay,
 * timed by the thread's CPU time instead of the wall clock, so that time spent descheduled
 * while other processes run is not counted (cache and memory-bandwidth interference still
 * is). Prints the median and the minimum of several passes in ns per call.
 *
 * <p>Run: {@code java -cp bfc-bench/target/benchmarks.jar io.github.bfc4j.bench.CpuTimeReplay
 * [impl,...] [trace,...] [passes]} (defaults: bfc4j,netty,malloc; big-random-1m-s71,tf-resnet-train; 15).
 * Netty's no-cleaner path needs the same JVM flags as the JMH forks
 * ({@code -Dio.netty.tryReflectionSetAccessible=true --add-opens=java.base/java.nio=ALL-UNNAMED}).
 */
public final class CpuTimeReplay {

    private CpuTimeReplay() {
    }

    /**
     * Runs the replays.
     *
     * @param args impls, traces (comma-separated), passes
     */
    public static void main(String[] args) {
        String[] impls = (args.length > 0 ? args[0] : "bfc4j,netty,malloc").split(",");
        String[] traces = (args.length > 1 ? args[1] : "big-random-1m-s71,tf-resnet-train").split(",");
        int passes = args.length > 2 ? Integer.parseInt(args[2]) : 15;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        System.out.println("trace | impl | median ns/call (CPU time) | min ns/call");
        for (String trace : traces) {
            BenchTrace t = BenchTrace.load(trace);
            // The whole trace as often as it fits in 2M calls (at least once) per pass, so that the
            // timer's resolution does not matter.
            int repeat = Math.max(1, 2_000_000 / t.calls);
            for (String impl : impls) {
                try (Impl a = Impl.create(impl, t.slots, t)) {
                    for (int w = 0; w < 5; w++) {
                        pass(a, t, repeat);
                    }
                    double[] ns = new double[passes];
                    for (int p = 0; p < passes; p++) {
                        long t0 = mx.getCurrentThreadCpuTime();
                        pass(a, t, repeat);
                        ns[p] = (mx.getCurrentThreadCpuTime() - t0) / (double) t.calls / repeat;
                    }
                    Arrays.sort(ns);
                    System.out.printf("%s | %s | %.1f | %.1f%n", trace, impl, ns[passes / 2], ns[0]);
                }
            }
        }
    }

    private static void pass(Impl a, BenchTrace t, int repeat) {
        final long[] bytes = t.bytes;
        final long[] alignment = t.alignment;
        final int[] slot = t.slot;
        for (int r = 0; r < repeat; r++) {
            for (int i = 0; i < bytes.length; i++) {
                long b = bytes[i];
                if (b >= 0) {
                    a.alloc(slot[i], b, alignment[i]);
                } else {
                    a.free(slot[i]);
                }
            }
            a.freeAll();
        }
    }
}
