/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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

    /**
     * A thread a test started itself that never ends fails the wait at its limit, named with its
     * state, its stack and the test's seed: a {@code join()} with no limit hung the test, and the
     * build, for ever, with no message.
     */
    @Test
    @Timeout(20)
    void aJoinedThreadThatNeverEndsFailsAtTheLimitNamedWithItsStack() throws InterruptedException {
        CountDownLatch never = new CountDownLatch(1);
        Thread ends = started("ends", () -> { });
        Thread hangs = started("hangs", never::await);
        try {
            long start = System.nanoTime();
            assertThatThrownBy(() -> TestThreads.joinOrFail(7, Duration.ofSeconds(1), ends, hangs))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageStartingWith("seed 7: hangs still running after PT1S (WAITING)")
                    .hasMessageContaining("CountDownLatch.await");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("ms waited").isLessThan(10_000);
            assertThatThrownBy(() -> TestThreads.joinOrFail(Duration.ofMillis(100), hangs))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageStartingWith("hangs still running after PT0.1S (WAITING)");
        } finally {
            never.countDown();
        }
    }

    /**
     * Work handed to another thread that never ends fails the wait at its limit, naming what it
     * does, and is cancelled: a {@code Future.get()} with no limit hung the test for ever. Work
     * that ends gives its result, and work that threw its {@code ExecutionException}, as
     * {@code get()} does.
     */
    @Test
    @Timeout(20)
    void workThatNeverEndsFailsAtTheLimitNamedAndIsCancelled() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Object> hangs = pool.submit(() -> {
                never.await();
                return null;
            });
            long start = System.nanoTime();
            assertThatThrownBy(() -> TestThreads.getOrFail(Duration.ofSeconds(1), "the hanging work", hangs))
                    .isInstanceOf(AssertionError.class)
                    .hasMessage("the hanging work not done after PT1S (cancelled)");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("ms waited").isLessThan(10_000);
            assertThat(hangs.isCancelled()).isTrue();
            assertThat(TestThreads.getOrFail(TestThreads.RUN_LIMIT, "the answer", pool.submit(() -> 42)))
                    .isEqualTo(42);
            assertThatThrownBy(() -> TestThreads.getOrFail(TestThreads.RUN_LIMIT, "the failing work",
                    pool.submit(() -> {
                        throw new IllegalStateException("refused");
                    }))).isInstanceOf(ExecutionException.class).hasCauseInstanceOf(IllegalStateException.class);
        } finally {
            never.countDown();
            pool.shutdownNow();
        }
    }

    /** Threads that end are waited for, and the wait returns once they have ended. */
    @Test
    @Timeout(60)
    void joinedThreadsThatEndAreWaitedFor() throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        Thread first = started("first", release::await);
        Thread second = started("second", release::countDown);
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, first, second);
        assertThat(first.isAlive()).isFalse();
        assertThat(second.isAlive()).isFalse();
    }

    /** A thread that is not a daemon is refused: one that hung would keep the test JVM alive. */
    @Test
    void aThreadThatIsNotADaemonIsRefused() {
        Thread t = new Thread(() -> { }, "not-a-daemon");
        assertThatThrownBy(() -> TestThreads.joinOrFail(Duration.ofSeconds(1), t))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("thread not-a-daemon is not a daemon (expected: setDaemon(true) before it is started)");
    }

    /** What a thread of these tests runs. */
    private interface Waits {
        void run() throws InterruptedException;
    }

    /** A started daemon thread named {@code name} running {@code body}. */
    private static Thread started(String name, Waits body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }
}
