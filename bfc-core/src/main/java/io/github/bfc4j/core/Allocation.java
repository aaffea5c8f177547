/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;
import org.bytedeco.javacpp.BytePointer;

/**
 * One allocation from {@link BfcAllocator#allocate(long)}: its address and sizes, views of its
 * memory, and {@link #close()} to give it back. Use it with try-with-resources:
 *
 * <pre>{@code
 * try (Allocation a = allocator.allocate(4096)) {
 *     ByteBuffer buf = a.asByteBuffer();
 *     buf.putLong(0, 42);
 * }
 * }</pre>
 *
 * <p>Thread-safe: {@link #close()} is idempotent and may race with itself and with the allocator's
 * close; a {@code close()} that returns has given the memory back (or found the allocator closed),
 * also where another thread's close of the handle was under way. After close (or a forced close of
 * the allocator), {@link #address()}, {@link #asByteBuffer()} and {@link #asPointer()} throw
 * {@link IllegalStateException}; the sizes and id stay readable. Only the handle frees its memory:
 * {@code deallocateRaw} of its address is refused. A {@code ByteBuffer} view made before close is
 * not (cannot be) invalidated: used after close, it reads and writes memory a later allocation may
 * own; a {@code BytePointer} view's own accessors throw {@link IllegalStateException} then. No
 * view ever reaches memory given back to the operating system: while a view is reachable, the
 * allocator's close, {@code emptyCache()} or garbage collection leaves its region with the
 * sub-allocator ({@link BfcAllocator#bytesHeldForViews()}). Do not keep views beyond the handle's
 * try-with-resources block.
 */
public final class Allocation implements AutoCloseable {

