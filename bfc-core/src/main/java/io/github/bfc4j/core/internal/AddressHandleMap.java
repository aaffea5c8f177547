/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * Maps the start address of every live chunk to its handle: upstream's
 * {@code AllocationRegion::handles_} (one handle per 256-byte slot of a region), made sparse
 * and shared by all regions.
 *
 * <pre>
 *  address = [ piece: bits 63..16 | slot: bits 15..8 | bits 7..0 ]
 *
 *  table (open addressing on the piece)     pages (256 int slots), pooled; counts[]
 *  [ piece a: h+1 | - | piece b: ~1 | piece c: ~0 | - ]
 *                          |             `------------&gt; page 0: [ 0 0 h+1 ... h+1 ]  counts[0] = 2
 *                          `--------------------------&gt; page 1: [ h+1 0 0 ... 0   ]  counts[1] = 1
 *   piece a: one chunk start in the piece, its handle inline (no page)
 * </pre>
 *
 * <p>Upstream keeps an 8-byte handle for every 256-byte slot of every region: 32 MiB of host
 * memory per GiB of region, zero-filled when the region is added (1.7 s for one 80 GiB
 * region). Here a slot is a 4-byte {@code int} (handle + 1, 0 for none), and slots exist only
 * in <em>pages</em> of 256 slots (one 64 KiB piece of the address space, 1 KiB of heap) where
 * at least two chunks start; a piece where one chunk starts keeps its handle inline in the
 * table. The table is one open-addressing hash table for all regions, keyed by the absolute
 * piece ({@code address >>> 16}; linear probing, backward-shift deletion, at most half full,
 * Fibonacci hashing), 16 bytes per entry, so at most 32 bytes per 64 KiB piece where a chunk
 * starts: 512 KiB per GiB. So:
 *
 * <ul>
 *   <li>the worst case, every 256-byte slot a chunk start, costs 16 MiB of pages plus the
 *       table per GiB (no case costs more per GiB), against upstream's 32 MiB;
 *   <li>chunks of 64 KiB or more cost their table entries only, and never a page;
 *   <li>the lookup finds no region: it hashes the piece, probes (one entry, usually) and
 *       indexes the page, whatever the number of regions; an address outside every region
 *       has no entry. A slot is the address's absolute slot ({@code (address >>> 8) & 255}):
 *       chunk starts at least 256 bytes apart never share one. While every chunk start is
 *       256-byte aligned (unless a sub-allocator handed out an odd-sized block or an unaligned
 *       region) a page's slot answers alone, as upstream's slot does; otherwise, and for an
 *       inline handle (which does not say which slot of its piece it is in), the handle is
 *       confirmed against the chunk's address ({@code ChunkTable.ptr}).
 * </ul>
 *
 * <p>A page is taken from a pool when a second chunk start arrives in its piece and goes back
 * to the pool when its last one leaves (a page down to one start stays a page: finding that
 * start would mean scanning it), so the steady state creates nothing; the table grows (doubles)
 * with the most pieces ever used and does not shrink. {@link #trimPool()} lets the pooled pages
 * go (on the slow path, when a region is given back).
 *
 * <p>Measured against the open-addressing hash of addresses of the first versions (24-48 bytes
 * per chunk, so that a region cut into 256-byte chunks cost 96-192 MiB per GiB) and the
 * per-region directories it replaces: docs/performance.md, "Java heap held by the allocator's
 * metadata" ({@code MetadataFootprint}) and "The lookup, before and after"
 * ({@code AddressLookup}). Not thread-safe.
 */
public final class AddressHandleMap {
    /** Bytes per slot: upstream's {@code kMinAllocationSize}. */
    static final int SLOT_BYTES = 256;
    private static final int SLOT_SHIFT = 8;
    /** log2 of the slots per page: 256 slots, one 64 KiB piece of the address space per page. */
    private static final int PAGE_BITS = 8;
    /** log2 of the bytes of address space per table entry (and page). */
    static final int PIECE_SHIFT = SLOT_SHIFT + PAGE_BITS;
    /** The low bits of an address below its piece: a key is {@code address | PIECE_LOW}. */
    private static final long PIECE_LOW = (1L << PIECE_SHIFT) - 1;
    private static final int PAGE_SLOTS = 1 << PAGE_BITS;
    private static final int PAGE_MASK = PAGE_SLOTS - 1;
    private static final long PAGE_HEAP_BYTES = 16 + 4L * PAGE_SLOTS;
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    /** Entries of an empty table (a power of two). */
    private static final int MIN_CAPACITY = 64;

    private final ChunkTable chunks;

    /**
     * The open-addressing table of pieces, two longs per entry so that a probe reads one cache
     * line: {@code table[2i]} the key (the piece's last address, {@code address | PIECE_LOW},
     * never 0; 0 for an empty entry), {@code table[2i + 1]} the value ({@code h + 1} inline or
     * {@code ~index} of a page). Linear probing, backward-shift deletion, at most half full.
     */
    private long[] table;
    /** Entries minus one (a power of two minus one). */
    private int mask;
    /** 64 - log2(entries): Fibonacci hashing keeps the top bits. */
    private int shift;
    /** Pieces in the table. */
    private int pieces;

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
     * Whether every chunk start recorded since the last {@link #clear()} was 256-byte aligned:
     * then an address that is not cannot be a chunk start, and a page's slot answers alone (no
     * check against the chunk's address). False from the first start that is not (a region
     * that does not start on 256 bytes, or one extended by a block of an odd size).
     */
    private boolean aligned = true;

    /**
     * @param chunks the table whose {@code ptr} confirms a handle
     */
    public AddressHandleMap(ChunkTable chunks) {
        this.chunks = chunks;
        allocate(MIN_CAPACITY);
    }

    private void allocate(int capacity) {
        table = new long[2 * capacity];
        mask = capacity - 1;
        shift = 64 - Integer.numberOfTrailingZeros(capacity);
        pieces = 0;
    }

    private int home(long key) {
        return (int) (((key >>> PIECE_SHIFT) * GOLDEN) >>> shift);
    }

    private static int slotOf(long address) {
        return (int) (address >>> SLOT_SHIFT) & PAGE_MASK;
    }

    /** @return the entry of {@code key}, or the empty entry where it would go, as {@code ~i} */
    private int find(long key) {
        final long[] t = table;
        final int m = mask;
        for (int i = home(key); ; i = (i + 1) & m) {
            final long k = t[2 * i];
            if (k == key) {
                return i;
            }
            if (k == 0) {
                return ~i;
            }
        }
    }

    /**
     * The handle of the chunk starting at {@code address}.
     *
     * @param address any address
     * @return the handle, or {@link ChunkTable#INVALID_CHUNK_HANDLE} if no chunk starts there
     */
    public int get(long address) {
        final long key = address | PIECE_LOW;
        final long[] t = table;
        final int m = mask;
        int v;
        for (int i = home(key); ; i = (i + 1) & m) {
            final long k = t[2 * i];
            if (k == key) {
                v = (int) t[2 * i + 1];
                break;
            }
            if (k == 0) {
                return ChunkTable.INVALID_CHUNK_HANDLE;
            }
        }
        if (v > 0) {
            return chunks.ptr[v - 1] == address ? v - 1 : ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final boolean exact = aligned;
        if (exact && (address & (SLOT_BYTES - 1)) != 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final int h = store[~v][slotOf(address)] - 1;
        if (h < 0 || (!exact && chunks.ptr[h] != address)) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        return h;
    }

    /**
     * Records the handle of the chunk starting at {@code address}, replacing the chunk that
     * started there before, if any.
     *
     * @param address {@code chunks.ptr(h)} (BfcAllocator.checkInvariants() catches a caller
     *     that breaks this)
     * @param h the handle
     * @throws IllegalStateException if another chunk starts less than 256 bytes away, in the
     *     same 256-byte slot (docs/deviations.md #11); nothing is changed then
     */
    public void put(long address, int h) {
        final long key = address | PIECE_LOW;
        final int i = find(key);
        if (i < 0) {
            table[2 * ~i] = key;
            table[2 * ~i + 1] = h + 1;
            noteStart(address);
            if (++pieces * 2 > mask + 1) {
                rehash(2 * (mask + 1));
            }
            return;
        }
        final int v = (int) table[2 * i + 1];
        final int slot = slotOf(address);
        if (v > 0) {
            final long single = chunks.ptr[v - 1];
            if (single == address) {
                table[2 * i + 1] = h + 1;
                return;
            }
            final int singleSlot = slotOf(single);
            if (singleSlot == slot) {
                throw sharedSlot(address, single);
            }
            // A second chunk start in this piece: it gets a page.
            final int index = takePage();
            final int[] page = store[index];
            page[singleSlot] = v;
            page[slot] = h + 1;
            counts[index] = 2;
            table[2 * i + 1] = ~index;
            noteStart(address);
            return;
        }
        final int[] page = store[~v];
        final int old = page[slot];
        if (old != 0 && chunks.ptr[old - 1] != address) {
            throw sharedSlot(address, chunks.ptr[old - 1]);
        }
        if (old == 0) {
            counts[~v]++;
            noteStart(address);
        }
        page[slot] = h + 1;
    }

    private void noteStart(long address) {
        size++;
        if ((address & (SLOT_BYTES - 1)) != 0) {
            aligned = false;
        }
    }

    /**
     * Forgets the chunk starting at {@code address}, if any.
     *
     * @param address any address
     */
    public void remove(long address) {
        final int i = find(address | PIECE_LOW);
        if (i < 0) {
            return;
        }
        final int v = (int) table[2 * i + 1];
        if (v > 0) {
            if (chunks.ptr[v - 1] == address) {
                delete(i);
                size--;
            }
            return;
        }
        final int[] page = store[~v];
        final int slot = slotOf(address);
        final int old = page[slot];
        if (old == 0 || chunks.ptr[old - 1] != address) {
            return;
        }
        page[slot] = 0;
        size--;
        if (--counts[~v] == 0) {
            free[freeCount++] = ~v;
            delete(i);
        }
    }

    /** Empties entry {@code i}: backward-shift deletion (later entries of its run move up). */
    private void delete(int i) {
        final long[] t = table;
        final int m = mask;
        int hole = i;
        for (int j = (hole + 1) & m; ; j = (j + 1) & m) {
            final long k = t[2 * j];
            if (k == 0) {
                break;
            }
            final int home = home(k);
            // The entry at j may move to the hole unless its home is in (hole, j], cyclically.
            if (((j - home) & m) >= ((j - hole) & m)) {
                t[2 * hole] = k;
                t[2 * hole + 1] = t[2 * j + 1];
                hole = j;
            }
        }
        t[2 * hole] = 0;
        t[2 * hole + 1] = 0;
        pieces--;
    }

    private void rehash(int capacity) {
        final long[] old = table;
        allocate(capacity);
        for (int j = 0; j < old.length; j += 2) {
            if (old[j] != 0) {
                final int i = ~find(old[j]);
                table[2 * i] = old[j];
                table[2 * i + 1] = old[j + 1];
                pieces++;
            }
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

    /** @return the number of 64 KiB pieces where a chunk starts (the table's entries) */
    int pieceCount() {
        return pieces;
    }

    /** @return the table's capacity in entries */
    int capacity() {
        return mask + 1;
    }

    /** Removes every entry and lets the pages go (the regions are forgotten too). */
    public void clear() {
        allocate(MIN_CAPACITY);
        store = new int[16][];
        counts = new int[16];
        storeCount = 0;
        free = new int[16];
        freeCount = 0;
        pagesHeld = 0;
        size = 0;
        aligned = true;
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

    /** @return bytes of heap held by the table, the pages (pooled ones included) and their index */
    public long heapBytes() {
        return 16 + 8L * table.length + pagesHeld * PAGE_HEAP_BYTES
                + 4L * (store.length + counts.length + free.length);
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
