/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * Marks the calling thread while an allocator calls its sub-allocator, so that a sub-allocator
 * can tell the allocator's calls from anybody else's ({@link SubAllocator#callingAllocator()}).
 * Each allocator sees its sub-allocator through one of these (under its {@link ViewPins}): every
 * region it obtains and every region it gives back passes through here, on whichever thread
 * makes the call (the allocator's, or the one that finds a region's last view collected).
 *
 * <p>Only region calls pass here, never an allocation or a free of a chunk: what it costs (a
 * thread-local read and two writes) is paid when a region is obtained or given back.
 */
final class AllocatorCalls extends ForwardingSubAllocator {

    /** The name of the allocator whose call is in progress on this thread; null outside one. */
    static final ThreadLocal<String> CALLER = new ThreadLocal<>();

    private final String allocator;

    /**
     * @param allocator the name a sub-allocator is told (the allocator's, or a sharded one's)
     * @param upstream the allocator's sub-allocator, as the user gave it
     */
    AllocatorCalls(String allocator, SubAllocator upstream) {
        super(upstream);
        this.allocator = allocator;
    }

    @Override
    public Block alloc(long alignment, long numBytes) {
        String outer = CALLER.get();
        CALLER.set(allocator);
        try {
            return upstream.alloc(alignment, numBytes);
        } finally {
            CALLER.set(outer);
        }
    }

    @Override
    public void free(long ptr, long numBytes) {
        String outer = CALLER.get();
        CALLER.set(allocator);
        try {
            upstream.free(ptr, numBytes);
        } finally {
            CALLER.set(outer);
        }
    }

    @Override
    public String toString() {
        return upstream.toString();
    }
}
