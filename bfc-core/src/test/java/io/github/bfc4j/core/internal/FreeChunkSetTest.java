/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The intrusive red-black tree behind the bins against a {@code TreeSet} model: random adds,
 * removes, searches and walks on three sets sharing one growing {@link ChunkTable}, with many
 * equal (size, address) keys, checking the answers and the tree's invariants after every
 * operation. The model orders by upstream's {@code ChunkComparator} (size, then address, both
 * unsigned as {@code size_t} and pointers are), written here independently of the code under
 * test and over the test's own record of each handle's key; addresses come from bands on both
 * sides of the sign bit, so a signed comparison anywhere disagrees with the model.
 */
class FreeChunkSetTest {

    private static final int SETS = 3;
    /** More than the handles the test ever creates (at most 3000 plus the probe). */
    private static final int MAX_HANDLES = 4000;

    @Test
    void behavesLikeATreeSetOrderedBySizeThenUnsignedAddress() {
        long seed = seed("FreeChunkSetTest");
        Random rnd = new Random(seed);
        ChunkTable chunks = new ChunkTable(16);
        Keys keys = new Keys(chunks, MAX_HANDLES);
        FreeChunkSet[] sets = new FreeChunkSet[SETS];
        List<TreeSet<Integer>> models = new ArrayList<>();
        for (int k = 0; k < SETS; k++) {
            // One tree; a bin of 1-2 KiB (the sizes spread over its subsets, the rest in its first
            // and last); one of 2-4 KiB (most sizes below it, in its first subset).
            sets[k] = k == 0 ? new FreeChunkSet(chunks) : new FreeChunkSet(chunks, 512L << k);
            models.add(new TreeSet<>(keys::compare));
        }
        int probe = chunks.allocateChunk(); // a handle in no set, for ceiling() models
        List<Integer> handles = new ArrayList<>();
        int[] owner = new int[MAX_HANDLES]; // the set holding each handle, -1 for none
        Arrays.fill(owner, -1);

        for (int step = 0; step < 100_000; step++) {
            String what = "seed " + seed + ", step " + step;
            int op = rnd.nextInt(100);
            int k = rnd.nextInt(SETS);
            FreeChunkSet set = sets[k];
            TreeSet<Integer> model = models.get(k);
            if (handles.size() < 8 || (op < 3 && handles.size() < 3000)) {
                int h = chunks.allocateChunk();
                keys.setRandom(rnd, h);
                handles.add(h);
                continue;
            }
            int h = handles.get(rnd.nextInt(handles.size()));
            if (op < 40) {
                if (owner[h] >= 0 && owner[h] != k) {
                    int hh = h;
                    assertThatThrownBy(() -> set.add(hh)).as(what).isInstanceOf(IllegalStateException.class);
                } else {
                    boolean added = model.add(h);
                    assertThat(set.add(h)).as(what + " add(%d)", h).isEqualTo(added);
                    if (added) {
                        owner[h] = k;
                    }
                }
            } else if (op < 70) {
                Integer equal = model.contains(h) ? model.ceiling(h) : null;
                assertThat(set.remove(h)).as(what + " remove(%d)", h).isEqualTo(model.remove(h));
                if (equal != null) {
                    owner[equal] = -1;
                }
            } else if (op < 76) {
                assertThat(set.contains(h)).as(what + " contains(%d)", h).isEqualTo(model.contains(h));
            } else if (op < 83) {
                long size = rnd.nextInt(4) == 0 ? 0 : randomSize(rnd);
                long ptr = rnd.nextInt(4) == 0 ? 0 : randomPtr(rnd);
                keys.set(probe, size, ptr);
                Integer expected = model.ceiling(probe);
                assertThat(set.ceiling(size, ptr)).as(what + " ceiling(%d, 0x%x)", size, ptr)
                        .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
            } else if (op < 86) {
                long size = randomSize(rnd);
                keys.set(probe, size, 0);
                Integer expected = model.ceiling(probe);
                assertThat(set.ceilingSize(size)).as(what + " ceilingSize(%d)", size)
                        .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
            } else if (op < 92) {
                Integer expected = model.higher(h);
                assertThat(set.higher(h)).as(what + " higher(%d)", h)
                        .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
            } else if (op < 98) {
                if (owner[h] < 0) {
                    keys.setRandom(rnd, h); // only while in no set, as the allocator does
                }
            } else if (op < 99) {
                assertThat(walk(set)).as(what + " walk").containsExactlyElementsOf(model);
                assertThat(set.first()).isEqualTo(model.isEmpty() ? FreeChunkSet.NONE : model.first());
                assertThat(set.last()).isEqualTo(model.isEmpty() ? FreeChunkSet.NONE : model.last());
            } else if (rnd.nextInt(20) == 0) {
                for (int e : model) {
                    owner[e] = -1;
                }
                set.clear();
                model.clear();
            }
            assertThat(set.size()).as(what).isEqualTo(model.size());
            assertThat(set.isEmpty()).as(what).isEqualTo(model.isEmpty());
            set.checkInvariants();
        }
        for (int k = 0; k < SETS; k++) {
            assertThat(walk(sets[k])).as("seed %d, set %d", seed, k).containsExactlyElementsOf(models.get(k));
        }
    }

