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
     * then the allocator. The default for allocators made with {@link BfcAllocator#builder()},
     * because freeing host memory under a live {@code ByteBuffer} view would crash the JVM.
     */
    REFUSE,

    /**
     * Force: {@code close()} gives every region back to the sub-allocator anyway, as upstream's
     * destructor does; the live allocations' addresses (and any views of them) become invalid,
     * and closing their handles afterwards does nothing. The policy of allocators made with the
     * upstream-style constructor.
     */
    FORCE
}
