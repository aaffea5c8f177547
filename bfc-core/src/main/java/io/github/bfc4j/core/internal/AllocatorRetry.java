/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::AllocatorRetry (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.concurrent.TimeUnit;

/**
 * Retries a failed allocation while other threads free memory, up to a deadline. Port of
 * {@code tsl::AllocatorRetry}.
 *
 * <p>{@link #notifyDealloc()} is called on every free; it only takes the monitor when some
 * thread is waiting. A free that happens between a failed attempt and the wait is not seen
 * until the next free or the deadline, exactly as with upstream's condition variable.
 */
public final class AllocatorRetry {

    /** One allocation attempt: upstream's {@code alloc_func}. */
    @FunctionalInterface
    public interface AllocFunc {
        /**
         * @param alignment the alignment
         * @param numBytes the size
         * @param verboseFailure whether a failure should be logged in detail
         * @return the address, or 0
         */
        long allocate(long alignment, long numBytes, boolean verboseFailure);
    }

    private final Object memoryReturned = new Object();
    private volatile int waiters;
    /** Set by {@link #close()}: no allocation waits from then on. */
    private volatile boolean closed;

    /**
     * Port of {@code AllocatorRetry::AllocateRaw}: calls {@code allocFunc} until it succeeds or
     * {@code maxMillisToWait} have passed since the first failure, waiting for a free between
     * attempts; the last attempt is verbose.
     *
     * @param allocFunc the allocation attempt
     * @param maxMillisToWait the bound on waiting
     * @param alignment passed on
     * @param numBytes passed on; 0 returns 0 at once
     * @return the address, or 0
     */
    public long allocateRaw(AllocFunc allocFunc, long maxMillisToWait, long alignment, long numBytes) {
        if (numBytes == 0) {
            return 0;
        }
        long deadlineNanos = 0;
        boolean first = true;
        long ptr = 0;
        while (ptr == 0) {
            ptr = allocFunc.allocate(alignment, numBytes, false);
            if (ptr == 0) {
                long now = System.nanoTime();
                if (first) {
                    deadlineNanos = now + TimeUnit.MILLISECONDS.toNanos(maxMillisToWait);
                    first = false;
                }
                if (now - deadlineNanos < 0
                        && waitForMillis(TimeUnit.NANOSECONDS.toMillis(deadlineNanos - now))) {
                    continue;
                } else {
                    return allocFunc.allocate(alignment, numBytes, true);
                }
            }
        }
        return ptr;
    }

    /**
     * @return false if the thread was interrupted or {@link #close()} was called: stop waiting,
     *     make the last attempt
     */
    private boolean waitForMillis(long millis) {
        if (Thread.currentThread().isInterrupted()) {
            return false;
        }
        synchronized (memoryReturned) {
            // Read under the monitor that close() notifies under: a close that came after this
            // thread's failed attempt, but before it waits here (it then saw no waiter to wake),
            // is seen now; one that comes later finds this thread waiting and wakes it.
            if (closed) {
                return false;
            }
            waiters++;
            try {
                memoryReturned.wait(Math.max(1, millis));
                return true;
            } catch (InterruptedException e) {
                // DEVIATION(port): upstream cannot be interrupted; here an interrupt ends the
                // waiting (one last attempt is made) and stays set for the caller.
                Thread.currentThread().interrupt();
                return false;
            } finally {
                waiters--;
            }
        }
    }

    /**
     * Ends every wait, now and later: wakes every waiting allocation, and an allocation that
     * fails afterwards makes its last attempt at once instead of waiting (the allocator was
     * closed: that attempt finds it so). Not in upstream, whose allocator is not closed while
     * in use.
     */
    public void close() {
        closed = true;
        synchronized (memoryReturned) {
            memoryReturned.notifyAll();
        }
    }

    /** Port of {@code AllocatorRetry::NotifyDealloc}: wakes every waiting allocation. */
    public void notifyDealloc() {
        if (waiters > 0) {
            synchronized (memoryReturned) {
                memoryReturned.notifyAll();
            }
        }
    }
}
