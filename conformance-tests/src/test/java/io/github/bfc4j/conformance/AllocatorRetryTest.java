/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's tensorflow/core/common_runtime/gpu/gpu_allocator_retry_test.cc
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.internal.AllocatorRetry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Ports of {@code GPUAllocatorRetryTest} from
 * tensorflow/core/common_runtime/gpu/gpu_allocator_retry_test.cc (read at tensorflow/tensorflow
 * 00f0938ae85c7dd68b44b4d80a873f42b1dca16a): the retry helper that {@code BFCAllocator} runs a
 * failed allocation through when {@code allow_retry_on_failure} is set, ported as
 * {@link AllocatorRetry}. Upstream's {@code FakeAllocator} counts units of capacity; its
 * consumers take turns through an {@code AlternatingBarrier}, so that the races the tests need
 * happen every time. Waits and thresholds are upstream's.
 */
class AllocatorRetryTest {

    /**
     * Upstream's {@code FakeAllocator}: counts the outstanding allocations, not their sizes, and
     * retries a failed one through {@link AllocatorRetry} for up to {@code millisToWait}.
     */
    private static final class FakeAllocator {
        private static final long GOOD_PTR = 0xdeadbeefL;

        private final AllocatorRetry retry = new AllocatorRetry();
        private final long millisToWait;
        private long memoryCapacity; // guarded by this

        FakeAllocator(long cap, long millisToWait) {
            this.memoryCapacity = cap;
            this.millisToWait = millisToWait;
        }

        long allocateRaw(long alignment, long numBytes) {
            return retry.allocateRaw((a, nb, v) -> {
                synchronized (this) {
                    if (memoryCapacity > 0) {
                        --memoryCapacity;
                        return GOOD_PTR;
                    }
                    return 0;
                }
            }, millisToWait, alignment, numBytes);
        }

        void deallocateRaw(long ptr) {
            synchronized (this) {
                ++memoryCapacity;
                retry.notifyDealloc();
            }
        }
    }

    /**
     * Upstream's {@code AlternatingBarrier}: makes the consumer threads take turns in their
     * calls of the allocator; a user may go out of turn after waiting 10 times 1 ms.
     */
    private static final class AlternatingBarrier {
        private final ReentrantLock mu = new ReentrantLock();
        private final Condition cv = mu.newCondition();
        private final int numUsers;
        private final boolean[] done; // guarded by mu
        private int nextTurn; // guarded by mu

        AlternatingBarrier(int numUsers) {
            this.numUsers = numUsers;
            this.done = new boolean[numUsers];
        }

        void waitTurn(int userIndex) throws InterruptedException {
            mu.lock();
            try {
                int waitCycles = 0;
                // A user is allowed to proceed out of turn if it waits too long.
                while (nextTurn != userIndex && waitCycles++ < 10) {
                    cv.await(1, TimeUnit.MILLISECONDS);
                }
                if (nextTurn == userIndex) {
                    incrementTurn();
                    cv.signalAll();
                }
            } finally {
                mu.unlock();
            }
        }

        /** When a user quits, stop reserving it a turn. */
        void done(int userIndex) {
            mu.lock();
            try {
                done[userIndex] = true;
                if (nextTurn == userIndex) {
                    incrementTurn();
                    cv.signalAll();
                }
            } finally {
                mu.unlock();
            }
        }

        private void incrementTurn() {
            int skipped = 0;
            while (skipped < numUsers) {
                nextTurn = (nextTurn + 1) % numUsers;
                if (!done[nextTurn]) {
                    return;
                }
                ++skipped;
            }
        }
    }

    private FakeAllocator alloc;
    private AlternatingBarrier barrier;
    private final List<Thread> consumers = new ArrayList<>();
    private AtomicIntegerArray consumerCount;
    private volatile boolean notified;
    private final Object mu = new Object();
    private boolean hasFailed; // guarded by mu
    private volatile Throwable consumerError;

