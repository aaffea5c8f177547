/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What recording provenance costs an allocate+free pair of 64 KiB (as {@link PairBenchmark}'s
 * bfc4j case, on the same fragmented background), called from a stack about 20 frames deep
 * (a call chain of the benchmark's own, as an application's would be):
 * <ul>
 *   <li>{@code off}: nothing recorded (the default);</li>
 *   <li>{@code annotations}: {@code recordAnnotations(true)}, inside an open
 *       {@link MemoryAnnotation};</li>
 *   <li>{@code history}: {@code recordHistory} without stacks;</li>
 *   <li>{@code stacks}: {@code recordHistory} with a Java stack (32 frames) for every
 *       allocation;</li>
 *   <li>{@code sampled}: stacks only for requests of at least 1 MiB
 *       ({@code stackMinBytes}), so none of these 64 KiB allocations walks its stack;</li>
 *   <li>{@code every64}: stacks for one allocation in 64 ({@code stackEveryNth}).</li>
 * </ul>
 * Run with {@code -prof gc} to see the bytes each mode creates per pair.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class HistoryBenchmark {

    /** What is recorded. */
    @Param({"off", "annotations", "history", "stacks", "sampled", "every64"})
    public String mode;

    private static final int DEPTH = 20;
    private static final long SIZE = 64 << 10;

    private BfcAllocator allocator;
    private long[] background;
    private MemoryAnnotation annotation;

    /** Creates the allocator, its background and the recording. */
    @Setup(Level.Trial)
    public void setUp() {
        SimSubAllocator sim = new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true);
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false).build();
        allocator = new BfcAllocator(sim, 1L << 30, "bench", opts);
        HistoryOptions.Builder h = HistoryOptions.builder().maxEntries(1 << 16);
        switch (mode) {
            case "off" -> { }
            case "annotations" -> allocator.recordAnnotations(true);
            case "history" -> allocator.recordHistory(h.stacks(false).build());
            case "stacks" -> allocator.recordHistory(h.build());
            case "sampled" -> allocator.recordHistory(h.stackMinBytes(1 << 20).build());
            case "every64" -> allocator.recordHistory(h.stackEveryNth(64).build());
            default -> throw new IllegalArgumentException("mode=" + mode);
        }
        background = new long[PairBenchmark.BACKGROUND + 1];
        for (int s = 1; s < background.length; s++) {
            background[s] = allocator.allocateRaw(64, 256L << (s % 9), AllocationAttributes.NO_RETRY);
        }
        for (int s = 1; s < background.length; s += 2) {
            allocator.deallocateRaw(background[s]);
            background[s] = 0;
        }
        annotation = mode.equals("off") ? null : MemoryAnnotation.push("bench/pair", 1);
    }

    /** Closes the annotation, frees everything and closes the allocator. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (annotation != null) {
            annotation.close();
        }
        for (long p : background) {
            if (p != 0) {
                allocator.deallocateRaw(p);
            }
        }
        allocator.close();
    }

    /** One allocate+free pair, {@value #DEPTH} frames below the benchmark method. */
    @Benchmark
    public long pair() {
        return deep(DEPTH);
    }

    private long deep(int n) {
        if (n > 0) {
            return deep(n - 1) + 1;
        }
        long p = allocator.allocateRaw(64, SIZE, AllocationAttributes.NO_RETRY);
        allocator.deallocateRaw(p);
        return p;
    }
}
