/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Threads run together end, or the test fails saying which did not. */
class TestThreadsTest {

    /**
     * A thread that never ends (here, waiting on a latch nobody counts down, as a deadlocked
     * one waits on a lock) fails the run at its limit, named with its stack and the seed: the
     * threads were joined with no limit, so it hung the test, and the build, for ever.
     */
    @Test
    @Timeout(20)
    void aThreadThatNeverEndsFailsTheRunAtItsLimit() {
        CountDownLatch never = new CountDownLatch(1);
        try {
            assertThatThrownBy(() -> TestThreads.runTogether(2, 42, id -> {
                if (id == 1) {
                    never.await();
                }
            }, Duration.ofSeconds(1))).isInstanceOf(AssertionError.class)
                    .hasMessageStartingWith("seed 42: test-thread-1 still running after PT1S (WAITING)")
                    .hasMessageContaining("CountDownLatch.await");
        } finally {
            never.countDown();
        }
    }

    /** The first failure of a thread fails the run, with the seed. */
    @Test
    @Timeout(60)
    void aThreadsFailureFailsTheRun() {
        assertThatThrownBy(() -> TestThreads.runTogether(3, 7, id -> {
            if (id == 2) {
                throw new IllegalStateException("thread 2 failed");
            }
        })).isInstanceOf(AssertionError.class).hasMessage("seed 7: java.lang.IllegalStateException: thread 2 failed");
    }
}
