/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static io.github.bfc4j.conformance.UpstreamTestSupport.SIM_BASE;
import static io.github.bfc4j.conformance.UpstreamTestSupport.checkInvariants;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.conformance.UpstreamTestSupport.DumpChunk;
import io.github.bfc4j.conformance.UpstreamTestSupport.MemoryDump;
import io.github.bfc4j.conformance.UpstreamTestSupport.SimplePhilox;
import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.core.sim.SimSubAllocator;
import org.junit.jupiter.api.Test;

/**
 * Not ports: upstream has no unit tests for the timing counter, {@code freed_by_func}, region
 * coalescing or allocation ids (those are proven by the bundled traces, TraceConformanceTest).
 * These few small cases pin the reference's behaviour, derived by hand from bfc_allocator.cc at
 * the reference commit,
 * plus a known-answer check of the tests' Philox generator.
 */
class BfcAllocatorReferenceBehaviourTest {

    private static final long MIB = 1L << 20;

    /** Random123's known answers for Philox4x32-10, which TensorFlow's PhiloxRandom is. */
    @Test
    void philoxKnownAnswers() {
        assertThat(SimplePhilox.philox4x32x10(new int[] {0, 0, 0, 0}, new int[] {0, 0}))
                .containsExactly(0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
        assertThat(SimplePhilox.philox4x32x10(new int[] {-1, -1, -1, -1}, new int[] {-1, -1}))
                .containsExactly(0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
    }

    private static BfcAllocator oneMiBNoGrowth(SimSubAllocator sim) {
        return new BfcAllocator(sim, MIB, "ref", BfcOptions.builder().allowGrowth(false)
                .allowRetryOnFailure(false).garbageCollection(false).build());
    }

    /** Allocation ids start at 1 and advance only on successful allocations. */
    @Test
    void allocationIdsStartAtOneAndAdvanceOnlyOnSuccess() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            long p1 = a.allocateRaw(1, 1);
            assertThat(a.allocationId(p1)).isEqualTo(1);
            assertThat(a.allocateRaw(1, 0)).isZero();
            assertThat(a.allocateRaw(1, 2 * MIB)).isZero();
            long p2 = a.allocateRaw(1, 1);
            assertThat(a.allocationId(p2)).isEqualTo(2);
            assertThat(a.getStats().numAllocs()).isEqualTo(2);
        }
    }

    /**
     * {@code AllocateRaw(…, 0)} returns null without touching anything, and
     * {@code DeallocateRaw(nullptr)} is a no-op that does not advance the timing counter.
     */
    @Test
    void zeroBytesAndNullFreeTouchNothing() {
        SimSubAllocator sim = new SimSubAllocator(SIM_BASE, 1L << 32, 0, false);
        try (BfcAllocator a = oneMiBNoGrowth(sim)) {
            SharedCounter sc = new SharedCounter();
            a.setTimingCounter(sc);
            AllocatorStats before = a.getStats();
            assertThat(a.allocateRaw(1, 0)).isZero();
            a.deallocateRaw(0);
            assertThat(a.getStats()).isEqualTo(before);
            assertThat(sim.reservedBytes()).isZero();
            assertThat(sc.get()).isZero();
        }
    }

    /**
     * Timing counter: a freed chunk is stamped and kept out of coalescing; a
     * {@code freed_by} count below its stamp skips it; once the safe frontier passes the stamp the
     * next allocation merges it back and it can be reused.
     */
    @Test
    void timingCounterAndFreedBy() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            SharedCounter sc = new SharedCounter();
            a.setTimingCounter(sc);
            long p1 = a.allocateRaw(1, 256);
            long p2 = a.allocateRaw(1, 256);
            long p3 = a.allocateRaw(1, 256);
            assertThat(new long[] {p1, p2, p3})
                    .containsExactly(SIM_BASE, SIM_BASE + 256, SIM_BASE + 512);
            a.deallocateRaw(p1);
            a.deallocateRaw(p2);
            assertThat(sc.get()).isEqualTo(2);
            checkInvariants(a, true, "stamped frees");

