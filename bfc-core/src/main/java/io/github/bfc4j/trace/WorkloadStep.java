/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.Provenance;

/**
 * One call of a {@link WorkloadRunner} replay, as a {@link WorkloadListener} sees it. The runner
 * reuses one instance for every call (so that a replay creates no garbage per call): read it
 * inside {@link WorkloadListener#afterCall}, never keep it.
 */
public final class WorkloadStep {
    BfcAllocator allocator;
    long callIndex;
    long lineNumber;
    TraceEvent.Kind kind;
    long id;
    long bytes;
    long result;
    boolean outOfMemory;
    int regionsObtained;
    long bytesInUse;
    long poolBytes;
    long allocations;
    Provenance provenance;

    WorkloadStep() {
    }

    /**
     * The allocator being driven, e.g. to take a snapshot with
     * {@link BfcAllocator#forEachChunk}. Do not allocate or free through it.
     *
     * @return the allocator
     */
    public BfcAllocator allocator() {
        return allocator;
    }

    /**
     * The call's position among the trace's call lines.
     *
     * @return a 0-based index
     */
    public long callIndex() {
        return callIndex;
    }

    /**
     * The call's line in the trace.
     *
     * @return the 1-based line number
     */
    public long lineNumber() {
        return lineNumber;
    }

    /**
     * The kind of call.
     *
     * @return {@code ALLOC}, {@code FREE}, {@code FRONTIER} or {@code CLEAR_STATS}
     */
    public TraceEvent.Kind kind() {
        return kind;
    }

    /**
     * The trace id of an {@code alloc} or {@code free}.
     *
     * @return the id, 0 for other calls
     */
    public long id() {
        return id;
    }

    /**
     * The bytes an {@code alloc} requested.
     *
     * @return the requested bytes, 0 for other calls
     */
    public long bytes() {
        return bytes;
    }

    /**
     * The address an {@code alloc} returned (the address freed, for a {@code free}).
     *
     * @return the address, 0 for null or other calls
     */
    public long result() {
        return result;
    }

    /**
     * Who made an {@code alloc} in the program the trace was recorded from: the provenance its
     * {@code #@ alloc} line gives (docs/trace-format.md; the thread, time, annotation and
     * stack there). The replay's own thread and time say nothing of it.
     *
     * @return the trace's provenance of this call, or {@code null} for an {@code alloc} without
     *     one and for other calls
     */
    public Provenance provenance() {
        return provenance;
    }

    /**
     * Whether this call is an {@code alloc} of at least one byte that returned null.
     *
     * @return true for an out-of-memory failure
     */
    public boolean outOfMemory() {
        return outOfMemory;
    }

    /**
     * How many regions the allocator obtained from its sub-allocator during this call
     * ({@code Extend}).
     *
     * @return 0 on most calls
     */
    public int regionsObtained() {
        return regionsObtained;
    }

    /**
     * Bytes of chunks in use after the call.
     *
     * @return the allocator's {@code bytesInUse}
     */
    public long bytesInUse() {
        return bytesInUse;
    }

    /**
     * Bytes of regions held after the call (reserved from the sub-allocator).
     *
     * @return the allocator's {@code poolBytes}
     */
    public long poolBytes() {
        return poolBytes;
    }

    /**
     * Successful allocations so far, this one included. The allocator numbers its allocations
     * 1, 2, 3, ... in this order, so after a successful {@code alloc} this is its allocation id.
     *
     * @return the count of non-null {@code alloc} results
     */
    public long allocations() {
        return allocations;
    }
}
