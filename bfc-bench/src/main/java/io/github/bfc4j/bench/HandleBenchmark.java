/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
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
 * Nanoseconds per {@code allocate(size)} + {@code Allocation.close()} pair: the Java-facing
 * path (the handle object, the chunk lookup under the lock, the handle's ownership mark and
 * the check of its allocation id before the free), on the same allocator and fragmented
 * background as {@link PairBenchmark}'s raw pair. Leak detection off.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class HandleBenchmark {

    /** Bytes per allocation. */
    @Param({"256", "65536"})
    public long size;

    private BfcAllocator allocator;
    private final List<Allocation> background = new ArrayList<>();

    /** A 1 GiB allocator without growth, with {@link PairBenchmark}'s background. */
    @Setup(Level.Trial)
    public void setUp() {
        allocator = BfcAllocator.builder().name("bench").memoryLimit(1L << 30).allowGrowth(false)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true))
                .leakDetection(LeakDetection.DISABLED).build();
        int n = PairBenchmark.BACKGROUND;
        for (int s = 1; s <= n; s++) {
            background.add(allocator.allocate(256L << (s % 9)));
        }
        for (int s = 0; s < n; s += 2) {
            background.get(s).close();
        }
    }

    /** Frees everything and closes the allocator. */
    @TearDown(Level.Trial)
    public void tearDown() {
        background.forEach(Allocation::close);
        allocator.close();
    }

    /** One allocate+close pair through the handle. */
    @Benchmark
    public void pair() {
        allocator.allocate(size).close();
    }
}
