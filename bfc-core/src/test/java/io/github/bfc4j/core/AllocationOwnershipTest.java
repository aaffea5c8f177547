/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import org.junit.jupiter.api.Test;

/**
 * The rule for memory behind an {@link Allocation} handle: only the handle frees it, and it frees
 * only its own allocation. A raw free of it is refused; after a forced close every handle is
 * closed and the figures agree.
 */
class AllocationOwnershipTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator allocator(ClosePolicy policy) {
        return BfcAllocator.builder().name("owned").memoryLimit(64 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true))
                .closePolicy(policy).leakDetection(LeakDetection.DISABLED).build();
    }

    @Test
    void aRawFreeOfHandleOwnedMemoryIsRefusedAndChangesNothing() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        AllocatorStats before = allocator.getStats();
        assertThatThrownBy(() -> allocator.deallocateRaw(a.address()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("0x" + Long.toHexString(a.address()) + " is allocation #1 of allocator 'owned',"
                        + " owned by an Allocation handle: close the Allocation instead of freeing its address"
                        + " with deallocateRaw. Nothing was freed.");
        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        // The sequence: b must not get a's memory, and a's close must not free b.
        Allocation b = allocator.allocate(1000);
        assertThat(b.address()).isNotEqualTo(a.address());
        a.close();
        assertThat(allocator.bytesInUse()).isEqualTo(1024);
        assertThat(allocator.allocationId(b.address())).isEqualTo(b.allocationId());
        Allocation c = allocator.allocate(1000);
        assertThat(c.address()).isNotEqualTo(b.address());
        c.close();
        b.close();
        assertThat(allocator.bytesInUse()).isZero();
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void rawAllocationsAreStillFreedRawAndAHandleChunkIsRawAgainOnceFreed() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        long address = a.address();
        a.close();
        // The same chunk, now handed out raw: a raw free works, and the stale handle frees nothing.
        long p = allocator.allocateRaw(64, 1000);
        assertThat(p).isEqualTo(address);
        a.close();
        assertThat(allocator.bytesInUse()).isEqualTo(1024);
        allocator.deallocateRaw(p);
        assertThat(allocator.bytesInUse()).isZero();
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void afterAForcedCloseEveryHandleIsClosedAndTheFiguresAgree() {
        BfcAllocator allocator = allocator(ClosePolicy.FORCE);
        Allocation a = allocator.allocate(1000);
        Allocation b = allocator.allocate(5000);
        long rawPtr = allocator.allocateRaw(64, 300);
        allocator.close();
        assertThat(allocator.isClosed()).isTrue();
        for (Allocation x : new Allocation[] {a, b}) {
            assertThat(x.isClosed()).isTrue();
            assertThatThrownBy(x::address).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("was closed (ClosePolicy.FORCE) while it was live");
            assertThat(x.toString()).contains(", closed");
            x.close(); // nothing to do, nothing thrown
        }
        assertThat(rawPtr).isNotZero();
        AllocatorStats s = allocator.getStats();
        assertThat(s.bytesInUse()).isZero();
        assertThat(s.poolBytes()).isZero();
        assertThat(allocator.bytesInUse()).isZero();
        assertThat(allocator.reservedBytes()).isZero();
        MemoryStats m = allocator.memoryStats();
        assertThat(m.activeAllocations()).isZero();
        assertThat(m.freesTotal()).isEqualTo(3);
        assertThat(m.freedBytesTotal()).isEqualTo(m.allocatedBytesTotal());
        allocator.checkInvariants();
    }

    @Test
    void aRefusedCloseClosesNoHandle() {
        BfcAllocator allocator = allocator(ClosePolicy.REFUSE);
        Allocation a = allocator.allocate(1000);
        assertThatThrownBy(allocator::close).isInstanceOf(IllegalStateException.class);
        assertThat(allocator.isClosed()).isFalse();
        assertThat(a.isClosed()).isFalse();
        a.close();
        allocator.close();
        assertThat(a.isClosed()).isTrue();
    }

    /**
     * An {@link Error} while the handle is made (out of heap or of stack, injected through the
     * package-private {@code beforeHandle} seam) reaches the caller, and the chunk goes back:
     * no handle could ever free it, and a refusing close would refuse for good.
     */
    @Test
    void anErrorMakingTheHandleGivesTheChunkBack() {
        for (LeakDetection leaks : LeakDetection.values()) {
            SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
            BfcAllocator allocator = BfcAllocator.builder().name("owned").memoryLimit(64 * MIB).subAllocator(sim)
                    .leakDetection(leaks).build();
            Allocation kept = allocator.allocate(5000);
            allocator.beforeHandle = () -> {
                throw new OutOfMemoryError("injected");
            };
            for (long alignment : new long[] {64, 4096}) {
                assertThatThrownBy(() -> allocator.allocate(1000, alignment)).as("%s", leaks)
                        .isInstanceOf(OutOfMemoryError.class).hasMessage("injected");
                assertThat(allocator.bytesInUse()).as("%s", leaks).isEqualTo(kept.size());
                MemoryStats m = allocator.memoryStats();
                assertThat(m.activeAllocations()).as("%s", leaks).isEqualTo(1);
                allocator.checkInvariants();
            }
            allocator.beforeHandle = null;
            Allocation next = allocator.allocate(1000);
            assertThat(next.address()).isEqualTo(kept.address() + kept.size());
            next.close();
            kept.close();
            allocator.close(); // REFUSE: nothing is live
            assertThat(sim.reservedBytes()).isZero();
        }
        // A shard's handle likewise.
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
        ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("owned").memoryLimit(64 * MIB)
                .subAllocator(sim).shards(2).build();
        sharded.shards().forEach(s -> s.beforeHandle = () -> {
            throw new StackOverflowError("injected");
        });
        assertThatThrownBy(() -> sharded.allocate(1000)).isInstanceOf(StackOverflowError.class);
        assertThat(sharded.bytesInUse()).isZero();
        sharded.shards().forEach(BfcAllocator::checkInvariants);
        sharded.close();
        assertThat(sim.reservedBytes()).isZero();
    }
}
