/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.LimitingSubAllocator;
import io.github.bfc4j.core.SubAllocator;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * The regions that the shards of a sharded allocator hold from one sub-allocator: one cap on
 * their sum (a {@link LimitingSubAllocator}), and a table from address to shard for frees.
 *
 * <p>Each shard gets a {@link #forShard(int) view} to use as its sub-allocator. Region calls
 * (rare: a shard's {@code Extend}, its garbage collection, its close) are serialised on this
 * object, so the upstream sub-allocator needs no thread safety of its own. {@link #shardOf} is
 * called on every free and takes no lock: it reads an immutable table that region calls
 * replace (copy on write). A free's address lies in a region its allocation came from, and a
 * region is given back only when nothing in it is allocated, so a free never races with the
 * removal of its own region.
 */
public final class ShardRegions {

    /**
     * One entry of the table per region, sorted by start, never overlapping: {@code
     * [start, end, shard]} at {@code ENTRY * i}. One array, so that a free's lookup follows one
     * reference.
     */
    private static final int ENTRY = 3;

    /** The upstream under the common cap (it counts the bytes held). */
    private final LimitingSubAllocator upstream;
    /** Whether no shard may obtain a region any more (read under this object's monitor). */
    private final BooleanSupplier refuseNewRegions;

    /** Guarded by this. */
    private long peakHeldBytes;

    /**
     * The table (see {@link #ENTRY}); replaced, never changed, under this object's monitor by
     * each region call; read without a lock.
     */
    private volatile long[] table = new long[0];

    /**
     * @param upstream where the regions come from
     * @param limitBytes the most bytes all shards together may hold from {@code upstream}
     * @param refuseNewRegions asked (under this object's monitor) before each region is
     *     obtained; true refuses it. The sharded allocator answers true once a shard has begun
     *     to close: the ranges a closed shard gave back must never become another shard's,
     *     where a late free of an address of the closed shard would free another allocation.
     */
    public ShardRegions(SubAllocator upstream, long limitBytes, BooleanSupplier refuseNewRegions) {
        this.upstream = new LimitingSubAllocator(Objects.requireNonNull(upstream, "upstream"), limitBytes);
        this.refuseNewRegions = Objects.requireNonNull(refuseNewRegions, "refuseNewRegions");
    }

    /**
     * The sub-allocator of shard {@code shard}: its regions count against the common cap and
     * are entered in the table under {@code shard}.
     *
     * @param shard the shard's index, >= 0
     * @return the view
     */
    public SubAllocator forShard(int shard) {
        return new ForwardingSubAllocator(upstream) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                return ShardRegions.this.alloc(shard, alignment, numBytes);
            }

            @Override
            public void free(long ptr, long numBytes) {
                ShardRegions.this.free(shard, ptr, numBytes);
            }

            @Override
            public String toString() {
                return "shard " + shard + " of " + upstream;
            }
        };
    }

    private synchronized SubAllocator.Block alloc(int shard, long alignment, long numBytes) {
        if (refuseNewRegions.getAsBoolean()) {
            return null;
        }
        SubAllocator.Block block = upstream.alloc(alignment, numBytes);
        if (block == null) {
            return null;
        }
        try {
            insert(block.ptr(), block.ptr() + block.bytes(), shard);
        } catch (IllegalStateException overlap) {
            upstream.free(block.ptr(), block.bytes());
            throw overlap;
        }
        peakHeldBytes = Math.max(peakHeldBytes, upstream.heldBytes());
        return block;
    }

    private synchronized void free(int shard, long ptr, long numBytes) {
        long end = ptr + numBytes;
        long[] t = table;
        int n = t.length / ENTRY;
        int from = find(t, ptr);
        int to = from;
        while (from >= 0 && to < n && end(t, to) <= end && shard(t, to) == shard
                && (to == from || start(t, to) == end(t, to - 1))) {
            to++;
        }
        if (from < 0 || to == from || end(t, to - 1) != end) {
            throw new IllegalArgumentException("free(ptr=0x" + Long.toHexString(ptr) + ", numBytes="
                    + numBytes + ") from shard " + shard + ": not a range of regions this shard holds"
                    + " (expected: regions handed out to it, adjacent when freed as one)");
        }
        try {
            upstream.free(ptr, numBytes);
        } finally {
            // The shard forgets the regions even if the free failed.
            long[] rest = new long[t.length - (to - from) * ENTRY];
            System.arraycopy(t, 0, rest, 0, from * ENTRY);
            System.arraycopy(t, to * ENTRY, rest, from * ENTRY, t.length - to * ENTRY);
            table = rest;
        }
    }

    /** Enters {@code [start, end)} under {@code shard}. Needs this object's monitor. */
    private void insert(long start, long end, int shard) {
        long[] t = table;
        int n = t.length / ENTRY;
        int at = -find(t, start) - 1;
        if (at < 0 || (at > 0 && end(t, at - 1) > start) || (at < n && start(t, at) < end)) {
            throw new IllegalStateException("the sub-allocator handed out [0x" + Long.toHexString(start)
                    + ", 0x" + Long.toHexString(end) + "), which overlaps a region a shard holds");
        }
        long[] more = new long[t.length + ENTRY];
        System.arraycopy(t, 0, more, 0, at * ENTRY);
        more[at * ENTRY] = start;
        more[at * ENTRY + 1] = end;
        more[at * ENTRY + 2] = shard;
        System.arraycopy(t, at * ENTRY, more, (at + 1) * ENTRY, t.length - at * ENTRY);
        table = more;
    }

    /**
     * @return the entry whose region starts at {@code start}, or {@code -(insertion point) - 1}
     *     (as {@link java.util.Arrays#binarySearch(long[], long)})
     */
    private static int find(long[] t, long start) {
        int lo = 0;
        int hi = t.length / ENTRY - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long s = start(t, mid);
            if (s < start) {
                lo = mid + 1;
            } else if (s > start) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -lo - 1;
    }

    private static long start(long[] t, int i) {
        return t[i * ENTRY];
    }

    private static long end(long[] t, int i) {
        return t[i * ENTRY + 1];
    }

    private static int shard(long[] t, int i) {
        return (int) t[i * ENTRY + 2];
    }

    /**
     * The shard holding the region that contains {@code ptr}. Takes no lock and creates no
     * object.
     *
     * @param ptr an address
     * @return the shard's index, or -1 if no shard holds a region containing {@code ptr}
     */
    public int shardOf(long ptr) {
        long[] t = table;
        int n = t.length / ENTRY;
        if (n == 0 || ptr < start(t, 0)) {
            return -1;
        }
        // The last region starting at or before ptr. Each step selects one of two indices, a
        // shape the compiler can turn into a conditional move: a free's region is as
        // unpredictable as its address, so a branch here would often be mispredicted.
        int at = 0;
        while (n > 1) {
            int half = n >>> 1;
            at = start(t, at + half) <= ptr ? at + half : at;
            n -= half;
        }
        return ptr < end(t, at) ? shard(t, at) : -1;
    }

    /** @return the bytes all shards hold from the upstream now */
    public long heldBytes() {
        return upstream.heldBytes();
    }

    /** @return the most bytes all shards together have held at once */
    public synchronized long peakHeldBytes() {
        return peakHeldBytes;
    }

    /** @return the regions held now */
    public int regionCount() {
        return table.length / ENTRY;
    }

    /** @return the cap on {@link #heldBytes()} */
    public long limitBytes() {
        return upstream.limitBytes();
    }
}
