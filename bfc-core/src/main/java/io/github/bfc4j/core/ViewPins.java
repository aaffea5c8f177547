/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.System.Logger.Level;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Keeps memory that a Java view can still reach from going back to the sub-allocator: the
 * allocator's sub-allocator, seen through this, holds back the free of a region while a
 * {@code ByteBuffer} or {@code BytePointer} view of memory in it is reachable, and passes it
 * on once the last such view has been collected. So a view used after its allocator's close,
 * or after the garbage collection of its region, reads and writes memory that is still
 * mapped, never memory the operating system took back (which would crash the JVM). A
 * {@link ShardedBfcAllocator} puts one under the cap its shards share, and they pin there.
 *
 * <p>How a view holds its region: each region has <em>anchors</em>, direct buffers over
 * windows of it (of up to 2 GiB, one every 1 GiB), made on demand and held here only weakly.
 * A {@code ByteBuffer} view is a slice of the window's anchor, and a slice keeps the buffer it
 * was cut from reachable; a {@code BytePointer} view holds the anchor in a field. A
 * {@link BfcCleaner} tells this object when an anchor has become unreachable, that is when no
 * view of its window is left; a region with no anchor left may go. So a view costs a slice,
 * and the cleaner sees one object per window, not one per view.
 *
 * <p>DEVIATION(port): upstream's views are raw pointers (docs/deviations.md). The allocator's
 * bookkeeping is upstream's either way (the region leaves the pool at once, the statistics and
 * events say so); only the call to the sub-allocator's {@code free} waits.
 *
 * <p>Its map of the blocks handed out is keyed by address, so it refuses a block that it
 * cannot map (a broken sub-allocator's): one that overlaps a block handed out and not yet freed
 * (given back by the allocator or not), or that does not lie between address 1 and
 * 2<sup>63</sup> - 1. That allocation then throws, and nothing changes (docs/deviations.md).
 *
 * <p>Every call to the sub-allocator underneath is made under this object's monitor: the
 * allocator's (under its lock) and the held-back frees (from the cleaner's thread). Lock
 * order: the allocator's lock, then this monitor, then whatever the sub-allocator takes.
 */
final class ViewPins extends ForwardingSubAllocator {

    private static final System.Logger LOG = System.getLogger(ViewPins.class.getName());

    /** A window starts every this many bytes of a region. */
    private static final long WINDOW_STEP = 1L << 30;

    /** One block the sub-allocator handed out. Guarded by the {@link ViewPins}' monitor. */
    private static final class Region {
        final long start;
        final long bytes;
        /** The anchor of each window, weakly; null until a view of it is made. */
        WeakReference<ByteBuffer>[] windows;
        /** Anchors (and other objects pinned to it) not yet found unreachable. */
        int anchors;

        Region(long start, long bytes) {
            this.start = start;
            this.bytes = bytes;
        }
    }

    /** The regions handed out and not yet freed upstream, by start. Guarded by this. */
    private final TreeMap<Long, Region> regions = new TreeMap<>();
    /** Frees the allocator made that wait for anchors: {@code [ptr, bytes]} each. Guarded by this. */
    private final List<long[]> heldBack = new ArrayList<>();
    /**
     * The thread inside a call of the sub-allocator underneath, or null: written under this
     * object's monitor, read by any thread, which compares it with itself only.
     */
    private volatile Thread caller;

    /**
     * A walk of an allocator's chunks in progress ({@link BfcAllocator#forEachChunk}): its
     * thread holds that allocator's lock while the visitor runs.
     */
    record Walk(Thread thread, String allocator) {
    }

    /**
     * The walks in progress of the allocators that pin here (the shards of a sharded allocator
     * share this object), innermost last. Guarded by itself, never by this object's monitor.
     */
    private final List<Walk> walks = new ArrayList<>();
    /** {@code walks.size()}, read without a lock by each lock of an allocator: 0 but in a walk. */
    private volatile int walking;

    ViewPins(SubAllocator upstream) {
        super(upstream);
    }

    /**
     * Notes that the calling thread walks the chunks of {@code allocator} (under its lock) until
     * {@link #walkEnds}.
     *
     * @param allocator how messages name the allocator walked
     */
    Walk walkBegins(String allocator) {
        Walk w = new Walk(Thread.currentThread(), allocator);
        synchronized (walks) {
            walks.add(w);
            walking = walks.size();
        }
        return w;
    }

    /** Ends the walk {@link #walkBegins} noted. */
    void walkEnds(Walk w) {
        synchronized (walks) {
            for (int i = walks.size() - 1; i >= 0; i--) {
                if (walks.get(i) == w) {
                    walks.remove(i);
                    break;
                }
            }
            walking = walks.size();
        }
    }

    /** @return whether any thread walks chunks of an allocator that pins here (a volatile read) */
    boolean walkOn() {
        return walking != 0;
    }

