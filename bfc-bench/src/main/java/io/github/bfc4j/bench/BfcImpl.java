/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.TraceHeader;

/** bfc4j's {@link BfcAllocator} on the sim sub-allocator (memory is never touched). */
final class BfcImpl extends AddressSlots {

    final BfcAllocator allocator;

    private BfcImpl(BfcAllocator allocator, int slots) {
        super(slots);
        this.allocator = allocator;
    }

    /** An allocator configured as the trace's header says. */
    static BfcImpl forTrace(int slots, BenchTrace trace) {
        TraceHeader h = trace.header;
        SimSubAllocator sim = new SimSubAllocator(h.simBase(), h.simCapacity(), h.simGap(), h.simCoalescing());
        return new BfcImpl(new BfcAllocator(sim, h.memoryLimit(), "bench", h.bfcOptions()), slots);
    }

    /** A 1 GiB allocator without growth (one region), on a 2 GiB sim address space. */
    static BfcImpl plain(int slots) {
        SimSubAllocator sim = new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true);
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(false).build();
        return new BfcImpl(new BfcAllocator(sim, 1L << 30, "bench", opts), slots);
    }

    @Override
    long allocate(long bytes, long alignment) {
        return allocator.allocateRaw(alignment, bytes, AllocationAttributes.NO_RETRY);
    }

    @Override
    void deallocate(long ptr) {
        allocator.deallocateRaw(ptr);
    }

    @Override
    void closeAllocator() {
        allocator.close();
    }
}
