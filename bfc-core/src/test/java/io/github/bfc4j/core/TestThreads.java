/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Test threads released together, whose first failure fails the test; the bounded wait for
 * threads a test started itself, and for work it handed to another thread; and the wait for a
 * thread to be waiting in the retry loop.
 */
public final class TestThreads {

    /** What thread {@code id} does once all threads are released. */
    interface Body {
        void run(int id) throws Exception;
    }

    private TestThreads() {
    }

    /**
     * How long {@link #runTogether(int, long, Body)} waits for its threads, and the limit a test
     * gives {@link #joinOrFail} for its own: far longer than any test's threads take, even on a
     * loaded machine, so that only a thread that hangs reaches it.
     */
    public static final Duration RUN_LIMIT = Duration.ofMinutes(5);

    /**
     * Runs {@code body} on {@code threads} new threads (ids 0 to {@code threads - 1}), released
     * together by a barrier, and waits for all of them, up to {@link #RUN_LIMIT}.
     *
     * @param seed the test's seed, named in the failure
     * @throws AssertionError carrying the first failure of any thread, if one failed; or naming
     *     a thread still running at the limit (a deadlock, a lost wake-up), with its stack
     */
    static void runTogether(int threads, long seed, Body body) throws InterruptedException {
        runTogether(threads, seed, body, RUN_LIMIT);
    }

    /**
     * Runs {@code body} as {@link #runTogether(int, long, Body)} does, waiting up to {@code limit}
     * for all the threads together.
     *
     * @param limit how long the threads may run
     */
    static void runTogether(int threads, long seed, Body body, Duration limit) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            Thread w = new Thread(() -> {
                try {
                    start.await();
                    body.run(id);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "test-thread-" + id);
            w.setDaemon(true); // one that hangs must not keep the test JVM alive
            workers.add(w);
            w.start();
        }
        long deadline = System.nanoTime() + limit.toNanos();
        for (Thread w : workers) {
            if (!joined(w, deadline)) {
                throw new AssertionError(stillRunning("seed " + seed + ": ", w, limit) + (failure.get() == null ? ""
                        : "\nanother failed first: " + failure.get()), failure.get());
            }
        }
        if (failure.get() != null) {
            throw new AssertionError("seed " + seed + ": " + failure.get(), failure.get());
        }
    }

    /**
     * Waits up to {@code limit} for {@code threads}, all together, to end: for threads a test
     * started itself, where {@code join()} with no limit would let one that hangs (a deadlock, a
     * lost wake-up) hang the test and the build with no message.
     *
     * @param limit how long they may take, all together ({@link #RUN_LIMIT} unless the test's
     *     threads must end sooner)
     * @param threads started daemon threads (one that hangs must not keep the test JVM alive), named
     *     for the failure
     * @throws AssertionError naming the first thread still running at the limit, with its state
     *     and stack
     * @throws IllegalArgumentException if one is not a daemon
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static void joinOrFail(Duration limit, Thread... threads) throws InterruptedException {
        joinOrFail("", limit, threads);
    }

    /**
     * Waits for {@code threads} as {@link #joinOrFail(Duration, Thread...)} does, for a seeded
     * test: the failure names the seed.
     *
     * @param seed the test's seed, named in the failure
     * @param limit how long they may take, all together
     * @param threads started daemon threads, named for the failure
     * @throws AssertionError naming the seed and the first thread still running at the limit, with
     *     its state and stack
     * @throws IllegalArgumentException if one is not a daemon
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static void joinOrFail(long seed, Duration limit, Thread... threads) throws InterruptedException {
        joinOrFail("seed " + seed + ": ", limit, threads);
    }

    private static void joinOrFail(String prefix, Duration limit, Thread... threads) throws InterruptedException {
        for (Thread t : threads) {
            if (!t.isDaemon()) {
                throw new IllegalArgumentException("thread " + t.getName()
                        + " is not a daemon (expected: setDaemon(true) before it is started)");
            }
        }
        long deadline = System.nanoTime() + limit.toNanos();
        for (Thread t : threads) {
            if (!joined(t, deadline)) {
                throw new AssertionError(stillRunning(prefix, t, limit));
            }
        }
    }

    /**
     * Waits up to {@code limit} for the result of {@code work}, handed to another thread (an
     * executor's): for a test where {@code get()} with no limit would let work that hangs (a
     * deadlock, a lost wake-up) hang the test and the build with no message.
     *
     * @param <T> its result's type
     * @param limit how long it may take ({@link #RUN_LIMIT} unless it must end sooner)
     * @param what what the work does, for the failure
     * @param work the work's future
     * @return its result
     * @throws AssertionError "WHAT not done after LIMIT" if it has not ended by then (it is then
     *     cancelled, its thread interrupted)
     * @throws ExecutionException if the work threw, as {@link Future#get()} does
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static <T> T getOrFail(Duration limit, String what, Future<T> work) throws ExecutionException,
            InterruptedException {
        try {
            return work.get(limit.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            work.cancel(true);
            throw new AssertionError(what + " not done after " + limit + " (cancelled)", e);
        }
    }

    /** Joins {@code t} until {@code deadline} (a {@link System#nanoTime()}); whether it ended. */
    private static boolean joined(Thread t, long deadline) throws InterruptedException {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        return !t.isAlive();
    }