            AllocationAttributes freedBy1 = new AllocationAttributes(false, () -> 1);
            long q1 = a.allocateRaw(1, 256, freedBy1);
            assertThat(q1).as("p1, stamped 1, is usable by freed_by=1").isEqualTo(p1);
            long q2 = a.allocateRaw(1, 256, freedBy1);
            assertThat(q2).as("p2, stamped 2, is skipped by freed_by=1").isEqualTo(SIM_BASE + 768);

            a.setSafeFrontier(3);
            long q3 = a.allocateRaw(1, 256, freedBy1);
            assertThat(q3).as("p2 after the safe frontier passed its stamp").isEqualTo(p2);
            checkInvariants(a, true, "end");
        }
    }

    /**
     * A forced merge ({@code MergeTimestampedChunks(rounded_bytes)}, for a request no free chunk
     * fits) merges the queued chunks in the order they were freed, ignoring their stamps, and
     * stops at the first merge that is big enough. Its {@code to_merge} is a fresh vector on
     * each call: a chunk an earlier merge handled (p, merged back once the frontier passed its
     * first stamp, then reallocated and freed again) is not merged ahead of the chunks freed
     * before it. Here q (freed first) merges with b before it, p stays apart.
     */
    @Test
    void aForcedMergeTakesTheQueueInFreeOrderNotAnEarlierMergesChunksFirst() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            SharedCounter sc = new SharedCounter();
            a.setTimingCounter(sc);
            long first = a.allocateRaw(1, 256);
            long p = a.allocateRaw(1, 256);
            long b = a.allocateRaw(1, 256);
            long q = a.allocateRaw(1, 256);
            long last = a.allocateRaw(1, 256);
            long rest = a.allocateRaw(1, MIB - 5 * 256);
            assertThat(new long[] {first, p, b, q, last, rest}).containsExactly(SIM_BASE,
                    SIM_BASE + 256, SIM_BASE + 512, SIM_BASE + 768, SIM_BASE + 1024, SIM_BASE + 1280);

            a.deallocateRaw(p); // stamp 1
            a.setSafeFrontier(2);
            // The standard merge at the start of this allocation clears p's stamp and merges it
            // (its neighbours are in use); p, the only free chunk, is then handed out again.
            assertThat(a.allocateRaw(1, 256)).isEqualTo(p);

            a.deallocateRaw(q); // stamp 2
            a.deallocateRaw(p); // stamp 3
            a.deallocateRaw(b); // stamp 4
            assertThat(sc.get()).isEqualTo(4);
            checkInvariants(a, true, "three stamped frees, none safe");

            // No free chunk holds 512 bytes and the region cannot grow: forced merge of q, p, b
            // in that order. q merges with b before it (512 bytes at b): satisfied; p is
            // requeued unmerged.
            long merged = a.allocateRaw(1, 512);
            assertThat(merged).as("q merged into b, not p with b").isEqualTo(b);
            MemoryDump md = checkInvariants(a, true, "after the forced merge");
            assertThat(md.regions().get(0).chunks()).as("p stays apart, stamped").startsWith(
                    new DumpChunk(true, SIM_BASE, 256),
                    new DumpChunk(false, SIM_BASE + 256, 256),
                    new DumpChunk(true, SIM_BASE + 512, 512),
                    new DumpChunk(true, SIM_BASE + 1024, 256));
        }
    }

    /**
     * {@code DeallocateFreeRegions} gives the free regions back unless
     * {@code rounded_bytes > memory_limit_ - pool_bytes + total_free_bytes}: a request of
     * exactly what the free regions and the rest of the limit make is served from one new
     * region.
     */
    @Test
    void garbageCollectionServesARequestOfExactlyTheFreeRegionsAndTheRestOfTheLimit() {
        BfcOptions opts = BfcOptions.builder().allowGrowth(true).allowRetryOnFailure(false)
                .garbageCollection(true).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false),
                8 * MIB, "ref", opts)) {
            a.deallocateRaw(a.allocateRaw(1, MIB)); // a 2 MiB region
            a.deallocateRaw(a.allocateRaw(1, 4 * MIB)); // a 4 MiB region
            assertThat(a.getStats().poolBytes()).isEqualTo(6 * MIB);
            // 2 MiB left under the limit + 6 MiB of free regions = 8 MiB: not more than that.
            long p = a.allocateRaw(1, 8 * MIB);
            assertThat(p).as("both regions given back, one of 8 MiB obtained").isNotZero();
            assertThat(a.getStats().poolBytes()).isEqualTo(8 * MIB);
            assertThat(a.regionCount()).isEqualTo(1);
            a.deallocateRaw(p);
            assertThat(a.allocateRaw(1, 8 * MIB + 256)).as("more than the limit").isZero();
        }
    }

    /**
     * Region coalescing: with a coalescing sub-allocator a region that starts where the
     * previous one ends extends it, and a free chunk can then straddle the two sub-allocations.
     * Without coalescing the same 6 MiB request fails (garbage collection off).
     */
    @Test
    void regionCoalescing() {
        BfcOptions opts = BfcOptions.builder().allowGrowth(true).allowRetryOnFailure(false)
                .garbageCollection(false).build();
        for (boolean coalescing : new boolean[] {true, false}) {
            SimSubAllocator sim = new SimSubAllocator(SIM_BASE, 1L << 32, 0, coalescing);
            try (BfcAllocator a = new BfcAllocator(sim, 8 * MIB, "ref", opts)) {
                long first = a.allocateRaw(1, 2 * MIB);
                long second = a.allocateRaw(1, 2 * MIB);
                assertThat(first).isEqualTo(SIM_BASE);
                assertThat(second).isEqualTo(SIM_BASE + 2 * MIB);
                assertThat(a.getStats().poolBytes()).isEqualTo(6 * MIB);
                a.deallocateRaw(first);
                a.deallocateRaw(second);
                MemoryDump md = checkInvariants(a, false, "coalescing=" + coalescing);
                assertThat(md.regions()).as("coalescing=%s", coalescing)
                        .hasSize(coalescing ? 1 : 2);

                long straddling = a.allocateRaw(1, 6 * MIB);
                assertThat(straddling).as("coalescing=%s", coalescing)
                        .isEqualTo(coalescing ? SIM_BASE : 0L);
                if (straddling != 0) {
                    a.deallocateRaw(straddling);
                }
            }
        }
    }

    /**
     * {@code FindChunkPtr} splits a chunk when {@code chunk->size >= rounded_bytes * 2}: a chunk
     * of exactly twice the request is split, one 256 bytes short of it is handed out whole (its
     * waste is far below the 128 MiB threshold).
     */
    @Test
    void aChunkOfExactlyTwiceTheRequestIsSplit() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            long half = a.allocateRaw(1, MIB / 2);
            assertThat(half).isEqualTo(SIM_BASE);
            assertThat(a.allocatedSize(half)).as("1 MiB chunk, 512 KiB request: split")
                    .isEqualTo(MIB / 2);
            long otherHalf = a.allocateRaw(1, MIB / 2);
            assertThat(otherHalf).isEqualTo(SIM_BASE + MIB / 2);
            assertThat(a.allocatedSize(otherHalf)).isEqualTo(MIB / 2);
            a.deallocateRaw(half);
            a.deallocateRaw(otherHalf);
            checkInvariants(a, false, "after the halves");

            long justOver = a.allocateRaw(1, MIB / 2 + 1);
            assertThat(justOver).isEqualTo(SIM_BASE);
            assertThat(a.allocatedSize(justOver)).as("1 MiB chunk, 512 KiB + 256 rounded: not split")
                    .isEqualTo(MIB);
            assertThat(a.requestedSize(justOver)).isEqualTo(MIB / 2 + 1);
        }
    }

    /**
     * {@code FindChunkPtr} also splits when the waste reaches
     * {@code max_internal_fragmentation_bytes} ({@code fragmentation_fraction * memory_limit_}):
     * a waste of exactly that many bytes is split off.
     */
    @Test
    void aWasteOfExactlyTheFragmentationThresholdIsSplitOff() {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false), MIB,
                "ref", BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false)
                        .garbageCollection(false).fragmentationFraction(0.25).build())) {
            long p = a.allocateRaw(1, 3 * MIB / 4);
            assertThat(p).isEqualTo(SIM_BASE);
            assertThat(a.allocatedSize(p)).as("waste 256 KiB = 0.25 * 1 MiB: split").isEqualTo(3 * MIB / 4);
            assertThat(a.allocateRaw(1, MIB / 4)).isEqualTo(SIM_BASE + 3 * MIB / 4);
        }
    }

    /**
     * {@code FindChunkPtr} leaves a reused chunk's {@code freed_at_count} as it was, and
     * {@code MarkFree} stamps only while a timing counter is set; {@code TryToCoalesce} returns
     * at once for a chunk with {@code freed_at_count > 0}. So a stamped chunk that is allocated
     * again and freed after the counter was removed goes back into its bin uncoalesced, beside
     * its free neighbour, until the safe frontier passes its old stamp.
     */
    @Test
    void aStampedChunkFreedAgainWithoutTheCounterIsNotCoalesced() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            SharedCounter sc = new SharedCounter();
            a.setTimingCounter(sc);
            long p0 = a.allocateRaw(1, 256);
            long p1 = a.allocateRaw(1, 256);
            assertThat(p1).isEqualTo(SIM_BASE + 256);
            a.deallocateRaw(p1);
            assertThat(sc.get()).as("p1 stamped 1").isEqualTo(1);

            a.setTimingCounter(null);
            long again = a.allocateRaw(1, 256);
            assertThat(again).as("p1's 256-byte chunk is the best fit").isEqualTo(p1);
            a.deallocateRaw(again);
            assertThat(sc.get()).as("no counter, no stamp").isEqualTo(1);
            MemoryDump md = checkInvariants(a, true, "stale stamp");
            assertThat(md.regions()).hasSize(1);
            assertThat(md.regions().get(0).chunks()).as("p1 stays apart from the free rest")
                    .containsExactly(new DumpChunk(true, SIM_BASE, 256),
                            new DumpChunk(false, SIM_BASE + 256, 256),
                            new DumpChunk(false, SIM_BASE + 512, MIB - 512));

            a.setSafeFrontier(2);
            long big = a.allocateRaw(1, MIB - 256);
            assertThat(big).as("past the frontier p1 merges with the rest").isEqualTo(p1);
            a.deallocateRaw(big);
            a.deallocateRaw(p0);
            assertThat(checkInvariants(a, true, "end").chunkCount()).isEqualTo(1);
        }
    }

    /**
     * Chunk handles are recycled: {@code DeleteChunk} pushes the handle of a merged-away chunk
     * onto {@code free_chunks_list_} and {@code AllocateChunk} pops it before growing
     * {@code chunks_}. The handles show in {@code DumpMemoryLog}'s {@code next} column.
     */
    @Test
    void aMergedAwayHandleIsTheNextOneAllocated() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            // Extend: handle 0 (the region); each split takes the next new handle.
            long p0 = a.allocateRaw(1, 256);
            long p1 = a.allocateRaw(1, 256);
            String hex = Long.toHexString(SIM_BASE + 256);
            assertThat(a.dumpMemoryLog(256)).contains("InUse at " + hex + " of size 256 next 2\n");
            // p1 (handle 1) merges its free neighbour (handle 2) into itself: handle 2 is freed.
            a.deallocateRaw(p1);
            assertThat(a.dumpMemoryLog(256)).contains("Free  at " + hex + " of size " + (MIB - 256)
                    + " next -1\n");
            // The split of handle 1 takes handle 2 again, not a new handle 3.
            assertThat(a.allocateRaw(1, 256)).isEqualTo(p1);
            assertThat(a.dumpMemoryLog(256)).contains("InUse at " + hex + " of size 256 next 2\n");
            a.deallocateRaw(p0);
            checkInvariants(a, false, "end");
        }
    }

    /** {@code LargestFreeChunk} looks down to bin 0: a lone free 256-byte chunk is the largest. */
    @Test
    void theLargestFreeChunkMayBeInBinZero() {
        try (BfcAllocator a = oneMiBNoGrowth(new SimSubAllocator(SIM_BASE, 1L << 32, 0, false))) {
            long p0 = a.allocateRaw(1, 256);
            long p1 = a.allocateRaw(1, 256);
            long rest = a.allocateRaw(1, MIB - 512);
            assertThat(rest).isEqualTo(SIM_BASE + 512);
            assertThat(a.largestFreeChunkBytes()).isZero();
            a.deallocateRaw(p0);
            assertThat(a.largestFreeChunkBytes()).isEqualTo(256);
            assertThat(a.fragmentation()).as("(free - largest) / free").isZero();
            a.deallocateRaw(p1);
            a.deallocateRaw(rest);
        }
    }
}
