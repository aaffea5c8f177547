/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import org.jetbrains.kotlinx.lincheck.LinCheckerKt;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of {@code allocateRaw}, {@code deallocateRaw} and {@code getStats} (Lincheck):
 * every concurrent run's results (addresses, exceptions, stats) must equal those of some
 * sequential order of the same calls that respects real-time order. The sequential
 * specification is the allocator itself run single-threaded: it is deterministic, so no
 * separate model is needed.
 *
 * <p>Every operation is one allocator call. Frees take an address from a small set (the first
 * 256-byte slots of the simulated space, where small allocations land), so they hit live
 * allocations often and otherwise test that a rejected free ({@link IllegalArgumentException},
 * a result like any other) is linearizable too.
 *
 * <p>Both of Lincheck's strategies run: stress (real threads) and model checking (Lincheck
 * controls the thread switches at every shared-memory access and lock, and explores
 * interleavings systematically). The defaults are small to keep {@code mvn verify} fast; run more
 * with {@code -Dbfc4j.lincheck.scale=25}.
 */
@Param(name = "size", gen = IntGen.class, conf = "1:1200")
@Param(name = "slot", gen = IntGen.class, conf = "0:12")
public class BfcAllocatorLinearizabilityTest {

    private static final long BASE = 0x7f0000000000L;

    private final BfcAllocator allocator = new BfcAllocator(
            new SimSubAllocator(BASE, 1L << 20, 0, true), 64L << 10, "lincheck",
            BfcOptions.builder().allowGrowth(true).garbageCollection(true).allowRetryOnFailure(false).build());

    /**
     * Links the refused free's message (a string concatenation, linked by the JDK on its first
     * use) before Lincheck runs. Linked inside a model-checked run, with the other thread
     * stopped by Lincheck wherever it was, it once hung that run past Lincheck's 30 s limit on
     * a loaded machine (the thread dump: the free inside {@code StringConcatFactory}).
     */
    @BeforeAll
    static void linkTheRefusedFreesMessage() {
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 20, 0, true), 64L << 10, "warm-up",
                BfcOptions.builder().build());
        long p = a.allocateRaw(64, 600, AllocationAttributes.NO_RETRY);
        a.deallocateRaw(p);
        assertThatThrownBy(() -> a.deallocateRaw(p)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was not allocated by allocator 'warm-up' (or was already freed)");
        a.close();
    }

    @Operation
    public long allocate(@Param(name = "size") int size) {
        return allocator.allocateRaw(64, size, AllocationAttributes.NO_RETRY);
    }

    @Operation
    public void free(@Param(name = "slot") int slot) {
        allocator.deallocateRaw(BASE + 256L * slot);
    }

    @Operation
    public AllocatorStats stats() {
        return allocator.getStats();
    }

    /** {@code -Dbfc4j.lincheck.scale=N} multiplies the scenarios tried (default 1). */
    private static final int SCALE = Integer.getInteger("bfc4j.lincheck.scale", 1);

    @Test
    void stressStrategy() {
        // 10 scenarios x 1000 runs each, 3 threads x 3 calls after 2 calls and before 1.
        LinCheckerKt.check(new StressOptions().iterations(10 * SCALE).invocationsPerIteration(1_000)
                .threads(3).actorsPerThread(3).actorsBefore(2).actorsAfter(1), getClass());
    }

    @Test
    void modelCheckingStrategy() {
        // Model checking costs ~35 ms an interleaving here: 2 scenarios x 100 interleavings.
        LinCheckerKt.check(new ModelCheckingOptions().iterations(2 * SCALE).invocationsPerIteration(100)
                .threads(2).actorsPerThread(3).actorsBefore(2).actorsAfter(1), getClass());
    }
}
