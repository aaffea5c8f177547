/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Allocate+free pairs of 64 KiB from 2 and 4 threads on one shared allocator (average time
 * per pair per thread: the total throughput is threads / score). Each thread uses its own slot;
 * the allocator has the same fragmented background as {@link PairBenchmark}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-Dio.netty.leakDetection.level=disabled",
    "-Dio.netty.tryReflectionSetAccessible=true", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class ContentionBenchmark {

    static final int MAX_THREADS = 64;
    static final long SIZE = 64 << 10;

    /** The allocator shared by every thread. */
    @State(Scope.Benchmark)
    public static class Shared {
        /** The allocator: bfc4j, netty or malloc. */
        @Param({Impl.BFC4J, Impl.NETTY, Impl.MALLOC})
        public String impl;

        Impl allocator;
        final AtomicInteger nextSlot = new AtomicInteger(PairBenchmark.BACKGROUND + 1);

        /** Creates the allocator and its fragmented background. */
        @Setup(Level.Trial)
        public void setUp() {
            allocator = Impl.create(impl, PairBenchmark.BACKGROUND + 1 + MAX_THREADS, null);
            PairBenchmark.background(allocator, PairBenchmark.BACKGROUND);
        }

        /** Frees everything and closes the allocator. */
        @TearDown(Level.Trial)
        public void tearDown() {
            allocator.close();
        }
    }

    /** One slot per thread. */
    @State(Scope.Thread)
    public static class Slot {
        int slot;

        /** Takes the next free slot. */
        @Setup(Level.Trial)
        public void setUp(Shared shared) {
            slot = shared.nextSlot.getAndIncrement();
        }
    }

    /** Two threads. */
    @Benchmark
    @Threads(2)
    public void threads2(Shared shared, Slot s) {
        shared.allocator.alloc(s.slot, SIZE, 64);
        shared.allocator.free(s.slot);
    }

    /** Four threads. */
    @Benchmark
    @Threads(4)
    public void threads4(Shared shared, Slot s) {
        shared.allocator.alloc(s.slot, SIZE, 64);
        shared.allocator.free(s.slot);
    }
}
