/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.AllocatorStats;
import java.util.Objects;

/**
 * The keys of a trace's {@code stats} line, in canonical order, each naming one component of
 * {@link AllocatorStats}.
 */
public enum StatKey {
    /** {@code num_allocs}: {@link AllocatorStats#numAllocs()}. */
    NUM_ALLOCS("num_allocs"),
    /** {@code bytes_in_use}: {@link AllocatorStats#bytesInUse()}. */
    BYTES_IN_USE("bytes_in_use"),
    /** {@code peak_bytes_in_use}: {@link AllocatorStats#peakBytesInUse()}. */
    PEAK_BYTES_IN_USE("peak_bytes_in_use"),
    /** {@code largest_alloc_size}: {@link AllocatorStats#largestAllocSize()}. */
    LARGEST_ALLOC_SIZE("largest_alloc_size"),
    /** {@code bytes_limit}: {@link AllocatorStats#bytesLimit()}. */
    BYTES_LIMIT("bytes_limit"),
    /** {@code bytes_reserved}: {@link AllocatorStats#bytesReserved()}. */
    BYTES_RESERVED("bytes_reserved"),
    /** {@code peak_bytes_reserved}: {@link AllocatorStats#peakBytesReserved()}. */
    PEAK_BYTES_RESERVED("peak_bytes_reserved"),
    /** {@code largest_free_block_bytes}: {@link AllocatorStats#largestFreeBlockBytes()}. */
    LARGEST_FREE_BLOCK_BYTES("largest_free_block_bytes"),
    /** {@code pool_bytes}: {@link AllocatorStats#poolBytes()}. */
    POOL_BYTES("pool_bytes"),
    /** {@code peak_pool_bytes}: {@link AllocatorStats#peakPoolBytes()}. */
    PEAK_POOL_BYTES("peak_pool_bytes");

    private static final StatKey[] VALUES = values();

    private final String traceName;

    StatKey(String traceName) {
        this.traceName = traceName;
    }

    /**
     * The key as a trace writes it.
     *
     * @return e.g. {@code bytes_in_use}
     */
    public String traceName() {
        return traceName;
    }

    /**
     * Reads this key's value from a stats snapshot.
     *
     * @param stats the snapshot
     * @return the component this key names
     * @throws NullPointerException if {@code stats} is null
     */
    public long valueIn(AllocatorStats stats) {
        Objects.requireNonNull(stats, "stats=null (expected: AllocatorStats, e.g. allocator.getStats())");
        switch (this) {
            case NUM_ALLOCS:
                return stats.numAllocs();
            case BYTES_IN_USE:
                return stats.bytesInUse();
            case PEAK_BYTES_IN_USE:
                return stats.peakBytesInUse();
            case LARGEST_ALLOC_SIZE:
                return stats.largestAllocSize();
            case BYTES_LIMIT:
                return stats.bytesLimit();
            case BYTES_RESERVED:
                return stats.bytesReserved();
            case PEAK_BYTES_RESERVED:
                return stats.peakBytesReserved();
            case LARGEST_FREE_BLOCK_BYTES:
                return stats.largestFreeBlockBytes();
            case POOL_BYTES:
                return stats.poolBytes();
            case PEAK_POOL_BYTES:
                return stats.peakPoolBytes();
            default:
                throw new AssertionError(this);
        }
    }

    /**
     * Looks a key up by its trace name.
     *
     * @param traceName e.g. {@code bytes_in_use}
     * @return the key, or {@code null} if the name is not a key of format version 1
     * @throws NullPointerException if {@code traceName} is null
     */
    public static StatKey forTraceName(String traceName) {
        Objects.requireNonNull(traceName, "traceName=null (expected: a stats key of the trace, e.g. \"bytes_in_use\")");
        for (StatKey k : VALUES) {
            if (k.traceName.equals(traceName)) {
                return k;
            }
        }
        return null;
    }
}
