/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An out-of-memory listener that allocates, and fails: its call gets its own exception, no
 * listener hears of that failure (no recursion), and the call whose failure the listener was
 * told of still gets its own exception.
 */
class OutOfMemoryListenerReentryTest {

    private static final long MIB = 1L << 20;

    /** What the listener saw: the failures it was told of, and what its own allocation got. */
    private static final class AllocatingListener implements OutOfMemoryListener {
        final List<Long> told = new ArrayList<>();
        final List<Throwable> got = new ArrayList<>();
        MemoryAllocator allocator;

        @Override
        public void onOutOfMemory(OutOfMemoryReport report) {
            told.add(report.requestedBytes());
            try (Allocation spare = allocator.allocate(3 * MIB)) {
                got.add(null);
            } catch (BfcOutOfMemoryException e) {
                got.add(e);
            }
        }
    }

    @Test
    void aListenerThatFailsToAllocateHearsOnlyOfTheFirstFailure() {
        try (BfcAllocator a = BfcAllocator.builder().name("reentry").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .allowRetryOnFailure(false).closePolicy(ClosePolicy.FORCE).build()) {
            AllocatingListener listener = new AllocatingListener();
            listener.allocator = a;
            a.addOutOfMemoryListener(listener);
            long held = a.allocateRaw(64, 2 * MIB);

            assertFailureSeenOnce(() -> a.allocate(5 * MIB), listener);
            // The raw API: 0 for the outer call, the same one report.
            assertThat(a.allocateRaw(64, 6 * MIB)).isZero();
            assertThat(listener.told).containsExactly(5 * MIB, 6 * MIB);
            a.deallocateRaw(held);
            a.checkInvariants();
        }
    }

    @Test
    void theSameOnAShardedAllocator() {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("reentry").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false)).shards(1).build()) {
            AllocatingListener listener = new AllocatingListener();
            listener.allocator = a;
            a.addOutOfMemoryListener(listener);
            long held = a.allocateRaw(64, 2 * MIB);

            assertFailureSeenOnce(() -> a.allocate(5 * MIB), listener);
            a.deallocateRaw(held);
        }
    }

    /**
     * A listener that throws an Error (here StackOverflowError, as a listener that recursed
     * would): the caller gets it, the thread's next failure is reported and thrown as usual, and
     * the report's picture is not kept reachable from the thread in between (it held a
     * snapshot, with the whole history when one is recorded, until the thread's next failure).
     */
    @Test
    void aListenerThatThrowsAnErrorKeepsNoPictureBehind() throws InterruptedException {
        try (BfcAllocator a = BfcAllocator.builder().name("erring").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false)).build()) {
            List<WeakReference<OutOfMemoryReport>> told = new ArrayList<>();
            a.addOutOfMemoryListener(report -> {
                told.add(new WeakReference<>(report));
                if (told.size() == 1) {
                    throw new StackOverflowError("injected: a listener that recursed");
                }
            });
            assertThatThrownBy(() -> a.allocateRaw(64, 5 * MIB)).isInstanceOf(StackOverflowError.class);
            GarbageCollection.gcUntil("the first report collected, once the call that threw returned",
                    () -> told.get(0).get() == null);

            assertThatThrownBy(() -> a.allocate(6 * MIB)).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("tried to allocate 6.00MiB");
            assertThat(told).as("the listener is told of the next failure too").hasSize(2);
            a.checkInvariants();
        }
    }

    /**
     * Only a VirtualMachineError of a listener reaches the failing call: an AssertionError (an
     * Error too) is logged and ignored as any other exception, and the next listener is told.
     * (docs/observability.md, OutOfMemoryListener)
     */
    @Test
    void aListenersAssertionErrorIsLoggedAndTheNextListenerIsTold() {
        try (BfcAllocator a = BfcAllocator.builder().name("asserting").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false)).build()) {
            List<Long> second = new ArrayList<>();
            a.addOutOfMemoryListener(report -> {
                throw new AssertionError("injected: a listener's failed assertion");
            });
            a.addOutOfMemoryListener(report -> second.add(report.requestedBytes()));
            assertThatThrownBy(() -> a.allocate(5 * MIB)).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("tried to allocate 5.00MiB");
            assertThat(second).containsExactly(5 * MIB);
            a.checkInvariants();
        }
    }

    private static void assertFailureSeenOnce(Runnable call, AllocatingListener listener) {
        assertThatThrownBy(call::run).isInstanceOf(BfcOutOfMemoryException.class)
                .hasMessageContaining("tried to allocate 5.00MiB");
        assertThat(listener.told).as("the listener is told once, of the outer failure").containsExactly(5 * MIB);
        assertThat(listener.got).hasSize(1);
        assertThat(listener.got.get(0)).as("the listener's own allocation failed with its own exception")
                .isInstanceOf(BfcOutOfMemoryException.class).hasMessageContaining("tried to allocate 3.00MiB");
    }
}
