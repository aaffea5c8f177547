/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * Maps the start address of every live chunk to its handle: upstream's
 * {@code AllocationRegion::handles_} (one handle per 256-byte slot of a region), made sparse.
 *
 * <pre>
 *  offset in the region = [ piece: bits 63..16 | slot: bits 15..8 | bits 7..0 ]
 *
 *  region.dir (one int per 64 KiB piece)        pages (256 int slots), pooled; counts[]
 *  [ 0 | h+1 | ~0 | 0 | ~1 | 0 | ... ]
 *         |     |         `---------------&gt;  page 1: [ h+1 0 0 ... 0   ]  counts[1] = 1
 *         |     `-------------------------&gt;  page 0: [ 0 0 h+1 ... h+1 ]  counts[0] = 2
 *         `- one chunk start in the piece: its handle, inline (no page)
 * </pre>
 *
 * <p>Upstream keeps an 8-byte handle for every 256-byte slot of every region: 32 MiB of host
 * memory per GiB of region, zero-filled when the region is added (1.7 s for one 80 GiB
 * region). Here a slot is a 4-byte {@code int} (handle + 1, 0 for none), and slots exist only
 * in <em>pages</em> of 256 slots (one 64 KiB piece of a region, 1 KiB of heap) where at least
 * two chunks start; a piece where one chunk starts keeps its handle inline in the region's
 * directory ({@link AllocationRegion#dir}, 4 bytes per 64 KiB: 64 KiB per GiB). So:
 *
 * <ul>
 *   <li>the worst case, every 256-byte slot a chunk start, costs 16 MiB of pages plus the
 *       directory per GiB of region (no case costs more per GiB), against upstream's 32 MiB;
 *   <li>a region of chunks of 64 KiB or more costs its directory only (64 KiB per GiB), and
 *       never a page;
 *   <li>the lookup is upstream's: find the region (the region found last, else a scan of up to
 *       eight regions' bounds, else a binary search), then index its directory and page; no
 *       hashing and no probing. For an
 *       address 256-byte aligned in its region (every chunk start is, unless a sub-allocator
 *       handed out an odd-sized block) a page's slot answers alone, as upstream's slot does.
 *       An inline handle is confirmed against the chunk's address ({@code ChunkTable.ptr}),
 *       since it does not say which slot of its piece it is in.
 * </ul>
 *
 * <p>A page is taken from a pool when a second chunk start arrives in its piece and goes back
 * to the pool when its last one leaves (a page down to one start stays a page: finding that
 * start would mean scanning it), so the steady state creates nothing; {@link #trimPool()} lets
 * the pooled pages go (on the slow path, when a region is given back).
 *
 * <p>Measured against the open-addressing hash of addresses it replaces (load at most 1/2,
 * 24-48 bytes per chunk, so that a region cut into 256-byte chunks cost 96-192 MiB per GiB):
 * docs/performance.md, "Java heap held by the allocator's metadata" ({@code MetadataFootprint}).
 * The lookup alone is as fast as the hash's in one region ({@code AddressLookup}), and slower
 * with many regions reached in random order (57 against 36 ns with 12), since it must find the
 * region first, as upstream's does; whole replays (12 JVMs each, with the bins' first-chunk
 * cache and RegionManager's region scan) are as fast as with the hash on big-random-1m and
 * infer-qwen, and 9% slower on tf-resnet-train (four regions). Not thread-safe.
 */
public final class AddressHandleMap {
    /** Bytes per slot: upstream's {@code kMinAllocationSize}. */
    static final int SLOT_BYTES = 256;
    private static final int SLOT_SHIFT = 8;
    /** log2 of the slots per page: 256 slots, one 64 KiB piece of a region per page. */
    private static final int PAGE_BITS = 8;
    /** log2 of the bytes of region per directory entry (and page). */
    static final int PIECE_SHIFT = SLOT_SHIFT + PAGE_BITS;
    private static final int PAGE_SLOTS = 1 << PAGE_BITS;
    private static final int PAGE_MASK = PAGE_SLOTS - 1;
    private static final long PAGE_HEAP_BYTES = 16 + 4L * PAGE_SLOTS;

    private final ChunkTable chunks;

    /** The pages by index; a free index keeps its empty page (the pool) unless trimmed. */
    private int[][] store = new int[16][];
    /**
     * Used slots per page, by index. Not in the page itself: a count at the page's end is
     * another cache line to miss on every put and remove (measured: docs/performance.md).
     */
    private int[] counts = new int[16];
    /** Indexes of store ever used. */
    private int storeCount;
    /** Free indexes of store, a stack. */
    private int[] free = new int[16];
    private int freeCount;
    /** Pages (int[]) held, in use or pooled. */
    private int pagesHeld;

    /** Chunk starts recorded. */
    private int size;

    /**
     * @param chunks the table whose {@code ptr} confirms an inline handle
     */
    public AddressHandleMap(ChunkTable chunks) {
        this.chunks = chunks;
    }

    private static int slotOf(long offset) {
        return (int) (offset >>> SLOT_SHIFT) & PAGE_MASK;
    }

    /**
     * The handle of the chunk starting at {@code address}.
     *
     * @param r the region holding {@code address}
     * @param address an address in {@code r}
     * @return the handle, or {@link ChunkTable#INVALID_CHUNK_HANDLE} if no chunk starts there
     */
    public int get(AllocationRegion r, long address) {
        final long offset = address - r.ptr();
        final int v = r.dir[(int) (offset >>> PIECE_SHIFT)];
        if (v > 0) {
            return chunks.ptr[v - 1] == address ? v - 1 : ChunkTable.INVALID_CHUNK_HANDLE;
        }
        if (v == 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final boolean exact = r.exactSlots;
        if (exact && (offset & (SLOT_BYTES - 1)) != 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final int h = store[~v][slotOf(offset)] - 1;
        if (h < 0 || (!exact && chunks.ptr[h] != address)) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        return h;
    }

    /**
     * Records the handle of the chunk starting at {@code address}, replacing the chunk that
     * started there before, if any.
     *
     * @param r the region holding {@code address}
     * @param address an address in {@code r}, 256-byte aligned in it: {@code chunks.ptr(h)}
     *     (BfcAllocator.checkInvariants() catches a caller that breaks this)
     * @param h the handle
     */
    public void put(AllocationRegion r, long address, int h) {
        final long offset = address - r.ptr();
        final int[] dir = r.dir;
        final int d = (int) (offset >>> PIECE_SHIFT);
        final int v = dir[d];
        if (v == 0) {
            dir[d] = h + 1;
            size++;
            return;
        }
        final int slot = slotOf(offset);
        if (v > 0) {
            final long single = chunks.ptr[v - 1];
            if (single == address) {
                dir[d] = h + 1;
                return;
            }
            final int singleSlot = slotOf(single - r.ptr());
            if (singleSlot == slot) {
                throw sharedSlot(address, single);
            }
            // A second chunk start in this piece: it gets a page.
            final int index = takePage();
            final int[] page = store[index];
            page[singleSlot] = v;
            page[slot] = h + 1;
            counts[index] = 2;
            dir[d] = ~index;
            size++;
            return;
        }
        final int[] page = store[~v];
        final int old = page[slot];
        if (old != 0 && chunks.ptr[old - 1] != address) {
            throw sharedSlot(address, chunks.ptr[old - 1]);
        }
        if (old == 0) {
            counts[~v]++;
            size++;
        }
        page[slot] = h + 1;
    }

    /**
     * Forgets the chunk starting at {@code address}, if any.
     *
     * @param r the region holding {@code address}
     * @param address an address in {@code r}
     */
    public void remove(AllocationRegion r, long address) {
        final long offset = address - r.ptr();
        final int[] dir = r.dir;
        final int d = (int) (offset >>> PIECE_SHIFT);
        final int v = dir[d];
        if (v > 0) {
            if (chunks.ptr[v - 1] == address) {
                dir[d] = 0;
                size--;
            }
            return;
        }
        if (v == 0) {
            return;
        }
        final int[] page = store[~v];
        final int slot = slotOf(offset);
        final int old = page[slot];
        if (old == 0 || chunks.ptr[old - 1] != address) {
            return;
        }
        page[slot] = 0;
        size--;
        if (--counts[~v] == 0) {
            free[freeCount++] = ~v;
            dir[d] = 0;
        }
    }

    /**
     * Two chunk starts less than 256 bytes apart: only possible in a region extended by a block
     * whose size is not a multiple of 256 bytes, split with a fragmentation threshold below 256
     * bytes. Upstream then overwrites its slot (the earlier chunk is lost to it); here the
     * split is refused. docs/deviations.md #11.
     */
    private static IllegalStateException sharedSlot(long address, long other) {
        return new IllegalStateException("chunk starts 0x" + Long.toHexString(address) + " and 0x"
                + Long.toHexString(other) + " share a 256-byte slot: a sub-allocator handed out a"
                + " block whose size is not a multiple of 256 bytes and a split left a chunk of"
                + " less than 256 bytes; use a sub-allocator that returns multiples of 256 bytes"
                + " or a fragmentation threshold of at least 256 bytes");
    }

    /** @return the number of chunk starts recorded */
    public int size() {
        return size;
    }

    /** Removes every entry and lets the pages go (the regions are forgotten too). */
    public void clear() {
        store = new int[16][];
        counts = new int[16];
        storeCount = 0;
        free = new int[16];
        freeCount = 0;
        pagesHeld = 0;
        size = 0;
    }

    /** Lets the pooled empty pages go (slow path: a region was given back). */
    public void trimPool() {
        for (int j = 0; j < freeCount; j++) {
            if (store[free[j]] != null) {
                store[free[j]] = null;
                pagesHeld--;
            }
        }
    }

    /** @return bytes of heap held by the pages (pooled ones included) and their index */
    public long heapBytes() {
        return pagesHeld * PAGE_HEAP_BYTES + 4L * (store.length + counts.length + free.length);
    }

    /** @return the index of an empty page in {@link #store} */
    private int takePage() {
        if (freeCount == 0) {
            refillPool();
        }
        final int index = free[--freeCount];
        if (store[index] == null) {
            store[index] = new int[PAGE_SLOTS];
            pagesHeld++;
        }
        return index;
    }

    /**
     * Creates a batch of pages, an eighth of those held (at least 8): like an array's growth
     * slack, so that the steady state, whose page count wanders a little above its earlier
     * peaks now and then, seldom creates one (one page at a time, HotPathGarbageTest saw two
     * pages created after its warm-up).
     */
    private void refillPool() {
        final int n = Math.max(8, pagesHeld >>> 3);
        if (storeCount + n > store.length) {
            int capacity = Math.max(storeCount + n, store.length * 2);
            store = Arrays.copyOf(store, capacity);
            counts = Arrays.copyOf(counts, capacity);
            free = Arrays.copyOf(free, capacity);
        }
        for (int j = 0; j < n; j++) {
            store[storeCount] = new int[PAGE_SLOTS];
            free[freeCount++] = storeCount++;
        }
        pagesHeld += n;
    }
}
