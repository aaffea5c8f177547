/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.AllocatedBytes;
import io.github.bfc4j.core.ThreadWatch;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A thread that sleeps in {@link AllocatorLock} creates no object entering or leaving the queue
 * of sleepers, also where another thread holds the queue's guard at that moment. With a
 * {@code ReentrantLock} as the guard, its contended {@code lock()} created a queue node: as the
 * thread left the queue, the allocator's lock already taken, a node that could not be had for
 * want of heap ended {@code lock()} with an {@link OutOfMemoryError} and the lock held by no
 * one, so that every later caller waited for ever.
 */
class AllocatorLockGarbageTest {

    private static final String LOCK = AllocatorLock.class.getName();

    @Test
    @Timeout(120)
    void aSleeperThatMeetsTheQueuesGuardHeldCreatesNoObject() throws Exception {
        com.sun.management.ThreadMXBean mx = AllocatedBytes.counter();
        // The first rounds warm up (class loading, the JIT); a one-time event of the JVM shows
        // in one round, an object made by the lock in every one.
        long[] allocated = new long[5];
        for (int round = 0; round < 3 + allocated.length; round++) {
            long bytes = sleepWithTheGuardHeldOnTheWayInAndOut(mx);
            if (round >= 3) {
                allocated[round - 3] = bytes;
            }
        }
        assertThat(allocated).as("bytes the sleeper allocated in lock(), per round: %s", Arrays.toString(allocated))
                .contains(0L);
    }

    /**
     * The main thread holds the lock; a second thread calls {@link AllocatorLock#lock()} while
     * the main thread holds the queue's guard, so that it must wait for the guard on its way into
     * the queue; once it sleeps, the main thread takes the guard again and gives the lock back,
     * so that the sleeper, holding the lock, must wait for the guard on its way out.
     *
     * @return the bytes the second thread allocated inside its {@code lock()}
     */
    private static long sleepWithTheGuardHeldOnTheWayInAndOut(com.sun.management.ThreadMXBean mx) throws Exception {
        AllocatorLock lock = new AllocatorLock();
        AtomicReference<Thread> sleeper = new AtomicReference<>();
        AtomicLong allocated = new AtomicLong(-1);
        CompletableFuture<Void> call = new CompletableFuture<>();
        lock.lock();
        lock.withQueueGuarded(() -> {
            Thread t = new Thread(() -> {
                try {
                    long self = Thread.currentThread().getId();
                    long calibration = mx.getThreadAllocatedBytes(self);
                    calibration = mx.getThreadAllocatedBytes(self) - calibration;
                    long before = mx.getThreadAllocatedBytes(self);
                    lock.lock();
                    long after = mx.getThreadAllocatedBytes(self);
                    lock.unlock();
                    allocated.set(after - before - calibration);
                    call.complete(null);
                } catch (Throwable e) {
                    call.completeExceptionally(e);
                }
            }, "sleeper");
            t.setDaemon(true);
            sleeper.set(t);
            t.start();
            awaitIn(t, call, "enqueue");
        });
        ThreadWatch.awaitWaitingIn(sleeper::get, call, LOCK, "sleepUntilAcquired", "for the lock");
        lock.withQueueGuarded(() -> {
            lock.unlock();
            awaitIn(sleeper.get(), call, "dequeue");
        });
        call.get(60, TimeUnit.SECONDS);
        assertThat(lock.isLocked()).isFalse();
        return allocated.get();
    }

    /** Waits until {@code t} is inside {@code AllocatorLock.method} (waiting for the guard). */
    private static void awaitIn(Thread t, CompletableFuture<Void> call, String method) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        StackTraceElement[] last = {};
        while (System.nanoTime() - deadline < 0) {
            if (call.isDone()) {
                throw new AssertionError("lock() returned before the sleeper was seen in " + method);
            }
            last = t.getStackTrace();
            for (StackTraceElement e : last) {
                if (e.getClassName().equals(LOCK) && e.getMethodName().equals(method)) {
                    return;
                }
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("the sleeper was not seen in AllocatorLock." + method + " within 30 s; last seen at "
                + Arrays.toString(last));
    }
}
