/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Real memory, real bytes: every live allocation holds a pattern unique to it, written through
 * its ByteBuffer over every requested byte and checked in full when it is freed (and all live
 * ones every few hundred steps), while well over 1 GiB is allocated and freed. An allocation
 * handed out over another live one, or a split or merge that moved data, shows up as a
 * overwritten pattern.
 */
class DataIntegrityTest {

    private static final long MIB = 1L << 20;
    private static final long CHURN_BYTES = 1L << 30;

    private record Live(Allocation allocation, ByteBuffer view, long seed) {
    }

    private static long word(long seed, int i) {
        long z = seed + i * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 31);
    }

    private static void write(Live l) {
        ByteBuffer b = l.view();
        int words = b.capacity() / 8;
        for (int i = 0; i < words; i++) {
            b.putLong(i * 8, word(l.seed(), i));
        }
        for (int i = words * 8; i < b.capacity(); i++) {
            b.put(i, (byte) l.seed());
        }
    }

    private static void check(Live l, long step) {
        ByteBuffer b = l.view();
        int words = b.capacity() / 8;
        for (int i = 0; i < words; i++) {
            if (b.getLong(i * 8) != word(l.seed(), i)) {
                fail("step " + step + ": " + l.allocation() + " was overwritten at byte " + (i * 8));
            }
        }
        for (int i = words * 8; i < b.capacity(); i++) {
            if (b.get(i) != (byte) l.seed()) {
                fail("step " + step + ": " + l.allocation() + " was overwritten at byte " + i);
            }
        }
    }

    @Test
    void noPatternIsEverOverwrittenWhileOverAGibibyteChurns() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("noPatternIsEverOverwrittenWhileOverAGibibyteChurns: seed=" + seed
                + "; replay with -Dbfc4j.test.seed=" + seed);
        SplittableRandom random = new SplittableRandom(seed);
        AlignedHostSubAllocator sub = new AlignedHostSubAllocator();
        BfcAllocator a = BfcAllocator.builder().name("integrity").memoryLimit(256 * MIB)
                .allowRetryOnFailure(false).garbageCollection(random.nextBoolean()).subAllocator(sub).build();
        List<Live> live = new ArrayList<>();
        long churned = 0;
        long step = 0;
        long ooms = 0;
        while (churned < CHURN_BYTES) {
            step++;
            if (!live.isEmpty() && (live.size() > 400 || random.nextInt(100) < 45)) {
                Live l = live.remove(random.nextInt(live.size()));
                check(l, step);
                l.allocation().close();
            } else {
                // Log-uniform sizes from 1 byte to 8 MiB, many of them not multiples of 256.
                long bytes = 1L + (long) Math.pow(2, random.nextDouble() * 23);
                try {
                    Allocation x = a.allocate(bytes);
                    Live l = new Live(x, x.asByteBuffer(), random.nextLong());
                    write(l);
                    live.add(l);
                    churned += bytes;
                } catch (BfcOutOfMemoryException e) {
                    ooms++;
                }
            }
            if (step % 500 == 0) {
                for (Live l : live) {
                    check(l, step);
                }
            }
        }
        for (Live l : live) {
            check(l, step);
            l.allocation().close();
        }
        System.out.println("  " + step + " steps, " + churned + " bytes churned, " + ooms + " out-of-memory answers");
        assertThat(churned).isGreaterThanOrEqualTo(CHURN_BYTES);
        assertThat(a.getStats().bytesInUse()).isZero();
        a.close();
        Returned.assertNothingHeldButForViews(sub, a::bytesHeldForViews);
    }
}
