/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** {@link GarbageCollection#gcUntil} waits for what the garbage collector brings about, for a time. */
class GarbageCollectionTest {

    @Test
    void whatACollectionBringsAboutIsWaitedFor() throws InterruptedException {
        AtomicBoolean cleaned = new AtomicBoolean();
        Cleaner.create().register(new Object(), () -> cleaned.set(true));
        GarbageCollection.gcUntil("the object cleaned", cleaned::get);
        assertThat(cleaned).isTrue();
    }

    /**
     * A condition that never holds fails at the limit, saying what was awaited, however long
     * each round takes: the wait was 200 rounds of a collection and 50 ms, so with checks of
     * 100 ms (as on a loaded machine) it lasted 30 s for a limit said to be 10 s, and ended in a
     * bare 'expected true'.
     */
    @Test
    void aConditionThatNeverHoldsFailsAtTheLimitSayingWhatWasAwaited() {
        long start = System.nanoTime();
        assertThatThrownBy(() -> GarbageCollection.gcUntil("the impossible", () -> {
            try {
                Thread.sleep(100); // a slow check
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return false;
        }, Duration.ofSeconds(1))).isInstanceOf(AssertionError.class)
                .hasMessageMatching("gave up after PT1S \\(\\d+ garbage collections\\) waiting for: the impossible");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("ms waited").isLessThan(10_000);
    }
}
