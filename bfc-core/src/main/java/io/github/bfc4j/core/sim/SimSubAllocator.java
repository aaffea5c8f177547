/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.sim;

import io.github.bfc4j.core.SubAllocator;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The trace format's simulated address space (the {@code sim} sub-allocator of
 * {@code docs/trace-format.md}): a deterministic {@link SubAllocator} whose addresses are
 * reproducible, so that a trace can state every address the reference returned. Nothing is
 * backed by memory; the addresses must never be dereferenced.
 *
 * <h2>Terms</h2>
 *
 * <ul>
 *   <li><b>space</b>: {@code [base, base + capacity)}; {@code capacity} counts the gap bytes too.
 *   <li><b>free range</b>: a maximal run {@code [s, e)} of the space not reserved. Free ranges
 *       never touch: adjacent ones are merged at once.
 *   <li><b>block</b>: what one {@link #alloc} reserved: {@code [p, p + n + gap)}, of which
 *       {@code [p, p + n)} is handed out and the last {@code gap} bytes keep it apart from
 *       whatever follows.
 * </ul>
 *
 * <pre>
 * base                                                                  base + capacity
 *  |                                                                                |
 *  [ block 0: n0 | gap ][ free ][pad][ block 1: n1 | gap ][        free            )
 *  ^ p0 (=base)                      ^ p1 = end of block 0 rounded up to max(align, 256)
 *                       \________________/                  \______________________/
 *                        free range [s, e)                    free range [s, e)
 * </pre>
 *
 * <h2>Alloc</h2>
 *
 * {@code alloc(alignment, n)}: let {@code A = max(alignment, 256)}. Walk the free ranges in
 * increasing address order and take the first {@code [s, e)} where {@code p = s} rounded up to a
 * multiple of {@code A} satisfies {@code p + n + gap <= e}. Reserve {@code [p, p + n + gap)}; the
 * pieces {@code [s, p)} and {@code [p + n + gap, e)} stay free. Answer {@code Block(p, n)}, or
 * {@code null} when no free range qualifies.
 *
 * <h2>Free</h2>
 *
 * {@code free(ptr, n)} returns {@code [ptr, ptr + n + gap)} and merges it with the free ranges on
 * either side. The range must be exactly one block, or, when {@link #supportsCoalescing()} is
 * true, a run of blocks that touch (only possible with {@code gap == 0}; the BFC allocator then
 * frees a merged region with the summed size). Anything else (an address never handed out, a
 * double free, a range overlapping free space, a piece of a block, a range outside the space) is
 * rejected with an {@link IllegalArgumentException} and changes nothing.
 *
 * <h2>Invariants</h2>
 *
 * The free ranges and the blocks tile the space without overlap; no two free ranges touch;
 * {@link #reservedBytes()} is the total size of the blocks.
 *
 * <p>Every call is a slow path of the BFC allocator ({@code Extend}, garbage collection,
 * {@code close}), so this class uses boxed {@link TreeMap}s freely. {@code alloc} is linear in
 * the number of free ranges, {@code free} in the number of blocks freed, plus a logarithm.
 *
 * <p>Thread-safe: every method that reads or changes the free ranges and blocks holds this
 * object's monitor. The BFC allocator calls {@link #alloc} and {@link #free} under its own lock
 * (so the monitor is never contended there), but {@link #toString()} is also called from
 * anywhere: log lines, messages, another thread's diagnostics.
 */
public final class SimSubAllocator implements SubAllocator {

    /** The minimum alignment of every block, the BFC allocator's {@code kMinAllocationSize}. */
    private static final long MIN_ALIGNMENT = 256;

    private final long base;
    private final long capacity;
    private final long gap;
    private final boolean coalescing;
    /** {@code base + capacity}, the exclusive end of the space. */
    private final long end;

    /** Free ranges, start to exclusive end; disjoint and never touching. Guarded by this. */
    private final TreeMap<Long, Long> freeRanges = new TreeMap<>();
    /**
     * Blocks handed out, start to exclusive end of the reservation ({@code p + n + gap}). Guarded
     * by this.
     */
    private final TreeMap<Long, Long> blocks = new TreeMap<>();
    /** Guarded by this. */
    private long reservedBytes;

    /**
     * Creates a simulated address space {@code [base, base + capacity)} that is entirely free.
     *
     * @param base the first address of the space, a positive multiple of 256
     * @param capacity the size of the space in bytes, gap bytes included; need not be a multiple
     *     of 256
     * @param gap the bytes reserved after every block, keeping blocks apart ({@code gap > 0}
     *     means two blocks are never adjacent); any non-negative value
     * @param coalescing what {@link #supportsCoalescing()} answers, and whether one {@link #free}
     *     may return several adjacent blocks
     * @throws IllegalArgumentException if {@code base} is not a positive multiple of 256,
     *     {@code capacity <= 0}, {@code gap < 0}, or {@code base + capacity} overflows a
     *     {@code long}
     */
    public SimSubAllocator(long base, long capacity, long gap, boolean coalescing) {
        if (base <= 0 || (base & (MIN_ALIGNMENT - 1)) != 0) {
            throw new IllegalArgumentException(
                    "base=" + hex(base) + " (expected: a positive multiple of " + MIN_ALIGNMENT + ")");
        }
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity=" + capacity + " (expected: > 0)");
        }
        if (capacity > Long.MAX_VALUE - base) {
            throw new IllegalArgumentException("capacity=" + capacity + " (expected: <= "
                    + (Long.MAX_VALUE - base) + ", so that base + capacity does not overflow)");
        }
        if (gap < 0) {
            throw new IllegalArgumentException("gap=" + gap + " (expected: >= 0)");
        }
        this.base = base;
        this.capacity = capacity;
        this.gap = gap;
        this.coalescing = coalescing;
        this.end = base + capacity;
        freeRanges.put(base, end);
    }

    /**
     * The first address of the space.
     *
     * @return {@code base}, as given to the constructor
     */
    public long base() {
        return base;
    }

    /**
     * The size of the space, gap bytes included.
     *
     * @return {@code capacity}, as given to the constructor
     */
    public long capacity() {
        return capacity;
    }

    /**
     * The bytes reserved after every block.
     *
     * @return {@code gap}, as given to the constructor
     */
    public long gap() {
        return gap;
    }

    /**
     * Reserves {@code [p, p + numBytes + gap)} in the first free range (by address) that has room
     * for it at an address {@code p} aligned to {@code max(alignment, 256)}.
     *
     * @param alignment a power of two; blocks are aligned to at least 256 regardless
     * @param numBytes the bytes wanted, positive (the BFC allocator asks for multiples of 256,
     *     but any positive size is accepted)
     * @return {@code Block(p, numBytes)}, or {@code null} if no free range has room, in which
     *     case nothing changes
     * @throws IllegalArgumentException if {@code alignment} is not a power of two or
     *     {@code numBytes <= 0}
     */
    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException(
                    "alignment=" + alignment + " (expected: a power of two)");
        }
        if (numBytes <= 0) {
            throw new IllegalArgumentException("numBytes=" + numBytes + " (expected: > 0)");
        }
        if (numBytes > capacity - gap) {
            return null; // also keeps numBytes + gap from overflowing below
        }
        final long need = numBytes + gap;
        final long mask = Math.max(alignment, MIN_ALIGNMENT) - 1;
        for (Map.Entry<Long, Long> range : freeRanges.entrySet()) {
            final long s = range.getKey();
            final long e = range.getValue();
            // p = s rounded up to the alignment, computed as an offset so nothing overflows.
            final long pad = -s & mask;
            if (pad >= e - s || e - s - pad < need) {
                continue;
            }
            final long p = s + pad;
            freeRanges.remove(s);
            if (pad > 0) {
                freeRanges.put(s, p);
            }
            if (p + need < e) {
                freeRanges.put(p + need, e);
            }
            blocks.put(p, p + need);
            reservedBytes += need;
            return new Block(p, numBytes);
        }
        return null;
    }

    /**
     * Returns {@code [ptr, ptr + numBytes + gap)} to the free space, merging it with adjacent
     * free ranges. The range must be exactly one block handed out by {@link #alloc} and not yet
     * freed (its {@code ptr} and {@code bytes}), or, when {@link #supportsCoalescing()} is true,
     * a run of such blocks that touch one another, freed from the first block's {@code ptr} with
     * the summed size (what the BFC allocator does with a merged region).
     *
     * @param ptr the first address of the range
     * @param numBytes the size of the range, gap bytes excluded
     * @throws IllegalArgumentException if {@code numBytes <= 0}, or the range is not exactly
     *     such a block or run of blocks: {@code ptr} never handed out or already freed, the range
     *     outside the space, covering free space, ending inside a block, or (without coalescing)
     *     covering more than one block; nothing changes then
     */
    @Override
    public synchronized void free(long ptr, long numBytes) {
        if (numBytes <= 0) {
            throw new IllegalArgumentException("numBytes=" + numBytes + " (expected: > 0)");
        }
        final Long firstEnd = blocks.get(ptr);
        if (firstEnd == null) {
            throw new IllegalArgumentException(describeUnknownLocked(ptr));
        }
        if (numBytes > end - ptr - gap) {
            throw new IllegalArgumentException("[" + hex(ptr) + ", " + hex(ptr) + " + " + numBytes
                    + " + gap " + gap + ") runs past the end " + hex(end) + " of " + this);
        }
        final long rangeEnd = ptr + numBytes + gap;
        // Validate the whole run before changing anything.
        long cur = firstEnd;
        int count = 1;
        while (cur < rangeEnd) {
            final Long next = blocks.get(cur);
            if (next == null) {
                throw new IllegalArgumentException(describeBadEndLocked(ptr, numBytes, rangeEnd, cur));
            }
            cur = next;
            count++;
        }
        if (cur != rangeEnd) {
            throw new IllegalArgumentException(describeBadEndLocked(ptr, numBytes, rangeEnd, cur));
        }
        if (count > 1 && !coalescing) {
            throw new IllegalArgumentException("[" + hex(ptr) + ", " + hex(rangeEnd) + ") covers "
                    + count + " blocks, but " + this + " does not support coalescing: free each "
                    + "block with the size alloc returned");
        }
        cur = ptr;
        while (cur < rangeEnd) {
            cur = blocks.remove(cur);
        }
        reservedBytes -= rangeEnd - ptr;
        long s = ptr;
        long e = rangeEnd;
        final Map.Entry<Long, Long> before = freeRanges.floorEntry(ptr);
        if (before != null && before.getValue() == ptr) {
            s = before.getKey();
        }
        final Long after = freeRanges.remove(rangeEnd);
        if (after != null) {
            e = after;
        }
        freeRanges.put(s, e);
    }

    /**
     * Whether adjacent blocks may be treated as one region, as the trace header says.
     *
     * @return the {@code coalescing} given to the constructor
     */
    @Override
    public boolean supportsCoalescing() {
        return coalescing;
    }

    /**
     * Bytes currently reserved: the sizes of the blocks not yet freed, each with its gap.
     *
     * @return the reserved bytes, between 0 and {@link #capacity()}
     */
    public synchronized long reservedBytes() {
        return reservedBytes;
    }

    /**
     * A one-line description of the space and how much of it is in use, for messages and logs.
     *
     * @return e.g. {@code SimSubAllocator[0x7f0000000000, +1048576, gap=0, coalescing=true:
     *     reserved=4096 in 2 blocks, 2 free ranges, largest free=1044480]}
     */
    @Override
    public synchronized String toString() {
        long largestFree = 0;
        for (Map.Entry<Long, Long> range : freeRanges.entrySet()) {
            largestFree = Math.max(largestFree, range.getValue() - range.getKey());
        }
        return "SimSubAllocator[" + hex(base) + ", +" + capacity + ", gap=" + gap
                + ", coalescing=" + coalescing + ": reserved=" + reservedBytes + " in "
                + blocks.size() + " blocks, " + freeRanges.size() + " free ranges, largest free="
                + largestFree + "]";
    }

    /** The free ranges (start to exclusive end), for tests. A read-only copy. */
    synchronized NavigableMap<Long, Long> freeRanges() {
        return Collections.unmodifiableNavigableMap(new TreeMap<>(freeRanges));
    }

    /**
     * Checks the invariants in the class comment, for tests.
     *
     * @throws IllegalStateException naming the first invariant broken
     */
    synchronized void checkInvariants() {
        long cur = base;
        long blockBytes = 0;
        final Iterator<Map.Entry<Long, Long>> f = freeRanges.entrySet().iterator();
        final Iterator<Map.Entry<Long, Long>> b = blocks.entrySet().iterator();
        Map.Entry<Long, Long> nf = f.hasNext() ? f.next() : null;
        Map.Entry<Long, Long> nb = b.hasNext() ? b.next() : null;
        boolean lastWasFree = false;
        while (nf != null || nb != null) {
            final boolean takeFree = nb == null || (nf != null && nf.getKey() < nb.getKey());
            final Map.Entry<Long, Long> next = takeFree ? nf : nb;
            if (next.getKey() != cur || next.getValue() <= cur) {
                throw new IllegalStateException("free ranges and blocks do not tile the space at "
                        + hex(cur) + ": next " + (takeFree ? "free range" : "block") + " is ["
                        + hex(next.getKey()) + ", " + hex(next.getValue()) + ") in " + this);
            }
            if (takeFree && lastWasFree) {
                throw new IllegalStateException("adjacent free ranges not merged at " + hex(cur)
                        + " in " + this);
            }
            if (!takeFree) {
                blockBytes += next.getValue() - next.getKey();
            }
            lastWasFree = takeFree;
            cur = next.getValue();
            if (takeFree) {
                nf = f.hasNext() ? f.next() : null;
            } else {
                nb = b.hasNext() ? b.next() : null;
            }
        }
        if (cur != end) {
            throw new IllegalStateException("free ranges and blocks end at " + hex(cur)
                    + ", not at " + hex(end) + " in " + this);
        }
        if (blockBytes != reservedBytes) {
            throw new IllegalStateException("reservedBytes=" + reservedBytes + " but the blocks sum to "
                    + blockBytes + " in " + this);
        }
    }

    private String describeUnknownLocked(long ptr) {
        final StringBuilder sb = new StringBuilder(hex(ptr)).append(" was not allocated by ")
                .append(this).append(" (or was already freed)");
        if (ptr < base || ptr >= end) {
            sb.append(": it is outside the space");
        } else {
            final Map.Entry<Long, Long> block = blocks.floorEntry(ptr);
            if (block != null && block.getValue() > ptr) {
                sb.append(": it is inside the block [").append(hex(block.getKey())).append(", ")
                        .append(hex(block.getValue())).append(')');
            } else {
                sb.append(": it is free");
            }
        }
        return sb.toString();
    }

    private String describeBadEndLocked(long ptr, long numBytes, long rangeEnd, long at) {
        final StringBuilder sb = new StringBuilder("[").append(hex(ptr)).append(", ")
                .append(hex(rangeEnd)).append(") (numBytes=").append(numBytes).append(" + gap ")
                .append(gap).append(") is not ");
        sb.append(coalescing ? "a run of adjacent blocks" : "one block");
        sb.append(" handed out by ").append(this).append(": ");
        if (at > rangeEnd) {
            final Map.Entry<Long, Long> block = blocks.floorEntry(rangeEnd - 1);
            sb.append("it ends inside the block [").append(hex(block.getKey())).append(", ")
                    .append(hex(block.getValue())).append(')');
        } else {
            sb.append("it covers free space at ").append(hex(at));
        }
        return sb.toString();
    }

    private static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }
}
