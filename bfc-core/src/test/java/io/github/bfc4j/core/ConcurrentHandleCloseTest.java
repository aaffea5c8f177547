/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.internal.GrowthFaults;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One {@link Allocation} closed from two threads while the first close's free is under way.
 * The first close is held inside its free (under the allocator's lock, before the free changes
 * anything: the growth of the timestamp queue, {@link GrowthFaults#onIntDequeGrowth}), and then
 * either completes or fails (out of heap: the handle stays open). The second close must not
 * return while the memory is still held: it waits for the first, and frees the memory itself if
 * the first failed. A second close that cannot wait (its thread holds the lock the first needs)
 * is refused instead of deadlocking. Every wait is watched (thread states, latches), never slept.
 */
class ConcurrentHandleCloseTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;
    private static final long HANDLE_BYTES = 4096;
    /** Far longer than any step takes, even on a loaded machine. */
    private static final long TIMEOUT_SECONDS = 30;

    @AfterEach
    void growthWorksAgain() {
        GrowthFaults.clear();
    }

    private static BfcAllocator plain(LeakDetection leaks) {
        return BfcAllocator.builder().name("close-twice").memoryLimit(2 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true)).leakDetection(leaks).build();
    }

    private static ShardedBfcAllocator sharded(LeakDetection leaks) {
        return ShardedBfcAllocator.builder().name("close-twice").memoryLimit(8 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true)).shards(2).leakDetection(leaks)
                .build();
    }

    /**
     * Gives {@code shard} a timing counter and fills its timestamp queue (64 stamped frees, none
     * safe), so that the next free must grow the queue.
     */
    private static void fillTheTimestampQueue(BfcAllocator shard) {
        shard.setTimingCounter(new SharedCounter());
        long[] ptrs = new long[64];
        for (int i = 0; i < ptrs.length; i++) {
            ptrs[i] = shard.allocateRaw(256, 1024);
            assertThat(ptrs[i]).isNotZero();
        }
        for (long p : ptrs) {
            shard.deallocateRaw(p);
        }
    }

    @ParameterizedTest
    @EnumSource(value = LeakDetection.class, names = {"DISABLED", "SIMPLE"})
    void aSecondCloseWaitsForAFirstThatFailsAndFreesTheMemoryItself(LeakDetection leaks) throws Exception {
        BfcAllocator allocator = plain(leaks);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        closeFromTwoThreads(allocator, h, true, false);
        allocator.close(); // REFUSE: nothing is live
    }

    @ParameterizedTest
    @EnumSource(value = LeakDetection.class, names = {"DISABLED", "SIMPLE"})
    void aSecondCloseWaitsForAFirstThatSucceeds(LeakDetection leaks) throws Exception {
        BfcAllocator allocator = plain(leaks);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        closeFromTwoThreads(allocator, h, false, false);
        allocator.close();
    }

    @ParameterizedTest
    @EnumSource(value = LeakDetection.class, names = {"DISABLED", "SIMPLE"})
    void aSecondCloseOfAShardsHandleWaitsForAFirstThatFails(LeakDetection leaks) throws Exception {
        ShardedBfcAllocator allocator = sharded(leaks);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        assertThat(allocator.shards()).contains(h.allocator());
        closeFromTwoThreads(h.allocator(), h, true, false);
        assertThat(allocator.bytesInUse()).isZero();
        allocator.close();
    }

    @ParameterizedTest
    @EnumSource(value = LeakDetection.class, names = {"DISABLED", "SIMPLE"})
    void aSecondCloseOfAShardsHandleWaitsForAFirstThatSucceeds(LeakDetection leaks) throws Exception {
        ShardedBfcAllocator allocator = sharded(leaks);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        closeFromTwoThreads(h.allocator(), h, false, false);
        assertThat(allocator.bytesInUse()).isZero();
        allocator.close();
    }

    /**
     * An interrupt does not end the wait: the second close goes on waiting, frees the memory
     * after the first failed, and returns with its thread still interrupted.
     */
    @Test
    void aSecondCloseInterruptedWhileItWaitsGoesOnAndKeepsTheInterrupt() throws Exception {
        BfcAllocator allocator = plain(LeakDetection.DISABLED);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        closeFromTwoThreads(allocator, h, true, true);
        allocator.close();
    }

    /**
     * Holds a first close of {@code h} inside its free, closes {@code h} on a second thread,
     * checks that the second close waits (also once interrupted, when {@code interruptSecond}),
     * lets the first go on (to fail when {@code firstFails}), and checks the outcome: the memory
     * freed once, the handle closed, the second close returning normally only after that.
     */
    private static void closeFromTwoThreads(BfcAllocator shard, Allocation h, boolean firstFails,
            boolean interruptSecond) throws Exception {
        fillTheTimestampQueue(shard);
        long freesBefore = shard.memoryStats().freesTotal();
        CountDownLatch firstInFree = new CountDownLatch(1);
        CountDownLatch firstGoesOn = new CountDownLatch(1);
        AtomicReference<Throwable> firstThrew = new AtomicReference<>();
        Thread first = new Thread(() -> {
            GrowthFaults.onIntDequeGrowth(() -> {
                firstInFree.countDown();
                awaitUninterruptibly(firstGoesOn);
                if (firstFails) {
                    throw new OutOfMemoryError("injected: IntDeque growth");
                }
            });
            try {
                h.close();
            } catch (Throwable t) {
                firstThrew.set(t);
            }
        }, "first close");
        first.setDaemon(true); // a hung one must not keep the test JVM alive
        first.start();
        assertThat(firstInFree.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("the first close reached its free").isTrue();
        assertThat(h.isClosed()).as("a close has begun").isTrue();

        AtomicReference<Throwable> secondThrew = new AtomicReference<>();
        AtomicBoolean returnedWhileFirstHeld = new AtomicBoolean();
        AtomicBoolean interruptedAfter = new AtomicBoolean();
        Thread second = new Thread(() -> {
            try {
                h.close();
                returnedWhileFirstHeld.set(firstGoesOn.getCount() != 0);
                interruptedAfter.set(Thread.currentThread().isInterrupted());
            } catch (Throwable t) {
                secondThrew.set(t);
            }
        }, "second close");
        second.setDaemon(true);
        second.start();
        boolean waiting = awaitWaitingInClose(second, false);
        assertThat(returnedWhileFirstHeld.get() || secondThrew.get() != null)
                .as("the second close ended while the first close's free was still under way, its"
                        + " memory held (it threw %s)", secondThrew.get())
                .isFalse();
        assertThat(waiting).as("the second close waits for the first (state %s, stack %s)",
                second.getState(), Arrays.toString(second.getStackTrace())).isTrue();
        if (interruptSecond) {
            second.interrupt();
            // Waiting again once it has taken the interrupt (kept aside, to be set again on
            // return): parked, not spinning on an interrupt that ends every park at once.
            assertThat(awaitWaitingInClose(second, true) && !returnedWhileFirstHeld.get() && secondThrew.get() == null)
                    .as("the interrupted second close goes on waiting (it threw %s)", secondThrew.get()).isTrue();
        }

        firstGoesOn.countDown();
        first.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        second.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        assertThat(List.of(first, second)).as("the closes ended").noneMatch(Thread::isAlive);
        if (firstFails) {
            assertThat(firstThrew.get()).as("what the first close threw")
                    .isInstanceOf(OutOfMemoryError.class).hasMessageContaining("injected");
        } else {
            assertThat(firstThrew.get()).as("what the first close threw").isNull();
        }
        assertThat(secondThrew.get()).as("what the second close threw").isNull();
        assertThat(interruptedAfter.get()).as("the second close's thread is still interrupted")
                .isEqualTo(interruptSecond);
        assertThat(h.isClosed()).isTrue();
        assertThat(shard.bytesInUse()).as("the memory is freed once a close returned").isZero();
        assertThat(shard.memoryStats().freesTotal()).as("one free").isEqualTo(freesBefore + 1);
        shard.checkInvariants();
        h.close(); // idempotent
        assertThat(shard.memoryStats().freesTotal()).isEqualTo(freesBefore + 1);
    }

    /**
     * Returns true once {@code t} is waiting inside {@link Allocation#close()} (and, if
     * {@code interruptTaken}, its interrupt status is clear), false if it ended first.
     *
     * @throws AssertionError if it does neither within the timeout
     */
    private static boolean awaitWaitingInClose(Thread t, boolean interruptTaken) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (System.nanoTime() < deadline) {
            Thread.State state = t.getState();
            if (state == Thread.State.TERMINATED) {
                return false;
            }
            if ((state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) && inClose(t.getStackTrace())
                    && !(interruptTaken && t.isInterrupted())) {
                return true;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError(t.getName() + " neither waited in Allocation.close() nor ended within "
                + TIMEOUT_SECONDS + " s: " + t.getState() + " " + Arrays.toString(t.getStackTrace()));
    }

    /**
     * Returns once {@code t} sleeps in the allocator's lock inside {@link Allocation#close()}
     * (the lock's waiters spin, then sleep a millisecond at a time).
     *
     * @throws AssertionError if it does not within the timeout
     */
    private static void awaitWaitingForTheLockInClose(Thread t) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (System.nanoTime() < deadline) {
            Thread.State state = t.getState();
            StackTraceElement[] stack = t.getStackTrace();
            if ((state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) && inClose(stack)
                    && Arrays.stream(stack).anyMatch(e -> e.getClassName().endsWith(".AllocatorLock"))) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError(t.getName() + " did not wait for the allocator's lock in Allocation.close() within "
                + TIMEOUT_SECONDS + " s: " + t.getState() + " " + Arrays.toString(t.getStackTrace()));
    }

    private static boolean inClose(StackTraceElement[] stack) {
        for (StackTraceElement e : stack) {
            if (e.getClassName().equals(Allocation.class.getName()) && e.getMethodName().equals("close")) {
                return true;
            }
        }
        return false;
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                if (!latch.await(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    throw new AssertionError("not released within " + TIMEOUT_SECONDS + " s");
                }
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A visitor of the allocator's chunks (holding its lock) closes a handle whose close another
     * thread has begun, that thread waiting for the lock: waiting for that close there would
     * deadlock both, so the visitor's close is refused; the first close then frees the memory.
     */
    @Test
    void aCloseThatCannotWaitForAnotherBecauseItHoldsTheLockIsRefused() throws Exception {
        BfcAllocator allocator = plain(LeakDetection.DISABLED);
        Allocation h = allocator.allocate(HANDLE_BYTES);
        Thread first = new Thread(h::close, "first close");
        first.setDaemon(true);
        AtomicReference<Throwable> inVisitor = new AtomicReference<>();
        AtomicBoolean closedInVisitor = new AtomicBoolean();
        Thread visiting = new Thread(() -> {
            AtomicBoolean once = new AtomicBoolean(true);
            allocator.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> {
                if (!once.getAndSet(false)) {
                    return;
                }
                first.start();
                // The first close marks the handle closing, then waits for the lock held here.
                awaitWaitingForTheLockInClose(first);
                try {
                    h.close();
                    closedInVisitor.set(true);
                } catch (Throwable t) {
                    inVisitor.set(t);
                }
            });
        }, "visitor");
        visiting.setDaemon(true);
        visiting.start();
        visiting.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        first.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        assertThat(List.of(visiting, first)).as("threads deadlocked").noneMatch(Thread::isAlive);
        assertThat(closedInVisitor.get()).as("the visitor's close returned while the first close had not freed").isFalse();
        assertThat(inVisitor.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("allocation #" + h.allocationId())
                .hasMessageContaining("another thread")
                .hasMessageContaining("forEachChunk");
        assertThat(h.isClosed()).isTrue();
        assertThat(allocator.bytesInUse()).as("the first close freed it").isZero();
        allocator.checkInvariants();
        allocator.close();
    }

    /**
     * A visitor of shard 1's chunks closes a handle of shard 0 whose close another thread has
     * begun, that thread waiting for shard 0's lock, held by a thread reading every shard that
     * waits for shard 1's lock (held by the visitor): waiting there would deadlock all three,
     * so the visitor's close is refused, as a free into another shard from a visitor is.
     */
    @Test
    void aCloseFromAVisitorOfAnotherShardIsRefusedNotWaited() throws Exception {
        ShardedBfcAllocator allocator = sharded(LeakDetection.DISABLED);
        BfcAllocator shard0 = allocator.shards().get(0);
        BfcAllocator shard1 = allocator.shards().get(1);
        Allocation h = shard0.allocate(HANDLE_BYTES);
        long p1 = shard1.allocateRaw(256, 1024);
        Thread first = new Thread(h::close, "first close");
        first.setDaemon(true);
        Thread reader = new Thread(allocator::getStats, "reader");
        reader.setDaemon(true);
        AtomicReference<Throwable> inVisitor = new AtomicReference<>();
        AtomicBoolean closedInVisitor = new AtomicBoolean();
        Thread visiting = new Thread(() -> {
            AtomicBoolean once = new AtomicBoolean(true);
            shard1.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requested, id) -> {
                if (!once.getAndSet(false)) {
                    return;
                }
                // The reader takes shard 0's lock, then waits for shard 1's (held here).
                reader.start();
                awaitWaiting(reader);
                // The first close marks the handle closing, then waits for shard 0's lock.
                first.start();
                awaitWaitingForTheLockInClose(first);
                try {
                    h.close();
                    closedInVisitor.set(true);
                } catch (Throwable t) {
                    inVisitor.set(t);
                }
            });
        }, "visitor");
        visiting.setDaemon(true);
        visiting.start();
        visiting.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        reader.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        first.join(TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        assertThat(List.of(visiting, reader, first)).as("threads deadlocked").noneMatch(Thread::isAlive);
        assertThat(closedInVisitor.get()).as("the visitor's close returned while the first close had not freed").isFalse();
        assertThat(inVisitor.get()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("forEachChunk");
        assertThat(h.isClosed()).isTrue();
        assertThat(shard0.bytesInUse()).as("the first close freed it").isZero();
        allocator.deallocateRaw(p1);
        allocator.close();
    }

    private static void awaitWaiting(Thread t) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING
                && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }
}
