/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.internal.GrowthFaults;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A sub-allocator that throws (as bfc-cuda's do on a driver error) leaves the allocator whole.
 * An {@code alloc} that throws in {@code Extend} changes nothing; a {@code free} that throws
 * gives the region up all the same, and the other regions are still freed. The exception reaches
 * the caller, and the allocator goes on serving.
 */
class SubAllocatorExceptionTest {

    private static final long MIB = 1L << 20;

    /** Fails the calls it is told to, before passing them on; records the frees passed on. */
    private static final class FailingFrees extends ForwardingSubAllocator {
        int failNext;
        int failNextAlloc;
        /** What a failed free throws, instead of the usual {@link IllegalStateException}; null: that. */
        Throwable freeFailure;
        final List<Long> freed = new ArrayList<>();

        FailingFrees() {
            super(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false));
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            if (failNextAlloc > 0) {
                failNextAlloc--;
                throw new IllegalStateException("injected failure of alloc(" + numBytes + ")");
            }
            return super.alloc(alignment, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            if (failNext > 0) {
                failNext--;
                if (freeFailure instanceof Error e) {
                    throw e;
                }
                throw new IllegalStateException("injected failure of free(0x" + Long.toHexString(ptr) + ")");
            }
            super.free(ptr, numBytes);
            freed.add(ptr);
        }
    }

    /** An allocator holding two free regions (1 MiB asked, then 4 MiB) and nothing live. */
    private static BfcAllocator allocatorOfTwoFreeRegions(SubAllocator sub, ClosePolicy policy) {
        BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(64 * MIB).subAllocator(sub)
                .closePolicy(policy).build();
        long p = a.allocateRaw(256, MIB);
        long q = a.allocateRaw(256, 4 * MIB);
        a.deallocateRaw(p);
        a.deallocateRaw(q);
        assertThat(a.regionCount()).isEqualTo(2);
        return a;
    }

    @Test
    void aFailedFreeInEmptyCacheGivesTheRegionUpAndFreesTheOthers() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.REFUSE);
        sub.failNext = 1;

        assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure");
        assertThat(sub.freed).as("the second region is still freed").hasSize(1);
        assertThat(a.regionCount()).isZero();
        assertThat(a.reservedBytes()).isZero();
        assertThat(a.memoryStats().regionFreesTotal()).isEqualTo(2);
        a.checkInvariants();

        long p = a.allocateRaw(256, 2 * MIB); // serves on, from a new region
        assertThat(a.allocatedSize(p)).isEqualTo(2 * MIB);
        assertThat(a.regionCount()).isEqualTo(1);
        a.checkInvariants();
        a.deallocateRaw(p);
        a.close();
        assertThat(sub.freed).hasSize(2);
    }

    /**
     * An Error after a failed free (the address map out of heap letting its empty pages go, once
     * the regions are given up) is added to the free's exception, not thrown in its place, and
     * the other regions are still given back.
     */
    @Test
    void anErrorTrimmingTheAddressMapInEmptyCacheKeepsTheFreesException() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.REFUSE);
        sub.failNext = 1;

        GrowthFaults.failAddressMapGrowth();
        try {
            assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("injected failure of free")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                            .isInstanceOf(OutOfMemoryError.class));
        } finally {
            GrowthFaults.clear();
        }
        assertThat(sub.freed).as("the second region is still freed").hasSize(1);
        assertThat(a.regionCount()).isZero();
        assertThat(a.reservedBytes()).isZero();
        a.checkInvariants();
        long p = a.allocateRaw(256, 2 * MIB);
        a.checkInvariants();
        a.deallocateRaw(p);
        a.close();
    }

    /** Likewise at a close, where the address map makes its new, empty arrays. */
    @Test
    void anErrorClearingTheAddressMapInCloseKeepsTheFreesException() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.REFUSE);
        sub.failNext = 1;

        GrowthFaults.failAddressMapGrowth();
        try {
            assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("injected failure of free")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                            .isInstanceOf(OutOfMemoryError.class));
        } finally {
            GrowthFaults.clear();
        }
        assertThat(a.isClosed()).isTrue();
        assertThat(sub.freed).as("the second region is still freed").hasSize(1);
        assertThat(a.reservedBytes()).isZero();
        a.checkInvariants();
    }

    @Test
    void anAllocThatThrowsInExtendChangesNothing() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(64 * MIB).subAllocator(sub).build();
        long p = a.allocateRaw(256, MIB);
        AllocatorStats before = a.getStats();
        sub.failNextAlloc = 1;

        assertThatThrownBy(() -> a.allocateRaw(256, 10 * MIB)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure of alloc");
        assertThat(a.getStats()).isEqualTo(before);
        a.checkInvariants();
        // Nor the size of the next region: growth doubles it from 2 MiB to 4 MiB, as if the call
        // that threw (which doubled it to 16 MiB to fit 10 MiB before asking) was never made.
        long r = a.allocateRaw(256, 3 * MIB);
        assertThat(a.reservedBytes()).isEqualTo(6 * MIB);
        long q = a.allocateRaw(256, 10 * MIB); // serves on
        assertThat(q).isNotZero();
        assertThat(a.reservedBytes()).isEqualTo(22 * MIB);
        a.checkInvariants();
        a.deallocateRaw(p);
        a.deallocateRaw(q);
        a.deallocateRaw(r);
        a.close();
    }

    @Test
    void aFreeThatThrowsInAnAllocationsGarbageCollectionGivesTheRegionsUp() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(8 * MIB).subAllocator(sub)
                .options(BfcOptions.builder().garbageCollection(true).allowRetryOnFailure(false).build()).build();
        a.deallocateRaw(a.allocateRaw(256, MIB)); // a 2 MiB region
        a.deallocateRaw(a.allocateRaw(256, 4 * MIB)); // a 4 MiB region; 2 MiB left under the limit
        assertThat(a.regionCount()).isEqualTo(2);
        sub.failNext = 1;

        // 7 MiB needs both free regions given back first: the first one's free throws.
        assertThatThrownBy(() -> a.allocateRaw(256, 7 * MIB)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure");
        assertThat(a.regionCount()).as("both given up").isZero();
        assertThat(sub.freed).as("the other region is still freed").hasSize(1);
        a.checkInvariants();
        long p = a.allocateRaw(256, 7 * MIB); // serves on
        assertThat(p).isNotZero();
        a.checkInvariants();
        a.deallocateRaw(p);
        a.close();
    }

    @Test
    void aFailedFreeInCloseStillClosesAndFreesTheOtherRegions() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.FORCE);
        long held = a.allocateRaw(256, 256);
        Allocation handle = a.allocate(256);
        sub.failNext = 2;

        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure")
                .satisfies(e -> assertThat(e.getSuppressed()).hasSize(1));
        assertThat(a.isClosed()).isTrue();
        assertThat(handle.isClosed()).as("the handles are closed as after any close").isTrue();
        assertThat(a.reservedBytes()).isZero();
        assertThatThrownBy(() -> a.deallocateRaw(held)).isInstanceOf(IllegalStateException.class);
        a.close(); // idempotent: nothing more
        assertThat(sub.freed).as("the frees that did not fail").hasSize(0);
    }

    @Test
    void aFailedFreeInAShardsCloseStillClosesEveryShard() {
        FailingFrees sub = new FailingFrees();
        ShardedBfcAllocator a = twoShardsEachHoldingAFreeRegion(sub);
        sub.failNext = 1;

        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure");
        assertThat(a.shards()).allSatisfy(s -> assertThat(s.isClosed()).isTrue());
        assertThat(sub.freed).as("the other shard's region").hasSize(1);
        assertThat(a.reservedBytes()).as("both regions given up").isZero();
    }

    @Test
    void anErrorFromAFreeInEmptyCacheGivesTheRegionUpAndFreesTheOthers() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.REFUSE);
        sub.failNext = 1;
        sub.freeFailure = new OutOfMemoryError("injected: the sub-allocator's books ran out of heap");

        assertThatThrownBy(a::emptyCache).isSameAs(sub.freeFailure);
        assertThat(sub.freed).as("the second region is still freed").hasSize(1);
        assertThat(a.regionCount()).isZero();
        assertThat(a.reservedBytes()).isZero();
        a.checkInvariants();
        long p = a.allocateRaw(256, 2 * MIB); // serves on
        assertThat(a.allocatedSize(p)).isEqualTo(2 * MIB);
        a.checkInvariants();
        a.deallocateRaw(p);
        a.close();
        assertThat(sub.freed).hasSize(2);
    }

    @Test
    void anErrorFromAFreeInCloseStillClosesAndFreesTheOtherRegions() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.FORCE);
        sub.failNext = 1;
        sub.freeFailure = new StackOverflowError("injected");

        assertThatThrownBy(a::close).isSameAs(sub.freeFailure);
        assertThat(a.isClosed()).isTrue();
        assertThat(a.reservedBytes()).isZero();
        assertThat(a.regionCount()).isZero();
        assertThat(sub.freed).as("the other region").hasSize(1);
        a.checkInvariants();
        a.close(); // idempotent: nothing more
    }

    @Test
    void oneErrorThrownByTwoFreesInCloseIsThrownOnceAndTheCloseIsComplete() {
        FailingFrees sub = new FailingFrees();
        BfcAllocator a = allocatorOfTwoFreeRegions(sub, ClosePolicy.FORCE);
        sub.failNext = 2;
        sub.freeFailure = new OutOfMemoryError("injected: one instance, as the JVM's own preallocated ones");

        assertThatThrownBy(a::close).isSameAs(sub.freeFailure);
        assertThat(sub.freeFailure.getSuppressed()).isEmpty();
        assertThat(a.isClosed()).isTrue();
        assertThat(a.regionCount()).isZero();
        assertThat(a.reservedBytes()).isZero();
        a.checkInvariants();
    }

    @Test
    void anErrorFromAFreeInAShardsCloseStillClosesEveryShard() {
        FailingFrees sub = new FailingFrees();
        ShardedBfcAllocator a = twoShardsEachHoldingAFreeRegion(sub);
        sub.failNext = 1;
        sub.freeFailure = new OutOfMemoryError("injected");

        assertThatThrownBy(a::close).isSameAs(sub.freeFailure);
        assertThat(a.shards()).allSatisfy(s -> assertThat(s.isClosed()).isTrue());
        assertThat(sub.freed).as("the other shard's region").hasSize(1);
        assertThat(a.reservedBytes()).isZero();
    }

    @Test
    void aFailedFreeInAShardsEmptyCacheLeavesTheCommonLimitWhole() {
        FailingFrees sub = new FailingFrees();
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("s").shards(1).memoryLimit(8 * MIB)
                .subAllocator(sub).build();
        a.deallocateRaw(a.allocateRaw(256, 6 * MIB)); // one region of 8 MiB, the whole limit
        assertThat(a.reservedBytes()).isEqualTo(8 * MIB);
        sub.failNext = 1;

        assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure");
        assertThat(a.regionCount()).as("given up").isZero();
        assertThat(a.reservedBytes()).as("as the shards' books say").isZero();
        long p = a.allocateRaw(256, 6 * MIB); // the limit is whole again: it serves on
        assertThat(p).isNotZero();
        a.deallocateRaw(p);
        a.close();
    }

    @Test
    void aFailedFreeBelowALimitingSubAllocatorNoLongerCountsAgainstItsCap() {
        FailingFrees sub = new FailingFrees();
        LimitingSubAllocator limit = new LimitingSubAllocator(sub, 8 * MIB);
        BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(64 * MIB).subAllocator(limit).build();
        a.deallocateRaw(a.allocateRaw(256, 6 * MIB)); // an 8 MiB region: the whole cap
        assertThat(limit.heldBytes()).isEqualTo(8 * MIB);
        sub.failNext = 1;

        assertThatThrownBy(a::emptyCache).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("injected failure");
        assertThat(a.reservedBytes()).isZero();
        assertThat(limit.heldBytes()).as("the allocator gave it up").isZero();
        long p = a.allocateRaw(256, 6 * MIB);
        assertThat(p).as("the cap is whole again").isNotZero();
        a.deallocateRaw(p);
        a.close();
    }

    @Test
    void aFreeThatALimitingSubAllocatorsUpstreamRefusesChangesNothing() {
        LimitingSubAllocator limit = new LimitingSubAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false),
                8 * MIB);
        SubAllocator.Block b = limit.alloc(256, 2 * MIB);

        assertThatThrownBy(() -> limit.free(b.ptr() + 256, 2 * MIB)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> limit.free(b.ptr(), -256)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("numBytes=-256");
        assertThat(limit.heldBytes()).isEqualTo(2 * MIB);
        limit.free(b.ptr(), b.bytes());
        assertThat(limit.heldBytes()).isZero();
    }

    /** A sharded allocator over {@code sub} whose two shards each hold one region, free. */
    private static ShardedBfcAllocator twoShardsEachHoldingAFreeRegion(SubAllocator sub) {
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("s").shards(2).memoryLimit(64 * MIB)
                .subAllocator(sub).build();
        for (BfcAllocator shard : a.shards()) {
            shard.deallocateRaw(shard.allocateRaw(256, MIB));
        }
        return a;
    }
}
