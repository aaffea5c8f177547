/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.SubAllocator.Block;
import io.github.bfc4j.core.SubAllocatorContractTest;
import io.github.bfc4j.core.TestThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The contract, in the configuration most traces use, plus the exact semantics of the format. */
class SimSubAllocatorTest extends SubAllocatorContractTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long KIB = 1024;

    @Override
    protected SubAllocator newSubAllocator(long capacityHintBytes) {
        return new SimSubAllocator(BASE, 2 * capacityHintBytes, 0, true);
    }

    @Override
    protected void close(SubAllocator subAllocator) {
        final SimSubAllocator sim = (SimSubAllocator) subAllocator;
        sim.checkInvariants();
        assertThat(sim.reservedBytes()).isZero();
        assertThat(sim.freeRanges()).containsExactly(Map.entry(sim.base(), sim.base() + sim.capacity()));
    }

    /** The contract again, with a gap and without coalescing. */
    @Nested
    class WithGapWithoutCoalescing extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            return new SimSubAllocator(BASE, 2 * capacityHintBytes, 256, false);
        }

        @Override
        protected void close(SubAllocator subAllocator) {
            SimSubAllocatorTest.this.close(subAllocator);
        }
    }

    private static Block block(long ptr, long bytes) {
        return new Block(ptr, bytes);
    }

    // ---------------------------------------------------------------- arguments

    @Test
    void constructorRejectsBadArguments() {
        assertThatThrownBy(() -> new SimSubAllocator(0, 4096, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("base=0x0 (expected: a positive multiple of 256)");
        assertThatThrownBy(() -> new SimSubAllocator(-256, 4096, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("base=0xffffffffffffff00 (expected:");
        assertThatThrownBy(() -> new SimSubAllocator(BASE + 128, 4096, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("base=0x7f0000000080 (expected: a positive multiple of 256)");
        assertThatThrownBy(() -> new SimSubAllocator(BASE, 0, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity=0 (expected: > 0)");
        assertThatThrownBy(() -> new SimSubAllocator(BASE, -1, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity=-1 (expected: > 0)");
        assertThatThrownBy(() -> new SimSubAllocator(BASE, 4096, -1, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("gap=-1 (expected: >= 0)");
        assertThatThrownBy(() -> new SimSubAllocator(0x7fffffffffffff00L, 256, 0, true))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("capacity=256 (expected: <= 255, so that base + capacity does not overflow)");
    }

    @Test
    void constructorAcceptsWhatTheFormatAllows() {
        // A capacity that is not a multiple of 256 occurs in the bundled traces; the format puts
        // no constraint on the gap beyond being a size.
        final SimSubAllocator odd = new SimSubAllocator(BASE, 87109110, 100, false);
        assertThat(odd.base()).isEqualTo(BASE);
        assertThat(odd.capacity()).isEqualTo(87109110);
        assertThat(odd.gap()).isEqualTo(100);
        assertThat(odd.supportsCoalescing()).isFalse();
        assertThat(odd.memoryType()).isEqualTo(MemoryType.UNKNOWN);
        assertThat(odd.alloc(1, 87109110 - 100)).isEqualTo(block(BASE, 87109110 - 100));
        assertThat(odd.reservedBytes()).isEqualTo(87109110);

        // The space may end at Long.MAX_VALUE exactly.
        final SimSubAllocator top = new SimSubAllocator(0x7fffffffffffff00L, 255, 0, true);
        assertThat(top.alloc(1, 255)).isEqualTo(block(0x7fffffffffffff00L, 255));
        top.free(0x7fffffffffffff00L, 255);
        top.checkInvariants();
    }

    @Test
    void allocRejectsBadArguments() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1 << 20, 0, true);
        assertThatThrownBy(() -> sim.alloc(3, 256))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("alignment=3 (expected: a power of two)");
        assertThatThrownBy(() -> sim.alloc(0, 256))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("alignment=0 (expected: a power of two)");
        assertThatThrownBy(() -> sim.alloc(Long.MIN_VALUE, 256))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("alignment=" + Long.MIN_VALUE + " (expected: a power of two)");
        assertThatThrownBy(() -> sim.alloc(256, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numBytes=0 (expected: > 0)");
        assertThatThrownBy(() -> sim.alloc(256, -256))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numBytes=-256 (expected: > 0)");
        assertThatThrownBy(() -> sim.free(BASE, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("numBytes=0 (expected: > 0)");
        assertThat(sim.reservedBytes()).isZero();
        sim.checkInvariants();
    }

    // ---------------------------------------------------------------- alloc

    @Test
    void firstFitWithAlignmentGivesExactAddresses() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1 << 20, 0, true);
        assertThat(sim.alloc(64, 1000)).isEqualTo(block(BASE, 1000));
        // The next free address, BASE + 1000, rounds up to 256.
        assertThat(sim.alloc(1, 256)).isEqualTo(block(BASE + 1024, 256));
        // BASE + 1280 rounds up to 4096, leaving [BASE + 1280, BASE + 4096) free.
        assertThat(sim.alloc(4096, 512)).isEqualTo(block(BASE + 4096, 512));
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(BASE + 1000, BASE + 1024),
                Map.entry(BASE + 1280, BASE + 4096),
                Map.entry(BASE + 4608, BASE + (1 << 20)));
        // First fit: the hole before the aligned block is taken when the request fits...
        assertThat(sim.alloc(256, 2816)).isEqualTo(block(BASE + 1280, 2816));
        // ...and skipped when it does not (the 24-byte sliver cannot hold an aligned block).
        assertThat(sim.alloc(1, 1)).isEqualTo(block(BASE + 4608, 1));
        assertThat(sim.reservedBytes()).isEqualTo(1000 + 256 + 512 + 2816 + 1);
        sim.checkInvariants();
    }

    @Test
    void alignmentIsAtLeast256EvenWhenSmallerIsAsked() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1 << 20, 0, true);
        assertThat(sim.alloc(1, 1)).isEqualTo(block(BASE, 1));
        assertThat(sim.alloc(1, 1)).isEqualTo(block(BASE + 256, 1));
        assertThat(sim.alloc(128, 1)).isEqualTo(block(BASE + 512, 1));
        assertThat(sim.alloc(512, 1)).isEqualTo(block(BASE + 1024, 1));
    }

    @Test
    void alignmentIsRelativeToAddressZeroNotToBase() {
        // A base that is a multiple of 256 but not of 4096.
        final long base = 0x7f0000000100L;
        final SimSubAllocator sim = new SimSubAllocator(base, 8 * KIB, 0, true);
        assertThat(sim.alloc(4096, 256)).isEqualTo(block(0x7f0000001000L, 256));
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(base, 0x7f0000001000L),
                Map.entry(0x7f0000001100L, base + 8 * KIB));
        assertThat(sim.alloc(1, 3840)).isEqualTo(block(base, 3840));
    }

    @Test
    void gapIsReservedAfterEveryBlock() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 64 * KIB, 256, false);
        assertThat(sim.alloc(1, 1024)).isEqualTo(block(BASE, 1024));
        assertThat(sim.alloc(1, 1024)).isEqualTo(block(BASE + 1280, 1024));
        assertThat(sim.reservedBytes()).isEqualTo(2 * (1024 + 256));
        // The free range after the second block starts after its gap.
        assertThat(sim.freeRanges()).containsExactly(Map.entry(BASE + 2560, BASE + 64 * KIB));
        sim.free(BASE, 1024);
        assertThat(sim.reservedBytes()).isEqualTo(1024 + 256);
        // The hole is 1280 bytes: a 1024-byte block plus its gap fits exactly, 1025 bytes do not.
        assertThat(sim.alloc(1, 1025)).isEqualTo(block(BASE + 2560, 1025));
        assertThat(sim.alloc(1, 1024)).isEqualTo(block(BASE, 1024));
        sim.checkInvariants();
    }

    @Test
    void gapNeedNotBeAMultipleOf256() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 64 * KIB, 100, false);
        assertThat(sim.alloc(1, 256)).isEqualTo(block(BASE, 256));
        // [BASE, BASE + 356) reserved; the next block rounds up to BASE + 512.
        assertThat(sim.alloc(1, 256)).isEqualTo(block(BASE + 512, 256));
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(BASE + 356, BASE + 512),
                Map.entry(BASE + 868, BASE + 64 * KIB));
        sim.free(BASE, 256);
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(BASE, BASE + 512),
                Map.entry(BASE + 868, BASE + 64 * KIB));
        assertThat(sim.alloc(1, 412)).isEqualTo(block(BASE, 412));
        sim.checkInvariants();
    }

    @Test
    void exhaustionReturnsNullAndChangesNothing() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 4 * KIB, 0, true);
        assertThat(sim.alloc(1, 4 * KIB + 1)).isNull();
        assertThat(sim.alloc(1, 3 * KIB)).isEqualTo(block(BASE, 3 * KIB));
        final String before = sim.toString();
        assertThat(sim.alloc(1, KIB + 256)).isNull();
        assertThat(sim.alloc(2048, 256)).isNull(); // 1 KiB free, but not at a multiple of 2 KiB
        assertThat(sim.alloc(1L << 62, 256)).isNull();
        assertThat(sim.alloc(1, Long.MAX_VALUE)).isNull();
        assertThat(sim.toString()).isEqualTo(before);
        assertThat(sim.alloc(1024, KIB)).isEqualTo(block(BASE + 3 * KIB, KIB));
        assertThat(sim.alloc(1, 1)).isNull();
        assertThat(sim.reservedBytes()).isEqualTo(4 * KIB);
        assertThat(sim.freeRanges()).isEmpty();
        sim.checkInvariants();
    }

    @Test
    void theGapCountsAgainstTheCapacity() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 4 * KIB, 512, false);
        assertThat(sim.alloc(1, 4 * KIB - 511)).isNull();
        assertThat(sim.alloc(1, 4 * KIB - 512)).isEqualTo(block(BASE, 4 * KIB - 512));
        final SimSubAllocator huge = new SimSubAllocator(BASE, 4 * KIB, Long.MAX_VALUE, false);
        assertThat(huge.alloc(1, 1)).isNull();
        assertThat(huge.alloc(1, Long.MAX_VALUE)).isNull();
    }

    // ---------------------------------------------------------------- free

    @Test
    void adjacentFreeRangesMerge() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 4 * KIB, 0, false);
        final Block a = sim.alloc(1, KIB);
        final Block b = sim.alloc(1, KIB);
        final Block c = sim.alloc(1, KIB);
        final Block d = sim.alloc(1, KIB);
        assertThat(sim.freeRanges()).isEmpty();
        sim.free(a.ptr(), a.bytes());
        sim.free(c.ptr(), c.bytes());
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(BASE, BASE + KIB), Map.entry(BASE + 2 * KIB, BASE + 3 * KIB));
        sim.free(b.ptr(), b.bytes()); // merges with both neighbours
        assertThat(sim.freeRanges()).containsExactly(Map.entry(BASE, BASE + 3 * KIB));
        sim.free(d.ptr(), d.bytes()); // merges with the range before it
        assertThat(sim.freeRanges()).containsExactly(Map.entry(BASE, BASE + 4 * KIB));
        assertThat(sim.alloc(1, 4 * KIB)).isEqualTo(block(BASE, 4 * KIB));
        sim.checkInvariants();
    }

    @Test
    void coalescedBlocksAreFreedWithTheSummedSize() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 16 * KIB, 0, true);
        final Block a = sim.alloc(1, KIB);
        final Block b = sim.alloc(1, 2 * KIB);
        final Block c = sim.alloc(1, 4 * KIB);
        final Block d = sim.alloc(1, KIB);
        // As the BFC allocator frees a region merged from a, b and c.
        sim.free(a.ptr(), a.bytes() + b.bytes() + c.bytes());
        assertThat(sim.reservedBytes()).isEqualTo(KIB);
        assertThat(sim.freeRanges()).containsExactly(
                Map.entry(BASE, BASE + 7 * KIB), Map.entry(BASE + 8 * KIB, BASE + 16 * KIB));
        assertThatThrownBy(() -> sim.free(b.ptr(), b.bytes()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was not allocated by")
                .hasMessageContaining("(or was already freed): it is free");
        sim.free(d.ptr(), d.bytes());
        assertThat(sim.alloc(1, 16 * KIB)).isEqualTo(block(BASE, 16 * KIB));
        sim.checkInvariants();
    }

    @Test
    void severalBlocksCannotBeFreedAsOneWithoutCoalescing() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 16 * KIB, 0, false);
        final Block a = sim.alloc(1, KIB);
        final Block b = sim.alloc(1, KIB);
        assertThatThrownBy(() -> sim.free(a.ptr(), 2 * KIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("covers 2 blocks")
                .hasMessageContaining("does not support coalescing");
        assertThat(sim.reservedBytes()).isEqualTo(2 * KIB);
        sim.free(a.ptr(), a.bytes());
        sim.free(b.ptr(), b.bytes());
        sim.checkInvariants();

        // With a gap, blocks never touch, so the summed size ends inside the second block.
        final SimSubAllocator gapped = new SimSubAllocator(BASE, 16 * KIB, 256, true);
        final Block c = gapped.alloc(1, KIB);
        gapped.alloc(1, KIB);
        assertThatThrownBy(() -> gapped.free(c.ptr(), 2 * KIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("it ends inside the block [0x7f0000000500, 0x7f0000000a00)");
    }

    @Test
    void badFreesAreRejectedWithMessagesAndChangeNothing() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 16 * KIB, 0, true);
        final Block a = sim.alloc(1, KIB);
        final Block b = sim.alloc(1, 2 * KIB);
        final Block c = sim.alloc(1, KIB);
        sim.free(c.ptr(), c.bytes());
        final String state = sim.toString();
        final Map<Long, Long> ranges = new TreeMap<>(sim.freeRanges());

        assertThatThrownBy(() -> sim.free(BASE + 256, 256)) // inside a
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("0x7f0000000100 was not allocated by " + state
                        + " (or was already freed): it is inside the block [0x7f0000000000, 0x7f0000000400)");
        assertThatThrownBy(() -> sim.free(c.ptr(), c.bytes())) // double free
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("(or was already freed): it is free");
        assertThatThrownBy(() -> sim.free(BASE - 4096, 4096)) // before the space
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("it is outside the space");
        assertThatThrownBy(() -> sim.free(BASE + 16 * KIB, 256)) // after the space
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("it is outside the space");
        assertThatThrownBy(() -> sim.free(a.ptr(), KIB - 256)) // a piece of a
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("it ends inside the block [0x7f0000000000, 0x7f0000000400)");
        assertThatThrownBy(() -> sim.free(b.ptr(), 2 * KIB + 256)) // b and free space after it
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("[0x7f0000000400, 0x7f0000000d00) (numBytes=2304 + gap 0) is not a run of"
                        + " adjacent blocks handed out by " + state
                        + ": it covers free space at 0x7f0000000c00");
        assertThatThrownBy(() -> sim.free(a.ptr(), 3 * KIB + 256)) // a, b and free space
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("it covers free space at 0x7f0000000c00");
        assertThatThrownBy(() -> sim.free(b.ptr(), Long.MAX_VALUE)) // past the end, overflowing
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("runs past the end 0x7f0000004000");

        assertThat(sim.toString()).isEqualTo(state);
        assertThat(sim.freeRanges()).isEqualTo(ranges);
        sim.checkInvariants();
        sim.free(a.ptr(), a.bytes() + b.bytes());
        assertThat(sim.freeRanges()).containsExactly(Map.entry(BASE, BASE + 16 * KIB));
    }

    @Test
    void toStringDescribesTheState() {
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1 << 20, 256, false);
        sim.alloc(1, 4096);
        assertThat(sim).hasToString("SimSubAllocator[0x7f0000000000, +1048576, gap=256, coalescing=false:"
                + " reserved=4352 in 1 blocks, 1 free ranges, largest free=1044224]");
    }

    /**
     * {@code toString} may be called from any thread (a log line, a message built while another
     * thread extends the allocator): it must see one consistent state, never a map being changed.
     * Blocks all have one size, so every snapshot must say {@code reserved = blocks * size}.
     */
    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS)
    void toStringIsConsistentWhileAnotherThreadAllocatesAndFrees() throws Exception {
        final Long fixed = Long.getLong("bfc4j.test.seed");
        final long seed = fixed != null ? fixed : new SplittableRandom().nextLong();
        System.out.println("SimSubAllocatorTest.toStringIsConsistentWhileAnotherThreadAllocatesAndFrees seed="
                + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        final long blockBytes = 4 * KIB;
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1 << 30, 0, false);
        final Pattern state = Pattern.compile(
                "reserved=(\\d+) in (\\d+) blocks, (\\d+) free ranges, largest free=(\\d+)]");
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        final AtomicBoolean done = new AtomicBoolean();
        final AtomicReference<Throwable> failure =
                new AtomicReference<>();
        final Thread writer = new Thread(() -> {
            final SplittableRandom rnd = new SplittableRandom(seed);
            final List<Block> live = new ArrayList<>();
            try {
                for (int i = 0; i < 2_000_000 && failure.get() == null && System.nanoTime() < deadline; i++) {
                    if (live.isEmpty() || (live.size() < 2000 && rnd.nextBoolean())) {
                        live.add(sim.alloc(256, blockBytes));
                    } else {
                        final Block b = live.remove(rnd.nextInt(live.size()));
                        sim.free(b.ptr(), b.bytes());
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            } finally {
                done.set(true);
            }
        }, "sim-writer");
        writer.setDaemon(true);
        writer.start();
        long snapshots = 0;
        try {
            while (!done.get() && failure.get() == null) {
                final String s = sim.toString();
                final Matcher m = state.matcher(s);
                assertThat(m.find()).as(s).isTrue();
                assertThat(Long.parseLong(m.group(1))).as("seed=%d: %s", seed, s)
                        .isEqualTo(Long.parseLong(m.group(2)) * blockBytes);
                snapshots++;
            }
        } catch (Throwable t) {
            failure.compareAndSet(null, t);
        }
        // Within the test's 20 s, so that a writer that hangs is named with its stack.
        TestThreads.joinOrFail(seed, Duration.ofSeconds(15), writer);
        if (failure.get() != null) {
            throw new AssertionError("seed=" + seed + " after " + snapshots + " snapshots (rerun with"
                    + " -Dbfc4j.test.seed=" + seed + "): " + failure.get(), failure.get());
        }
        assertThat(snapshots).isPositive();
    }

    // ---------------------------------------------------------------- scale and randomised

    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS)
    void copesWithTensOfThousandsOfCalls() {
        final SplittableRandom rnd = new SplittableRandom(42);
        final SimSubAllocator sim = new SimSubAllocator(BASE, 1L << 40, 0, true);
        final List<Block> live = new ArrayList<>();
        for (int i = 0; i < 50_000; i++) {
            // Up to a few thousand blocks live, so the free space is badly fragmented.
            if (live.isEmpty() || (live.size() < 4000 && rnd.nextInt(3) > 0)) {
                final Block b = sim.alloc(1L << rnd.nextInt(13), 256L * (1 + rnd.nextInt(1 << 16)));
                assertThat(b).isNotNull();
                live.add(b);
            } else {
                final Block b = live.remove(rnd.nextInt(live.size()));
                sim.free(b.ptr(), b.bytes());
            }
        }
        sim.checkInvariants();
        for (Block b : live) {
            sim.free(b.ptr(), b.bytes());
        }
        assertThat(sim.reservedBytes()).isZero();
    }

    /**
     * Against a shadow model at byte granularity: a bit set of reserved bytes, and the blocks
     * handed out. The model answers alloc independently of the ranges: the lowest address
     * aligned to {@code max(alignment, 256)} whose {@code n + gap} bytes are all free (the first
     * fit over increasing free ranges is exactly that). Every step is followed by the invariant
     * check and a comparison of the free ranges with the model's.
     */
    @Test
    void randomisedAgainstAShadowModel() {
        final Long fixed = Long.getLong("bfc4j.test.seed");
        final long seed = fixed != null ? fixed : new SplittableRandom().nextLong();
        System.out.println("SimSubAllocatorTest.randomisedAgainstAShadowModel seed=" + seed
                + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        final SplittableRandom rnd = new SplittableRandom(seed);
        for (int round = 0; round < 60; round++) {
            try {
                randomRound(rnd.split());
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed=" + seed + " round=" + round
                        + " (rerun with -Dbfc4j.test.seed=" + seed + "): " + e.getMessage(), e);
            }
        }
    }

    private static void randomRound(SplittableRandom rnd) {
        final long base = 256L * (1 + rnd.nextInt(64));
        final long capacity = rnd.nextBoolean() ? 256L * (1 + rnd.nextInt(128)) : 1 + rnd.nextInt(32 * 1024);
        final long[] gaps = {0, 0, 0, 256, 100, 1000};
        final long gap = gaps[rnd.nextInt(gaps.length)];
        final boolean coalescing = rnd.nextBoolean();
        final SimSubAllocator sim = new SimSubAllocator(base, capacity, gap, coalescing);
        final Model model = new Model(base, capacity, gap, coalescing);

        for (int step = 0; step < 400; step++) {
            final int op = rnd.nextInt(10);
            final String what;
            if (op < 5 || model.blocks.isEmpty()) {
                final long alignment = 1L << rnd.nextInt(14);
                final long n = rnd.nextBoolean() ? 256L * (1 + rnd.nextInt(16)) : 1 + rnd.nextInt(4096);
                what = "alloc(" + alignment + ", " + n + ")";
                final long expected = model.firstFit(alignment, n);
                final Block got = sim.alloc(alignment, n);
                if (expected < 0) {
                    assertThat(got).as("step %d: %s in %s", step, what, sim).isNull();
                } else {
                    assertThat(got).as("step %d: %s in %s", step, what, sim).isEqualTo(new Block(expected, n));
                    model.reserve(expected, n);
                }
            } else if (op < 8) {
                // A valid free: one block, or with coalescing and no gap sometimes a run.
                final List<Long> starts = new ArrayList<>(model.blocks.keySet());
                final long ptr = starts.get(rnd.nextInt(starts.size()));
                long bytes = model.blocks.get(ptr);
                if (coalescing && gap == 0) {
                    long next = ptr + bytes;
                    while (model.blocks.containsKey(next) && rnd.nextInt(3) > 0) {
                        bytes += model.blocks.get(next);
                        next = ptr + bytes;
                    }
                }
                what = "free(0x" + Long.toHexString(ptr) + ", " + bytes + ")";
                assertThat(model.isValidFree(ptr, bytes)).as(what).isTrue();
                sim.free(ptr, bytes);
                model.release(ptr, bytes);
            } else {
                // A free that is probably bad; the model decides.
                final long ptr;
                final long bytes;
                final int kind = rnd.nextInt(4);
                if (kind == 0 && !model.freed.isEmpty()) { // an earlier block again
                    final long[] old = model.freed.get(rnd.nextInt(model.freed.size()));
                    ptr = old[0];
                    bytes = old[1];
                } else if (kind == 1 && !model.blocks.isEmpty()) { // a live block, wrong size
                    final List<Long> starts = new ArrayList<>(model.blocks.keySet());
                    ptr = starts.get(rnd.nextInt(starts.size()));
                    bytes = Math.max(1, model.blocks.get(ptr) + 256L * (rnd.nextInt(5) - 2) + rnd.nextInt(3) - 1);
                } else { // anywhere near the space
                    ptr = base - 512 + rnd.nextLong(capacity + 1024);
                    bytes = 1 + rnd.nextInt(4096);
                }
                what = "bad? free(0x" + Long.toHexString(ptr) + ", " + bytes + ")";
                if (model.isValidFree(ptr, bytes)) {
                    sim.free(ptr, bytes);
                    model.release(ptr, bytes);
                } else {
                    final String before = sim.toString();
                    assertThatThrownBy(() -> sim.free(ptr, bytes))
                            .as("step %d: %s in %s", step, what, before)
                            .isInstanceOf(IllegalArgumentException.class);
                    assertThat(sim.toString()).as("state after rejected %s", what).isEqualTo(before);
                }
            }
            try {
                sim.checkInvariants();
            } catch (IllegalStateException e) {
                throw new AssertionError("step " + step + ": after " + what + ": " + e.getMessage(), e);
            }
            assertThat(sim.reservedBytes()).as("step %d: reservedBytes after %s", step, what)
                    .isEqualTo(model.reserved.cardinality());
            assertThat(sim.freeRanges()).as("step %d: free ranges after %s", step, what)
                    .isEqualTo(model.freeRanges());
        }
    }

    /** The shadow model: one bit per byte of the space, set while reserved. */
    private static final class Model {
        final long base;
        final long capacity;
        final long gap;
        final boolean coalescing;
        final BitSet reserved = new BitSet();
        /** Live blocks: ptr to the bytes handed out. */
        final TreeMap<Long, Long> blocks = new TreeMap<>();
        /** Blocks freed so far, {ptr, bytes}. */
        final List<long[]> freed = new ArrayList<>();

        Model(long base, long capacity, long gap, boolean coalescing) {
            this.base = base;
            this.capacity = capacity;
            this.gap = gap;
            this.coalescing = coalescing;
        }

        /** The lowest aligned address whose n + gap bytes are free, or -1. */
        long firstFit(long alignment, long n) {
            final long a = Math.max(alignment, 256);
            final long need = n + gap;
            for (long p = (base + a - 1) / a * a; p + need <= base + capacity; p += a) {
                final int off = (int) (p - base);
                final int nextReserved = reserved.nextSetBit(off);
                if (nextReserved < 0 || nextReserved >= off + need) {
                    return p;
                }
            }
            return -1;
        }

        void reserve(long p, long n) {
            final int off = (int) (p - base);
            assertThat(reserved.get(off, (int) (off + n + gap)).isEmpty()).isTrue();
            reserved.set(off, (int) (off + n + gap));
            blocks.put(p, n);
        }

        /** Whether [ptr, ptr + bytes + gap) is exactly one live block, or a run of them. */
        boolean isValidFree(long ptr, long bytes) {
            long cur = ptr;
            long sum = 0;
            int count = 0;
            while (blocks.containsKey(cur)) {
                final long n = blocks.get(cur);
                sum += count == 0 ? n : gap + n; // the gaps inside a run count as bytes
                count++;
                if (sum == bytes) {
                    return count == 1 || coalescing;
                }
                if (sum > bytes) {
                    return false;
                }
                cur += n + gap;
            }
            return false;
        }

        void release(long ptr, long bytes) {
            long cur = ptr;
            while (cur < ptr + bytes) {
                final long n = blocks.remove(cur);
                freed.add(new long[] {cur, n});
                cur += n + gap; // inside a run, the next block starts after this one's gap
            }
            final int off = (int) (ptr - base);
            reserved.clear(off, (int) (off + bytes + gap));
        }

        TreeMap<Long, Long> freeRanges() {
            final TreeMap<Long, Long> ranges = new TreeMap<>();
            int i = reserved.nextClearBit(0);
            while (i < capacity) {
                int j = reserved.nextSetBit(i);
                if (j < 0 || j > capacity) {
                    j = (int) capacity;
                }
                ranges.put(base + i, base + j);
                i = reserved.nextClearBit(j);
            }
            return ranges;
        }
    }
}
