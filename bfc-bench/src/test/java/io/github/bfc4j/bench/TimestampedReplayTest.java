/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.SharedCounter;
import org.junit.jupiter.api.Test;

/**
 * {@link TimestampedReplay}'s pass does what it says (no timing here): with a timing counter
 * set, every call of the trace is served, everything is freed by the pass's end, the frees
 * are stamped, and the allocator's invariants hold after it.
 */
class TimestampedReplayTest {

    @Test
    void aPassServesEveryCallWithStampedFreesAndFreesEverything() {
        BenchTrace t = BenchTrace.load("tf-resnet-train");
        try (BfcAllocator a = BfcImpl.forTrace(t.slots, t).allocator) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            long[] ptrs = new long[t.slots];
            for (int pass = 1; pass <= 2; pass++) {
                assertThat(TimestampedReplay.pass(a, counter, t, ptrs, 1, 16)).isZero();
                a.checkInvariants();
                // Every allocation of the trace was served (none failed), pass after pass.
                assertThat(a.getStats().numAllocs()).isEqualTo((long) pass * t.slots);
                // Every free took a stamp from the counter.
                assertThat(counter.get()).isGreaterThanOrEqualTo((long) pass * t.slots);
            }
        }
    }
}
