/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * A failed allocation and the allocator's state at the moment it failed, as given to an
 * {@link OutOfMemoryListener}. The snapshot and the summary were taken under the allocator's
 * lock before it was released, so they describe exactly the state the request failed against.
 *
 * <p>A report of a shard of a {@link ShardedBfcAllocator} names both: the sharded allocator,
 * by the name its user gave ({@link #shardedAllocatorName()}), and the shard that failed
 * ({@link #shardIndex()} of {@link #shardCount()}); {@link #allocatorName()} is the shard's own
 * name ({@code NAME/I}), as its memory map gives it.
 *
 * @param allocatorName the name of the {@link BfcAllocator} that failed: for a shard of a
 *     {@link ShardedBfcAllocator}, the shard's own ({@code NAME/I}, as
 *     {@link ShardedBfcAllocator#shards()} names them)
 * @param requestedBytes the bytes the failing call asked the allocator for: for
 *     {@link BfcAllocator#allocate(long, long)} with an alignment above 256 bytes, the size with
 *     the padding the alignment needs ({@code bytes + alignment - 256} where regions are 256-byte
 *     aligned, see there)
 * @param roundedBytes the request rounded up to 256 bytes
 * @param provenance the failing call's thread, annotation and (when recording stacks) stack
 * @param snapshot the regions, chunks (with provenance, when recorded) and, when recording, the
 *     recent history
 * @param summary {@link BfcAllocator#memorySummary()} at that moment
 * @param shardedAllocatorName for a shard of a {@link ShardedBfcAllocator}, the sharded
 *     allocator's name (the one given to its builder); null for an allocator of its own
 * @param shardIndex for a shard, its index ({@code 0} to {@code shardCount - 1}); -1 for an
 *     allocator of its own
 * @param shardCount for a shard, how many shards the sharded allocator has; 0 for an allocator
 *     of its own
 */
public record OutOfMemoryReport(String allocatorName, long requestedBytes, long roundedBytes, Provenance provenance,
        MemorySnapshot snapshot, String summary, String shardedAllocatorName, int shardIndex, int shardCount) {

    /**
     * Checks the report.
     *
     * @throws NullPointerException if {@code allocatorName}, {@code provenance}, {@code snapshot}
     *     or {@code summary} is null
     * @throws IllegalArgumentException if the shard's figures do not fit together: with
     *     {@code shardedAllocatorName} null, {@code shardIndex} must be -1 and {@code shardCount}
     *     0; with a name, {@code shardIndex} must lie in {@code 0 .. shardCount - 1}
     */
    public OutOfMemoryReport {
        Objects.requireNonNull(allocatorName, "allocatorName=null (expected: the failing allocator's name)");
        Objects.requireNonNull(provenance, "provenance=null (expected: a Provenance, Provenance.UNKNOWN for none)");
        Objects.requireNonNull(snapshot, "snapshot=null (expected: a MemorySnapshot, e.g. allocator.snapshot())");
        Objects.requireNonNull(summary, "summary=null (expected: a summary, e.g. allocator.memorySummary())");
        ShardNames.check(shardedAllocatorName, shardIndex, shardCount);
    }

    /**
     * The report of an allocator of its own, not a shard: {@code shardedAllocatorName} null,
     * {@code shardIndex} -1 and {@code shardCount} 0.
     *
     * @param allocatorName the allocator's name
     * @param requestedBytes the bytes the failing call asked for
     * @param roundedBytes the request rounded up to 256 bytes
     * @param provenance the failing call's thread, annotation and stack
     * @param snapshot the allocator's state at the moment of failure
     * @param summary {@link BfcAllocator#memorySummary()} at that moment
     * @throws NullPointerException if an object is null
     */
    public OutOfMemoryReport(String allocatorName, long requestedBytes, long roundedBytes, Provenance provenance,
            MemorySnapshot snapshot, String summary) {
        this(allocatorName, requestedBytes, roundedBytes, provenance, snapshot, summary, null, -1, 0);
    }

    /**
     * Whom the report is of, as the allocator's messages name it: {@code 'NAME'}, or for a shard
     * of a {@link ShardedBfcAllocator} {@code 'SHARDED' (shard I of N)}, by the name given to
     * the sharded allocator's builder.
     *
     * @return the allocator, named for a message
     */
    public String describedAllocator() {
        return ShardNames.described(allocatorName, shardedAllocatorName, shardIndex, shardCount);
    }
}
