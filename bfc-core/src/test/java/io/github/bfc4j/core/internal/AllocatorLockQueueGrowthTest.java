/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.FullHeap;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A thread that goes to sleep in {@link AllocatorLock} when its queue of sleepers must grow, and
 * cannot have the larger queue for want of Java heap, leaves the queue as it was: the sleepers
 * queued before it, and any that come later, all get the lock. Runs in a JVM of its own with a
 * small heap ({@link Child}), which the sleeper fills ({@link FullHeap#fill()}) before it calls
 * {@link AllocatorLock#lock()}.
 */
class AllocatorLockQueueGrowthTest {

    @Test
    void aSleeperThatCannotGrowTheQueueLeavesItAsItWas() throws Exception {
        ChildProcess.Result r = ChildProcess.run(FullHeap.childJvm(Child.class, 24), Duration.ofMinutes(2));
        System.out.println(r.output());
        assertThat(r.output()).as("the child's output (exit %d)", r.status())
                .contains("the queue could not grow")
                .contains("all sleepers had the lock")
                .contains("a later sleeper had the lock");
        assertThat(r.status()).as("the child's exit status; its output:%n%s", r.output()).isZero();
    }

    /**
     * The main thread holds the lock while threads go to sleep in it one after another, each
     * with the Java heap full, until one fails for want of heap (the queue had to grow); then it
     * gives the lock back and waits for the sleepers, and for one more that sleeps afterwards.
     */
    static final class Child {
        /** The objects that fill the heap; dropped once their thread sleeps, or has failed. */
        private static volatile Object ballast;
        /** The error of the thread whose {@code lock()} failed, or null. */
        private static volatile Throwable failure;

        private static final int MOST_SLEEPERS = 200;

        public static void main(String[] args) throws Exception {
            AllocatorLock lock = new AllocatorLock();
            // Warm up: one thread sleeps and gets the lock, so that nothing on its path is still
            // to be loaded or linked when the heap is full.
            lock.lock();
            Thread warm = sleeper(lock, false);
            warm.start();
            awaitAsleepOrEnded(warm);
            lock.unlock();
            if (!joined(warm)) {
                System.out.println("the warm-up sleeper never had the lock");
                System.exit(1);
            }

            lock.lock();
            Thread[] sleepers = new Thread[MOST_SLEEPERS];
            int asleep = 0;
            for (; asleep < MOST_SLEEPERS; asleep++) {
                Thread t = sleeper(lock, true);
                t.start();
                awaitAsleepOrEnded(t);
                ballast = null;
                if (t.getState() == Thread.State.TERMINATED) {
                    break;
                }
                sleepers[asleep] = t;
            }
            System.gc();
            if (failure == null) {
                System.out.println("no lock() failed for want of heap with " + MOST_SLEEPERS + " sleepers");
                System.exit(1);
            }
            if (!(failure instanceof OutOfMemoryError)) {
                failure.printStackTrace(System.out);
                System.exit(1);
            }
            System.out.println("the queue could not grow with " + asleep + " sleepers: " + failure);
            lock.unlock();
            for (int i = 0; i < asleep; i++) {
                if (!joined(sleepers[i])) {
                    System.out.println("sleeper " + i + " of " + asleep + " never had the lock");
                    System.exit(1);
                }
            }
            System.out.println("all sleepers had the lock");

            lock.lock();
            Thread later = sleeper(lock, false);
            later.start();
            awaitAsleepOrEnded(later);
            lock.unlock();
            if (!joined(later)) {
                System.out.println("a sleeper that came later never had the lock");
                System.exit(1);
            }
            System.out.println("a later sleeper had the lock");
        }

        /** A thread that takes the lock and gives it back; with {@code fill}, the heap full first. */
        private static Thread sleeper(AllocatorLock lock, boolean fill) {
            Thread t = new Thread(() -> {
                if (fill) {
                    ballast = FullHeap.fill();
                }
                try {
                    lock.lock();
                } catch (Throwable e) {
                    ballast = null;
                    failure = e;
                    return;
                }
                lock.unlock();
            }, "sleeper");
            t.setDaemon(true);
            return t;
        }

        /**
         * Waits until {@code t} sleeps (it waits in the lock: the only wait on its path) or has
         * ended, creating no object, since the heap may be full meanwhile.
         */
        private static void awaitAsleepOrEnded(Thread t) {
            long deadline = System.nanoTime() + 60_000_000_000L;
            for (;;) {
                Thread.State s = t.getState();
                if (s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING || s == Thread.State.TERMINATED) {
                    return;
                }
                if (System.nanoTime() - deadline > 0) {
                    ballast = null;
                    System.out.println("a sleeper was still " + s + " after 60 s");
                    System.exit(1);
                }
                Thread.onSpinWait();
            }
        }

        private static boolean joined(Thread t) throws InterruptedException {
            t.join(30_000);
            return !t.isAlive();
        }
    }
}
