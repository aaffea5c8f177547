/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

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
 * Nanoseconds per allocate+free pair of one fixed size, single-threaded, in steady state. The
 * allocator first gets a fragmented background: {@value #BACKGROUND} allocations of mixed sizes
 * with every other one freed, so the bins are not trivially empty. For bfc4j: a 1 GiB
 * allocator without growth on the sim sub-allocator.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-Dio.netty.leakDetection.level=disabled",
    "-Dio.netty.tryReflectionSetAccessible=true", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class PairBenchmark {

    static final int BACKGROUND = 1024;

    /** The allocator: bfc4j, netty or malloc. */
    @Param({Impl.BFC4J, Impl.NETTY, Impl.MALLOC})
    public String impl;

    /** Bytes per allocation. */
    @Param({"256", "65536", "16777216"})
    public long size;

    private Impl allocator;

    /** Creates the allocator and its fragmented background. */
    @Setup(Level.Trial)
    public void setUp() {
        allocator = Impl.create(impl, BACKGROUND + 1, null);
        background(allocator, BACKGROUND);
    }

    /** Allocates {@code n} blocks of 256 B to 64 KiB into slots 1..n, frees every other one. */
    static void background(Impl allocator, int n) {
        for (int s = 1; s <= n; s++) {
            allocator.alloc(s, 256L << (s % 9), 64);
        }
        for (int s = 1; s <= n; s += 2) {
            allocator.free(s);
        }
    }

    /** Frees everything and closes the allocator. */
    @TearDown(Level.Trial)
    public void tearDown() {
        allocator.close();
    }

    /** One allocate+free pair. */
    @Benchmark
    public void pair() {
        allocator.alloc(0, size, 64);
        allocator.free(0);
    }
}
