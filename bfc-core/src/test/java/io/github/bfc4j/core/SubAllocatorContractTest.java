/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.SubAllocator.Block;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link SubAllocator} must meet. Each implementation has a thin subclass
 * that says how to make one; the tests here then run against it.
 *
 * <p>The tests never hold more than {@link #CAPACITY_HINT_BYTES} requested bytes at once, in at
 * most {@link #MAX_LIVE_BLOCKS} blocks, and free everything they obtained before
 * {@link #close(SubAllocator)} is called, so an implementation backed by a fixed space (or real
 * memory) can be sized accordingly.
 */
public abstract class SubAllocatorContractTest {

    /** The most requested bytes a test holds at once. */
    protected static final long CAPACITY_HINT_BYTES = 4L << 20;

    /** The most blocks a test holds at once. */
    protected static final int MAX_LIVE_BLOCKS = 16;

    private static final long MIN_ALIGNMENT = 256;

    private SubAllocator sub;
    private final List<Block> live = new ArrayList<>();

    /**
     * Makes a fresh sub-allocator for one test.
     *
     * @param capacityHintBytes the most requested bytes the test will hold at once (in at most
     *     {@link #MAX_LIVE_BLOCKS} blocks); a fixed-size implementation should leave room for
     *     alignment padding and any per-block overhead on top
     * @return a new sub-allocator with nothing handed out
     */
    protected abstract SubAllocator newSubAllocator(long capacityHintBytes);

    /**
     * Called after each test, once every block it obtained has been freed: release resources,
     * check for leaks. Does nothing unless overridden.
     *
     * @param subAllocator the sub-allocator made for the test
     */
    protected void close(SubAllocator subAllocator) {}

    /**
     * The largest alignment the implementation honours; the tests ask for power-of-two
     * alignments from 1 up to this and expect blocks aligned to {@code max(alignment, 256)}.
     *
     * @return 4096 unless overridden
     */
    protected long maxHonouredAlignment() {
        return 4096;
    }

    /**
     * The sub-allocator of the running test.
     *
     * @return the instance {@link #newSubAllocator} made for this test
     */
    protected final SubAllocator subAllocator() {
        return sub;
    }

    @BeforeEach
    final void createSubAllocator() {
        sub = newSubAllocator(CAPACITY_HINT_BYTES);
        assertThat(sub).isNotNull();
    }

    @AfterEach
    final void freeEverythingAndClose() {
        try {
            for (Block b : live) {
                sub.free(b.ptr(), b.bytes());
            }
            live.clear();
        } finally {
            close(sub);
        }
    }

    private Block allocLive(long alignment, long numBytes) {
        final Block b = sub.alloc(alignment, numBytes);
        assertThat(b).as("alloc(%d, %d)", alignment, numBytes).isNotNull();
        live.add(b);
        return b;
    }

    private void freeLive(Block b) {
        sub.free(b.ptr(), b.bytes());
        live.remove(b);
    }

    private static void assertNoOverlap(List<Block> blocks) {
        final List<Block> sorted = new ArrayList<>(blocks);
        sorted.sort(Comparator.comparingLong(Block::ptr));
        for (int i = 1; i < sorted.size(); i++) {
            final Block prev = sorted.get(i - 1);
            assertThat(prev.ptr() + prev.bytes())
                    .as("%s must end before %s starts", prev, sorted.get(i))
                    .isLessThanOrEqualTo(sorted.get(i).ptr());
        }
    }

    @Test
    void allocReturnsAtLeastTheRequestedBytes() {
        for (long n : new long[] {256, 1024, 4096, 64 << 10, 1 << 20}) {
            final Block b = allocLive(256, n);
            assertThat(b.ptr()).isNotZero();
            assertThat(b.bytes()).as("bytes of %s", b).isGreaterThanOrEqualTo(n);
        }
    }

    @Test
    void blocksDoNotOverlap() {
        for (int i = 0; i < MAX_LIVE_BLOCKS; i++) {
            allocLive(256, 256L * (1 + i * 7 % 11));
        }
        assertNoOverlap(live);
    }

    @Test
    void blocksAreAlignedToAtLeast256() {
        for (long alignment = 1; alignment <= maxHonouredAlignment(); alignment <<= 1) {
            // An odd-sized block first, so that the next free address is not aligned by chance.
            final Block odd = allocLive(1, 256 * 3);
            final Block b = allocLive(alignment, 256);
            assertThat(b.ptr() % Math.max(alignment, MIN_ALIGNMENT))
                    .as("%s for alignment %d", b, alignment)
                    .isZero();
            freeLive(odd);
            freeLive(b);
        }
    }

    @Test
    void freeThenAllocReusesMemory() {
        // Without reuse, a sub-allocator sized for the hint would run out long before the end.
        final long n = CAPACITY_HINT_BYTES / 2;
        for (int i = 0; i < 64; i++) {
            freeLive(allocLive(256, n));
        }
        final List<Block> blocks = new ArrayList<>();
        for (int round = 0; round < 8; round++) {
            for (int i = 0; i < MAX_LIVE_BLOCKS; i++) {
                blocks.add(allocLive(256, CAPACITY_HINT_BYTES / MAX_LIVE_BLOCKS));
            }
            assertNoOverlap(blocks);
            for (Block b : blocks) {
                freeLive(b);
            }
            blocks.clear();
        }
    }

    @Test
    void freeOfAnAddressNeverHandedOutIsRejected() {
        final Block b = allocLive(256, 4096);
        assertThatThrownBy(() -> sub.free(b.ptr() + 256, 256))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sub.free(b.ptr() + b.bytes() + (1 << 20), 4096))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sub.free(0, 4096)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void doubleFreeIsRejected() {
        final Block b = allocLive(256, 4096);
        freeLive(b);
        assertThatThrownBy(() -> sub.free(b.ptr(), b.bytes()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void stateIsUnchangedAfterARejectedFree() {
        final Block a = allocLive(256, 4096);
        final Block b = allocLive(256, 8192);
        assertThatThrownBy(() -> sub.free(a.ptr() + 256, 256))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sub.free(b.ptr() + 512, 1024))
                .isInstanceOf(IllegalArgumentException.class);
        freeLive(a);
        assertThatThrownBy(() -> sub.free(a.ptr(), a.bytes()))
                .isInstanceOf(IllegalArgumentException.class);

        // Both blocks are still freeable exactly once, and the space still works.
        final Block c = allocLive(256, 4096);
        assertNoOverlap(List.of(b, c));
        freeLive(b);
        freeLive(c);
        assertThatThrownBy(() -> sub.free(b.ptr(), b.bytes()))
                .isInstanceOf(IllegalArgumentException.class);
        freeThenAllocReusesMemory();
    }

    @Test
    void adjacentBlocksCanBeFreedAsOneWhenCoalescing() {
        for (int i = 0; i < 8; i++) {
            allocLive(256, 256L << (i % 4));
        }
        final List<Block> sorted = new ArrayList<>(live);
        sorted.sort(Comparator.comparingLong(Block::ptr));
        // Free maximal runs of touching blocks in one call when the implementation coalesces.
        int i = 0;
        while (i < sorted.size()) {
            final Block first = sorted.get(i);
            long bytes = first.bytes();
            int j = i + 1;
            while (sub.supportsCoalescing() && j < sorted.size()
                    && first.ptr() + bytes == sorted.get(j).ptr()) {
                bytes += sorted.get(j).bytes();
                j++;
            }
            sub.free(first.ptr(), bytes);
            live.removeAll(sorted.subList(i, j));
            i = j;
        }
        assertThat(live).isEmpty();
        freeThenAllocReusesMemory();
    }

    @Test
    void answersAreStable() {
        assertThat(sub.supportsCoalescing()).isEqualTo(sub.supportsCoalescing());
        assertThat(sub.memoryType()).isNotNull();
    }
}
