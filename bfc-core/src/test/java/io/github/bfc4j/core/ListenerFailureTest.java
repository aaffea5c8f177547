/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import org.junit.jupiter.api.Test;

/**
 * What the allocator records beside an allocation (provenance, JFR) can fail after the chunk
 * was taken: the chunk then goes back, the caller gets the failure, and nothing leaks.
 */
class ListenerFailureTest {

    private static final long MIB = 1L << 20;
    private static final long BASE = 0x7f0000000000L;

    private static BfcAllocator allocator() {
        return BfcAllocator.builder().name("listened").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false)).build();
    }

    /** Throws once from its allocation event (as a recorder out of heap would). */
    private static final class FailingOnce extends PortListener {
        boolean failed;

        @Override
        boolean listensToCalls() {
            return true;
        }

        @Override
        void allocatedLocked(int h) {
            if (!failed) {
                failed = true;
                throw new OutOfMemoryError("a recorder out of heap");
            }
        }
    }

    @Test
    void aListenerThatThrowsAfterTheChunkWasTakenGetsItGivenBack() {
        for (boolean timing : new boolean[] {false, true}) {
            try (BfcAllocator a = allocator()) {
                if (timing) {
                    a.setTimingCounter(new SharedCounter());
                }
                long kept = a.allocateRaw(256, 1000);
                AllocatorStats before = a.getStats();
                a.port.install(new FailingOnce(), () -> { });

                assertThatThrownBy(() -> a.allocateRaw(256, 4096)).isInstanceOf(OutOfMemoryError.class)
                        .hasMessage("a recorder out of heap");
                assertThat(a.bytesInUse()).as("timing counter %s", timing).isEqualTo(before.bytesInUse());
                MemoryStats m = a.memoryStats();
                assertThat(m.activeAllocations()).as("the failed call's chunk counted freed").isEqualTo(1);
                assertThat(m.allocatedBytesTotal() - m.freedBytesTotal()).isEqualTo(m.bytesInUse());
                a.checkInvariants();
                long again = a.allocateRaw(256, 4096);
                assertThat(again).as("the chunk given back is served next").isEqualTo(kept + 1024);
                a.deallocateRaw(again);
                a.deallocateRaw(kept);
                assertThat(a.bytesInUse()).isZero();
                a.checkInvariants();
            }
        }
    }

    /** Throws once from its region event (as a recorder out of heap would). */
    private static final class FailingRegionOnce extends PortListener {
        boolean failed;

        @Override
        void regionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
            if (!failed) {
                failed = true;
                throw new OutOfMemoryError("a recorder out of heap");
            }
        }
    }

    /**
     * A listener that throws from the event of a region obtained: the caller gets the failure,
     * and the region is whole (counted, tiled by its free chunk, binned), so that it serves the
     * next allocation and is given back at the close.
     */
    @Test
    void aListenerThatThrowsFromARegionEventLeavesTheRegionWhole() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 30, 0, false);
        BfcAllocator a = BfcAllocator.builder().name("listened").memoryLimit(64 * MIB).subAllocator(sim)
                .build();
        a.port.install(new FailingRegionOnce(), () -> { });

        assertThatThrownBy(() -> a.allocateRaw(256, 4096)).isInstanceOf(OutOfMemoryError.class)
                .hasMessage("a recorder out of heap");
        assertThat(a.getStats().poolBytes()).isEqualTo(sim.reservedBytes()).isPositive();
        assertThat(a.bytesInUse()).isZero();
        a.checkInvariants();
        long reserved = sim.reservedBytes();
        long p = a.allocateRaw(256, 4096);
        assertThat(p).as("served from the region").isEqualTo(BASE);
        assertThat(sim.reservedBytes()).isEqualTo(reserved);
        a.deallocateRaw(p);
        a.checkInvariants();
        a.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    /** Throws from every free event (as a recorder out of heap would), counting them. */
    private static final class FailingFrees extends PortListener {
        int thrown;

        @Override
        boolean listensToCalls() {
            return true;
        }

        @Override
        void freedLocked(int h) {
            thrown++;
            throw new OutOfMemoryError("a recorder out of heap #" + thrown);
        }
    }

    /**
     * A listener that throws from a free event: the caller gets the failure, but the free is
     * counted and made all the same (a raw free, a handle's close), and a close goes on to give
     * every region back before it throws; so nothing stays in use, no handle is left unable to
     * free its chunk, and no region is lost.
     */
    @Test
    void aListenerThatThrowsFromAFreeLeavesTheChunkFreed() {
        for (boolean timing : new boolean[] {false, true}) {
            SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 30, 0, false);
            BfcAllocator a = BfcAllocator.builder().name("listened").memoryLimit(64 * MIB).subAllocator(sim)
                    .closePolicy(ClosePolicy.FORCE).build();
            if (timing) {
                a.setTimingCounter(new SharedCounter());
            }
            long kept = a.allocateRaw(256, 1000);
            long raw = a.allocateRaw(256, 4096);
            Allocation handle = a.allocate(2000);
            a.port.install(new FailingFrees(), () -> { });

            assertThatThrownBy(() -> a.deallocateRaw(raw)).isInstanceOf(OutOfMemoryError.class);
            assertThatThrownBy(handle::close).isInstanceOf(OutOfMemoryError.class);
            assertThat(handle.isClosed()).isTrue();
            assertThat(a.bytesInUse()).as("timing counter %s", timing).isEqualTo(1024);
            MemoryStats m = a.memoryStats();
            assertThat(m.activeAllocations()).isEqualTo(1);
            assertThat(m.allocatedBytesTotal() - m.freedBytesTotal()).isEqualTo(m.bytesInUse());
            a.checkInvariants();
            assertThatThrownBy(() -> a.deallocateRaw(raw)).as("freed once")
                    .isInstanceOf(IllegalArgumentException.class);

            // Three live allocations at a forced close: each free event throws, the close goes on.
            a.allocateRaw(256, 5000);
            a.allocateRaw(256, 6000);
            assertThatThrownBy(a::close).isInstanceOf(OutOfMemoryError.class)
                    .hasMessage("a recorder out of heap #3")
                    .satisfies(e -> assertThat(e.getSuppressed()).hasSize(2));
            assertThat(a.isClosed()).isTrue();
            assertThat(a.bytesInUse()).isZero();
            assertThat(sim.reservedBytes()).as("every region given back").isZero();
        }
    }

    /**
     * A loan's free whose listener throws frees the chunk all the same, so it is no longer lent:
     * the loan's count of what it lent used to stay one higher, so a closed loan kept its number
     * for ever, and once 255 had, the allocator could lend to no runtime. Closed, this loan gives
     * its number back: 255 loans can be made again.
     */
    @Test
    void aLoansFreeThatAListenerFailsStillGivesTheLoansNumberBack() {
        try (BfcAllocator a = allocator()) {
            MemoryAllocator.Loan loan = a.lendTo("Runtime R", "close R");
            long p = loan.allocateRawOrThrow(256, 4096);
            a.port.install(new FailingFrees(), () -> { });
            assertThatThrownBy(() -> loan.deallocateRaw(p)).isInstanceOf(OutOfMemoryError.class);
            assertThat(a.bytesInUse()).as("the chunk is freed").isZero();
            loan.close();
            java.util.List<MemoryAllocator.Loan> loans = new java.util.ArrayList<>();
            for (int i = 1; i <= 255; i++) {
                loans.add(a.lendTo("runtime " + i, "close it"));
            }
            loans.forEach(MemoryAllocator.Loan::close);
            a.checkInvariants();
        }
    }

    /**
     * Past 65,536 distinct annotation names held by live chunks, chunks are marked as such (the
     * marker overflowed the stack).
     */
    @Test
    void annotationNamesPastTheLimitAreMarkedNotFatal() {
        try (BfcAllocator a = allocator()) {
            a.recordAnnotations(true);
            long[] held = new long[1 << 16];
            for (int i = 0; i < held.length; i++) {
                try (MemoryAnnotation m = MemoryAnnotation.push("n" + i)) {
                    held[i] = a.allocateRaw(256, 256);
                }
            }
            long p;
            try (MemoryAnnotation m = MemoryAnnotation.push("one more")) {
                p = a.allocateRaw(256, 256);
            }
            long q;
            try (MemoryAnnotation m = MemoryAnnotation.push("and another")) {
                q = a.allocateRaw(256, 256);
            }
            for (long ptr : new long[] {p, q}) {
                MemoryMap.Chunk c = a.memoryMap().chunks().stream().filter(x -> x.ptr() == ptr).findFirst()
                        .orElseThrow();
                assertThat(c.provenance().annotation()).isEqualTo("(more than 65536 annotation names)");
            }
            a.deallocateRaw(p);
            a.deallocateRaw(q);
            for (long ptr : held) {
                a.deallocateRaw(ptr);
            }
            assertThat(a.bytesInUse()).isZero();
        }
    }
}