    /** "NAME still running after LIMIT (STATE)" and its stack, after {@code prefix}. */
    private static String stillRunning(String prefix, Thread t, Duration limit) {
        StringBuilder s = new StringBuilder(prefix).append(t.getName()).append(" still running after ").append(limit)
                .append(" (").append(t.getState()).append(')');
        for (StackTraceElement e : t.getStackTrace()) {
            s.append("\n\tat ").append(e);
        }
        return s.toString();
    }

    /** Far longer than a thread takes to start and fail its first attempt, even under load. */
    private static final long RETRY_WAIT_TIMEOUT_MILLIS = 30_000;

    /**
     * Returns once {@code waiter} waits for a free in the retry loop ({@code AllocatorRetry}'s
     * wait, upstream's {@code AllocateRawInternalWithRetry} waiting on its condition variable):
     * its state is {@code TIMED_WAITING} and {@code Object.wait} called from the retry helper is
     * on its stack. A test that then frees tests the wake-up, not an allocation that had not
     * started yet. Nothing in the allocator is changed or hooked: the thread is observed.
     *
     * @param waiter the thread making the allocation; null until it has started
     * @param finished whether its allocation has returned (then it can wait no longer)
     * @throws AssertionError if the allocation returned before it was seen waiting, or if the thread is not
     *     waiting in the retry loop within {@value #RETRY_WAIT_TIMEOUT_MILLIS} ms
     */
    static void awaitRetryWait(Supplier<Thread> waiter, BooleanSupplier finished) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_WAIT_TIMEOUT_MILLIS);
        StackTraceElement[] last = {};
        Thread.State lastState = null;
        String name = "the allocating thread";
        while (System.nanoTime() - deadline < 0) {
            Thread t = waiter.get();
            if (t != null) {
                name = t.getName();
            }
            if (finished.getAsBoolean()) {
                throw new AssertionError("the allocation on " + name
                        + " returned before it was seen waiting in the retry loop for a free");
            }
            if (t == null) {
                Thread.sleep(5);
                continue;
            }
            last = t.getStackTrace();
            lastState = t.getState();
            if (lastState == Thread.State.TIMED_WAITING && inRetryWait(last)) {
                return;
            }
            Thread.sleep(5);
        }
        StringBuilder stack = new StringBuilder();
        for (StackTraceElement e : last) {
            stack.append("\n\tat ").append(e);
        }
        throw new AssertionError(name + " was not waiting in the retry loop for a free "
                + RETRY_WAIT_TIMEOUT_MILLIS + " ms after its allocation was started; last seen: "
                + (lastState == null ? "not started" : lastState + stack.toString()));
    }

    /** Whether the innermost frames are {@code Object.wait} called by the retry helper's wait. */
    private static boolean inRetryWait(StackTraceElement[] stack) {
        String retry = io.github.bfc4j.core.internal.AllocatorRetry.class.getName();
        boolean inObjectWait = false;
        for (StackTraceElement e : stack) {
            if (e.getClassName().equals(Object.class.getName()) && e.getMethodName().startsWith("wait")) {
                inObjectWait = true;
            } else if (inObjectWait) {
                return e.getClassName().equals(retry) && e.getMethodName().equals("waitForMillis");
            } else {
                return false;
            }
        }
        return false;
    }
}
