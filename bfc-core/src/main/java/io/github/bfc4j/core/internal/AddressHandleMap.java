/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * Maps the start address of a live chunk to its handle (of every live chunk, but for a split's
 * free rest never allocated while the allocator records such starts lazily): upstream's
 * {@code AllocationRegion::handles_} (one handle per 256-byte slot of a region), made sparse
 * and keyed by absolute address, so that no region is searched.
 *
 * <pre>
 *  address = [ block: bits 63..30 | piece: bits 29..16 | slot: bits 15..8 | bits 7..0 ]
 *
 *  blocks (open addressing on address &gt;&gt;&gt; 30)
 *  [ - | block b | - | - ]
 *           |
 *           v  directory of block b (one int per 64 KiB piece)   pages (256 int slots), pooled
 *  [ 0 | h+1 | ~0 | 0 | ~1 | 0 | ... ]
 *         |     |         `---------------&gt;  page 1: [ h+1 0 0 ... 0   ]  counts[1] = 1
 *         |     `-------------------------&gt;  page 0: [ 0 0 h+1 ... h+1 ]  counts[0] = 2
 *         `- one chunk start in the piece: its handle, inline (no page)
 * </pre>
 *
 * <p>Upstream keeps an 8-byte handle for every 256-byte slot of every region: 32 MiB of host
 * memory per GiB of region, zero-filled when the region is added (1.7 s for one 80 GiB
 * region), and finds the region first. Here a slot is a 4-byte {@code int} (handle + 1, 0 for
 * none), and slots exist only in <em>pages</em> of 256 slots (one 64 KiB piece of the address
 * space, 1 KiB of heap) where at least two chunks start; a piece where one chunk starts keeps
 * its handle inline in its directory. A directory covers one GiB <em>block</em> of the
 * address space (16,384 entries, 64 KiB of heap), is created when the first chunk starts in
 * its block and dropped by {@link #trimPool()} once empty; the blocks are found through a
 * small open-addressing table keyed by {@code address >>> 30} (linear probing, at most a
 * quarter full, Fibonacci hashing: a few entries that stay in the L1 cache and one probe as a
 * rule), whatever the number of regions. So:
 *
 * <ul>
 *   <li>the worst case, every 256-byte slot a chunk start, costs 16 MiB of pages plus the
 *       directory (64 KiB) per GiB (no case costs more per GiB), against upstream's 32 MiB;
 *       a small region costs the directory of each GiB block it touches (at most two);
 *   <li>chunks of 64 KiB or more cost their directory only, and never a page;
 *   <li>the lookup: the block (hash, one probe), its directory, the page's slot; an address
 *       outside every region has no block or an empty entry. A slot is the address's
 *       absolute slot ({@code (address >>> 8) & 255}): chunk starts at least 256 bytes apart
 *       never share one. While every chunk start is 256-byte aligned (unless a sub-allocator
 *       handed out an odd-sized block or an unaligned region) a page's slot answers alone, as
 *       upstream's slot does; otherwise, and for an inline handle (which does not say which
 *       slot of its piece it is in), the handle is confirmed against the chunk's address
 *       ({@code ChunkTable.ptr}).
 * </ul>
 *
 * <p>A page is taken from a pool when a second chunk start arrives in its piece and goes back
 * to the pool when its last one leaves (a page down to one start stays a page: finding that
 * start would mean scanning it), so the steady state creates nothing; {@link #trimPool()} lets
 * the pooled pages and the empty directories go (on the slow path, when a region is given
 * back).
 *
 * <p>Measured against the open-addressing hash of addresses of the first versions (24-48 bytes
 * per chunk, so that a region cut into 256-byte chunks cost 96-192 MiB per GiB), against a
 * directory per region (found by a search of the regions: slower with many regions reached in
 * random order) and against one open-addressing table of all pieces (slower replays):
 * docs/performance.md, "Java heap held by the allocator's metadata" ({@code MetadataFootprint})
 * and "The lookup, before and after" ({@code AddressLookup}). Not thread-safe.
 */
public final class AddressHandleMap {
    /**
     * Runs half-way through a growth (after its first new array is made): a test's way to fail
     * there (an {@link OutOfMemoryError}). Null but in tests.
     */
    static volatile Runnable midGrowth;

    /**
     * Runs before a page is made: a test's way to fail there (an {@link OutOfMemoryError}). Null
     * but in tests.
     */
    static volatile Runnable beforePage;

    /** Bytes per slot: upstream's {@code kMinAllocationSize}. */
    private static final int SLOT_BYTES = 256;
    private static final int SLOT_SHIFT = 8;
    /** log2 of the slots per page: 256 slots, one 64 KiB piece of the address space per page. */
    private static final int PAGE_BITS = 8;
    /** log2 of the bytes of address space per directory entry (and page). */
    private static final int PIECE_SHIFT = SLOT_SHIFT + PAGE_BITS;
    /** log2 of the bytes of address space per directory: 1 GiB. */
    private static final int BLOCK_SHIFT = 30;
    private static final int DIR_ENTRIES = 1 << (BLOCK_SHIFT - PIECE_SHIFT);
    private static final int DIR_MASK = DIR_ENTRIES - 1;
    private static final int PAGE_SLOTS = 1 << PAGE_BITS;
    private static final int PAGE_MASK = PAGE_SLOTS - 1;
    private static final long PAGE_HEAP_BYTES = 16 + 4L * PAGE_SLOTS;
    private static final long DIR_HEAP_BYTES = 16 + 4L * DIR_ENTRIES;
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    /** Entries of an empty block table (a power of two). */
    private static final int MIN_CAPACITY = 16;

    private final ChunkTable chunks;

    /**
     * The open-addressing table of blocks (1 GiB of address space each, where a chunk starts):
     * {@code keys[i]} is {@code (address >>> 30) + 1} (never 0; 0 for an empty entry),
     * {@code dirs[i]} its directory and {@code used[i]} the directory's non-zero entries.
     * Linear probing, at most a quarter full (a few entries: it stays in the L1 cache).
     */
    private long[] keys;
    private int[][] dirs;
    private int[] used;
    /** Entries minus one (a power of two minus one). */
    private int mask;
    /** 64 - log2(entries): Fibonacci hashing keeps the top bits. */
    private int shift;
    /** Blocks in the table. */
    private int blocks;

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

    /**
     * Replaces the block table by an empty one of {@code capacity} entries. Every new array is
     * made before any is replaced: an {@link OutOfMemoryError} leaves the table as it was.
     */
    private void allocate(int capacity) {
        final long[] newKeys = new long[capacity];
        midGrowth();
        final int[][] newDirs = new int[capacity][];
        final int[] newUsed = new int[capacity];
        keys = newKeys;
        dirs = newDirs;
        used = newUsed;
        mask = capacity - 1;
        shift = 64 - Integer.numberOfTrailingZeros(capacity);
        blocks = 0;
    }

    private int home(long key) {
        return (int) ((key * GOLDEN) >>> shift);
    }

    private static int slotOf(long address) {
        return (int) (address >>> SLOT_SHIFT) & PAGE_MASK;
    }

    private static int pieceOf(long address) {
        return (int) (address >>> PIECE_SHIFT) & DIR_MASK;
    }

    private static void midGrowth() {
        final Runnable hook = midGrowth;
        if (hook != null) {
            hook.run();
        }
    }

    /** @return the block table's entry of {@code address}'s block, or -1 */
    private int find(long address) {
        final long key = (address >>> BLOCK_SHIFT) + 1;
        final long[] k = keys;
        for (int i = home(key); ; i = (i + 1) & mask) {
            final long ki = k[i];
            if (ki == key) {
                return i;
            }
            if (ki == 0) {
                return -1;
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
        final int b = find(address);
        if (b < 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        final int v = dirs[b][pieceOf(address)];
        if (v > 0) {
            return chunks.ptr[v - 1] == address ? v - 1 : ChunkTable.INVALID_CHUNK_HANDLE;
        }
        if (v == 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
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
        int b = find(address);
        if (b < 0) {
            b = addBlock(address);
        }
        final int[] dir = dirs[b];
        final int d = pieceOf(address);
        final int v = dir[d];
        if (v == 0) {
            dir[d] = h + 1;
            used[b]++;
            noteStart(address);
            return;
        }
        final int slot = slotOf(address);
        if (v > 0) {
            final long single = chunks.ptr[v - 1];
            if (single == address) {
                dir[d] = h + 1;
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
            dir[d] = ~index;
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

    /**
     * Makes room for {@link #put put(address, h)}: afterwards that put creates nothing and so
     * cannot fail, if no other put or remove comes between. For a caller that must fail before
     * it changes anything (a split, a new region). May enter an empty directory or take a page
     * into the pool: neither holds a chunk start, so the map's answers are the same.
     *
     * @param address the start of a chunk about to be recorded
     * @throws IllegalStateException if another chunk starts less than 256 bytes away, in the
     *     same 256-byte slot, as {@link #put} would; nothing is changed then
     * @throws OutOfMemoryError if a directory or page cannot be made; the answers are unchanged
     */
    public void reserve(long address) {
        final int b = find(address);
        if (b < 0) {
            addBlock(address);
            return;
        }
        final int v = dirs[b][pieceOf(address)];
        if (v == 0) {
            return;
        }
        final int slot = slotOf(address);
        if (v > 0) {
            final long single = chunks.ptr[v - 1];
            if (single == address) {
                return;
            }
            if (slotOf(single) == slot) {
                throw sharedSlot(address, single);
            }
            preparePage();
            return;
        }
        final int old = store[~v][slot];
        if (old != 0 && chunks.ptr[old - 1] != address) {
            throw sharedSlot(address, chunks.ptr[old - 1]);
        }
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
        final int b = find(address);
        if (b < 0) {
            return;
        }
        final int[] dir = dirs[b];
        final int d = pieceOf(address);
        final int v = dir[d];
        if (v > 0) {
            if (chunks.ptr[v - 1] == address) {
                dir[d] = 0;
                used[b]--;
                size--;
            }
            return;
        }
        if (v == 0) {
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
            dir[d] = 0;
            used[b]--;
        }
    }

    /**
     * Adds the block of {@code address} with an empty directory (slow path: the first chunk
     * start in a GiB of address space, when a region is added there). The directory is made
     * before the block is entered: an {@link OutOfMemoryError} leaves no block without one.
     *
     * @return its entry
     */
    private int addBlock(long address) {
        if ((blocks + 1) * 4 > mask + 1) {
            rebuild(2 * (mask + 1), false);
        }
        midGrowth();
        final int[] dir = new int[DIR_ENTRIES];
        final long key = (address >>> BLOCK_SHIFT) + 1;
        final int i = emptyEntry(key);
        keys[i] = key;
        dirs[i] = dir;
        blocks++;
        return i;
    }

    /** @return the first empty entry of the block table on {@code key}'s probe sequence */
    private int emptyEntry(long key) {
        int i = home(key);
        while (keys[i] != 0) {
            i = (i + 1) & mask;
        }
        return i;
    }

    /** Rehashes the block table into {@code capacity} entries, dropping empty blocks if asked. */
    private void rebuild(int capacity, boolean dropEmpty) {
        final long[] oldKeys = keys;
        final int[][] oldDirs = dirs;
        final int[] oldUsed = used;
        allocate(capacity);
        for (int j = 0; j < oldKeys.length; j++) {
            if (oldKeys[j] != 0 && !(dropEmpty && oldUsed[j] == 0)) {
                final int i = emptyEntry(oldKeys[j]);
                keys[i] = oldKeys[j];
                dirs[i] = oldDirs[j];
                used[i] = oldUsed[j];
                blocks++;
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

    /** @return the number of GiB blocks of address space with a directory */
    int blockCount() {
        return blocks;
    }

    /** @return the block table's capacity in entries */
    int capacity() {
        return mask + 1;
    }

    /**
     * Removes every entry, lets the directories and pages go (the regions are forgotten too).
     * The entries are dropped in place first, and the arrays are replaced by small ones after:
     * an {@link OutOfMemoryError} making those leaves the map empty all the same.
     *
     * @throws OutOfMemoryError if the small arrays cannot be made; the map is empty then
     */
    public void clear() {
        Arrays.fill(keys, 0);
        Arrays.fill(dirs, null);
        Arrays.fill(used, 0);
        blocks = 0;
        Arrays.fill(store, null);
        storeCount = 0;
        freeCount = 0;
        pagesHeld = 0;
        size = 0;
        aligned = true;
        allocate(MIN_CAPACITY);
        final int[][] newStore = new int[16][];
        final int[] newCounts = new int[16];
        final int[] newFree = new int[16];
        store = newStore;
        counts = newCounts;
        free = newFree;
    }

    /**
     * Lets the pooled empty pages and the empty directories go (slow path: a region was given
     * back).
     */
    public void trimPool() {
        for (int j = 0; j < freeCount; j++) {
            if (store[free[j]] != null) {
                store[free[j]] = null;
                pagesHeld--;
            }
        }
        rebuild(mask + 1, true);
    }

    /**
     * @return bytes of heap held by the directories, the block table, the pages (pooled ones
     *     included) and their index
     */
    public long heapBytes() {
        return blocks * DIR_HEAP_BYTES + 16L * keys.length + pagesHeld * PAGE_HEAP_BYTES
                + 4L * (store.length + counts.length + free.length);
    }

    /**
     * @return the index of an empty page in {@link #store}
     * @throws OutOfMemoryError if a page must be made and cannot; the pool is whole then (no
     *     index lost, every page made counted)
     */
    private int takePage() {
        preparePage();
        return free[--freeCount];
    }

    /**
     * Makes sure that the pool's next page exists: refills an empty pool, makes the page of a
     * trimmed index. The page is made before its index leaves the free stack, so that an
     * {@link OutOfMemoryError} here leaves the index free (to be made again next time).
     */
    private void preparePage() {
        if (freeCount == 0) {
            refillPool();
        }
        final int index = free[freeCount - 1];
        if (store[index] == null) {
            store[index] = newPage();
            pagesHeld++;
        }
    }

    private static int[] newPage() {
        final Runnable hook = beforePage;
        if (hook != null) {
            hook.run();
        }
        return new int[PAGE_SLOTS];
    }

    /**
     * Creates a batch of pages, an eighth of those held (at least 8): like an array's growth
     * slack, so that the steady state, whose page count wanders a little above its earlier
     * peaks now and then, seldom creates one (one page at a time, HotPathGarbageTest saw two
     * pages created after its warm-up).
     *
     * @throws OutOfMemoryError if the index arrays or a page cannot be made; the pages made
     *     before it are in the pool, and counted
     */
    private void refillPool() {
        final int n = Math.max(8, pagesHeld >>> 3);
        if (storeCount + n > store.length) {
            // Every new array is made before any is replaced: an OutOfMemoryError leaves the
            // three of one length.
            final int capacity = Math.max(storeCount + n, store.length * 2);
            final int[][] newStore = Arrays.copyOf(store, capacity);
            midGrowth();
            final int[] newCounts = Arrays.copyOf(counts, capacity);
            final int[] newFree = Arrays.copyOf(free, capacity);
            store = newStore;
            counts = newCounts;
            free = newFree;
        }
        for (int j = 0; j < n; j++) {
            // Counted one by one: an OutOfMemoryError part-way leaves pagesHeld true.
            store[storeCount] = newPage();
            pagesHeld++;
            free[freeCount++] = storeCount++;
        }
    }
}
