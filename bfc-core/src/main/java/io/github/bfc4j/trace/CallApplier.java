/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.internal.ReplayedCall;
import java.util.function.LongSupplier;

/**
 * Makes the call of a trace's call line on an allocator, as the reference made it: {@code alloc}
 * with the line's alignment and {@code freed_before} (as the attributes' {@code freedByFunc},
 * none for 0), never retrying; {@code free} of the address that the line's id got (0, a no-op,
 * if that allocation returned null); {@code frontier}; {@code clear_stats}. It remembers the
 * address each id got; an {@code alloc} with a provenance (docs/trace-format.md) is made inside
 * a {@link MemoryAnnotation} giving its annotation and stack, so that an allocator recording
 * its history or annotations records them. From the first {@code alloc} whose provenance gives
 * a time on, every call is made at the latest time the trace gave ({@link ReplayedCall}), so
 * that a history records the times of the run the trace recorded, not the replay's (the
 * history gives the calls made before that first time the first time too); an {@code alloc}
 * on the thread its provenance names, every other call on no thread known (the replaying
 * thread's name says nothing of the recorded run).
 * {@link TraceReplayer} and {@link WorkloadRunner} both
 * make their calls here. Creates no objects per call without provenance. One per replay.
 */
final class CallApplier {

    /** A {@code freed_by_func} that answers the current line's {@code freed_before}. */
    private static final class FreedBefore implements LongSupplier {
        long value;

        @Override
        public long getAsLong() {
            return value;
        }
    }

    private final IdTable ptrs = new IdTable();
    private final FreedBefore freedBefore = new FreedBefore();
    private final AllocationAttributes freedBeforeAttributes = new AllocationAttributes(false, freedBefore);
    /** The latest time (epoch microseconds) an {@code alloc}'s provenance gave, -1 before any. */
    private long recordedTime = -1;

    /**
     * Makes the call of one call line.
     *
     * @param a the allocator
     * @param e an {@code alloc}, {@code free}, {@code frontier} or {@code clear_stats} line
     * @return for {@code alloc} the address it returned (0 for null), for {@code free} the
     *     address it freed, else 0
     * @throws IllegalArgumentException if the line is not a call
     */
    long apply(BfcAllocator a, TraceEvent e) {
        final Provenance p = e.kind() == TraceEvent.Kind.ALLOC ? e.provenance() : null;
        if (p != null && p.timeMicros() >= 0) {
            recordedTime = p.timeMicros();
        }
        ReplayedCall.begin(recordedTime, p == null ? null : p.thread());
        try {
            return call(a, e);
        } finally {
            ReplayedCall.end();
        }
    }

    private long call(BfcAllocator a, TraceEvent e) {
        switch (e.kind()) {
            case ALLOC: {
                AllocationAttributes attributes = AllocationAttributes.NO_RETRY;
                if (e.freedBefore() != 0) {
                    freedBefore.value = e.freedBefore();
                    attributes = freedBeforeAttributes;
                }
                final Provenance p = e.provenance();
                long ptr;
                if (p == null || p.annotation() == null && p.stack().isEmpty()) {
                    ptr = a.allocateRaw(e.alignment(), e.bytes(), attributes);
                } else {
                    // The trace's annotation and stack go with the call, as if it were made there.
                    try (MemoryAnnotation scope = MemoryAnnotation.push(p.annotation(), p.step(), p.stack())) {
                        ptr = a.allocateRaw(e.alignment(), e.bytes(), attributes);
                    }
                }
                ptrs.put(e.id(), ptr);
                return ptr;
            }
            case FREE: {
                long ptr = ptrs.get(e.id());
                a.deallocateRaw(ptr);
                return ptr;
            }
            case FRONTIER:
                a.setSafeFrontier(e.count());
                return 0;
            case CLEAR_STATS:
                a.clearStats();
                return 0;
            default:
                throw new IllegalArgumentException("line " + e.lineNumber() + " (" + e + ") is not a call");
        }
    }

    /**
     * @param id an allocation's id in the trace
     * @return the address that id's {@code alloc} returned (0 if none, or null)
     */
    long ptr(long id) {
        return ptrs.get(id);
    }
}
