/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.LimitingSubAllocator;
import io.github.bfc4j.core.SubAllocator;
import java.util.Arrays;
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

    /** One immutable table: regions sorted by start, never overlapping. */
    private static final class Table {
        static final Table EMPTY = new Table(new long[0], new long[0], new int[0]);

        final long[] starts;
        final long[] ends;
        final int[] shards;

        Table(long[] starts, long[] ends, int[] shards) {
            this.starts = starts;
            this.ends = ends;
            this.shards = shards;
        }
    }

    /** The upstream under the common cap (it counts the bytes held). */
    private final LimitingSubAllocator upstream;
    /** Whether no shard may obtain a region any more (read under this object's monitor). */
    private final BooleanSupplier refuseNewRegions;

    /** Guarded by this. */
    private long peakHeldBytes;

    /** Replaced (under this object's monitor) by each region call; read without a lock. */
    private volatile Table table = Table.EMPTY;

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
        Table t = table;
        int from = Arrays.binarySearch(t.starts, ptr);
        int to = from;
        while (from >= 0 && to < t.starts.length && t.ends[to] <= end && t.shards[to] == shard
                && (to == from || t.starts[to] == t.ends[to - 1])) {
            to++;
        }
        if (from < 0 || to == from || t.ends[to - 1] != end) {
            throw new IllegalArgumentException("free(ptr=0x" + Long.toHexString(ptr) + ", numBytes="
                    + numBytes + ") from shard " + shard + ": not a range of regions this shard holds"
                    + " (expected: regions handed out to it, adjacent when freed as one)");
        }
        upstream.free(ptr, numBytes);
        remove(from, to);
    }

    /** Enters {@code [start, end)} under {@code shard}. Needs this object's monitor. */
    private void insert(long start, long end, int shard) {
        Table t = table;
        int at = -Arrays.binarySearch(t.starts, start) - 1;
        if (at < 0 || (at > 0 && t.ends[at - 1] > start) || (at < t.starts.length && t.starts[at] < end)) {
            throw new IllegalStateException("the sub-allocator handed out [0x" + Long.toHexString(start)
                    + ", 0x" + Long.toHexString(end) + "), which overlaps a region a shard holds");
        }
        int n = t.starts.length;
        long[] starts = new long[n + 1];
        long[] ends = new long[n + 1];
        int[] shards = new int[n + 1];
        System.arraycopy(t.starts, 0, starts, 0, at);
        System.arraycopy(t.ends, 0, ends, 0, at);
        System.arraycopy(t.shards, 0, shards, 0, at);
        starts[at] = start;
        ends[at] = end;
        shards[at] = shard;
        System.arraycopy(t.starts, at, starts, at + 1, n - at);
        System.arraycopy(t.ends, at, ends, at + 1, n - at);
        System.arraycopy(t.shards, at, shards, at + 1, n - at);
        table = new Table(starts, ends, shards);
    }

    /** Removes entries {@code [from, to)}. Needs this object's monitor. */
    private void remove(int from, int to) {
        Table t = table;
        int n = t.starts.length;
        int k = to - from;
        long[] starts = new long[n - k];
        long[] ends = new long[n - k];
        int[] shards = new int[n - k];
        System.arraycopy(t.starts, 0, starts, 0, from);
        System.arraycopy(t.ends, 0, ends, 0, from);
        System.arraycopy(t.shards, 0, shards, 0, from);
        System.arraycopy(t.starts, to, starts, from, n - to);
        System.arraycopy(t.ends, to, ends, from, n - to);
        System.arraycopy(t.shards, to, shards, from, n - to);
        table = new Table(starts, ends, shards);
    }

    /**
     * The shard holding the region that contains {@code ptr}. Takes no lock and creates no
     * object.
     *
     * @param ptr an address
     * @return the shard's index, or -1 if no shard holds a region containing {@code ptr}
     */
    public int shardOf(long ptr) {
        Table t = table;
        long[] starts = t.starts;
        int lo = 0;
        int hi = starts.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] <= ptr) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        // hi: the last region starting at or before ptr.
        return hi >= 0 && ptr < t.ends[hi] ? t.shards[hi] : -1;
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
        return table.starts.length;
    }

    /** @return the cap on {@link #heldBytes()} */
    public long limitBytes() {
        return upstream.limitBytes();
    }
}