    @Test
    void aBinsSubsetsAnswerAsOneOrderedSet() {
        long seed = seed("FreeChunkSetTest subsets");
        Random rnd = new Random(seed);
        ChunkTable chunks = new ChunkTable(16);
        Keys keys = new Keys(chunks, MAX_HANDLES);
        FreeChunkSet bin = new FreeChunkSet(chunks, 2048);
        TreeSet<Integer> model = new TreeSet<>(keys::compare);
        for (int i = 0; i < 300; i++) {
            int h = chunks.allocateChunk();
            // Mostly in the bin's range, some below and above it, a few sizes repeated.
            long size = switch (rnd.nextInt(8)) {
                case 0 -> 1 + rnd.nextInt(2048);
                case 1 -> 4096 + rnd.nextInt(1 << 20);
                case 2 -> 2048 + (2048 / FreeChunkSet.SUBSETS) * rnd.nextInt(FreeChunkSet.SUBSETS); // subset starts
                default -> 2048 + rnd.nextInt(2048);
            };
            keys.set(h, size, 256L * rnd.nextInt(1 << 20));
            assertThat(bin.add(h)).isEqualTo(model.add(h));
        }
        bin.checkInvariants();
        assertThat(walk(bin)).as("seed %d", seed).containsExactlyElementsOf(model);
        assertThat(bin.last()).isEqualTo(model.last());
        int probe = chunks.allocateChunk();
        for (long size = 0; size <= 4200; size++) {
            keys.set(probe, size, 0);
            Integer expected = model.ceiling(probe);
            assertThat(bin.ceilingSize(size)).as("seed %d, ceilingSize(%d)", seed, size)
                    .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
        }
        List<Integer> order = new ArrayList<>(model);
        java.util.Collections.shuffle(order, rnd);
        for (int h : order) {
            assertThat(bin.remove(h)).isTrue();
            model.remove(h);
            assertThat(bin.first()).isEqualTo(model.isEmpty() ? FreeChunkSet.NONE : model.first());
        }
        bin.checkInvariants();
        assertThat(bin.isEmpty()).isTrue();
    }

    @Test
    void aChunkBeforeEveryOtherOfItsSubsetBecomesTheFirst() {
        // An allocator's common churn: the lowest address of a size is taken and given back,
        // and chunks of one size arrive in falling address order.
        ChunkTable chunks = new ChunkTable(16);
        Keys keys = new Keys(chunks, MAX_HANDLES);
        FreeChunkSet bin = new FreeChunkSet(chunks, 65536);
        TreeSet<Integer> model = new TreeSet<>(keys::compare);
        for (int i = 200; i > 0; i--) {
            int h = chunks.allocateChunk();
            keys.set(h, 65536 + 256 * (i % 3), 65536L * i);
            assertThat(bin.add(h)).isEqualTo(model.add(h));
            assertThat(bin.first()).isEqualTo(model.first());
            bin.checkInvariants();
        }
        int probe = chunks.allocateChunk();
        for (int round = 0; round < 300; round++) {
            long size = 65536 + 256 * (round % 3);
            keys.set(probe, size, 0);
            int h = bin.ceilingSize(size);
            assertThat(h).isEqualTo(model.ceiling(probe));
            assertThat(bin.remove(h)).isTrue();
            model.remove(h);
            assertThat(bin.add(h)).isTrue();
            model.add(h);
            assertThat(bin.first()).isEqualTo(model.first());
            bin.checkInvariants();
        }
        assertThat(walk(bin)).containsExactlyElementsOf(model);
    }

