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
        // Four regions of 4 MiB, one not 256-byte aligned; chunk starts 256-byte multiples
        // from the region's start, dense enough that pieces go from inline to paged, pages fill,
        // empty and come back from the pool.
        AllocationRegion[] regions = new AllocationRegion[4];
        for (int r = 0; r < regions.length; r++) {
            regions[r] = new AllocationRegion(BASE + ((long) r << 32) + (r == 3 ? 0x40 : 0), 1L << 22);
        }
        Map<Long, Integer> shadow = new HashMap<>();
        Map<Long, AllocationRegion> regionOf = new HashMap<>();
        List<Long> keys = new ArrayList<>();
        for (int i = 0; i < 200_000; i++) {
            int op = rnd.nextInt(10);
            if (op < 5 || keys.isEmpty()) {
                AllocationRegion region = regions[rnd.nextInt(regions.length)];
                long key = region.ptr() + ((long) rnd.nextInt(1 << 14) << 8);
                Integer old = shadow.get(key);
                int h = chunkAt(chunks, key);
                map.put(region, key, h);
                shadow.put(key, h);
                regionOf.put(key, region);
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
                map.remove(regionOf.get(key), key);
                chunks.deallocateChunk(shadow.remove(key));
            } else {
                long key = keys.get(rnd.nextInt(keys.size()));
                AllocationRegion region = regionOf.get(key);
                assertThat(map.get(region, key)).as("seed %d, key 0x%x", seed, key).isEqualTo(shadow.get(key));
                if (key + 256 < region.endPtr()) {
                    assertThat(map.get(region, key + 256)).as("seed %d", seed)
                            .isEqualTo(shadow.getOrDefault(key + 256, ChunkTable.INVALID_CHUNK_HANDLE));
                }
                // Same slot, not a chunk start: no handle.
                assertThat(map.get(region, key + 16)).as("seed %d", seed).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
                if (key - 16 >= region.ptr()) {
                    assertThat(map.get(region, key - 16)).as("seed %d", seed).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
                }
            }
            if (i % 50_000 == 0) {
                for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
                    assertThat(map.get(regionOf.get(e.getKey()), e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
                }
            }
            assertThat(map.size()).isEqualTo(shadow.size());
        }
        for (Map.Entry<Long, Integer> e : shadow.entrySet()) {
            assertThat(map.get(regionOf.get(e.getKey()), e.getKey())).as("seed %d", seed).isEqualTo(e.getValue());
        }
        for (long key : keys) {
            map.remove(regionOf.get(key), key);
        }
        assertThat(map.size()).isZero();
        for (AllocationRegion region : regions) {
            assertThat(region.dir).as("every piece empty again").containsOnly(0);
        }
    }

    @Test
    void removeOfAnAddressThatIsNotAChunkStartChangesNothing() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1 << 20);
        int h = chunkAt(chunks, BASE + 0x1000);
        map.put(region, BASE + 0x1000, h);
        map.remove(region, BASE + 0x1010);
        map.remove(region, BASE + 0x1100);
        map.remove(region, BASE + 0x20000);
        assertThat(map.size()).isOne();
        assertThat(map.get(region, BASE + 0x1000)).isEqualTo(h);
        assertThat(map.get(region, BASE + 0x1100)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
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
        assertThat(region.exactSlots).isFalse();
        int a = chunkAt(chunks, odd - 356);
        int b = chunkAt(chunks, odd);
        int c = chunkAt(chunks, odd + 256);
        map.put(region, odd - 356, a);
        map.put(region, odd, b);
        map.put(region, odd + 256, c);
        assertThat(map.get(region, odd - 356)).isEqualTo(a);
        assertThat(map.get(region, odd)).isEqualTo(b);
        assertThat(map.get(region, odd + 256)).isEqualTo(c);
        assertThat(map.get(region, odd - 100 + 256)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        assertThat(map.get(region, odd + 1)).isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        // A chunk of 100 bytes before odd (a split with a tiny fragmentation threshold) would
        // share odd's slot: refused, nothing changed.
        int tiny = chunkAt(chunks, odd - 100);
        assertThatThrownBy(() -> map.put(region, odd - 100, tiny))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("share a 256-byte slot");
        assertThat(map.size()).isEqualTo(3);
        assertThat(map.get(region, odd)).isEqualTo(b);
    }

    @Test
    void clearForgetsEverything() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1 << 20);
        for (int i = 1; i <= 100; i++) {
            map.put(region, BASE + i * 256L, chunkAt(chunks, BASE + i * 256L));
        }
        map.clear();
        assertThat(map.size()).isZero();
        assertThat(map.heapBytes()).isLessThan(1024);
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
            map.put(region, p, chunkAt(chunks, p));
        }
        assertThat(map.heapBytes() + region.dirHeapBytes()).isBetween(4L * slots, 5L * slots);
    }

    @Test
    void aLoneChunkStartNeedsNoPage() {
        // Large chunks: one start per 64 KiB piece costs its directory entry only.
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1L << 30);
        long empty = map.heapBytes();
        for (int i = 0; i < 16; i++) {
            long p = BASE + (16L << 20) * i;
            map.put(region, p, chunkAt(chunks, p));
        }
        assertThat(map.heapBytes()).isEqualTo(empty);
        assertThat(map.get(region, BASE + 256)).as("same piece, no chunk start").isEqualTo(ChunkTable.INVALID_CHUNK_HANDLE);
        long second = BASE + 4096;
        int h = chunkAt(chunks, second);
        map.put(region, second, h);
        assertThat(map.heapBytes()).as("a second start in the piece takes a page").isGreaterThan(empty);
        assertThat(map.get(region, second)).isEqualTo(h);
        assertThat(map.get(region, BASE)).isZero();
    }

    @Test
    void emptyPagesAreReusedAndTrimmed() {
        ChunkTable chunks = new ChunkTable(16);
        AddressHandleMap map = new AddressHandleMap(chunks);
        AllocationRegion region = new AllocationRegion(BASE, 1L << 30);
        long spread = 1L << 20; // two chunk starts per 1 MiB: a page each
        for (int i = 0; i < 64; i++) {
            long p = BASE + spread * i;
            map.put(region, p, chunkAt(chunks, p));
            map.put(region, p + 512, chunkAt(chunks, p + 512));
        }
        long full = map.heapBytes();
        for (int i = 0; i < 64; i++) {
            map.remove(region, BASE + spread * i);
            map.remove(region, BASE + spread * i + 512);
        }
        long emptied = map.heapBytes();
        assertThat(emptied).as("empty pages stay pooled").isGreaterThanOrEqualTo(full);
        for (int i = 0; i < 64; i++) {
            long p = BASE + spread * i + 256;
            map.put(region, p, chunkAt(chunks, p));
            map.put(region, p + 512, chunkAt(chunks, p + 512));
        }
        assertThat(map.heapBytes()).as("pooled pages reused").isEqualTo(emptied);
        for (int i = 0; i < 64; i++) {
            map.remove(region, BASE + spread * i + 256);
            map.remove(region, BASE + spread * i + 768);
        }
        map.trimPool();
        assertThat(map.heapBytes()).isLessThan(full - 64 * 1024);
    }
}