    private static final VarHandle STATE;
    private static final VarHandle WAITERS;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(Allocation.class, "state", int.class);
            WAITERS = l.findVarHandle(Allocation.class, "waiters", CloseWaiter.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Not closed. */
    private static final int OPEN = 0;
    /**
     * A close has begun: the handle is closed for its users, and its free is under way; open
     * again if that free fails and leaves the chunk this handle's.
     */
    private static final int CLOSING = 1;
    /** Closed for good: freed (or the allocator closed first). */
    private static final int CLOSED = 2;

    private final BfcAllocator allocator;
    /** The chunk's start: what is freed. */
    private final long chunkAddress;
    /** The first address handed out: the chunk's start, or past it for a larger alignment. */
    private final long address;
    private final long size;
    private final long requestedSize;
    private final long allocationId;
    /** Null unless leak detection is on. */
    private final LeakGuard guard;

    /** {@link #OPEN}, {@link #CLOSING} or {@link #CLOSED}; leaves CLOSING only in {@link #free()}. */
    private volatile int state;
    /**
     * The threads whose {@link #close()} waits for another thread's ({@link #CLOSING}), as a
     * stack pushed by them and taken whole by that close when it ends; null but then.
     */
    private volatile CloseWaiter waiters;

    Allocation(BfcAllocator allocator, long chunkAddress, long address, long size, long requestedSize,
            long allocationId, LeakGuard guard) {
        this.allocator = allocator;
        this.chunkAddress = chunkAddress;
        this.address = address;
        this.size = size;
        this.requestedSize = requestedSize;
        this.allocationId = allocationId;
        this.guard = guard;
    }

    /**
     * @return the start address: aligned as {@link BfcAllocator#allocate(long, long)} was asked
     *     (past the chunk's start, for an alignment above 256 bytes, by less than the alignment)
     * @throws IllegalStateException if closed
     */
    public long address() {
        checkOpen();
        return address;
    }

    /**
     * @return the bytes of the chunk reserved for it (upstream's {@code AllocatedSize}, a multiple
     *     of 256; with an alignment above 256, the padding in front of {@link #address()} too)
     */
    public long size() {
        return size;
    }

    /** @return the bytes asked for (upstream's {@code RequestedSize}) */
    public long requestedSize() {
        return requestedSize;
    }

    /** @return the allocator's id for it, unique within the allocator (upstream's {@code AllocationId}) */
    public long allocationId() {
        return allocationId;
    }

    /**
     * @return true once {@link #close()} was called, or the allocator's close has begun (by
     *     force, while this allocation was live): from then on the handle refuses to be used,
     *     even while that close is still giving regions back; false again if every
     *     {@code close()} of it threw, leaving it open
     */
    public boolean isClosed() {
        return state != OPEN || allocator.isClosed() || allocator.closeBegun();
    }

    /** @return the allocator it came from */
    public BfcAllocator allocator() {
        return allocator;
    }

    /**
     * A direct {@code ByteBuffer} over exactly the requested bytes, in native byte order, for
     * host memory. Each call returns a new buffer (own position and limit) over the same memory.
     * The buffer must not be used after {@link #close()}. While it (or a buffer made from it) is
     * reachable, its region's memory is not given back to the sub-allocator; with leak
     * detection on, the allocation is not reclaimed either.
     *
     * @return the view
     * @throws IllegalStateException if closed, if the memory is not host memory, or if the
     *     requested size exceeds what a {@code ByteBuffer} can span ({@code Integer.MAX_VALUE})
     */
    public ByteBuffer asByteBuffer() {
        checkViewable();
        if (requestedSize > Integer.MAX_VALUE) {
            throw new IllegalStateException("allocation #" + allocationId + " has " + requestedSize
                    + " bytes, more than a ByteBuffer can span (" + Integer.MAX_VALUE
                    + "): use asPointer(), or allocate in pieces of at most 2 GiB");
        }
        // Leak detection watches the buffer itself, so the buffers made from it must keep it
        // reachable: it is then their root, not a slice.
        ByteBuffer buffer;
        try {
            buffer = allocator.viewPins().buffer(address, (int) requestedSize, guard != null);
        } catch (IllegalStateException regionGone) {
            throw closedInstead(regionGone);
        }
        checkHeldInTime();
        watch(buffer);
        Reference.reachabilityFence(this);
        return buffer;
    }

    /**
     * A JavaCPP {@code BytePointer} over exactly the requested bytes (capacity and limit equal
     * the requested size), for host memory. It has no deallocator of its own: closing or
     * collecting it frees nothing. While it is reachable, it keeps this allocation from being
     * reclaimed by leak detection and its region's memory with the sub-allocator, as do the
     * buffers made from it ({@code asBuffer()}, {@code asByteBuffer()}) and the pointers of its
     * {@code getPointer(i)}; pointers JavaCPP derives from it by address
     * ({@code new BytePointer(p)}, casts to other pointer types) do neither. Its own accessors
     * check bounds where JavaCPP's check none: an index (from the position) past the requested
     * bytes, and a position, limit or capacity beyond them, throw
     * {@link IndexOutOfBoundsException} before the native call, and once this allocation is
     * closed they throw {@link IllegalStateException}; so does its {@code asByteBuffer()} where the
     * buffer would end more than {@code Integer.MAX_VALUE} bytes from the pointer's address
     * (JavaCPP would cut it there). JavaCPP's static functions
     * ({@code Pointer.memcpy}, {@code BytePointer.strcpy}, ...), pointers derived from it by
     * address and native code given its address check nothing.
     *
     * @return the view
     * @throws IllegalStateException if closed or if the memory is not host memory
     */
    public BytePointer asPointer() {
        checkViewable();
        ViewPins pins = allocator.viewPins();
        Object anchor;
        try {
            anchor = pins.anchor(address);
        } catch (IllegalStateException regionGone) {
            throw closedInstead(regionGone);
        }
        BytePointer pointer = MemoryViews.pointer(address, requestedSize, this, anchor, pins);
        checkHeldInTime();
        return pointer;
    }

    /**
     * The exception for a view whose region was gone when it came to hold it: a close (of this
     * handle, its region then given back by {@code emptyCache()}; or of the allocator, by force)
     * overtook the view after its first check. The handle's own "closed" exception, which says
     * what happened; {@code regionGone} if the handle is open after all.
     */
    private IllegalStateException closedInstead(IllegalStateException regionGone) {
        try {
            checkOpen();
        } catch (IllegalStateException closed) {
            return closed;
        }
        return regionGone;
    }

    /** Leak detection, when on, waits for {@code view} too. This allocation must be reachable. */
    void watch(Object view) {
        if (guard != null) {
            guard.watch(view);
        }
    }

    /**
     * Checks again, once a view holds its region, that this allocation is open: a close (of
     * this handle or of the allocator) that gave the region back before the view held it must
     * not let the view out.
     */
    private void checkHeldInTime() {
        checkOpen();
    }

    /**
     * Gives the memory back to the allocator. Idempotent and thread-safe; does nothing if the
     * allocator was already closed (by force). Frees only this allocation's own chunk. When it
     * returns, the memory is back: called while another thread's {@code close()} of this
     * handle is under way, it waits for that one to end, and if that one threw and left the
     * handle open, frees the memory itself.
     *
     * @throws IllegalStateException if called from inside the allocator's call of its
     *     sub-allocator's {@code alloc} or {@code free} (a sub-allocator must not free memory of
     *     the allocator it serves); the allocation stays open
     * @throws IllegalStateException if another thread's {@code close()} of this handle is under
     *     way and this thread holds a lock that close may wait for (inside a visitor of
     *     {@link BfcAllocator#forEachChunk}, of this allocator or of another shard of the same
     *     {@link ShardedBfcAllocator}): waiting for it there could deadlock; this call does
     *     nothing, and the other close decides
     * @throws OutOfMemoryError if the Java heap has no room for the free's bookkeeping (with a
     *     timing counter set); the allocation stays open, and a later {@code close()} frees it
     */
    @Override
    public void close() {
        final int s = state;
        if (s == CLOSED) {
            return;
        }
        allocator.refuseCallFromSubAllocator("Allocation.close()");
        if (s == OPEN && STATE.compareAndSet(this, OPEN, CLOSING)) {
            free();
        } else {
            closeAfterAnother();
        }
        Reference.reachabilityFence(this);
    }

    /**
     * The free of a {@link #close()} that moved the handle to {@link #CLOSING}; ends it
     * {@link #CLOSED}, or {@link #OPEN} if the free failed and left the chunk this handle's,
     * and wakes the closes that waited for it.
     */
    private void free() {
        int after = CLOSED;
        try {
            if (guard == null || guard.markClosed()) {
                try {
                    allocator.deallocateForHandle(chunkAddress, allocationId);
                } catch (Throwable t) {
                    // The free failed before it changed anything (its timestamp queue could not
                    // grow: out of heap); the chunk is still this handle's, and a raw free may not
                    // take it, so only this handle can free it: it stays open, for a later close.
                    if (stillOwned(t)) {
                        if (guard != null) {
                            guard.reopen();
                        }
                        after = OPEN;
                    }
                    throw t;
                }
            }
        } finally {
            // A volatile write, then a volatile read: a waiter pushes itself, then reads the
            // state (closeAfterAnother), so either it sees this state or this close sees it.
            state = after;
            if (waiters != null) {
                wakeWaiters();
            }
        }
    }

    /**
     * After the free threw {@code t}: whether the chunk is still this handle's. If that cannot
     * be told (the check threw too, suppressed by {@code t}), the handle is taken as closed: a
     * chunk still held then stays in use until the allocator's forced close.
     */
    private boolean stillOwned(Throwable t) {
        try {
            return allocator.ownedByHandle(chunkAddress, allocationId);
        } catch (Throwable e) {
            t.addSuppressed(e);
            return false;
        }
    }

    /**
     * {@link #close()} that found another thread's close under way, or lost the race to begin
     * one: waits for that close to end, and frees the memory itself if it left the handle open
     * (it threw). Allocates a node per wait: only closes that meet another one come here.
     */
    private void closeAfterAnother() {
        boolean interrupted = false;
        try {
            for (;;) {
                final int s = state;
                if (s == CLOSED) {
                    return;
                }
                if (s == OPEN) {
                    if (STATE.compareAndSet(this, OPEN, CLOSING)) {
                        free();
                        return;
                    }
                    continue;
                }
                // The other close may need the allocator's lock (its free, the check after a
                // failed free): a thread that holds it, or holds another shard's in a walk that
                // a reader of every shard may be waiting for, must not wait for that close.
                allocator.refuseWaitForHandleClose(this);
                CloseWaiter w = new CloseWaiter(Thread.currentThread());
                CloseWaiter top;
                do {
                    top = waiters;
                    w.next = top;
                } while (!WAITERS.compareAndSet(this, top, w));
                if (state == CLOSING) {
                    // One park per push: the close that ends takes the whole stack and unparks
                    // it; a wake-up for an earlier close (whose stack held this node), or a
                    // spurious one, comes back here and pushes again.
                    LockSupport.park(this);
                    if (Thread.interrupted()) {
                        interrupted = true;
                    }
                }
                w.thread = null;
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Unparks every waiter pushed so far, taking the stack. */
    private void wakeWaiters() {
        for (CloseWaiter w = (CloseWaiter) WAITERS.getAndSet(this, null); w != null; w = w.next) {
            final Thread t = w.thread;
            if (t != null) {
                LockSupport.unpark(t);
            }
        }
    }

    /** A thread whose {@link #close()} waits for another thread's close of the handle. */
    private static final class CloseWaiter {
        /** The waiting thread; null once it no longer waits. */
        volatile Thread thread;
        CloseWaiter next;

        CloseWaiter(Thread thread) {
            this.thread = thread;
        }
    }

    /** For messages: how the handle is named. */
    String described() {
        return "allocation #" + allocationId + " (" + requestedSize + " bytes at 0x" + Long.toHexString(address)
                + ") of allocator " + allocator.described();
    }

    /**
     * @throws IllegalStateException if this handle is closed, or its allocator has begun to
     *     close; also for the {@code BytePointer} view's accessors ({@link ViewPointer})
     */
    void checkOpen() {
        if (state != OPEN) {
            throw new IllegalStateException("allocation #" + allocationId + " (" + requestedSize
                    + " bytes at 0x" + Long.toHexString(address) + ") of allocator " + allocator.described()
                    + " is closed: it must not be used after close()");
        }
        if (allocator.closeBegun()) {
            throw new IllegalStateException("allocation #" + allocationId + " (" + requestedSize
                    + " bytes at 0x" + Long.toHexString(address) + ") is closed: allocator "
                    + allocator.described() + " was closed (ClosePolicy.FORCE) while it was live, and its"
                    + " memory was given back");
        }
    }

    private void checkViewable() {
        checkOpen();
        MemoryType type = allocator.getMemoryType();
        if (!type.isHost()) {
            throw new IllegalStateException("allocation #" + allocationId + " of allocator "
                    + allocator.described() + " is " + type + " memory: only host memory (HOST_PAGEABLE,"
                    + " HOST_PINNED) can be viewed from Java; use a host sub-allocator such as"
                    + " bfc-cpu's AlignedHostSubAllocator, or copy the data to the host first");
        }
    }

    @Override
    public String toString() {
        return "Allocation[#" + allocationId + ", " + requestedSize + " bytes (" + size + " reserved) at 0x"
                + Long.toHexString(address) + (isClosed() ? ", closed" : "") + ", allocator " + allocator.described() + "]";
    }
}
