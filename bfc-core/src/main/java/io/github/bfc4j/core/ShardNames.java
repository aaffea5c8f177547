/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * How the public records and exceptions that can be of a shard of a {@link ShardedBfcAllocator}
 * ({@link OutOfMemoryReport}, {@link MemorySnapshot}, {@link BfcOutOfMemoryException}) name
 * it: the sharded allocator's name (the one its user gave), the shard's index and the shard
 * count; null, -1 and 0 for an allocator of its own.
 */
final class ShardNames {

    private ShardNames() {
    }

    /**
     * Refuses shard figures that do not fit together.
     *
     * @throws IllegalArgumentException with {@code shardedAllocatorName} null, unless
     *     {@code shardIndex} is -1 and {@code shardCount} 0; with a name, unless
     *     {@code shardIndex} lies in {@code 0 .. shardCount - 1}
     */
    static void check(String shardedAllocatorName, int shardIndex, int shardCount) {
        if (shardedAllocatorName == null && (shardIndex != -1 || shardCount != 0)) {
            throw new IllegalArgumentException("shardedAllocatorName=null (expected: the sharded allocator's name"
                    + " for a shard, shardIndex=" + shardIndex + " of shardCount=" + shardCount + "; or null with"
                    + " shardIndex -1 and shardCount 0 for an allocator of its own)");
        }
        if (shardedAllocatorName != null && (shardCount < 1 || shardIndex < 0 || shardIndex >= shardCount)) {
            throw new IllegalArgumentException("shardIndex=" + shardIndex + ", shardCount=" + shardCount
                    + " (expected: shardCount >= 1 and shardIndex from 0 to shardCount - 1 for a shard of '"
                    + shardedAllocatorName + "'; or shardedAllocatorName null, shardIndex -1 and shardCount 0 for an"
                    + " allocator of its own)");
        }
    }

    /**
     * The allocator as messages name it: {@code 'NAME'}, or for a shard
     * {@code 'SHARDED' (shard I of N)}.
     */
    static String described(String allocatorName, String shardedAllocatorName, int shardIndex, int shardCount) {
        return shardedAllocatorName == null ? "'" + allocatorName + "'"
                : "'" + shardedAllocatorName + "' (shard " + shardIndex + " of " + shardCount + ")";
    }
}
