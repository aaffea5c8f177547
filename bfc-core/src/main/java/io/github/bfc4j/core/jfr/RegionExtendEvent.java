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
import jdk.jfr.StackTrace;

/** The allocator obtained a region from its sub-allocator ({@code Extend}). */
@Name("io.github.bfc4j.RegionExtend")
@Label("BFC Region Extend")
@Category("bfc4j")
@Description("A BFC allocator obtained a region from its sub-allocator")
@StackTrace(true)
public final class RegionExtendEvent extends Event {
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

    /** The bytes received. */
    @Label("Bytes")
    @DataAmount
    public long bytes;

    /** The rounded size of the request that caused the extend. */
    @Label("Request Bytes")
    @DataAmount
    public long requestBytes;

    /** The pool (reserved bytes) after the extend. */
    @Label("Pool Bytes")
    @DataAmount
    public long poolBytes;
}
