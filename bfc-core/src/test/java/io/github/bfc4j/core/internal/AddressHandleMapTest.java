package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class AddressHandleMapTest {

    private static final long BASE = 0x7f0000000000L;

    private static long seed() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("AddressHandleMapTest seed: " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        return seed;
    }

    /** A live handle of {@code chunks} starting at {@code ptr}. */
    private static int chunkAt(ChunkTable chunks, long ptr) {
        int h = chunks.allocateChunk();
        chunks.setPtr(h, ptr);
        return h;
    }

    @Test
    void agreesWithAHashMapUnderRandomPutsAndRemoves() {
        long seed = seed();
        Random rnd = new Random(seed);
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        // Four regions of 4 MiB, one not 256-byte aligned, and two adjacent ones that share a
        // 64 KiB piece; chunk starts 256-byte multiples from the region's start, dense enough
        // that pieces go from inline to paged, pages fill, empty and come back from the pool,
        // and the block table grows (five GiB blocks).
        AllocationRegion[] regions = new AllocationRegion[6];
        for (int r = 0; r < 4; r++) {
            regions[r] = new AllocationRegion(BASE + ((long) r << 32) + (r == 3 ? 0x40 : 0), 1L << 22);
        }
        regions[4] = new AllocationRegion(BASE + (4L << 32), 0x108000);
        regions[5] = new AllocationRegion(regions[4].endPtr(), 1L << 20);
        Map<Long, Integer> shadow = new HashMap<>();
        List<Long> keys = new ArrayList<>();
        for (int i = 0; i < 200_000; i++) {
            int op = rnd.nextInt(10);
            if (op < 5 || keys.isEmpty()) {
                AllocationRegion region = regions[rnd.nextInt(regions.length)];
                long key = region.ptr() + ((long) rnd.nextInt((int) (region.memorySize() >>> 8)) << 8);
                Integer old = shadow.get(key);
                int h = chunkAt(chunks, key);
                map.put(key, h);
                shadow.put(key, h);
                if (old == null) {
                    keys.add(key);
                } else {
                    chunks.deallocateChunk(old);
                }
            } else if (op < 8) {
                int idx = rnd.nextInt(keys.size());
                long key = keys.get(idx);
                keys.set(idx, keys.get(keys.size() - 1));
                keys.remove(keys.size() - 1);
                map.remove(key);
                chunks.deallocateChunk(shadow.remove(key));
            } else {
                long key = keys.get(rnd.nextInt(keys.size()));
                assertThat(map.get(key + 256)).as("seed %d", seed)
                        .isEqualTo(shadow.getOrDefault(key + 256, ChunkTable.INVALID_CHUNK_HANDLE));
                // Inside the chunk's first 256 bytes (same slot or the one before): no handle.
                assertThat(map.get(key + 16)).as("seed %d", seed).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
                assertThat(map.get(key - 16)).as("seed %d", seed).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
                assertThat(map.get(key + (1L << 44))).as("seed %d, no region there", seed)
                        .isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
            }
            if (i % 50_000 == 0) {
                for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
                    assertThat(map.get(e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
                }
            }
            assertThat(map.size()).isEqualTo(shadow.size());
        }
        for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
            assertThat(map.get(e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
        }
        for (long key : keys) {
            map.remove(key);
        }
        assertThat(map.size()).isZero();
        for (AllocationRegion region : regions) {
            assertThat(map.get(region.ptr())).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        }
        assertThat(map.blockCount()).as("regions 4 and 5 share a GiB block").isEqualTo(5);
        map.trimPool();
        assertThat(map.blockCount()).as("empty directories dropped").isZero();
    }

    @Test
    void removeOfAnAddressThatIsNotAChunkStartChangesNothing() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1 << 20);
        int h = chunkAt(chunks, BASE + 0x1000);
        map.put(BASE + 0x1000, h);
        map.remove(BASE + 0x1010);
        map.remove(BASE + 0x1100);
        map.remove(BASE + 0x20000);
        map.remove(BASE - 0x1000);
        assertThat(map.size()).isOne();
        assertThat(map.get(BASE + 0x1000)).isEqualTo(h);
        assertThat(map.get(BASE + 0x1100)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
    }

    @Test
    void oddSizedExtensionsKeepExactAnswers() {
        // A sub-allocator may hand out a block that is not a multiple of 256 bytes: the chunks
        // of a region extended after it start at odd offsets from the region's start.
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 65536 + 100);
        long odd = BASE + 65536 + 100;
        region.extend(1 << 20);
        int a = chunkAt(chunks, odd - 356);
        int b = chunkAt(chunks, odd);
        int c = chunkAt(chunks, odd + 256);
        map.put(odd - 356, a);
        map.put(odd, b);
        map.put(odd + 256, c);
        assertThat(map.get(odd - 356)).isEqualTo(a);
        assertThat(map.get(odd)).isEqualTo(b);
        assertThat(map.get(odd + 256)).isEqualTo(c);
        assertThat(map.get(odd - 100 + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(odd + 1)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        // A chunk of 100 bytes before odd (a split with a tiny fragmentation threshold) would
        // share odd's slot: refused, nothing changed.
        int tiny = chunkAt(chunks, odd - 100);
        assertThatThrownBy(() -> map.put(odd - 100, tiny))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("share a 256-byte slot");
        assertThat(map.size()).isEqualTo(3);
        assertThat(map.get(odd)).isEqualTo(b);
    }

    @Test
    void clearForgetsEverything() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1 << 20);
        for (int i = 1; i <= 100; i++) {
            map.put(BASE + i * 256L, chunkAt(chunks, BASE + i * 256L));
        }
        map.clear();
        assertThat(map.size()).isZero();
        assertThat(map.heapBytes()).as("an empty block table and the page index").isLessThan(1500);
    }

    @Test
    void everySlotAChunkStartCostsAboutFourBytesPerSlot() {
        // Upstream's worst and usual case: 8 bytes per 256-byte slot. Every slot of 16 MiB a
        // chunk start: the pages are 4 bytes per slot, plus their headers and the pool slack.
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int slots = 1 << 16;
        AllocationRegion region = new AllocationRegion(BASE, 256L * slots);
        for (int i = 0; i < slots; i++) {
            long p = BASE + 256L * i;
            map.put(p, chunkAt(chunks, p));
        }
        // Plus the GiB block's directory (4 B per 64 KiB).
        assertThat(map.heapBytes()).isBetween(4L * slots + 65536, 5L * slots + 65536);
    }

    @Test
    void aLoneChunkStartNeedsNoPage() {
        // Large chunks: one start per 64 KiB piece costs its directory entry only.
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1L << 30);
        map.put(BASE, chunkAt(chunks, BASE));
        long empty = map.heapBytes();
        assertThat(empty).as("the GiB block's directory, 4 B per 64 KiB").isBetween(65536L, 65536L + 1024);
        for (int i = 1; i < 16; i++) {
            long p = BASE + (16L << 20) * i;
            map.put(p, chunkAt(chunks, p));
        }
        assertThat(map.heapBytes()).isEqualTo(empty);
        assertThat(map.get(BASE + 256)).as("same piece, no chunk start").isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        long second = BASE + 4096;
        int h = chunkAt(chunks, second);
        map.put(second, h);
        assertThat(map.heapBytes()).as("a second start in the piece takes a page").isGreaterThan(empty);
        assertThat(map.get(second)).isEqualTo(h);
        assertThat(map.get(BASE)).isZero();
    }

    @Test
    void emptyPagesAreReusedAndTrimmed() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1L << 30);
        long spread = 1L << 20; // two chunk starts per 1 MiB: a page each
        for (int i = 0; i < 64; i++) {
            long p = BASE + spread * i;
            map.put(p, chunkAt(chunks, p));
            map.put(p + 512, chunkAt(chunks, p + 512));
        }
        long full = map.heapBytes();
        for (int i = 0; i < 64; i++) {
            map.remove(BASE + spread * i);
            map.remove(BASE + spread * i + 512);
        }
        long emptied = map.heapBytes();
        assertThat(emptied).as("empty pages stay pooled").isGreaterThanOrEqualTo(full);
        for (int i = 0; i < 64; i++) {
            long p = BASE + spread * i + 256;
            map.put(p, chunkAt(chunks, p));
            map.put(p + 512, chunkAt(chunks, p + 512));
        }
        assertThat(map.heapBytes()).as("pooled pages reused").isEqualTo(emptied);
        for (int i = 0; i < 64; i++) {
            map.remove(BASE + spread * i + 256);
            map.remove(BASE + spread * i + 768);
        }
        map.trimPool();
        assertThat(map.heapBytes()).isLessThan(full - 64 * 1024);
    }

    /** The block table's home entry of an address, as AddressHandleMap computes it. */
    private static int home(long address, int capacity) {
        return (int) ((((address >>> 30) + 1) * 0x9E3779B97F4A7C15L) >>> (64 - Integer.numberOfTrailingZeros(capacity)));
    }

    @Test
    void blocksWhoseHomesCollideAcrossTheTablesEndAreAllFound() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int capacity = map.capacity();
        // Three GiB blocks whose home is the last entry: they fill it and wrap to entries 0, 1.
        List<Long> starts = new ArrayList<>();
        for (long block = 1; starts.size() < 3; block++) {
            long p = BASE + (block << 30);
            if (home(p, capacity) == capacity - 1) {
                starts.add(p);
            }
        }
        for (int round = 0; round < 2; round++) {
            Map<Long, Integer> handles = new HashMap<>();
            for (int j = 0; j < starts.size(); j++) {
                long p = starts.get(round == 0 ? j : starts.size() - 1 - j);
                int h = chunkAt(chunks, p);
                map.put(p, h);
                handles.put(p, h);
                int h2 = chunkAt(chunks, p + 512);
                map.put(p + 512, h2);
                handles.put(p + 512, h2);
            }
            assertThat(map.capacity()).as("no growth: the probe run stays as built").isEqualTo(capacity);
            assertThat(map.blockCount()).isEqualTo(3);
            for (Map.Entry<Long, Integer> e : handles.entrySet()) {
                assertThat(map.get(e.getKey())).as("round %d, 0x%x", round, e.getKey()).isEqualTo(e.getValue());
                assertThat(map.get(e.getKey() + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
            }
            // Empty the first block of the run and drop it: the two after it are rehashed.
            map.remove(starts.get(0));
            map.remove(starts.get(0) + 512);
            map.trimPool();
            assertThat(map.blockCount()).isEqualTo(2);
            assertThat(map.get(starts.get(0))).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
            for (Map.Entry<Long, Integer> e : handles.entrySet()) {
                if (e.getKey() - starts.get(0) >= 1024) {
                    assertThat(map.get(e.getKey())).as("round %d, 0x%x", round, e.getKey()).isEqualTo(e.getValue());
                }
            }
            for (long p : starts.subList(1, 3)) {
                map.remove(p);
                map.remove(p + 512);
            }
            map.trimPool();
            assertThat(map.blockCount()).isZero();
            assertThat(map.size()).isZero();
        }
    }

    @Test
    void theBlockTableGrowsAndKeepsEveryEntry() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int before = map.capacity();
        // 300 GiB blocks of address space, in two ranges far apart, one to three chunk starts
        // in each (inline and paged pieces).
        Map<Long, Integer> handles = new HashMap<>();
        for (int i = 0; i < 300; i++) {
            long p = BASE + ((long) (i % 2) << 44) + ((long) i << 30) + ((long) (i % 7) << 16);
            for (int j = 0; j <= i % 3; j++) {
                long q = p + 4096L * j;
                int h = chunkAt(chunks, q);
                map.put(q, h);
                handles.put(q, h);
            }
            assertThat(map.capacity()).as("at most a quarter full").isGreaterThanOrEqualTo(4 * map.blockCount());
        }
        assertThat(map.capacity()).isGreaterThan(before);
        assertThat(map.blockCount()).isEqualTo(300);
        assertThat(map.size()).isEqualTo(handles.size());
        for (Map.Entry<Long, Integer> e : handles.entrySet()) {
            assertThat(map.get(e.getKey())).isEqualTo(e.getValue());
            assertThat(map.get(e.getKey() + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
            assertThat(map.get(e.getKey() + (1L << 36))).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        }
        for (long p : handles.keySet()) {
            map.remove(p);
        }
        assertThat(map.size()).isZero();
        map.trimPool();
        assertThat(map.blockCount()).isZero();
    }

    @Test
    void addressesOutsideEveryChunkHaveNoHandle() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        assertThat(map.get(0)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(-1)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        int h = chunkAt(chunks, BASE);
        map.put(BASE, h);
        assertThat(map.get(BASE | 0xFFFF)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(BASE + 0x10000)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(BASE - 0x10000)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(BASE)).isEqualTo(h);
    }

    private static final long GIB = 1L << 30;
    private static final long PIECE = 1L << 16;

    private static void failMidGrowth() {
        AddressHandleMap.midGrowth = () -> {
            throw new OutOfMemoryError("injected");
        };
    }

    @Test
    void aRebuildThatFailsLeavesTheMapAsItWas() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int[] h = new int[5];
        for (int b = 0; b < 5; b++) {
            h[b] = chunkAt(chunks, BASE + b * GIB);
        }
        for (int b = 0; b < 4; b++) {
            map.put(BASE + b * GIB, h[b]);
        }
        // A fifth block fills the block table past a quarter: it is rebuilt twice as large.
        failMidGrowth();
        try {
            assertThatThrownBy(() -> map.put(BASE + 4 * GIB, h[4])).isInstanceOf(OutOfMemoryError.class);
        } finally {
            AddressHandleMap.midGrowth = null;
        }
        for (int b = 0; b < 4; b++) {
            assertThat(map.get(BASE + b * GIB)).isEqualTo(h[b]);
        }
        assertThat(map.get(BASE + 4 * GIB)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.size()).isEqualTo(4);
        map.put(BASE + 4 * GIB, h[4]);
        for (int b = 0; b < 5; b++) {
            assertThat(map.get(BASE + b * GIB)).isEqualTo(h[b]);
        }
    }

    @Test
    void aBlockWhoseDirectoryCannotBeMadeIsNotEntered() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int first = chunkAt(chunks, BASE);
        int second = chunkAt(chunks, BASE + GIB);
        map.put(BASE, first);
        failMidGrowth();
        try {
            assertThatThrownBy(() -> map.put(BASE + GIB, second)).isInstanceOf(OutOfMemoryError.class);
        } finally {
            AddressHandleMap.midGrowth = null;
        }
        assertThat(map.get(BASE + GIB)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        map.remove(BASE + GIB);
        assertThat(map.get(BASE)).isEqualTo(first);
        assertThat(map.size()).isEqualTo(1);
        map.put(BASE + GIB, second);
        assertThat(map.get(BASE + GIB)).isEqualTo(second);
    }

    @Test
    void aPoolRefillThatFailsLeavesItsArraysOfOneLength() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        // Two chunk starts in a 64 KiB piece take a page; the pool's arrays hold 16 pages, and
        // the 17th piece's page makes them grow.
        List<long[]> starts = new ArrayList<>();
        for (int k = 0; k < 40; k++) {
            for (long offset : new long[] {0, 256}) {
                long ptr = BASE + k * PIECE + offset;
                starts.add(new long[] {ptr, chunkAt(chunks, ptr)});
            }
        }
        for (int i = 0; i < 32; i++) {
            map.put(starts.get(i)[0], (int) starts.get(i)[1]);
        }
        map.put(starts.get(32)[0], (int) starts.get(32)[1]);
        failMidGrowth();
        try {
            assertThatThrownBy(() -> map.put(starts.get(33)[0], (int) starts.get(33)[1]))
                    .isInstanceOf(OutOfMemoryError.class);
        } finally {
            AddressHandleMap.midGrowth = null;
        }
        assertThat(map.get(starts.get(33)[0])).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.size()).isEqualTo(33);
        for (int i = 33; i < starts.size(); i++) {
            map.put(starts.get(i)[0], (int) starts.get(i)[1]);
        }
        for (long[] start : starts) {
            assertThat(map.get(start[0])).isEqualTo((int) start[1]);
        }
        assertThat(map.size()).isEqualTo(starts.size());
    }

    /** The next pages made throw, from the {@code nth} on (1: the first). */
    private static void failPagesFrom(int nth) {
        int[] made = {0};
        AddressHandleMap.beforePage = () -> {
            if (++made[0] >= nth) {
                throw new OutOfMemoryError("injected: page " + made[0]);
            }
        };
    }

    @Test
    void aPageThatCannotBeMadeLeavesItsIndexInThePool() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AddressHandleMap control = new AddressHandleMap(chunks);
        // Eight pieces with two starts each take the eight pages of the first refill. The first
        // piece emptied, its page goes to the pool; trimmed, its index is the pool's one free
        // index, without a page, to be made again when next taken.
        int[][] h = new int[9][2];
        for (int k = 0; k < 9; k++) {
            for (int i = 0; i < 2; i++) {
                h[k][i] = chunkAt(chunks, BASE + k * PIECE + i * 256);
            }
        }
        for (AddressHandleMap m : List.of(map, control)) {
            for (int k = 0; k < 8; k++) {
                m.put(BASE + k * PIECE, h[k][0]);
                m.put(BASE + k * PIECE + 256, h[k][1]);
            }
            m.remove(BASE);
            m.remove(BASE + 256);
            m.trimPool();
            m.put(BASE + 8 * PIECE, h[8][0]);
        }
        failPagesFrom(1);
        try {
            assertThatThrownBy(() -> map.put(BASE + 8 * PIECE + 256, h[8][1]))
                    .isInstanceOf(OutOfMemoryError.class);
        } finally {
            AddressHandleMap.beforePage = null;
        }
        assertThat(map.get(BASE + 8 * PIECE)).isEqualTo(h[8][0]);
        assertThat(map.get(BASE + 8 * PIECE + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.size()).isEqualTo(15);

        map.put(BASE + 8 * PIECE + 256, h[8][1]);
        control.put(BASE + 8 * PIECE + 256, h[8][1]);
        for (int k = 1; k < 9; k++) {
            for (int i = 0; i < 2; i++) {
                assertThat(map.get(BASE + k * PIECE + i * 256)).isEqualTo(h[k][i]);
            }
        }
        assertThat(map.heapBytes()).as("the pool's free index taken again: one page made, not a new batch")
                .isEqualTo(control.heapBytes());
    }

    @Test
    void aPoolRefillThatFailsPartWayCountsThePagesItMade() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        int a = chunkAt(chunks, BASE);
        int b = chunkAt(chunks, BASE + 256);
        map.put(BASE, a);
        long noPage = map.heapBytes();
        // The second start of the piece needs a page: the pool is refilled, and its third page
        // cannot be made.
        failPagesFrom(3);
        try {
            assertThatThrownBy(() -> map.put(BASE + 256, b)).isInstanceOf(OutOfMemoryError.class);
        } finally {
            AddressHandleMap.beforePage = null;
        }
        assertThat(map.get(BASE + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.heapBytes()).as("the two pages made are held").isGreaterThan(noPage);
        map.trimPool();
        assertThat(map.heapBytes()).as("every pooled page let go, none counted twice or missed")
                .isEqualTo(noPage);
        map.put(BASE + 256, b);
        assertThat(map.get(BASE)).isEqualTo(a);
        assertThat(map.get(BASE + 256)).isEqualTo(b);
        map.remove(BASE);
        map.remove(BASE + 256);
        map.trimPool();
        assertThat(map.size()).isZero();
    }
}
