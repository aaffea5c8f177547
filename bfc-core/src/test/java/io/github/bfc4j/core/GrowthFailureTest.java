/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.github.bfc4j.core.internal.GrowthFaults;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An {@link OutOfMemoryError} where an allocate or a free must grow one of the allocator's
 * arrays (the timestamp queues, the chunk table, the address map and its pages, the region
 * list) reaches the caller with the allocator as it was: the growth comes before any change,
 * and a block the sub-allocator handed out for a region that cannot be registered goes back to
 * it. A chunk given back after its allocation failed (a listener, the handle) goes back even
 * where the timestamp queue cannot grow. Injected through {@link GrowthFaults}.
 */
class GrowthFailureTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;
    /** The one region: the memory limit, so that no other is ever obtained. */
    private static final long REGION = 2 * MIB;

    @AfterEach
    void growthWorksAgain() {
        GrowthFaults.clear();
    }

    private static BfcAllocator allocator() {
        return BfcAllocator.builder().name("growth").memoryLimit(REGION)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true))
                .leakDetection(LeakDetection.DISABLED).build();
    }

    private static long[] allocate(BfcAllocator allocator, int n, long bytes) {
        long[] ptrs = new long[n];
        for (int i = 0; i < n; i++) {
            ptrs[i] = allocator.allocateRaw(256, bytes);
            assertThat(ptrs[i]).isNotZero();
        }
        return ptrs;
    }

    /** An allocator with a timing counter: frees are stamped and queued. */
    private static BfcAllocator stamping(SharedCounter counter) {
        BfcAllocator allocator = allocator();
        allocator.setTimingCounter(counter);
        return allocator;
    }

    /**
     * Once the frontier passes every stamp, the next allocation merges the queued chunks: the
     * allocator that met the Error must then be the one that never did, chunk for chunk (a
     * stamped chunk that fell out of the timestamp queue is never merged, and keeps its stamp).
     */
    private static void sameOnceSafe(BfcAllocator faulted, SharedCounter faultedCounter,
            BfcAllocator control, SharedCounter controlCounter) {
        assertThat(faultedCounter.get()).isEqualTo(controlCounter.get());
        faulted.setSafeFrontier(faultedCounter.get() + 1);
        control.setSafeFrontier(controlCounter.get() + 1);
        long p = faulted.allocateRaw(256, 1024);
        long controlP = control.allocateRaw(256, 1024);
        assertThat(p).isEqualTo(controlP);
        assertThat(faulted.dumpMemoryLog(1024)).isEqualTo(control.dumpMemoryLog(1024));
        assertThat(faulted.getStats()).isEqualTo(control.getStats());
        faulted.checkInvariants();
        faulted.deallocateRaw(p);
        control.deallocateRaw(controlP);
        faulted.close();
        control.close();
    }

    @Test
    void aFreeThatCannotQueueItsChunkChangesNothing() {
        SharedCounter counter = new SharedCounter();
        SharedCounter controlCounter = new SharedCounter();
        BfcAllocator allocator = stamping(counter);
        BfcAllocator control = stamping(controlCounter);
        long[] ptrs = allocate(allocator, 66, 1024);
        long[] controlPtrs = allocate(control, 66, 1024);
        // 64 stamped frees fill the timestamp queue (64 entries) to its capacity.
        for (int i = 0; i < 64; i++) {
            allocator.deallocateRaw(ptrs[i]);
            control.deallocateRaw(controlPtrs[i]);
        }
        AllocatorStats before = allocator.getStats();
        long freesBefore = allocator.memoryStats().freesTotal();
        long id = allocator.allocationId(ptrs[64]);

        GrowthFaults.failIntDequeGrowth();
        assertThatThrownBy(() -> allocator.deallocateRaw(ptrs[64])).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        assertThat(allocator.memoryStats().freesTotal()).isEqualTo(freesBefore);
        assertThat(allocator.allocationId(ptrs[64])).as("still allocated").isEqualTo(id);
        allocator.checkInvariants();
        // The free again, now that it can be done.
        for (int i = 64; i < 66; i++) {
            allocator.deallocateRaw(ptrs[i]);
            control.deallocateRaw(controlPtrs[i]);
        }
        sameOnceSafe(allocator, counter, control, controlCounter);
    }

    @Test
    void aMergeThatCannotGrowItsQueuesLosesNoChunk() {
        SharedCounter counter = new SharedCounter();
        SharedCounter controlCounter = new SharedCounter();
        BfcAllocator allocator = stamping(counter);
        BfcAllocator control = stamping(controlCounter);
        long[] ptrs = allocate(allocator, 101, 1024);
        long[] controlPtrs = allocate(control, 101, 1024);
        // 100 stamped frees, none safe: the merge at the next allocation moves each queued
        // chunk to its scratch queues, which hold 64.
        for (int i = 0; i < 100; i++) {
            allocator.deallocateRaw(ptrs[i]);
            control.deallocateRaw(controlPtrs[i]);
        }
        AllocatorStats before = allocator.getStats();

        GrowthFaults.failIntDequeGrowth();
        assertThatThrownBy(() -> allocator.allocateRaw(256, 1024)).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        allocator.deallocateRaw(ptrs[100]);
        control.deallocateRaw(controlPtrs[100]);
        sameOnceSafe(allocator, counter, control, controlCounter);
    }

    @Test
    void aSplitThatCannotGrowTheChunkTableChangesNothing() {
        BfcAllocator allocator = allocator();
        // The region's chunk and 1023 splits take the chunk table's first 1024 handles; the
        // next split needs a handle the table has no room for, and its growth fails half-way.
        long[] ptrs = allocate(allocator, 1023, 256);
        AllocatorStats before = allocator.getStats();

        GrowthFaults.failChunkTableGrowth();
        assertThatThrownBy(() -> allocator.allocateRaw(256, 256)).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        long next = allocator.allocateRaw(256, 256);
        assertThat(next).isEqualTo(ptrs[1022] + 256);
        allocator.deallocateRaw(next);
        for (long p : ptrs) {
            allocator.deallocateRaw(p);
        }
        long whole = allocator.allocateRaw(256, REGION);
        assertThat(whole).isEqualTo(BASE);
        allocator.deallocateRaw(whole);
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void anExtendThatCannotGrowTheChunkTableObtainsNoRegion() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, true);
        BfcAllocator allocator = BfcAllocator.builder().name("growth").memoryLimit(2 * REGION)
                .subAllocator(sim).leakDetection(LeakDetection.DISABLED).build();
        // The first region's chunk and 1023 splits take the chunk table's 1024 handles; the
        // 2048 bytes left are too few for the next request, whose new region needs a handle.
        long[] ptrs = allocate(allocator, 1023, 2048);
        AllocatorStats before = allocator.getStats();
        assertThat(before.poolBytes()).isEqualTo(REGION);
        long reserved = sim.reservedBytes();

        GrowthFaults.failChunkTableGrowth();
        assertThatThrownBy(() -> allocator.allocateRaw(256, 4096)).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        assertThat(sim.reservedBytes()).as("no block obtained that no region holds").isEqualTo(reserved);
        allocator.checkInvariants();
        long p = allocator.allocateRaw(256, 4096);
        assertThat(allocator.getStats().poolBytes()).isEqualTo(2 * REGION);
        allocator.deallocateRaw(p);
        for (long q : ptrs) {
            allocator.deallocateRaw(q);
        }
        allocator.checkInvariants();
        allocator.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    @Test
    void anAllocationThatCannotGrowTheAddressMapChangesNothing() {
        BfcAllocator allocator = allocator();
        // 256-byte chunks: each 64 KiB piece of the region with two chunk starts or more takes
        // a page of the address map, and its pool's arrays hold 16 pages. A split's rest enters
        // the map when it is allocated: the second chunk of the 17th piece needs the 17th page.
        int perPiece = (1 << 16) / 256;
        long[] ptrs = allocate(allocator, 16 * perPiece + 1, 256);
        AllocatorStats before = allocator.getStats();

        GrowthFaults.failAddressMapGrowth();
        assertThatThrownBy(() -> allocator.allocateRaw(256, 256)).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        long next = allocator.allocateRaw(256, 256);
        assertThat(next).isEqualTo(ptrs[ptrs.length - 1] + 256);
        allocator.deallocateRaw(next);
        for (long p : ptrs) {
            allocator.deallocateRaw(p);
        }
        long whole = allocator.allocateRaw(256, REGION);
        assertThat(whole).isEqualTo(BASE);
        allocator.deallocateRaw(whole);
        allocator.checkInvariants();
        allocator.close();
    }

    /**
     * Hands out every block 64 bytes past a 256-byte boundary: the first region ends the lazy
     * address map, which then records every chunk start, a split's rest at once.
     */
    private static final class OffBoundary extends ForwardingSubAllocator {
        /** Blocks handed out as asked before the first one off the boundary. */
        private int aligned;

        OffBoundary(SubAllocator upstream) {
            this(upstream, 0);
        }

        OffBoundary(SubAllocator upstream, int aligned) {
            super(upstream);
            this.aligned = aligned;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            if (aligned > 0) {
                aligned--;
                return upstream.alloc(alignment, numBytes);
            }
            Block b = upstream.alloc(256, numBytes + 256);
            return b == null ? null : new Block(b.ptr() + 64, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            if (ptr % 256 == 0) {
                upstream.free(ptr, numBytes);
            } else {
                upstream.free(ptr - 64, numBytes + 256);
            }
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    @Test
    void aSplitThatCannotRecordItsRestInTheAddressMapChangesNothing() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, false);
        BfcAllocator allocator = BfcAllocator.builder().name("growth").memoryLimit(REGION)
                .subAllocator(new OffBoundary(sim)).leakDetection(LeakDetection.DISABLED).build();
        long start = BASE + 64;
        // 256-byte chunks: each allocation splits its chunk, and the rest enters the map at
        // once. A rest that is the second chunk start of its 64 KiB piece takes a page; the
        // pool's first 8 pages serve the first 8 pieces, and the first split in the 9th piece
        // (allocation 8 * 256) needs a new one.
        long[] ptrs = allocate(allocator, 8 * 256, 256);
        assertThat(ptrs[0]).isEqualTo(start);
        assertThat(allocator.port.view().lazyAddressMap()).isFalse();
        AllocatorStats before = allocator.getStats();

        GrowthFaults.failAddressMapPages();
        assertThatThrownBy(() -> allocator.allocateRaw(256, 256)).isInstanceOf(OutOfMemoryError.class);
        GrowthFaults.clear();

        assertThat(allocator.getStats()).isEqualTo(before);
        allocator.checkInvariants();
        long next = allocator.allocateRaw(256, 256);
        assertThat(next).isEqualTo(start + 8 * 256 * 256);
        assertThat(allocator.allocatedSize(next + 256)).as("the rest, in the map")
                .isEqualTo(REGION - (8 * 256 + 1) * 256);
        allocator.deallocateRaw(next);
        for (long p : ptrs) {
            allocator.deallocateRaw(p);
        }
        long whole = allocator.allocateRaw(256, REGION);
        assertThat(whole).isEqualTo(start);
        allocator.deallocateRaw(whole);
        allocator.checkInvariants();
        allocator.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    /**
     * Hands out contiguous blocks (supporting coalescing) 64 bytes longer than asked, then 192:
     * the region the second extends has chunk starts off 256-byte boundaries, and a size that is
     * a multiple of 256 again.
     */
    private static final class OddSizedBlocks implements SubAllocator {
        private long next = BASE;
        private int blocks;

        @Override
        public Block alloc(long alignment, long numBytes) {
            long extra = blocks++ % 2 == 0 ? 64 : 192;
            Block b = new Block(next, numBytes + extra);
            next += b.bytes();
            return b;
        }

        @Override
        public void free(long ptr, long numBytes) {
        }

        @Override
        public boolean supportsCoalescing() {
            return true;
        }
    }

    /**
     * Once the address map records every chunk start, a split whose rest would share a 256-byte
     * slot with the next chunk's start (deviations #11: a block of an odd size, a fragmentation
     * threshold below 256 bytes) is refused before the chunk leaves its bin.
     */
    @Test
    void aSplitWhoseRestWouldShareASlotIsRefusedBeforeAnythingChanges() {
        assumeFalse(Boolean.getBoolean("bfc4j.checkInvariants"),
                "blocks of odd sizes break the invariant checker's rules, which this execution runs after every call");
        // Threshold: 5e-7 * 64 MiB = 33 bytes.
        BfcAllocator allocator = BfcAllocator.builder().name("odd").memoryLimit(64 * MIB)
                .subAllocator(new OddSizedBlocks()).fragmentationFraction(5e-7)
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        allocator.setTimingCounter(new SharedCounter());
        long end = BASE + 2 * MIB + 64; // the first block's end, where the second begins
        long p1 = allocator.allocateRaw(256, MIB);
        long p2 = allocator.allocateRaw(256, MIB - 256);
        assertThat(p2).isEqualTo(BASE + MIB);
        // p2 freed (stamped), then merged by force with the free 320 bytes after it: one free
        // chunk [BASE + 1 MiB, end), stamped, which the second block's chunk is not merged with.
        allocator.deallocateRaw(p2);
        assertThat(allocator.allocateRaw(256, 65 * MIB)).isZero();
        long p3 = allocator.allocateRaw(256, 4 * MIB);
        assertThat(p3).isEqualTo(end);
        assertThat(allocator.port.view().lazyAddressMap()).isFalse();
        assertThat(allocator.allocatedSize(BASE + MIB)).isEqualTo(MIB + 64);
        AllocatorStats before = allocator.getStats();

        // 1 MiB from that chunk: its rest would start at BASE + 2 MiB, 64 bytes before the next.
        assertThatThrownBy(() -> allocator.allocateRaw(256, MIB)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("share a 256-byte slot");

        // (No checkInvariants(): chunk sizes that are not multiples of 256 break its rules.)
        assertThat(allocator.getStats()).isEqualTo(before);
        long p4 = allocator.allocateRaw(256, MIB - 256);
        assertThat(p4).as("the chunk still free and in its bin").isEqualTo(BASE + MIB);
        assertThat(allocator.getStats().poolBytes()).isEqualTo(before.poolBytes());
        for (long p : new long[] {p1, p3, p4}) {
            allocator.deallocateRaw(p);
        }
        assertThat(allocator.bytesInUse()).isZero();
        allocator.close();
    }

    /**
     * A region that cannot be registered (an Error making room for it) goes back to the
     * sub-allocator, and the allocator is as it was: same statistics, region target and
     * sub-allocator reservations; the same allocation, made again, is served as the allocator
     * that never met the Error serves it.
     */
    private static void extendFailsAndChangesNothing(BfcAllocator allocator, BfcAllocator control,
            SimSubAllocator sim, SimSubAllocator controlSim, long request, Runnable arm) {
        AllocatorStats before = allocator.getStats();
        long reserved = sim.reservedBytes();
        long target = allocator.port.view().currRegionAllocationBytes();
        boolean lazy = allocator.port.view().lazyAddressMap();

        arm.run();
        try {
            assertThatThrownBy(() -> allocator.allocateRaw(256, request)).isInstanceOf(OutOfMemoryError.class);
        } finally {
            GrowthFaults.clear();
        }

        assertThat(allocator.getStats()).isEqualTo(before);
        assertThat(sim.reservedBytes()).as("the block given back").isEqualTo(reserved);
        assertThat(allocator.port.view().currRegionAllocationBytes()).isEqualTo(target);
        assertThat(allocator.port.view().lazyAddressMap()).isEqualTo(lazy);
        allocator.checkInvariants();
        long p = allocator.allocateRaw(256, request);
        long controlP = control.allocateRaw(256, request);
        assertThat(p).isNotZero().isEqualTo(controlP);
        assertThat(allocator.getStats()).isEqualTo(control.getStats());
        assertThat(allocator.dumpMemoryLog(1024)).isEqualTo(control.dumpMemoryLog(1024));
        assertThat(sim.reservedBytes()).isEqualTo(controlSim.reservedBytes());
        allocator.checkInvariants();
        allocator.close();
        control.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    private static BfcAllocator growing(SubAllocator sub, long limit) {
        return BfcAllocator.builder().name("growth").memoryLimit(limit).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
    }

    @Test
    void aRegionOffBoundaryWhoseChunkStartsCannotAllBeMappedIsGivenBack() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 256 * MIB, 0, false);
        SimSubAllocator controlSim = new SimSubAllocator(BASE, 256 * MIB, 0, false);
        BfcAllocator allocator = growing(new OffBoundary(sim, 1), 8 * MIB);
        BfcAllocator control = growing(new OffBoundary(controlSim, 1), 8 * MIB);
        // The first region is aligned and the map lazy: 2049 chunks of 256 bytes are in it, and
        // the free rest after them is not. The 8 pages of the pool's first refill serve the
        // first 8 pieces of 64 KiB; the rest is the second start of the 9th, so recording it
        // when the next region (off the boundary) ends the lazy map needs a new page.
        allocate(allocator, 8 * 256 + 1, 256);
        allocate(control, 8 * 256 + 1, 256);
        assertThat(allocator.port.view().lazyAddressMap()).isTrue();
        extendFailsAndChangesNothing(allocator, control, sim, controlSim, 3 * MIB,
                GrowthFaults::failAddressMapPages);
    }

    @Test
    void aRegionTheRegionListHasNoRoomForIsGivenBack() {
        SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 30, 256, false);
        SimSubAllocator controlSim = new SimSubAllocator(BASE, 1L << 30, 256, false);
        BfcAllocator allocator = growing(sim, 1L << 30);
        BfcAllocator control = growing(controlSim, 1L << 30);
        // Regions of 2, 4, ..., 256 MiB, each filled by one allocation: the region list holds 8.
        for (int i = 0; i < 8; i++) {
            allocate(allocator, 1, (2 * MIB) << i);
            allocate(control, 1, (2 * MIB) << i);
        }
        assertThat(allocator.port.view().regionCount()).isEqualTo(8);
        extendFailsAndChangesNothing(allocator, control, sim, controlSim, 2 * MIB,
                GrowthFaults::failRegionListGrowth);
    }

    @Test
    void aRegionInANewGibOfAddressesWhoseDirectoryCannotBeMadeIsGivenBack() {
        // A gap of 1 GiB after every block: the second region starts in another GiB block of
        // addresses, whose directory the address map makes when the region's chunk enters it.
        SimSubAllocator sim = new SimSubAllocator(BASE, 4L << 30, 1L << 30, false);
        SimSubAllocator controlSim = new SimSubAllocator(BASE, 4L << 30, 1L << 30, false);
        BfcAllocator allocator = growing(sim, 64 * MIB);
        BfcAllocator control = growing(controlSim, 64 * MIB);
        allocate(allocator, 1, 2 * MIB);
        allocate(control, 1, 2 * MIB);
        extendFailsAndChangesNothing(allocator, control, sim, controlSim, 2 * MIB,
                GrowthFaults::failAddressMapGrowth);
    }

    /** Throws from its allocation events (as a recorder out of heap would). */
    private static final class FailingAllocations extends PortListener {
        @Override
        boolean listensToCalls() {
            return true;
        }

        @Override
        void allocatedLocked(int h) {
            throw new OutOfMemoryError("a recorder out of heap");
        }
    }

    /**
     * An allocator whose timestamp queue is full (64 stamped frees of 1 KiB at the region's
     * start, none safe) and whose next 4 KiB comes from the region's free tail, a chunk never
     * stamped.
     */
    private static long[] fillTheTimestampQueue(BfcAllocator allocator, SharedCounter counter) {
        allocator.setTimingCounter(counter);
        long[] ptrs = allocate(allocator, 64, 1024);
        for (long p : ptrs) {
            allocator.deallocateRaw(p);
        }
        return ptrs;
    }

    /**
     * The allocator's chunks as its memory map shows them: address, size, in use, bin and
     * timestamp (not a free chunk's stale requested size).
     */
    private static List<String> chunks(BfcAllocator allocator) {
        List<String> out = new ArrayList<>();
        for (MemoryMap.Chunk c : allocator.memoryMap().chunks()) {
            out.add(Long.toHexString(c.ptr()) + " " + c.size() + (c.inUse() ? " in use" : " free")
                    + " bin " + c.bin() + " stamp " + c.freedAtCount());
        }
        return out;
    }

    @Test
    void aChunkGivenBackAfterAListenerThrewGoesBackWhenTheQueueCannotGrow() {
        SharedCounter counter = new SharedCounter();
        BfcAllocator allocator = allocator();
        fillTheTimestampQueue(allocator, counter);
        AllocatorStats before = allocator.getStats();
        List<String> chunksBefore = chunks(allocator);
        allocator.port.install(new FailingAllocations(), () -> { });

        GrowthFaults.failIntDequeGrowth();
        try {
            assertThatThrownBy(() -> allocator.allocateRaw(256, 4096)).isInstanceOf(OutOfMemoryError.class)
                    .hasMessage("a recorder out of heap")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                            .satisfies(g -> assertThat(g).hasMessageContaining("IntDeque growth")));
        } finally {
            GrowthFaults.clear();
        }

        allocator.port.install(PortListener.NONE, () -> { });
        assertThat(allocator.bytesInUse()).isEqualTo(before.bytesInUse()).isZero();
        assertThat(allocator.memoryStats().activeAllocations()).isZero();
        allocator.checkInvariants();
        assertThat(chunks(allocator)).as("the chunk back as it was, not a stamped piece out of the queue")
                .isEqualTo(chunksBefore);
        long p = allocator.allocateRaw(256, 4096);
        assertThat(p).isEqualTo(BASE + 64 * 1024);
        allocator.deallocateRaw(p);
        allocator.checkInvariants();
        allocator.close();
    }

    @Test
    void aChunkGivenBackAfterTheHandleCouldNotBeMadeGoesBackWhenTheQueueCannotGrow() {
        SharedCounter counter = new SharedCounter();
        BfcAllocator allocator = allocator();
        fillTheTimestampQueue(allocator, counter);
        List<String> chunksBefore = chunks(allocator);
        allocator.beforeHandle = () -> {
            throw new OutOfMemoryError("injected: the handle");
        };

        GrowthFaults.failIntDequeGrowth();
        try {
            assertThatThrownBy(() -> allocator.allocate(4096)).isInstanceOf(OutOfMemoryError.class)
                    .hasMessage("injected: the handle")
                    .satisfies(e -> assertThat(e.getSuppressed()).singleElement()
                            .satisfies(g -> assertThat(g).hasMessageContaining("IntDeque growth")));
        } finally {
            GrowthFaults.clear();
            allocator.beforeHandle = null;
        }

        assertThat(allocator.bytesInUse()).as("no chunk left that no handle can free").isZero();
        assertThat(allocator.memoryStats().activeAllocations()).isZero();
        allocator.checkInvariants();
        assertThat(chunks(allocator)).as("the chunk back as it was, not a stamped piece out of the queue")
                .isEqualTo(chunksBefore);
        allocator.close(); // REFUSE: nothing is live
    }

    @ParameterizedTest(name = "leak detection {0}")
    @EnumSource(value = LeakDetection.class, names = {"DISABLED", "SIMPLE"})
    void aHandleWhoseFreeCannotGrowTheQueueStaysOpenAndALaterCloseFreesIt(LeakDetection leaks) {
        BfcAllocator allocator = BfcAllocator.builder().name("growth").memoryLimit(REGION)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true)).leakDetection(leaks).build();
        Allocation h = allocator.allocate(4096);
        fillTheTimestampQueue(allocator, new SharedCounter());

        GrowthFaults.failIntDequeGrowth();
        try {
            assertThatThrownBy(h::close).isInstanceOf(OutOfMemoryError.class).hasMessageContaining("IntDeque growth");
        } finally {
            GrowthFaults.clear();
        }

        assertThat(h.isClosed()).as("the free changed nothing: the handle stays open").isFalse();
        assertThat(h.address()).isNotZero();
        assertThat(allocator.bytesInUse()).isEqualTo(4096);
        allocator.checkInvariants();
        h.close();
        assertThat(h.isClosed()).isTrue();
        assertThat(allocator.bytesInUse()).as("the later close freed it").isZero();
        allocator.close(); // REFUSE: nothing is live
    }

    @Test
    void aLeakWhoseMemoryCannotBeReturnedIsStillReported() throws Exception {
        BfcAllocator allocator = BfcAllocator.builder().name("growth").memoryLimit(REGION)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true))
                .leakDetection(LeakDetection.SIMPLE).closePolicy(ClosePolicy.FORCE).build();
        Allocation h = allocator.allocate(4096);

        List<String> warnings = leakReportsOfAFailedReclaim(allocator, h);

        assertThat(warnings).singleElement().asString()
                .contains("allocation #" + h.allocationId(), "could not be returned", "IntDeque growth",
                        "ClosePolicy.FORCE");
        assertThat(allocator.bytesInUse()).as("still in use: nothing can free it now").isEqualTo(4096);
        assertThat(allocator.leaksReclaimed()).isZero();
        allocator.checkInvariants();
        allocator.close(); // FORCE
        assertThat(allocator.isClosed()).isTrue();
    }

    /**
     * The report of a leak whose memory cannot be returned names, as the report of one returned
     * does, the sizes, the address, what was recorded when it was allocated (its annotation and
     * step) and, paranoid, the stack where it was made.
     */
    @Test
    void aLeakWhoseMemoryCannotBeReturnedNamesWhereItWasMade() throws Exception {
        BfcAllocator allocator = BfcAllocator.builder().name("growth").memoryLimit(REGION)
                .subAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true))
                .leakDetection(LeakDetection.PARANOID).closePolicy(ClosePolicy.FORCE).build();
        allocator.recordAnnotations(true);
        Allocation h;
        try (MemoryAnnotation a = MemoryAnnotation.push("load weights", 3)) {
            h = allocator.allocate(3000);
        }

        List<String> warnings = leakReportsOfAFailedReclaim(allocator, h);

        assertThat(warnings).singleElement().asString()
                .startsWith("LEAK: allocation #" + h.allocationId() + " of 3000 bytes (3072 reserved) at 0x"
                        + Long.toHexString(h.address()) + " from allocator 'growth' became unreachable without"
                        + " close(), and its memory could not be returned (")
                .contains(" Recorded when it was allocated: in annotation 'load weights' (step 3).\n",
                        "allocation #" + h.allocationId() + " was made here",
                        "aLeakWhoseMemoryCannotBeReturnedNamesWhereItWasMade");
        assertThat(allocator.bytesInUse()).isEqualTo(3072);
        allocator.close(); // FORCE
    }

    /**
     * Runs the leak guard of {@code h} as the Cleaner would once the handle is unreachable, with
     * the free's growth of the timestamp queue failing, and returns what it logged.
     */
    private static List<String> leakReportsOfAFailedReclaim(BfcAllocator allocator, Allocation h) throws Exception {
        fillTheTimestampQueue(allocator, new SharedCounter());
        Field field = Allocation.class.getDeclaredField("guard");
        field.setAccessible(true);
        LeakGuard guard = (LeakGuard) field.get(h);

        List<String> warnings = new ArrayList<>();
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(LeakDetection.class.getName());
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                warnings.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(handler);
        GrowthFaults.failIntDequeGrowth();
        Throwable escaped;
        try {
            escaped = catchThrowable(guard::run);
        } finally {
            GrowthFaults.clear();
            log.removeHandler(handler);
        }
        assertThat(escaped).as("what run() throws, the Cleaner drops without a word").isNull();
        return warnings;
    }
}
