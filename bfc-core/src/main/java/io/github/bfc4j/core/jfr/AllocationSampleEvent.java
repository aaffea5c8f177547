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

/**
 * One in {@code jfrAllocationSamplePeriod} successful allocations (off unless that option is
 * positive).
 */
@Name("io.github.bfc4j.AllocationSample")
@Label("BFC Allocation Sample")
@Category("bfc4j")
@Description("A sampled successful allocation of a BFC allocator")
@StackTrace(true)
public final class AllocationSampleEvent extends Event {
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

    /** The address returned. */
    @Label("Address")
    @MemoryAddress
    public long ptr;

    /** The bytes requested. */
    @Label("Requested Bytes")
    @DataAmount
    public long requestedBytes;

    /** The chunk's size. */
    @Label("Chunk Bytes")
    @DataAmount
    public long chunkBytes;

    /** The allocation id. */
    @Label("Allocation Id")
    public long allocationId;

    /** Bytes in use after the allocation. */
    @Label("Bytes In Use")
    @DataAmount
    public long bytesInUse;

    /** The innermost {@code MemoryAnnotation} open on the allocating thread ("name (step n)"), or null. */
    @Label("Annotation")
    public String annotation;
}
