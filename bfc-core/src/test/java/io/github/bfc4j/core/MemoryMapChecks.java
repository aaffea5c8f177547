/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a memory map taken while other threads allocate must still say: it is one picture, so its
 * chunks, its bins and its statistics agree with one another. For the tests of the integrations,
 * which take maps while a runtime's threads allocate.
 */
public final class MemoryMapChecks {

    private MemoryMapChecks() {
    }

    /**
     * Checks that the chunks tile each region, and that the bytes and counts of the chunks in
     * use, the regions and the bins add up to the map's statistics.
     *
     * @param m a memory map
     */
    public static void assertAddsUp(MemoryMap m) {
        String name = m.allocatorName();
        MemoryStats s = m.memoryStats();
        long inUseBytes = 0;
        long inUseChunks = 0;
        long chunks = 0;
        long reserved = 0;
        long largestFree = 0;
        for (MemoryMap.Region r : m.regions()) {
            long at = r.ptr();
            for (MemoryMap.Chunk c : r.chunks()) {
                assertThat(c.ptr()).as("%s: chunk after 0x%s in region 0x%s", name, Long.toHexString(at),
                        Long.toHexString(r.ptr())).isEqualTo(at);
                at += c.size();
                chunks++;
                if (c.inUse()) {
                    inUseBytes += c.size();
                    inUseChunks++;
                } else {
                    largestFree = Math.max(largestFree, c.size());
                }
            }
            assertThat(at - r.ptr()).as("%s: chunks of region 0x%s", name, Long.toHexString(r.ptr()))
                    .isEqualTo(r.size());
            reserved += r.size();
        }
        long binBytesInUse = 0;
        long binChunks = 0;
        for (BfcAllocator.BinDebugInfo b : m.bins()) {
            binBytesInUse += b.totalBytesInUse();
            binChunks += b.totalChunksInBin();
        }
        assertThat(inUseBytes).as("%s: bytes of the chunks in use", name)
                .isEqualTo(s.bytesInUse()).isEqualTo(m.stats().bytesInUse()).isEqualTo(binBytesInUse);
        assertThat(inUseChunks).as("%s: chunks in use", name).isEqualTo(s.activeAllocations())
                .isEqualTo(s.allocationsTotal() - s.freesTotal());
        assertThat(chunks).as("%s: chunks in the bins", name).isEqualTo(binChunks);
        assertThat(reserved).as("%s: bytes of the regions", name).isEqualTo(s.reservedBytes())
                .isEqualTo(m.stats().poolBytes());
        assertThat(largestFree).as("%s: largest free chunk", name).isEqualTo(s.largestFreeChunkBytes());
        assertThat(s.peakBytesInUse()).as("%s: peak in use", name).isGreaterThanOrEqualTo(s.bytesInUse());
    }
}
