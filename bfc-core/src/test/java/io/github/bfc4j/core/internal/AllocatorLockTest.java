/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.TestThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class AllocatorLockTest {

    /** Plain fields, guarded by the lock under test. */
    private long counter;
    private boolean inside;

    @Test
    @Timeout(60)
    void eightThreadsNeverOverlapAndSeeEachOthersWrites() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        int threads = 8;
        int rounds = 100_000;
        AtomicInteger overlaps = new AtomicInteger();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        if (inside) {
                            overlaps.incrementAndGet();
                        }
                        inside = true;
                        counter++;
                        if ((i & 1023) == 0) {
                            Thread.yield(); // now and then a holder gives its core away
                        }
                        inside = false;
                    } finally {
                        lock.unlock();
                    }
                }
            }, "locker-" + t);
            th.setDaemon(true);
            all.add(th);
            th.start();
        }
        // Within the test's 60 s, so that a thread that hangs is named with its stack.
        TestThreads.joinOrFail(Duration.ofSeconds(50), all.toArray(new Thread[0]));
        assertThat(overlaps.get()).isZero();
        assertThat(counter).isEqualTo((long) threads * rounds);
        assertThat(lock.isLocked()).isFalse();
    }

    @Test
    @Timeout(60)
    void waitersThatWentToSleepGetTheLockWhenItIsGivenBack() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        lock.lock();
        int waiters = 4;
        CountDownLatch started = new CountDownLatch(waiters);
        CountDownLatch done = new CountDownLatch(waiters);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < waiters; t++) {
            Thread w = new Thread(() -> {
                started.countDown();
                lock.lock();
                try {
                    counter++;
                } finally {
                    lock.unlock();
                }
                done.countDown();
            });
            threads.add(w);
            w.start();
        }
        started.await();
        for (Thread w : threads) {
            awaitAsleepInLock(w); // every waiter has spun, yielded and gone to sleep
        }
        assertThat(done.getCount()).isEqualTo(waiters);
        lock.unlock();
        assertThat(done.await(10, TimeUnit.SECONDS)).as("every waiter got the lock").isTrue();
        assertThat(counter).isEqualTo(waiters);
    }

    /**
     * A crowd of sleepers: only the first of them has a timer, the others sleep until they are
     * first, so a lost wake-up would leave them asleep for good. Every one of 64 gets the lock,
     * each several times, while the holder keeps taking it back.
     */
    @Test
    @Timeout(120)
    void aCrowdOfSleepersAllGetTheLockInTurn() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        int threads = 64;
        int rounds = 20;
        CountDownLatch done = new CountDownLatch(threads);
        AtomicBoolean stop = new AtomicBoolean();
        Thread holder = new Thread(() -> {
            while (!stop.get()) {
                lock.lock();
                try {
                    long until = System.nanoTime() + 20_000; // past a waiter's spin: they sleep
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                } finally {
                    lock.unlock();
                }
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        for (int t = 0; t < threads; t++) {
            Thread sleeper = new Thread(() -> {
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        counter++;
                    } finally {
                        lock.unlock();
                    }
                }
                done.countDown();
            }, "sleeper-" + t);
            sleeper.setDaemon(true); // one left asleep by a lost wake-up must not keep the test JVM alive
            sleeper.start();
        }
        boolean all = done.await(90, TimeUnit.SECONDS);
        stop.set(true);
        TestThreads.joinOrFail(Duration.ofSeconds(20), holder); // within the test's 120 s
        assertThat(all).as("every sleeper got the lock %d times (%d threads still waiting)", rounds,
                done.getCount()).isTrue();
        assertThat(counter).isEqualTo((long) threads * rounds);
        assertThat(lock.isLocked()).isFalse();
    }

    @Test
    @Timeout(60)
    void aSleeperGetsTheLockFromAHolderThatKeepsTakingItBack() throws InterruptedException {
        // The holder keeps the lock 20 us at a time (longer than a waiter spins, so waiters go
        // to sleep) and takes it back at once: a release wakes a sleeper only while no wake-up
        // is on its way, and a sleeper must still get the lock in one of the holder's short
        // gaps (or on its own timed wake-up).
        AllocatorLock lock = new AllocatorLock();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong holderRounds = new AtomicLong();
        Thread holder = new Thread(() -> {
            while (!stop.get()) {
                lock.lock();
                try {
                    counter++;
                    long start = System.nanoTime();
                    while (System.nanoTime() - start < 20_000) {
                        Thread.onSpinWait();
                    }
                } finally {
                    lock.unlock();
                }
                holderRounds.incrementAndGet();
            }
        }, "holder");
        holder.setDaemon(true);
        holder.start();
        try {
            int waiters = 3;
            CountDownLatch done = new CountDownLatch(waiters);
            for (int t = 0; t < waiters; t++) {
                new Thread(() -> {
                    for (int i = 0; i < 20; i++) {
                        lock.lock();
                        try {
                            counter++;
                        } finally {
                            lock.unlock();
                        }
                        LockSupport.parkNanos(2_000_000); // long enough to have to wait again
                    }
                    done.countDown();
                }).start();
            }
            assertThat(done.await(30, TimeUnit.SECONDS)).as("every waiter got the lock 20 times"
                    + " while the holder ran " + holderRounds.get() + " rounds").isTrue();
        } finally {
            stop.set(true);
            TestThreads.joinOrFail(Duration.ofSeconds(20), holder); // within the test's 60 s
        }
        assertThat(lock.isLocked()).isFalse();
    }

    @Test
    @Timeout(60)
    void anInterruptWhileWaitingIsKeptAndTheLockStillTaken() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        lock.lock();
        AtomicBoolean gotIt = new AtomicBoolean();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            lock.lock();
            try {
                gotIt.set(true);
                interruptedAfter.set(Thread.currentThread().isInterrupted());
            } finally {
                lock.unlock();
            }
        });
        waiter.start();
        awaitAsleepInLock(waiter);
        waiter.interrupt();
        // Woken by the interrupt, it takes the flag (to set it again later) and sleeps again.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (waiter.isInterrupted()) {
            assertThat(System.nanoTime() - deadline).as("the waiter took the interrupt within 30 s").isNegative();
            Thread.sleep(1);
        }
        awaitAsleepInLock(waiter);
        assertThat(gotIt.get()).as("still waiting for the lock").isFalse();
        lock.unlock();
        waiter.join(10_000);
        assertThat(gotIt.get()).isTrue();
        assertThat(interruptedAfter.get()).isTrue();
    }

    @Test
    void tryLockTakesAFreeLockOrOneThisThreadHolds() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        assertThat(lock.tryLock()).isTrue();
        assertThat(lock.isLocked()).isTrue();
        assertThat(lock.tryLock()).as("reentrant").isTrue();
        AtomicBoolean other = new AtomicBoolean(true);
        Thread t = new Thread(() -> other.set(lock.tryLock()));
        t.start();
        t.join(10_000);
        assertThat(other.get()).as("another thread's tryLock").isFalse();
        lock.unlock();
        assertThat(lock.isLocked()).as("taken twice, given back once").isTrue();
        lock.unlock();
        assertThat(lock.isLocked()).isFalse();
        assertThat(lock.tryLock()).isTrue();
        lock.unlock();
    }

    @Test
    void aHolderTakesTheLockAgainAndOthersWaitUntilTheLastUnlock() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        lock.lock();
        lock.lock();
        lock.lock();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        AtomicBoolean gotIt = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            lock.lock();
            gotIt.set(true);
            lock.unlock();
        });
        waiter.start();
        awaitAsleepInLock(waiter);
        lock.unlock();
        lock.unlock();
        assertThat(lock.isHeldByCurrentThread()).as("one hold left").isTrue();
        assertThat(gotIt.get()).as("one hold left").isFalse();
        lock.unlock();
        waiter.join(10_000);
        assertThat(gotIt.get()).isTrue();
        assertThat(lock.isLocked()).isFalse();
    }

    @Test
    void anUnlockByAThreadThatDoesNotHoldTheLockIsRefused() throws InterruptedException {
        AllocatorLock lock = new AllocatorLock();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        lock.lock();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                lock.unlock();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        t.start();
        t.join(10_000);
        assertThat(thrown.get()).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(lock.isLocked()).as("still held by its owner").isTrue();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        lock.unlock();
        assertThat(lock.isLocked()).isFalse();
    }

    /**
     * Waits until {@code t} sleeps in the lock ({@code WAITING} or {@code TIMED_WAITING}, parked
     * from {@code AllocatorLock.sleepUntilAcquired}): past its spinning and yielding, so that
     * what the test does next meets a sleeper, not a thread that had not tried yet (a thread
     * started late on a loaded machine).
     *
     * @throws AssertionError if it ended first, or is not seen asleep there within 30 s (with
     *     the stack last seen)
     */
    private static void awaitAsleepInLock(Thread t) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        StackTraceElement[] last = {};
        Thread.State state = t.getState();
        while (System.nanoTime() - deadline < 0) {
            last = t.getStackTrace();
            state = t.getState();
            if (state == Thread.State.TERMINATED) {
                throw new AssertionError(t.getName() + " ended before it was seen asleep in the lock");
            }
            if ((state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) && asleepInLock(last)) {
                return;
            }
            Thread.sleep(1);
        }
        throw new AssertionError(t.getName() + " was not seen asleep in the lock within 30 s; last seen: " + state
                + " at " + java.util.Arrays.toString(last));
    }

    /** Whether the innermost frame below LockSupport's park is AllocatorLock.sleepUntilAcquired. */
    private static boolean asleepInLock(StackTraceElement[] stack) {
        for (StackTraceElement e : stack) {
            String c = e.getClassName();
            if (!(c.equals(LockSupport.class.getName()) || c.equals("jdk.internal.misc.Unsafe"))) {
                return c.equals(AllocatorLock.class.getName()) && e.getMethodName().equals("sleepUntilAcquired");
            }
        }
        return false;
    }
}
