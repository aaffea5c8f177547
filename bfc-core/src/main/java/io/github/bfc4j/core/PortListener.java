/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * What the port tells beyond upstream's statistics, at its event points: a region obtained
 * from or returned to the sub-allocator, an allocation, a free, an out-of-memory failure. The
 * JFR recorder and the out-of-memory reporter listen here; so would an event history or
 * per-chunk annotations.
 *
 * <p>Every method except {@link #outOfMemoryReported} runs with the allocator's lock held, at
 * the moment of the event, and sees the state through the {@link PortView}: it must not call
 * back into the allocator, block, or throw (if {@link #allocatedLocked} throws nonetheless, an
 * {@code OutOfMemoryError} say, the port gives the chunk back and the caller gets the exception;
 * if {@link #freedLocked} does, the chunk is freed all the same, and a close goes on to the end
 * before it throws). {@link #allocatedLocked} and {@link #freedLocked}
 * run on the allocate/free hot path and are called only if {@link #listensToCalls()} said so
 * when the listener was installed: a listener that does not is not called there at all. They
 * must create no objects in steady state.
 */
abstract class PortListener {

    /** Listens to nothing. */
    static final PortListener NONE = new PortListener() {
    };

    /**
     * One listener for several, in order.
     *
     * @param listeners the listeners
     * @return a listener telling each of them
     */
    static PortListener of(PortListener... listeners) {
        return listeners.length == 1 ? listeners[0] : new Fanout(listeners.clone());
    }

    /** @return whether {@link #allocatedLocked} and {@link #freedLocked} are wanted */
    boolean listensToCalls() {
        return false;
    }

    /**
     * A region was obtained from the sub-allocator ({@code Extend}), after the pool grew and the
     * region was registered (its one free chunk in its bin): if this throws, the region stays.
     *
     * @param ptr its address
     * @param bytes its size
     * @param requestBytes the rounded request that needed it
     * @param askedBytes the size the allocator asked the sub-allocator for first (above
     *     {@code bytes} if it failed and the allocator asked for less, below if it gave more)
     */
    void regionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
    }

    /**
     * A region is given back to the sub-allocator by garbage collection
     * ({@code DeallocateRegions}), after the pool shrank and just before the sub-allocator's
     * {@code free} (after which the range may be another allocator's at once).
     *
     * @param ptr its address
     * @param bytes its size
     * @param requestBytes the rounded request whose garbage collection gives it back; 0 when
     *     {@code emptyCache()} does
     */
    void regionReturnedLocked(long ptr, long bytes, long requestBytes) {
    }

    /**
     * A chunk was allocated ({@code FindChunkPtr}), after the statistics were updated.
     *
     * @param h its handle: its address, sizes and allocation id are the allocation's
     */
    void allocatedLocked(int h) {
    }

    /**
     * A chunk in use is being freed ({@code DeallocateRawInternal}), before it is marked free.
     *
     * @param h its handle: its address, sizes and allocation id are still the allocation's
     */
    void freedLocked(int h) {
    }

    /**
     * A chunk just freed ({@link #freedLocked}) was stamped by the timing counter
     * ({@code MarkFree}'s {@code freed_at_count}) and waits, not coalesced, until its free is
     * safe. Called only with a timing counter set, and only if {@link #listensToCalls()}.
     *
     * @param h its handle: its stamp is set, its allocation id is -1
     */
    void stampedLocked(int h) {
    }

    /**
     * Read without the lock, by {@code setSafeFrontier} once it moved the frontier: whether
     * {@link #frontierAdvancedLocked} is wanted now. False unless a stamped free waits for the
     * frontier; set (a volatile write) before the listener reads the frontier, so that a frontier
     * moved at the same time is seen by one side or the other.
     *
     * @return whether to take the lock and call {@link #frontierAdvancedLocked}
     */
    boolean awaitsFrontier() {
        return false;
    }

    /**
     * {@code SetSafeFrontier} moved the safe frontier (only called when {@link #awaitsFrontier()}
     * said so): the stamped frees below it are safe now.
     *
     * @param frontier the safe frontier now (unsigned)
     */
    void frontierAdvancedLocked(long frontier) {
    }

    /**
     * The allocator is closing ({@code ~BFCAllocator}): every region is about to be given back,
     * and the allocations still live have been freed ({@link #freedLocked}, each). The regions
     * are still there, through the view.
     */
    void closingLocked() {
    }

    /**
     * An allocation failed: the last attempt of an {@code AllocateRaw} found no memory, and
     * nothing has changed since. Where upstream writes its memory map
     * ({@code MaybeWriteMemoryMap}) and logs its memory dump.
     *
     * @param numBytes the bytes asked for
     * @param roundedBytes the request as the allocator rounds it ({@code numBytes} itself when
     *     it is above {@link BfcPort#MAX_ALLOCATION_BYTES})
     * @param dumpLogOnFailure upstream's {@code dump_log_on_failure}: log the memory dump
     */
    void outOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
    }

    /**
     * The failed {@code AllocateRaw} of {@link #outOfMemoryLocked} is about to return 0, in the
     * same thread, with the lock released: for the slow work that should not hold it (files).
     *
     * @param numBytes the bytes asked for
     */
    void outOfMemoryReported(long numBytes) {
    }

    /** Tells several listeners, in order. */
    private static final class Fanout extends PortListener {
        private final PortListener[] all;
        private final PortListener[] calls;

        Fanout(PortListener[] all) {
            this.all = all;
            int n = 0;
            for (PortListener l : all) {
                n += l.listensToCalls() ? 1 : 0;
            }
            this.calls = new PortListener[n];
            n = 0;
            for (PortListener l : all) {
                if (l.listensToCalls()) {
                    calls[n++] = l;
                }
            }
        }

        @Override
        boolean listensToCalls() {
            return calls.length != 0;
        }

        @Override
        void regionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
            for (PortListener l : all) {
                l.regionObtainedLocked(ptr, bytes, requestBytes, askedBytes);
            }
        }

        @Override
        void regionReturnedLocked(long ptr, long bytes, long requestBytes) {
            for (PortListener l : all) {
                l.regionReturnedLocked(ptr, bytes, requestBytes);
            }
        }

        @Override
        void allocatedLocked(int h) {
            for (PortListener l : calls) {
                l.allocatedLocked(h);
            }
        }

        @Override
        void freedLocked(int h) {
            for (PortListener l : calls) {
                l.freedLocked(h);
            }
        }

        @Override
        void stampedLocked(int h) {
            for (PortListener l : calls) {
                l.stampedLocked(h);
            }
        }

        @Override
        boolean awaitsFrontier() {
            for (PortListener l : calls) {
                if (l.awaitsFrontier()) {
                    return true;
                }
            }
            return false;
        }

        @Override
        void frontierAdvancedLocked(long frontier) {
            for (PortListener l : calls) {
                l.frontierAdvancedLocked(frontier);
            }
        }

        @Override
        void closingLocked() {
            for (PortListener l : all) {
                l.closingLocked();
            }
        }

        @Override
        void outOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
            for (PortListener l : all) {
                l.outOfMemoryLocked(numBytes, roundedBytes, dumpLogOnFailure);
            }
        }

        @Override
        void outOfMemoryReported(long numBytes) {
            for (PortListener l : all) {
                l.outOfMemoryReported(numBytes);
            }
        }
    }
}
