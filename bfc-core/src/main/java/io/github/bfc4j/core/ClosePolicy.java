/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * What {@link BfcAllocator#close()} does while allocations are still live. Either way the live
 * allocations are reported (count and bytes) in the log.
 */
public enum ClosePolicy {
    /**
     * Refuse: {@code close()} throws {@link IllegalStateException} naming the count and bytes
     * of live allocations, and the allocator stays open and unchanged. Close the allocations,
     * then the allocator. The default for allocators made with {@link BfcAllocator#builder()}:
     * memory is never given back under a live handle (whose raw address native code may hold).
     */
    REFUSE,

    /**
     * Force: {@code close()} gives every region back to the sub-allocator anyway, as upstream's
     * destructor does. The live allocations count as freed; their {@link Allocation} handles
     * are closed ({@link Allocation#isClosed()}; their views are refused and closing them does
     * nothing); their raw addresses become invalid. A view taken before stays over mapped
     * memory while it is reachable ({@link BfcAllocator#bytesHeldForViews()}), but no longer
     * over the allocation. The policy of allocators made with the upstream-style constructor.
     */
    FORCE
}
