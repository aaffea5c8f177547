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
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** An allocation failed: the allocator returned 0 for a non-zero request. */
@Name("io.github.bfc4j.OutOfMemory")
@Label("BFC Out Of Memory")
@Category("bfc4j")
@Description("A BFC allocator could not satisfy an allocation")
@StackTrace(true)
public final class OutOfMemoryEvent extends Event {
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

    /** The bytes requested. */
    @Label("Requested Bytes")
    @DataAmount
    public long requestedBytes;

    /** Bytes in use when it failed. */
    @Label("Bytes In Use")
    @DataAmount
    public long bytesInUse;

    /** Reserved (pool) bytes when it failed. */
    @Label("Pool Bytes")
    @DataAmount
    public long poolBytes;

    /** The memory limit. */
    @Label("Limit Bytes")
    @DataAmount
    public long limitBytes;

    /** The largest free chunk when it failed. */
    @Label("Largest Free Chunk")
    @DataAmount
    public long largestFreeChunkBytes;

    /** The dump file written, or null. */
    @Label("Dump File")
    public String dumpFile;

    /** The innermost {@code MemoryAnnotation} open on the failing thread ("name (step n)"), or null. */
    @Label("Annotation")
    public String annotation;
}
