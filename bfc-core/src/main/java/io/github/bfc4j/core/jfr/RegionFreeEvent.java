/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.jfr;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.MemoryAddress;
import jdk.jfr.Name;

/**
 * Garbage collection or {@code emptyCache()} gave a free region back to the sub-allocator
 * ({@code DeallocateRegions}); {@code close()} gives its regions back without this event.
 */
@Name("io.github.bfc4j.RegionFree")
@Label("BFC Region Free")
@Category("bfc4j")
@Description("A BFC allocator gave a free region back to its sub-allocator (garbage collection or emptyCache)")
public final class RegionFreeEvent extends Event {
    /**
     * The allocator's name, as given to its builder: for a shard of a {@code ShardedBfcAllocator},
     * the sharded allocator's (its shard in {@link #shard}).
     */
    @Label("Allocator")
    @Description("The allocator's name, as given to its builder (a ShardedBfcAllocator's, for one of its shards)")
    public String allocator;

    /** For a shard of a {@code ShardedBfcAllocator}, its index; -1 for an allocator of its own. */
    @Label("Shard")
    @Description("The index of the ShardedBfcAllocator's shard, -1 for an allocator that is no shard")
    public int shard;

    /** The region's start address. */
    @Label("Address")
    @MemoryAddress
    public long ptr;

    /** The region's size. */
    @Label("Bytes")
    @DataAmount
    public long bytes;

    /** The pool (reserved bytes) after the free. */
    @Label("Pool Bytes")
    @DataAmount
    public long poolBytes;
}
