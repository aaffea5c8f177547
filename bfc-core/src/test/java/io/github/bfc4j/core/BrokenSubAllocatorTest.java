/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * A sub-allocator that hands out a block the allocator cannot map (overlapping one it holds, or
 * outside addresses 1 to 2<sup>63</sup> - 1): the allocation that asked for it throws, and the
 * allocator goes on as before (docs/deviations.md #29).
 */
class BrokenSubAllocatorTest {

    private static final long MIB = 1L << 20;
    private static final long BASE = 0x7f0000000000L;

    /**
     * Hands out blocks of a simulated space, except that the address of the n-th block (from 0)
     * is what {@code broken} makes of it; counts the frees.
     */
    private static final class Broken implements SubAllocator {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 34, 0, false);
        final LongUnaryOperator broken;
        final List<Long> freed = new ArrayList<>();
        int calls;

        Broken(LongUnaryOperator broken) {
            this.broken = broken;
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            Block b = sim.alloc(alignment, numBytes);
            return b == null ? null : new Block(calls++ == 0 ? b.ptr() : broken.applyAsLong(b.ptr()), b.bytes());
        }

        @Override
        public void free(long ptr, long numBytes) {
            freed.add(ptr);
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }

        @Override
        public String toString() {
            return "broken";
        }
    }

    private static BfcAllocator allocator(Broken sub) {
        return BfcAllocator.builder().name("victim").memoryLimit(64 * MIB).subAllocator(sub)
                .allowRetryOnFailure(false).build();
    }

    /** The second block starts where the first does, or inside it, or ends inside it. */
    @Test
    void aBlockOverlappingOneHeldIsRefused() {
        for (long shift : new long[] {0, 2 * MIB - 256, -MIB}) {
            Broken sub = new Broken(p -> BASE + shift);
            try (BfcAllocator a = allocator(sub)) {
                long first = a.allocateRaw(256, 2 * MIB); // the first region: 2 MiB, one chunk
                AllocatorStats before = a.getStats();

                assertThatThrownBy(() -> a.allocateRaw(256, MIB)).as("shift %d", shift)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("sub-allocator broken handed out the block 0x"
                                + Long.toHexString(BASE + shift) + " of 4194304 bytes, which overlaps the"
                                + " block 0x" + Long.toHexString(BASE) + " of 2097152 bytes that it handed"
                                + " out before and that was not freed.")
                        .hasMessageContaining("the allocator's regions, chunks and statistics are unchanged");

                AllocatorStats after = a.getStats();
                assertThat(after.poolBytes()).isEqualTo(before.poolBytes());
                assertThat(after.bytesInUse()).isEqualTo(before.bytesInUse());
                assertThat(after.numAllocs()).isEqualTo(before.numAllocs());
                assertThat(a.regionCount()).isEqualTo(1);
                a.checkInvariants();
                assertThat(sub.freed).as("the refused block is not given back").isEmpty();
                // The allocator goes on: its memory is still its own, and it can free and reuse it.
                a.deallocateRaw(first);
                long again = a.allocateRaw(256, 1000);
                assertThat(again).isEqualTo(BASE);
                a.checkInvariants();
                a.deallocateRaw(again);
            }
        }
    }

    /** Blocks must lie between address 1 and 2^63 - 1. */
    @Test
    void aBlockOutsideThePositiveAddressesIsRefused() {
        for (LongUnaryOperator where : List.<LongUnaryOperator>of(p -> Long.MAX_VALUE - 1000 & ~255L,
                p -> -(1L << 40), p -> Long.MIN_VALUE + 256)) {
            Broken sub = new Broken(where);
            try (BfcAllocator a = allocator(sub)) {
                long first = a.allocateRaw(256, 2 * MIB);
                assertThatThrownBy(() -> a.allocateRaw(256, MIB)).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("which does not lie between address 1 and 2^63 - 1");
                assertThat(a.regionCount()).isEqualTo(1);
                a.checkInvariants();
                a.deallocateRaw(first);
            }
        }
    }

    /**
     * The shards of a sharded allocator share the map: a block of one shard overlapping another
     * shard's region is refused too.
     */
    @Test
    void aShardsBlockOverlappingAnotherShardsRegionIsRefused() {
        Broken sub = new Broken(p -> BASE);
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("victims").memoryLimit(64 * MIB)
                .subAllocator(sub).shards(2).build()) {
            long first = a.shards().get(0).allocateRaw(256, 2 * MIB);
            assertThatThrownBy(() -> a.shards().get(1).allocateRaw(256, MIB))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("overlaps the block 0x"
                            + Long.toHexString(BASE));
            assertThat(a.shards().get(1).regionCount()).isZero();
            a.deallocateRaw(first);
        }
    }

    /** A sub-allocator without a memory type (a mock's default answer): refused where it is given. */
    @Test
    void aSubAllocatorWhoseMemoryTypeIsNullIsRefusedAtOnce() {
        SubAllocator typeless = new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false)) {
            @Override
            public MemoryType memoryType() {
                return null;
            }

            @Override
            public String toString() {
                return "typeless";
            }
        };
        String expected = "subAllocator.memoryType()=null for typeless (expected: a MemoryType";
        assertThatThrownBy(() -> BfcAllocator.builder().subAllocator(typeless))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(expected);
        assertThatThrownBy(() -> new BfcAllocator(typeless, 64 * MIB, "t", BfcOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(expected);
        assertThatThrownBy(() -> ShardedBfcAllocator.builder().subAllocator(typeless))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(expected);
    }
}
