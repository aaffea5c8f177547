/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
            });
            all.add(th);
            th.start();
        }
        for (Thread th : all) {
            th.join();
        }
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
        for (int t = 0; t < waiters; t++) {
            new Thread(() -> {
                started.countDown();
                lock.lock();
                try {
                    counter++;
                } finally {
                    lock.unlock();
                }
                done.countDown();
            }).start();
        }
        started.await();
        // Long enough for every waiter to spin, yield and go to sleep.
        Thread.sleep(200);
        assertThat(done.getCount()).isEqualTo(waiters);
        lock.unlock();
        assertThat(done.await(10, TimeUnit.SECONDS)).as("every waiter got the lock").isTrue();
        assertThat(counter).isEqualTo(waiters);
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
        Thread.sleep(100);
        waiter.interrupt();
        Thread.sleep(100);
        assertThat(gotIt.get()).as("still waiting for the lock").isFalse();
        lock.unlock();
        waiter.join(10_000);
        assertThat(gotIt.get()).isTrue();
        assertThat(interruptedAfter.get()).isTrue();
    }

    @Test
    void tryLockTakesOnlyAFreeLock() {
        AllocatorLock lock = new AllocatorLock();
        assertThat(lock.tryLock()).isTrue();
        assertThat(lock.isLocked()).isTrue();
        assertThat(lock.tryLock()).as("not reentrant").isFalse();
        lock.unlock();
        assertThat(lock.isLocked()).isFalse();
        assertThat(lock.tryLock()).isTrue();
        lock.unlock();
    }
}
