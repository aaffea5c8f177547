/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkWalk;
import io.github.bfc4j.core.jfr.AllocationSampleEvent;
import io.github.bfc4j.core.jfr.RegionExtendEvent;
import io.github.bfc4j.core.jfr.RegionFreeEvent;

/**
 * Emits the allocator's JFR events (docs/observability.md) from the port's event points: a
 * {@link RegionExtendEvent} per region obtained, a {@link RegionFreeEvent} per region given back
 * by garbage collection or {@code emptyCache()}, and an {@link AllocationSampleEvent} for one allocation in
 * {@link BfcOptions#jfrAllocationSamplePeriod()}. With the period 0 (the default) it does not
 * listen to allocations at all, so the hot path does not call it. Each event costs nothing
 * beyond its creation unless a recording enables it. (The out-of-memory event is the
 * {@link OutOfMemoryReporter}'s.)
 */
final class JfrRecorder extends PortListener {

    private final PortView view;
    private final int allocationSamplePeriod;

    /** Guarded by the lock: looks at the sampled chunk. */
    private final ChunkWalk chunk;

    JfrRecorder(PortView view, int allocationSamplePeriod) {
        this.view = view;
        this.allocationSamplePeriod = allocationSamplePeriod;
        this.chunk = view.walk();
    }

    @Override
    boolean listensToCalls() {
        return allocationSamplePeriod != 0;
    }

    @Override
    void regionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
        RegionExtendEvent event = new RegionExtendEvent();
        if (event.isEnabled()) {
            event.allocator = view.userName();
            event.shard = view.shardIndex();
            event.ptr = ptr;
            event.bytes = bytes;
            event.requestBytes = requestBytes;
            event.poolBytes = view.poolBytes();
            event.commit();
        }
    }

    @Override
    void regionReturnedLocked(long ptr, long bytes, long requestBytes) {
        RegionFreeEvent event = new RegionFreeEvent();
        if (event.isEnabled()) {
            event.allocator = view.userName();
            event.shard = view.shardIndex();
            event.ptr = ptr;
            event.bytes = bytes;
            event.poolBytes = view.poolBytes();
            event.commit();
        }
    }

    /** Samples one allocation in {@code allocationSamplePeriod}. */
    @Override
    void allocatedLocked(int h) {
        if (view.counters().allocationsTotal() % allocationSamplePeriod != 0) {
            return;
        }
        AllocationSampleEvent event = new AllocationSampleEvent();
        if (event.isEnabled()) {
            final ChunkWalk c = chunk.at(h);
            event.allocator = view.userName();
            event.shard = view.shardIndex();
            event.ptr = c.ptr();
            event.requestedBytes = c.requestedSize();
            event.chunkBytes = c.size();
            event.allocationId = c.allocationId();
            event.bytesInUse = view.bytesInUse();
            event.annotation = currentAnnotation();
            event.commit();
        }
    }

    /**
     * The innermost {@link MemoryAnnotation} open on the calling thread, named as the holders
     * name it ({@code "name (step n)"}, or {@code "step n"} for one that only gives a stack and
     * a step outside any named one), or null: none open, or one that only gives a stack outside
     * any named one and no step; for the events' {@code annotation} field.
     */
    static String currentAnnotation() {
        MemoryAnnotation a = MemoryAnnotation.current();
        return a == null ? null : Provenance.annotationLabel(a.name(), a.step());
    }
}