    @Test
    void refusesABinSizeThatIsNotAPowerOfTwoOfAtLeastTheSubsets() {
        ChunkTable chunks = new ChunkTable(16);
        assertThatThrownBy(() -> new FreeChunkSet(chunks, 3000)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("minSize must be a power of two of at least 16, not 3000");
        assertThatThrownBy(() -> new FreeChunkSet(chunks, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new FreeChunkSet(chunks, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void emptySetAnswersNone() {
        FreeChunkSet set = new FreeChunkSet(new ChunkTable(16));
        assertThat(set.first()).isEqualTo(FreeChunkSet.NONE);
        assertThat(set.last()).isEqualTo(FreeChunkSet.NONE);
        assertThat(set.ceiling(0, 0)).isEqualTo(FreeChunkSet.NONE);
        assertThat(set.isEmpty()).isTrue();
    }

    @Test
    void ordersSizesAndAddressesUnsigned() {
        ChunkTable chunks = new ChunkTable(16);
        FreeChunkSet set = new FreeChunkSet(chunks);
        int big = chunks.allocateChunk();
        chunks.setSize(big, 256);
        chunks.setPtr(big, 0x8000_0000_0000_0000L); // negative as a signed long
        int small = chunks.allocateChunk();
        chunks.setSize(small, 256);
        chunks.setPtr(small, 0x100);
        set.add(big);
        set.add(small);
        assertThat(walk(set)).containsExactly(small, big);
        assertThat(set.ceiling(256, 0x101)).isEqualTo(big);
    }

    /**
     * Few distinct sizes, so that equal (size, address) pairs are common; among them the
     * largest a chunk can have.
     */
    private static long randomSize(Random rnd) {
        int i = rnd.nextInt(11);
        return i < 10 ? 256L * (1 + i) : 1L << 62;
    }

    /**
     * An address from one of four bands of 40: low, just below the sign bit, just above it
     * (negative as a signed long), and at the very top of the address space.
     */
    private static long randomPtr(Random rnd) {
        long offset = 256L * rnd.nextInt(40);
        return switch (rnd.nextInt(4)) {
            case 0 -> offset;
            case 1 -> 0x7fff_ffff_ffff_0000L + offset;
            case 2 -> 0x8000_0000_0000_0000L + offset;
            default -> 0xffff_ffff_ffff_0000L + offset;
        };
    }

    /**
     * The test's own record of each handle's key (set in the chunk table too), and the order the
     * model uses: size, then address, each compared as an unsigned 64-bit number by flipping the
     * sign bit and comparing signed.
     */
    private static final class Keys {
        private final ChunkTable chunks;
        private final long[] size;
        private final long[] ptr;

        Keys(ChunkTable chunks, int maxHandles) {
            this.chunks = chunks;
            this.size = new long[maxHandles];
            this.ptr = new long[maxHandles];
        }

        void set(int h, long s, long p) {
            size[h] = s;
            ptr[h] = p;
            chunks.setSize(h, s);
            chunks.setPtr(h, p);
        }

        void setRandom(Random rnd, int h) {
            set(h, randomSize(rnd), randomPtr(rnd));
        }

        int compare(Integer a, Integer b) {
            int bySize = Long.compare(size[a] ^ Long.MIN_VALUE, size[b] ^ Long.MIN_VALUE);
            return bySize != 0 ? bySize : Long.compare(ptr[a] ^ Long.MIN_VALUE, ptr[b] ^ Long.MIN_VALUE);
        }
    }

    /** The test's seed: {@code -Dbfc4j.test.seed}, else the clock; printed. */
    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println(test + " seed: " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        return seed;
    }

    private static List<Integer> walk(FreeChunkSet set) {
        List<Integer> out = new ArrayList<>();
        for (int h = set.first(); h != FreeChunkSet.NONE; h = set.higher(h)) {
            out.add(h);
        }
        return out;
    }
}
