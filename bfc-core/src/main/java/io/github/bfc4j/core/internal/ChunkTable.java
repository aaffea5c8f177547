/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Chunk and its chunks_ vector
 * (Copyright 2015 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Arrays;

/**
 * Chunk metadata as a struct of arrays, indexed by an {@code int} chunk handle. Port of
 * {@code BFCAllocator::Chunk}, {@code chunks_}, {@code AllocateChunk} and {@code DeallocateChunk}.
 *
 * <pre>
 *  handle h:    0        1        2        3   ...      count-1
 *  size[h]     [  4096 ][  256  ][ 1 MiB ][    0  ] ...
 *  ptr[h]      [ 0x..00][ 0x..0 ][ 0x..  ][ stale ] ...
 *  next[h]     [   1   ][   2   ][  -1   ][ free list link ]
 * </pre>
 *
 * <p>A handle is either live (a chunk of some region, free or in use) or on the free-handle
 * list, chained through {@code next} and reused last-in first-out, exactly like upstream's
 * {@code free_chunks_list_}. A handle returned to the list keeps its {@code ptr}, {@code size}
 * and {@code freedAtCount} (only {@code allocationId}, {@code binNum} and {@code next} are
 * reset), as upstream's {@code DeallocateChunk} does: the timestamp queue relies on it.
 *
 * <p>The table also holds the links of the bins' trees ({@link FreeChunkSet}): a free chunk is
 * in at most one bin, so one left/right/parent/tag entry per handle serves all 21 bins, and
 * binning a chunk creates nothing. Arrays grow (doubling) on the slow path only.
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class ChunkTable {

    /**
     * Runs half-way through a growth of the arrays (after the first is copied): a test's way to
     * fail there (an {@link OutOfMemoryError}). Null but in tests.
     */
    static volatile Runnable midGrowth;

    /** Upstream's {@code kInvalidChunkHandle}. */
    public static final int INVALID_CHUNK_HANDLE = -1;

    /** Upstream's {@code kInvalidBinNum}. */
    public static final int INVALID_BIN_NUM = -1;

    /**
     * Not in upstream: the bit of a chunk's allocation-id word that marks it as owned by an
     * {@code Allocation} handle (raw frees of it are refused). Ids count allocations from 1 and
     * stay below the loan bits ({@link #lentBy(int)}); the bit lives in the word the free reads
     * anyway (for {@link #inUse}), so checking it costs no memory access, and marking the chunk
     * free ({@code -1}) clears it.
     */
    public static final long HANDLE_OWNED = 1L << 62;

    /**
     * Not in upstream: where a chunk's allocation-id word holds the number (1 to
     * {@link #MAX_LOANS}) of the {@code MemoryAllocator.Loan} that lent it to a runtime, 0 for
     * memory not lent. A raw free of lent memory is refused, and a loan frees only the memory it
     * lent. As {@link #HANDLE_OWNED}, it costs the free no memory access. Ids stay below
     * {@code 2^53} (at ten million allocations a second, 28 years).
     */
    private static final int LOAN_SHIFT = 53;

    /** The most loans of one allocator that can hold a number at once: 255. */
    public static final int MAX_LOANS = 0xFF;

    /** The loan-number bits of an allocation-id word ({@link #LOAN_SHIFT}). */
    private static final long LOANS = (long) MAX_LOANS << LOAN_SHIFT;

    /** The owner bits of an allocation-id word: {@link #HANDLE_OWNED} and the loan's number. */
    private static final long OWNERS = HANDLE_OWNED | LOANS;

    /**
     * @param loan a loan's number, 1 to {@link #MAX_LOANS}
     * @return the owner bits ({@link #setOwner}) of memory lent through that loan
     */
    public static long lentBy(int loan) {
        return (long) loan << LOAN_SHIFT;
    }

    /**
     * @param owner owner bits of {@link #lentBy(int)}
     * @return the loan's number
     */
    public static int lenderIn(long owner) {
        return (int) (owner >>> LOAN_SHIFT);
    }

    /**
     * Not in upstream: the allocation-id word of a free chunk whose start the address map does
     * not hold yet (a split's rest while the allocator records such starts lazily; see
     * {@code BfcPort.lazyAddressMap}). Every other free chunk, and a deleted handle, holds
     * {@code -1}; a chunk in use holds its id ({@code > 0}), so "in use" is "not negative".
     */
    public static final long FREE_UNMAPPED = -2;

    // size and ptr are package-private: FreeChunkSet orders its trees by them.
    long[] size;
    private long[] requestedSize;
    private long[] allocationId;
    long[] ptr;
    private long[] freedAtCount;
    private int[] prev;
    private int[] next;
    private int[] binNum;

    // The bins' tree nodes, owned by FreeChunkSet (package-private for it): four ints per
    // handle, at h * 4: left child, right child, parent (INVALID_CHUNK_HANDLE for none), and
    // tag = (id of the set holding the handle << 1) | red, 0 when the handle is in no set.
    // Interleaved so that a node is one 16-byte piece of a cache line: four separate arrays
    // cost up to four cache misses per node visited (measured: docs/performance.md).
    int[] binLinks;

    /** The {@link FreeChunkSet}s of this table, by id - 1: told when the arrays are replaced. */
    private FreeChunkSet[] sets = new FreeChunkSet[0];

    /** Upstream's {@code chunks_.size()}: handles ever created. */
    private int count;

    /** Upstream's {@code free_chunks_list_}. */
    private int freeChunksList = INVALID_CHUNK_HANDLE;

    /**
     * Creates an empty table.
     *
     * @param initialCapacity the number of handles to make room for up front
     */
    public ChunkTable(int initialCapacity) {
        int n = Math.max(16, initialCapacity);
        size = new long[n];
        requestedSize = new long[n];
        allocationId = new long[n];
        ptr = new long[n];
        freedAtCount = new long[n];
        prev = new int[n];
        next = new int[n];
        binNum = new int[n];
        binLinks = new int[4 * n];
    }

    /**
     * Port of {@code BFCAllocator::AllocateChunk}: pops the free-handle list, or creates a new
     * handle with upstream's default field values.
     *
     * @return a handle; a recycled one keeps its stale {@code ptr}, {@code size} and
     *     {@code freedAtCount}
     */
    public int allocateChunk() {
        if (freeChunksList != INVALID_CHUNK_HANDLE) {
            int h = freeChunksList;
            freeChunksList = next[h];
            return h;
        }
        int h = count;
        if (h == size.length) {
            grow();
        }
        count = h + 1;
        size[h] = 0;
        requestedSize[h] = 0;
        allocationId[h] = -1;
        ptr[h] = 0;
        freedAtCount[h] = 0;
        prev[h] = INVALID_CHUNK_HANDLE;
        next[h] = INVALID_CHUNK_HANDLE;
        binNum[h] = INVALID_BIN_NUM;
        binLinks[4 * h + FreeChunkSet.TAG] = 0;
        return h;
    }

    /**
     * Port of {@code BFCAllocator::DeallocateChunk}: marks the chunk unused and pushes the
     * handle on the free-handle list.
     *
     * @param h a live handle
     */
    public void deallocateChunk(int h) {
        allocationId[h] = -1;
        binNum[h] = INVALID_BIN_NUM;
        next[h] = freeChunksList;
        freeChunksList = h;
    }

    /** Forgets every handle (the allocator was closed). */
    public void clear() {
        count = 0;
        freeChunksList = INVALID_CHUNK_HANDLE;
    }

    /**
     * Makes sure that the next {@link #allocateChunk()} does not grow the arrays (and so
     * cannot fail): for a caller that must grow before it changes anything.
     *
     * @throws OutOfMemoryError if the arrays must grow and cannot; the table is unchanged then
     */
    public void ensureSpareHandle() {
        if (freeChunksList == INVALID_CHUNK_HANDLE && count == size.length) {
            grow();
        }
    }

    /**
     * Doubles the arrays. Every new array is made before any is replaced, so that an
     * {@link OutOfMemoryError} half-way leaves the table as it was.
     */
    private void grow() {
        final int n = size.length * 2;
        final long[] newSize = Arrays.copyOf(size, n);
        final Runnable hook = midGrowth;
        if (hook != null) {
            hook.run();
        }
        final long[] newRequestedSize = Arrays.copyOf(requestedSize, n);
        final long[] newAllocationId = Arrays.copyOf(allocationId, n);
        final long[] newPtr = Arrays.copyOf(ptr, n);
        final long[] newFreedAtCount = Arrays.copyOf(freedAtCount, n);
        final int[] newPrev = Arrays.copyOf(prev, n);
        final int[] newNext = Arrays.copyOf(next, n);
        final int[] newBinNum = Arrays.copyOf(binNum, n);
        final int[] newBinLinks = Arrays.copyOf(binLinks, 4 * n);
        size = newSize;
        requestedSize = newRequestedSize;
        allocationId = newAllocationId;
        ptr = newPtr;
        freedAtCount = newFreedAtCount;
        prev = newPrev;
        next = newNext;
        binNum = newBinNum;
        binLinks = newBinLinks;
        for (FreeChunkSet set : sets) {
            set.sync();
        }
    }

    /**
     * Upstream's {@code ChunkComparator}: by size, then by address (both unsigned).
     *
     * @param a a live handle
     * @param b a live handle
     * @return negative, zero or positive as {@code a} sorts before, with or after {@code b}
     */
    public int compare(int a, int b) {
        long sa = size[a];
        long sb = size[b];
        if (sa != sb) {
            return Long.compareUnsigned(sa, sb);
        }
        return Long.compareUnsigned(ptr[a], ptr[b]);
    }

    /**
     * Registers a {@link FreeChunkSet} of this table: it is told ({@code sync()}) whenever the
     * arrays it reads are replaced.
     *
     * @return its id, never 0
     */
    int register(FreeChunkSet set) {
        if (sets.length == Integer.MAX_VALUE >>> FreeChunkSet.SET_SHIFT) {
            throw new IllegalStateException("too many FreeChunkSets on one ChunkTable");
        }
        sets = Arrays.copyOf(sets, sets.length + 1);
        sets[sets.length - 1] = set;
        return sets.length;
    }

    /** @return handles ever created (upstream's {@code chunks_.size()}) */
    public int count() {
        return count;
    }

    /**
     * @param h a handle
     * @return upstream's {@code Chunk::in_use()}
     */
    public boolean inUse(int h) {
        return allocationId[h] >= 0;
    }

    /**
     * @param h a handle
     * @return the chunk's full size
     */
    public long size(int h) {
        return size[h];
    }

    /**
     * @param h a handle
     * @param v the chunk's full size
     */
    public void setSize(int h, long v) {
        size[h] = v;
    }

    /**
     * @param h a handle
     * @return the size the client asked for
     */
    public long requestedSize(int h) {
        return requestedSize[h];
    }

    /**
     * @param h a handle
     * @param v the size the client asked for
     */
    public void setRequestedSize(int h, long v) {
        requestedSize[h] = v;
    }

    /**
     * @param h a handle
     * @return the allocation id, -1 when free
     */
    public long allocationId(int h) {
        final long v = allocationId[h];
        return v < 0 ? -1 : v & ~OWNERS;
    }

    /**
     * @param h a handle
     * @param v the allocation id, -1 when free ({@link #FREE_UNMAPPED} for a free chunk whose
     *     start is not in the address map)
     */
    public void setAllocationId(int h, long v) {
        allocationId[h] = v;
    }

    /**
     * @param h a handle
     * @return the chunk's start address
     */
    public long ptr(int h) {
        return ptr[h];
    }

    /**
     * @param h a handle
     * @param v the chunk's start address
     */
    public void setPtr(int h, long v) {
        ptr[h] = v;
    }

    /**
     * @param h a handle
     * @return the physically preceding chunk, or {@link #INVALID_CHUNK_HANDLE}
     */
    public int prev(int h) {
        return prev[h];
    }

    /**
     * @param h a handle
     * @param v the physically preceding chunk
     */
    public void setPrev(int h, int v) {
        prev[h] = v;
    }

    /**
     * @param h a handle
     * @return the physically following chunk, or {@link #INVALID_CHUNK_HANDLE}
     */
    public int next(int h) {
        return next[h];
    }

    /**
     * @param h a handle
     * @param v the physically following chunk
     */
    public void setNext(int h, int v) {
        next[h] = v;
    }

    /**
     * @param h a handle
     * @return the bin the free chunk is in, or {@link #INVALID_BIN_NUM}
     */
    public int binNum(int h) {
        return binNum[h];
    }

    /**
     * @param h a handle
     * @param v the bin the free chunk is in
     */
    public void setBinNum(int h, int v) {
        binNum[h] = v;
    }

    /**
     * @param h a handle
     * @return the timing count when last freed (unsigned), 0 if none
     */
    public long freedAtCount(int h) {
        return freedAtCount[h];
    }

    /**
     * @param h a handle
     * @param v the timing count when last freed
     */
    public void setFreedAtCount(int h, long v) {
        freedAtCount[h] = v;
    }

    /**
     * @param h a handle
     * @return whether the chunk is in use and belongs to an {@code Allocation} handle
     */
    public boolean handleOwned(int h) {
        final long v = allocationId[h];
        return v >= 0 && (v & HANDLE_OWNED) != 0;
    }

    /**
     * {@link #inUse} for a raw free: one read of the allocation-id word.
     *
     * @param h a handle
     * @return whether the chunk is in use and neither an {@code Allocation} handle nor a loan
     *     owns it
     */
    public boolean inUseRaw(int h) {
        final long v = allocationId[h];
        return v >= 0 && (v & OWNERS) == 0;
    }

    /**
     * {@link #inUse} for a loan's free: one read of the allocation-id word.
     *
     * @param h a handle
     * @param loan owner bits of {@link #lentBy}
     * @return whether the chunk is in use and lent through that loan
     */
    public boolean lentBy(int h, long loan) {
        final long v = allocationId[h];
        return v >= 0 && (v & LOANS) == loan;
    }

    /**
     * @param h a handle
     * @return the number of the loan that lent the chunk, 0 if it is free or not lent
     */
    public int lender(int h) {
        final long v = allocationId[h];
        return v < 0 ? 0 : (int) ((v & LOANS) >>> LOAN_SHIFT);
    }

    /**
     * {@link #inUse} for a handle's free: one read of the allocation-id word.
     *
     * @param h a handle
     * @param id an allocation id, > 0
     * @return whether the chunk is the allocation {@code id}, owned by an {@code Allocation} handle
     */
    public boolean ownedByHandle(int h, long id) {
        return allocationId[h] == (id | HANDLE_OWNED);
    }

    /**
     * @param h a live handle
     * @return whether the address map holds the chunk's start: false only for a free chunk
     *     marked {@link #FREE_UNMAPPED}
     */
    public boolean mapped(int h) {
        return allocationId[h] != FREE_UNMAPPED;
    }

    /**
     * Marks a chunk in use as an {@code Allocation} handle's ({@link #HANDLE_OWNED}) or a loan's
     * ({@link #lentBy(int)}); freeing it ({@code setAllocationId(h, -1)}) ends that.
     *
     * @param h a handle of a chunk in use
     * @param owner {@link #HANDLE_OWNED} or {@link #lentBy(int)}
     */
    public void setOwner(int h, long owner) {
        allocationId[h] |= owner;
    }
}
