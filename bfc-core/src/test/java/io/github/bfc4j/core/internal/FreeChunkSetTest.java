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
 * The intrusive red-black tree behind the bins against a {@code TreeSet} model with the same
 * comparator: random adds, removes, searches and walks on three sets sharing one growing
 * {@link ChunkTable}, with many equal (size, address) keys, checking the answers and the tree's
 * invariants after every operation.
 */
class FreeChunkSetTest {

    private static final int SETS = 3;

    @Test
    void behavesLikeATreeSetWithTheSameOrder() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("FreeChunkSetTest seed: " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random rnd = new Random(seed);
        ChunkTable chunks = new ChunkTable(16);
        FreeChunkSet[] sets = new FreeChunkSet[SETS];
        List<TreeSet<Integer>> models = new ArrayList<>();
        for (int k = 0; k < SETS; k++) {
            sets[k] = new FreeChunkSet(chunks);
            models.add(new TreeSet<>(chunks::compare));
        }
        int probe = chunks.allocateChunk(); // a handle in no set, for ceiling() models
        List<Integer> handles = new ArrayList<>();
        int[] owner = new int[4000]; // the set holding each handle, -1 for none
        Arrays.fill(owner, -1);

        for (int step = 0; step < 100_000; step++) {
            String what = "seed " + seed + ", step " + step;
            int op = rnd.nextInt(100);
            int k = rnd.nextInt(SETS);
            FreeChunkSet set = sets[k];
            TreeSet<Integer> model = models.get(k);
            if (handles.size() < 8 || (op < 3 && handles.size() < 3000)) {
                int h = chunks.allocateChunk();
                randomKey(rnd, chunks, h);
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
            } else if (op < 86) {
                long size = 256L * rnd.nextInt(12);
                long ptr = 256L * rnd.nextInt(40);
                chunks.setSize(probe, size);
                chunks.setPtr(probe, ptr);
                Integer expected = model.ceiling(probe);
                assertThat(set.ceiling(size, ptr)).as(what + " ceiling(%d, %d)", size, ptr)
                        .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
            } else if (op < 92) {
                Integer expected = model.higher(h);
                assertThat(set.higher(h)).as(what + " higher(%d)", h)
                        .isEqualTo(expected == null ? FreeChunkSet.NONE : expected);
            } else if (op < 98) {
                if (owner[h] < 0) {
                    randomKey(rnd, chunks, h); // only while in no set, as the allocator does
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

    private static void randomKey(Random rnd, ChunkTable chunks, int h) {
        // Few distinct keys, so that equal (size, address) pairs are common.
        chunks.setSize(h, 256L * (1 + rnd.nextInt(10)));
        chunks.setPtr(h, 256L * rnd.nextInt(40));
    }

    private static List<Integer> walk(FreeChunkSet set) {
        List<Integer> out = new ArrayList<>();
        for (int h = set.first(); h != FreeChunkSet.NONE; h = set.higher(h)) {
            out.add(h);
        }
        return out;
    }
}
