/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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

    /**
     * The name of the allocator whose call is in progress on this thread (its {@link #token});
     * null outside one.
     */
    static final ThreadLocal<String> CALLER = new ThreadLocal<>();

    /**
     * Every allocator's token, by name, held weakly: a sub-allocator keeps the token of each
     * region's owner as long as it keeps the region. Guarded by itself.
     */
    private static final Map<String, List<WeakReference<String>>> TOKENS = new HashMap<>();

    /**
     * The name a sub-allocator is told: a String of this allocator's own, so that two allocators
     * of one name are told apart by identity ({@link SubAllocator#refuseIfAllocatorHolds}).
     */
    private final String allocator;

    /**
     * @param allocator the name a sub-allocator is told (the allocator's, or a sharded one's)
     * @param upstream the allocator's sub-allocator, as the user gave it
     */
    AllocatorCalls(String allocator, SubAllocator upstream) {
        super(upstream);
        this.allocator = token(allocator);
    }

    /** A new String equal to {@code name}, recorded as an allocator's token. */
    @SuppressWarnings("StringOperationCanBeSimplified") // its identity is the point
    private static String token(String name) {
        String token = new String(name);
        synchronized (TOKENS) {
            // Allocators are made rarely: drop the tokens collected and the names left without one.
            TOKENS.values().removeIf(l -> {
                l.removeIf(r -> r.get() == null);
                return l.isEmpty();
            });
            TOKENS.computeIfAbsent(name, k -> new ArrayList<>(1)).add(new WeakReference<>(token));
        }
        return token;
    }

    /**
     * Whether {@code name} is some allocator's token (the very String a sub-allocator was told),
     * not merely equal to one.
     */
    static boolean isToken(String name) {
        synchronized (TOKENS) {
            List<WeakReference<String>> l = TOKENS.get(name);
            if (l != null) {
                for (WeakReference<String> r : l) {
                    if (r.get() == name) {
                        return true;
                    }
                }
            }
            return false;
        }
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
