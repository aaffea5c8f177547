/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * One event of an allocator's recorded history ({@link BfcAllocator#recordHistory}).
 *
 * @param kind what happened
 * @param address the chunk's or region's address; 0 for {@link Kind#OUT_OF_MEMORY}
 * @param bytes the chunk's size ({@code ALLOC}, {@code FREE}, {@code FREE_COMPLETED}), the region's size
 *     ({@code REGION_ALLOC}, {@code REGION_FREE}), or the request rounded up to 256 bytes
 *     ({@code OUT_OF_MEMORY})
 * @param requestedBytes the bytes the caller asked for ({@code ALLOC}, {@code FREE},
 *     {@code FREE_COMPLETED}, {@code OUT_OF_MEMORY}); for {@code REGION_ALLOC} the bytes the allocator first asked the
 *     sub-allocator for (more than {@code bytes} if the sub-allocator failed and it asked for
 *     less, less if the sub-allocator gave more than asked); for {@code REGION_FREE} the
 *     rounded request whose garbage collection gave the region back, 0 when {@code emptyCache()}
 *     or {@code close()} did
 * @param alignment the alignment the caller asked for ({@code ALLOC}, {@code OUT_OF_MEMORY}),
 *     0 otherwise
 * @param allocationId the allocation's id ({@code ALLOC}, {@code FREE}, {@code FREE_COMPLETED}), -1
 *     otherwise
 * @param availableBytes for {@code OUT_OF_MEMORY}: the bytes the sub-allocator could still have
 *     given under the memory limit ({@code limit - reserved}); -1 otherwise
 * @param provenance when, on which thread, under which annotation and from which stack
 * @param sequence the event's place in the one order of every event recorded in the process, by
 *     any allocator: a number that grows strictly from each event to the next, in the order
 *     they happened (an event that happened before another, through a lock or a range given
 *     back by one allocator and obtained by another, has the smaller number, even within one
 *     microsecond), and in the order of their times; -1 if not known (an event made elsewhere)
 */
public record MemoryEvent(Kind kind, long address, long bytes, long requestedBytes, long alignment,
        long allocationId, long availableBytes, Provenance provenance, long sequence) {

    /** What an event records. */
    public enum Kind {
        /** An allocation succeeded. */
        ALLOC,
        /**
         * An allocation was freed: its chunk is free at once, or, with a timing counter
         * ({@link BfcAllocator#setTimingCounter}), stamped and not yet safe until the safe
         * frontier passes its stamp ({@link #FREE_COMPLETED}).
         */
        FREE,
        /** A region was obtained from the sub-allocator (upstream's {@code Extend}). */
        REGION_ALLOC,
        /** A region was given back: garbage collection ({@code DeallocateRegions}) or close. */
        REGION_FREE,
        /** An allocation failed (the raw API returned 0), after any retry. */
        OUT_OF_MEMORY,
        /**
         * A free stamped by the timing counter became safe: the allocator learnt that the safe
         * frontier passed its stamp ({@link BfcAllocator#setSafeFrontier}, or the free itself
         * when its stamp was already below the frontier). Recorded, on the thread that moved
         * the frontier, for a free recorded with its allocation while the chunk is still the
         * one that free left; not for one whose chunk was allocated again, or merged with
         * another waiting chunk, before (PyTorch's {@code free_completed}). Its address, sizes
         * and allocation id are the free's.
         */
        FREE_COMPLETED
    }

    /**
     * Checks the event.
     *
     * @throws NullPointerException if {@code kind} or {@code provenance} is null
     */
    public MemoryEvent {
        Objects.requireNonNull(kind, "kind=null (expected: a MemoryEvent.Kind)");
        Objects.requireNonNull(provenance, "provenance=null (expected: a Provenance, Provenance.UNKNOWN for none)");
    }

    /**
     * An event whose {@link #sequence()} is not known (-1): ordered among others by its time.
     *
     * @param kind what happened
     * @param address the chunk's or region's address
     * @param bytes the chunk's or region's size, or the rounded request
     * @param requestedBytes the bytes the caller asked for
     * @param alignment the alignment the caller asked for
     * @param allocationId the allocation's id
     * @param availableBytes for {@code OUT_OF_MEMORY}: the bytes still available under the limit
     * @param provenance when, on which thread, under which annotation and from which stack
     * @throws NullPointerException if {@code kind} or {@code provenance} is null
     */
    public MemoryEvent(Kind kind, long address, long bytes, long requestedBytes, long alignment, long allocationId,
            long availableBytes, Provenance provenance) {
        this(kind, address, bytes, requestedBytes, alignment, allocationId, availableBytes, provenance, -1);
    }
}
