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
 * Nanoseconds per call replaying a bundled trace's {@code alloc}/{@code free} calls, one call
 * per invocation, single-threaded, in steady state: the allocator is kept across passes (when
 * the trace ends, what is still live is freed and the trace starts over). The trace is decoded into primitive arrays before
 * measuring ({@link BenchTrace}).
 *
 * <p>bfc4j runs on the trace's own sim sub-allocator; netty and malloc get the same sizes in
 * the same order (alignment is not passed on to them).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:MaxDirectMemorySize=64g", "-Dio.netty.leakDetection.level=disabled",
    "-Dio.netty.tryReflectionSetAccessible=true", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"})
public class ReplayBenchmark {

    /** The allocator: bfc4j, netty or malloc. */
    @Param({Impl.BFC4J, Impl.NETTY, Impl.MALLOC})
    public String impl;

    /** The bundled trace ({@link BenchTrace#BUNDLED}). */
    @Param({"big-random-1m-s71", "tf-resnet-train"})
    public String trace;

    private BenchTrace t;
    private Impl allocator;
    private long[] bytes;
    private long[] alignment;
    private int[] slot;
    private int next;

    /** Decodes the trace, creates the allocator and runs one full pass (the pool grows). */
    @Setup(Level.Trial)
    public void setUp() {
        t = BenchTrace.load(trace);
        allocator = Impl.create(impl, t.slots, t);
        bytes = t.bytes;
        alignment = t.alignment;
        slot = t.slot;
        for (int i = 0; i < t.calls; i++) {
            call();
        }
    }

    /** Frees what is live and closes the allocator. */
    @TearDown(Level.Trial)
    public void tearDown() {
        allocator.close();
    }

    /** One call of the trace: an allocation or a free. */
    @Benchmark
    public void call() {
        int i = next;
        long b = bytes[i];
        if (b >= 0) {
            allocator.alloc(slot[i], b, alignment[i]);
        } else {
            allocator.free(slot[i]);
        }
        if (++i == bytes.length) {
            allocator.freeAll();
            i = 0;
        }
        next = i;
    }
}