    /**
     * @return how messages name the allocator whose chunks the calling thread walks (the
     *     innermost walk), or null if it walks none
     */
    String walkedByCurrentThread() {
        if (walking == 0) {
            return null;
        }
        Thread t = Thread.currentThread();
        synchronized (walks) {
            for (int i = walks.size() - 1; i >= 0; i--) {
                if (walks.get(i).thread() == t) {
                    return walks.get(i).allocator();
                }
            }
        }
        return null;
    }

    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        Block b = allocUpstream(alignment, numBytes);
        if (b != null) {
            String wrong = unmappable(b);
            if (wrong != null) {
                // DEVIATION(port): upstream would hand out the same memory twice.
                throw new IllegalStateException("sub-allocator " + upstream + " handed out the block 0x"
                        + Long.toHexString(b.ptr()) + " of " + b.bytes() + " bytes, which " + wrong + ". A"
                        + " SubAllocator must hand out disjoint blocks at addresses from 1 to 2^63 - 1; the"
                        + " allocation failed, and the allocator's regions, chunks and statistics are"
                        + " unchanged. The block was not given back: freeing it could free memory in use.");
            }
            regions.put(b.ptr(), new Region(b.ptr(), b.bytes()));
        }
        return b;
    }

    /** Why {@code b} cannot be mapped next to the blocks held, or null if it can. */
    private String unmappable(Block b) {
        if (b.ptr() < 0 || b.bytes() > Long.MAX_VALUE - b.ptr()) {
            return "does not lie between address 1 and 2^63 - 1";
        }
        Map.Entry<Long, Region> e = regions.floorEntry(b.ptr() + b.bytes() - 1);
        if (e != null && e.getValue().start + e.getValue().bytes > b.ptr()) {
            Region r = e.getValue();
            return "overlaps the block 0x" + Long.toHexString(r.start) + " of " + r.bytes
                    + " bytes that it handed out before and that was not freed";
        }
        return null;
    }

    /** Frees the range now, or once no view of memory in it is reachable. */
    @Override
    public synchronized void free(long ptr, long numBytes) {
        if (anchored(ptr, numBytes)) {
            heldBack.add(new long[] {ptr, numBytes});
            LOG.log(Level.DEBUG, () -> "the free of region 0x" + Long.toHexString(ptr) + " (" + numBytes
                    + " bytes) waits: a view of memory in it is still reachable");
            return;
        }
        try {
            freeUpstream(ptr, numBytes);
        } finally {
            within(ptr, numBytes).clear(); // the allocator forgets the region even if the free failed
        }
    }

    /** The sub-allocator's {@code alloc}, marked as its call. Needs this object's monitor. */
    private Block allocUpstream(long alignment, long numBytes) {
        Thread outer = caller;
        caller = Thread.currentThread();
        try {
            return upstream.alloc(alignment, numBytes);
        } finally {
            caller = outer;
        }
    }

    /** The sub-allocator's {@code free}, marked as its call. Needs this object's monitor. */
    private void freeUpstream(long ptr, long numBytes) {
        Thread outer = caller;
        caller = Thread.currentThread();
        try {
            upstream.free(ptr, numBytes);
        } finally {
            caller = outer;
        }
    }

    /**
     * Refuses a call that would change an allocator served by this sub-allocator (allocate,
     * free, empty, close, check) when it comes from inside the sub-allocator's own {@code alloc}
     * or {@code free} on this thread. The allocator is then between two states (a region half
     * obtained or half given back, which its lock, reentrant, does not keep out), or, for a free
     * that waited for views, this thread holds the monitor that an allocator's thread needs while
     * it holds the allocator's lock, so taking that lock here could deadlock; likewise another
     * shard's lock under a shard's region call. Costs a volatile read.
     *
     * @param allocator how the message names the allocator, after the word "allocator":
     *     {@code 'NAME'}, or {@code 'SHARDED' (shard I of N)} for a shard
     * @param call what was called, for the message
     * @throws IllegalStateException if the calling thread is inside such a call
     */
    void refuseCallFromSubAllocator(String allocator, String call) {
        // DEVIATION(port): upstream's mutex is not reentrant, so such a call deadlocks there
        // (docs/deviations.md #31).
        if (callerIsCurrentThread()) {
            throw callFromSubAllocator(allocator, call);
        }
    }

    /** @return whether the calling thread is inside a call of the sub-allocator underneath */
    boolean callerIsCurrentThread() {
        return caller == Thread.currentThread();
    }

    private static IllegalStateException callFromSubAllocator(String allocator, String call) {
        return new IllegalStateException(call + " on allocator " + allocator + " was called from inside its"
                + " sub-allocator's alloc or free, which the allocator is making on this thread: a"
                + " SubAllocator must not allocate, free, empty, check or close the allocator it serves (or"
                + " another shard of it); it may read its figures (getStats()), except from the free of a region"
                + " that waited for views (on the cleaner's thread). Nothing was done.");
    }

    /**
     * A native-order buffer over {@code [address, address + bytes)} that holds its region. The
     * caller checks afterwards that the memory was not given back before this call.
     *
     * @param root whether the buffer must be the root of the buffers made from it (an anchor
     *     of its own, so that they keep it reachable); else it is a slice of a shared anchor,
     *     and they keep that anchor reachable instead (a slice of a slice refers to the root)
     * @throws IllegalStateException if no region holds {@code address} (it was freed)
     */
    ByteBuffer buffer(long address, int bytes, boolean root) {
        ByteBuffer anchor;
        long anchorStart;
        synchronized (this) {
            Region r = regionOf(address);
            int k = (int) ((address - r.start) / WINDOW_STEP);
            anchorStart = r.start + k * WINDOW_STEP;
            if (root || address + bytes > anchorStart + windowBytes(r, k)) {
                // A root, or a view of more than 1 GiB across two windows: an anchor of its own.
                return pinned(MemoryViews.byteBuffer(address, bytes), r);
            }
            anchor = anchor(r, k);
        }
        int offset = (int) (address - anchorStart);
        return anchor.duplicate().position(offset).limit(offset + bytes).slice().order(ByteOrder.nativeOrder());
    }

    /**
     * An object that holds the region of {@code address} while it is reachable: for a view
     * that keeps it in a field.
     *
     * @throws IllegalStateException if no region holds {@code address} (it was freed)
     */
    synchronized Object anchor(long address) {
        Region r = regionOf(address);
        return anchor(r, (int) ((address - r.start) / WINDOW_STEP));
    }

    /**
     * Holds the region of {@code address} while {@code view} is reachable: for views made
     * elsewhere (a buffer JavaCPP makes from a pointer view, which holds the region meanwhile).
     *
     * @throws IllegalStateException if no region holds {@code address} (it was freed)
     */
    synchronized void pin(Object view, long address) {
        pinned(view, regionOf(address));
    }

    /** Bytes of regions given back by the allocator whose free waits for views. */
    synchronized long heldBackBytes() {
        long sum = 0;
        for (long[] range : heldBack) {
            sum += range[1];
        }
        return sum;
    }

    private Region regionOf(long address) {
        Map.Entry<Long, Region> e = regions.floorEntry(address);
        if (e == null || address >= e.getValue().start + e.getValue().bytes) {
            throw new IllegalStateException("0x" + Long.toHexString(address) + " lies in no region the"
                    + " allocator holds: its memory was given back");
        }
        return e.getValue();
    }

    private static int windowBytes(Region r, int k) {
        return (int) Math.min(Integer.MAX_VALUE, r.bytes - k * WINDOW_STEP);
    }

    @SuppressWarnings({"unchecked", "rawtypes"}) // an array of a generic type is created raw
    private ByteBuffer anchor(Region r, int k) {
        if (r.windows == null) {
            r.windows = new WeakReference[(int) ((r.bytes - 1) / WINDOW_STEP) + 1];
        }
        WeakReference<ByteBuffer> ref = r.windows[k];
        ByteBuffer anchor = ref == null ? null : ref.get();
        if (anchor == null) {
            anchor = pinned(MemoryViews.byteBuffer(r.start + k * WINDOW_STEP, windowBytes(r, k)), r);
            r.windows[k] = new WeakReference<>(anchor);
        }
        return anchor;
    }

    private <T> T pinned(T object, Region r) {
        BfcCleaner.CLEANER.register(object, new Unpin(this, r));
        r.anchors++;
        return object;
    }

    private Collection<Region> within(long ptr, long numBytes) {
        return regions.subMap(ptr, ptr + numBytes).values();
    }

    private boolean anchored(long ptr, long numBytes) {
        for (Region r : within(ptr, numBytes)) {
            if (r.anchors > 0) {
                return true;
            }
        }
        return false;
    }

    /** An anchor of {@code r} became unreachable: frees the held-back ranges nothing anchors any more. */
    private synchronized void unpin(Region r) {
        if (--r.anchors > 0) {
            return;
        }
        for (int i = heldBack.size() - 1; i >= 0; i--) {
            long[] range = heldBack.get(i);
            if (anchored(range[0], range[1])) {
                continue;
            }
            heldBack.remove(i);
            within(range[0], range[1]).clear();
            try {
                freeUpstream(range[0], range[1]);
            } catch (RuntimeException | Error e) {
                // On the cleaner's thread, whose Cleaner would drop it unseen; the next ranges
                // are freed all the same.
                LOG.log(Level.ERROR, "could not free region 0x" + Long.toHexString(range[0]) + " (" + range[1]
                        + " bytes) once its last view was collected", e);
            }
        }
    }

    @Override
    public String toString() {
        return upstream.toString();
    }

    /** The cleaner's action for one anchor; holds no reference to it. */
    private record Unpin(ViewPins pins, Region region) implements Runnable {
        @Override
        public void run() {
            pins.unpin(region);
        }
    }
}