    private void launchConsumerThreads(int numConsumers, int capNeeded) {
        barrier = new AlternatingBarrier(numConsumers);
        consumerCount = new AtomicIntegerArray(numConsumers);
        for (int i = 0; i < numConsumers; ++i) {
            final int index = i;
            Thread t = new Thread(() -> {
                try {
                    do {
                        long ptr = 0;
                        for (int j = 0; j < capNeeded; ++j) {
                            barrier.waitTurn(index);
                            ptr = alloc.allocateRaw(16, 1);
                            if (ptr == 0) {
                                synchronized (mu) {
                                    hasFailed = true;
                                }
                                barrier.done(index);
                                return;
                            }
                        }
                        consumerCount.incrementAndGet(index);
                        for (int j = 0; j < capNeeded; ++j) {
                            barrier.waitTurn(index);
                            alloc.deallocateRaw(ptr);
                        }
                    } while (!notified);
                    barrier.done(index);
                } catch (Throwable e) {
                    consumerError = e;
                    barrier.done(index);
                }
            }, "anon_thread-" + i);
            consumers.add(t);
            t.start();
        }
    }

    /**
     * Waits up to {@code waitMicros} for {@code hasFailed} to equal {@code expected}, then ends
     * all threads (each within 30 s, or the test fails: upstream's threads end within their
     * 1 s retry wait).
     */
    private void joinConsumerThreads(boolean expected, long waitMicros) throws InterruptedException {
        while (waitMicros > 0) {
            synchronized (mu) {
                if (hasFailed == expected) {
                    break;
                }
            }
            long intervalMicros = Math.min(1000, waitMicros);
            TimeUnit.MICROSECONDS.sleep(intervalMicros);
            waitMicros -= intervalMicros;
        }
        notified = true;
        for (Thread c : consumers) {
            c.join(TimeUnit.SECONDS.toMillis(30));
            assertThat(c.isAlive()).as("%s ended", c.getName()).isFalse();
        }
        assertThat(consumerError).as("a consumer thread threw").isNull();
    }

    private boolean hasFailed() {
        synchronized (mu) {
            return hasFailed;
        }
    }

    private void logConsumerCounts(int numConsumers) {
        for (int i = 0; i < numConsumers; ++i) {
            System.out.println("Consumer " + i + " is " + consumerCount.get(i));
        }
    }

    @AfterEach
    void endConsumers() throws InterruptedException {
        notified = true;
        for (Thread c : consumers) {
            c.join(TimeUnit.SECONDS.toMillis(30));
        }
    }

    /** Verifies correct retrying when memory is slightly overcommitted but we allow retry. */
    @Test
    void retrySuccess() throws InterruptedException {
        // Support up to 2 allocations simultaneously, waits up to 1000 msec for a chance to
        // alloc.
        alloc = new FakeAllocator(2, 1000);
        // Launch 3 consumers, each of whom needs 1 unit at a time.
        launchConsumerThreads(3, 1);
        // This should be enough time for each consumer to be satisfied many times.
        TimeUnit.MICROSECONDS.sleep(50000);
        joinConsumerThreads(false, 0);
        logConsumerCounts(3);
        assertThat(hasFailed()).isFalse();
        assertThat(consumerCount.get(0)).isPositive();
        assertThat(consumerCount.get(1)).isPositive();
        assertThat(consumerCount.get(2)).isPositive();
    }

    /**
     * Verifies OutOfMemory failure when memory is slightly overcommitted and retry is not
     * allowed. (Upstream notes that this test cannot see the failure where threads do not really
     * run in parallel.)
     */
    @Test
    void noRetryFail() throws InterruptedException {
        // Support up to 2 allocations simultaneously, waits up to 0 msec for a chance to alloc.
        alloc = new FakeAllocator(2, 0);
        // Launch 3 consumers, each of whom needs 1 unit at a time.
        launchConsumerThreads(3, 1);
        TimeUnit.MICROSECONDS.sleep(50000);
        // Will wait up to 10 seconds for proper race condition to occur, resulting in failure.
        joinConsumerThreads(true, 10000000);
        logConsumerCounts(3);
        assertThat(hasFailed()).isTrue();
    }

    /**
     * Verifies OutOfMemory failure when retry is allowed but memory capacity is too low even for
     * retry.
     */
    @Test
    void retryInsufficientFail() throws InterruptedException {
        // Support up to 2 allocations simultaneously, waits up to 1000 msec for a chance to
        // alloc.
        alloc = new FakeAllocator(2, 1000);
        // Launch 3 consumers, each of whom needs 2 units at a time. We expect deadlock where 2
        // consumers each hold 1 unit, and timeout trying to get the second.
        launchConsumerThreads(3, 2);
        TimeUnit.MICROSECONDS.sleep(50000);
        // We're forcing a race condition, so this will fail quickly, but give it 10 seconds
        // anyway.
        joinConsumerThreads(true, 10000000);
        logConsumerCounts(3);
        assertThat(hasFailed()).isTrue();
    }
}
