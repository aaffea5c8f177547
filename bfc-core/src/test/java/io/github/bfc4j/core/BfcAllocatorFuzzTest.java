/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Coverage-guided fuzzing of the allocator (Jazzer): the fuzz bytes choose the options, the
 * limit and the simulated space, then a sequence of calls (allocations of any size and
 * alignment, with or without a timestamp constraint; frees; safe-frontier moves; clearStats;
 * rejected misuse: frees of foreign addresses and double frees). {@link ShadowModel} checks
 * every answer and {@link BfcAllocator#checkInvariants()} runs after every call; a failure
 * prints the calls as a workload trace.
 *
 * <p>{@code mvn verify} runs the seeds in {@code BfcAllocatorFuzzTestInputs/} and every crash
 * input kept there. Fuzzing: {@code JAZZER_FUZZ=1 mvn -pl bfc-core test
 * -Dtest=BfcAllocatorFuzzTest} (docs/reliability.md).
 */
class BfcAllocatorFuzzTest {

    @FuzzTest(maxDuration = "30s")
    void allocatorDrivenByFuzzBytes(FuzzedDataProvider data) {
        long limit = data.consumeLong(256, 256L << 20);
        double[] fractions = {0, 0.01, 0.1, 0.5};
        double fraction = fractions[data.consumeInt(0, fractions.length - 1)];
        if (fraction > 0 && (long) (fraction * limit) <= 0) {
            fraction = 0;
        }
        long gap = data.consumeBoolean() ? 0 : 256L * data.consumeInt(1, 64);
        ShadowModel.Config config = new ShadowModel.Config(limit, data.consumeBoolean(),
                data.consumeBoolean(), fraction, data.consumeBoolean(),
                limit * data.consumeInt(1, 4) + 4 * gap, gap, data.consumeBoolean());
        ShadowModel m = new ShadowModel(config, "fuzz", "Jazzer BfcAllocatorFuzzTest");
        try {
            while (data.remainingBytes() > 0) {
                switch (data.consumeInt(0, 9)) {
                    case 0, 1, 2, 3 -> {
                        long bytes = data.consumeBoolean() ? data.consumeLong(0, 1 << 16)
                                : data.consumeLong(0, 2 * limit);
                        long freedBefore = config.timing() && data.consumeBoolean()
                                ? data.consumeLong(1, m.counter.get() + 2) : 0;
                        m.alloc(bytes, 1L << data.consumeInt(0, 16), freedBefore);
                    }
                    case 4, 5, 6 -> m.freeNth(data.consumeInt());
                    case 7 -> m.frontier(data.consumeInt(0, 3));
                    case 8 -> m.clearStats();
                    default -> misuse(m, data.consumeBoolean() ? m.lastFreed() : data.consumeLong());
                }
            }
            m.close();
        } catch (AssertionError | RuntimeException e) {
            throw m.failure("BfcAllocatorFuzzTest", e);
        }
    }

    /**
     * A free of an address that is not live (a double free of the last freed address, or any
     * other) must be rejected and change nothing.
     */
    private static void misuse(ShadowModel m, long address) {
        BfcAllocator a = m.allocator;
        if (address == 0 || m.isLive(address)) {
            return;
        }
        AllocatorStats before = a.getStats();
        try {
            a.deallocateRaw(address);
            throw new AssertionError("deallocateRaw(0x" + Long.toHexString(address)
                    + ") of an address that is not live was accepted");
        } catch (IllegalArgumentException expected) {
            if (!expected.getMessage().contains("0x" + Long.toHexString(address))) {
                throw new AssertionError("the message does not name the address: "
                        + expected.getMessage(), expected);
            }
        }
        if (!a.getStats().equals(before)) {
            throw new AssertionError("a rejected free changed the stats");
        }
        m.check();
    }
}
