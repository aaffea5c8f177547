/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.sim.SimSubAllocator;

/**
 * Java heap used by the allocator's metadata, measured as heap in use after full garbage
 * collections: (1) bytes per GiB of region (a fresh allocator with one region of 1, 16 and 64
 * GiB and one allocation in it), (2) bytes per GiB of a region filled entirely with chunks of
 * one size (256 B: every 256-byte slot a chunk start, upstream's worst case too; 4 KiB, 64 KiB,
 * 1 MiB, 16 MiB) or of random sizes (256 B to 1 MiB), (3) bytes per live chunk (one million
 * 256-byte allocations in one region). Upstream spends 8 bytes per 256-byte slot of every
 * region (32 MiB per GiB) plus a 64-byte {@code Chunk} per chunk.
 *
 * <p>Run: {@code java -Xmx4g -cp bfc-bench/target/benchmarks.jar io.github.bfc4j.bench.MetadataFootprint}
 */
public final class MetadataFootprint {

    private static final long BASE = 0x7f0000000000L;

    private MetadataFootprint() {
    }

    /**
     * Prints both figures.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false).build();
        System.out.println("region GiB | heap bytes for the allocator | bytes per GiB of region");
        // The first round (0) only loads and initialises the classes; it is not printed.
        for (long gib : new long[] {0, 1, 16, 64}) {
            long before = usedHeap();
            BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, (gib + 1) << 30, 0, true),
                    Math.max(1, gib) << 30, "footprint", opts);
            long p = a.allocateRaw(256, 256, AllocationAttributes.NO_RETRY);
            long after = usedHeap();
            if (gib > 0) {
                System.out.printf("%10d | %28d | %23d%n", gib, after - before, (after - before) / gib);
            }
            a.deallocateRaw(p);
            a.close();
        }

        System.out.println("region filled with | chunks | heap bytes per GiB of region | per chunk");
        fill(opts, 1, "256 B chunks (every slot)", 256, 0);
        fill(opts, 1, "4 KiB chunks", 4096, 0);
        fill(opts, 1, "64 KiB chunks", 65536, 0);
        fill(opts, 4, "1 MiB chunks", 1 << 20, 0);
        fill(opts, 16, "16 MiB chunks", 16 << 20, 0);
        fill(opts, 1, "random 256 B..1 MiB", 0, 1 << 20);

        int n = 1_000_000;
        long[] ptrs = new long[n];
        long before = usedHeap();
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true), 1L << 30,
                "footprint", opts);
        for (int i = 0; i < n; i++) {
            ptrs[i] = a.allocateRaw(256, 256, AllocationAttributes.NO_RETRY);
        }
        long after = usedHeap();
        System.out.printf("%d live 256-byte chunks (+1 free tail): %d bytes, %.1f bytes per live chunk%n",
                n, after - before, (after - before) / (double) n);
        // Every other one freed: half the chunks free and binned (no coalescing possible).
        for (int i = 0; i < n; i += 2) {
            a.deallocateRaw(ptrs[i]);
        }
        long afterFree = usedHeap();
        System.out.printf("after freeing every other one (%d free chunks in bins): %d bytes, %.1f bytes per chunk%n",
                n / 2, afterFree - before, (afterFree - before) / (double) n);
        a.close();
    }

    /**
     * Fills one region of {@code gib} GiB with allocations of {@code bytes} (or, if 0, random
     * sizes up to {@code maxRandom}) until it is full, and prints the heap per GiB and per chunk.
     */
    private static void fill(BfcOptions opts, long gib, String what, long bytes, int maxRandom) {
        java.util.Random rnd = new java.util.Random(6);
        long before = usedHeap();
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, (gib + 1) << 30, 0, true),
                gib << 30, "footprint", opts);
        long n = 0;
        while (a.allocateRaw(256, bytes != 0 ? bytes : 1 + rnd.nextInt(maxRandom),
                AllocationAttributes.NO_RETRY) != 0) {
            n++;
        }
        long after = usedHeap();
        System.out.printf("%-26s | %8d | %28d | %.1f%n", what + " (" + gib + " GiB)", n,
                (after - before) / gib, (after - before) / (double) n);
        a.close();
    }

    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            used = Math.min(used, rt.totalMemory() - rt.freeMemory());
        }
        return used;
    }
}
