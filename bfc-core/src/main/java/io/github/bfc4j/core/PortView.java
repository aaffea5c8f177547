/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkWalk;

/**
 * The port's state as its collaborators see it: read-only accessors over upstream's fields,
 * the regions and chunks (through a {@link ChunkWalk}), the address map and the bins. The
 * debug queries, the reports, the out-of-memory reporter, the JFR recorder and the invariant
 * checker read the allocator through this view only, so that the port's structures (the chunk
 * table, the bins, the address map, the lock) can change behind it.
 *
 * <p>Every method except the names ({@link #name()} to {@link #shardCount()}),
 * {@link #memoryLimit()}, {@link #memoryType()} and {@link #walk()} needs the allocator's lock held, and so does every use of a walk.
 */
interface PortView {

    /** @return the allocator's name (upstream's {@code Name()}) */
    String name();

    /**
     * @return how messages name the allocator after the word "allocator": {@code 'NAME'}, or
     *     {@code 'SHARDED' (shard I of N)} for a shard of a {@link ShardedBfcAllocator}
     */
    String described();

    /**
     * @return the allocator's name in the log lines ported from upstream (where upstream writes
     *     its {@code Name()}): {@code NAME}, or {@code SHARDED (shard I of N)} for a shard of a
     *     {@link ShardedBfcAllocator}
     */
    String logName();

    /**
     * @return the name the user gave: the allocator's, or for a shard of a
     *     {@link ShardedBfcAllocator} the sharded allocator's
     */
    String userName();

    /** @return for a shard of a {@link ShardedBfcAllocator} its index, else -1 */
    int shardIndex();

    /** @return for a shard of a {@link ShardedBfcAllocator} the number of shards, else 0 */
    int shardCount();

    /** @return upstream's {@code memory_limit_} */
    long memoryLimit();

    /** @return the sub-allocator's memory type (upstream's {@code GetMemoryType()}) */
    MemoryType memoryType();

    /** @return the sub-allocator's device ordinal, read when the allocator was built */
    int deviceId();

    /** @return a new cursor over the regions and their chunks */
    ChunkWalk walk();

    /** @return whether the allocator was closed (its regions given back) */
    boolean closed();

    /** @return upstream's {@code stats_} */
    AllocatorStats stats();

    /** @return upstream's {@code stats_.bytes_in_use} */
    long bytesInUse();

    /** @return upstream's {@code stats_.pool_bytes} */
    long poolBytes();

    /** @return upstream's {@code stats_.peak_pool_bytes} */
    long peakPoolBytes();

    /** @return upstream's {@code next_allocation_id_} */
    long nextAllocationId();

    /** @return upstream's {@code curr_region_allocation_bytes_}, unsigned (up to 2^63) */
    long currRegionAllocationBytes();

    /** @return whether the sub-allocator merges adjacent regions ({@code SupportsCoalescing}) */
    boolean coalescing();

    /** @return the alignment asked by the {@code AllocateRaw} being served (for the event points) */
    long callAlignment();

    /** @return the bytes asked by the {@code AllocateRaw} being served, unrounded (for the event points) */
    long callNumBytes();

    /** @return whether a timing counter is set (upstream's {@code timing_counter_ != nullptr}) */
    boolean timingCounterSet();

    /** @return the safe frontier ({@code SetSafeFrontier}): frees counted before it are safe */
    long safeFrontier();

    /** @return whether a timing counter was ever set (free neighbours may then stay apart) */
    boolean timingCounterEverSet();

    /**
     * @return whether the address map may still lack the start of a free chunk split off and
     *     never allocated since ({@code BfcPort.lazyAddressMap})
     */
    boolean lazyAddressMap();

    /** @return upstream's {@code LargestFreeChunk()}: 0 if no chunk is free */
    long largestFreeChunk();

    /** @return upstream's {@code GetFragmentation()}, 0 when nothing is free */
    double fragmentation();

    /** @return the counters beyond upstream's statistics, bumped at the port's event points */
    MemoryCounters counters();

    /** @return the number of regions held */
    int regionCount();

    /** @return the handles the chunk table ever created (upstream's {@code chunks_.size()}) */
    int handleCount();

    /**
     * @param ptr an address
     * @return the handle of the chunk starting at {@code ptr} according to the address map
     *     (upstream's {@code region_manager_.get_handle}), or none
     */
    int handleAt(long ptr);

    /** @return the number of chunk start addresses in the address map */
    int addressMapSize();

    /**
     * @param ptr an address
     * @return the index of the region holding it, or -1
     */
    int regionIndexFor(long ptr);

    /**
     * @param binNum a bin
     * @return the number of free chunks in it
     */
    int binChunkCount(int binNum);

    /**
     * @param binNum a bin
     * @return its first chunk in (size, address) order, or none
     */
    int binFirst(int binNum);

    /**
     * @param binNum a bin
     * @param h a chunk in it
     * @return the chunk after {@code h} in the bin's order, or none
     */
    int binHigher(int binNum, int h);

    /**
     * @param binNum a bin
     * @param h a handle
     * @return whether the bin holds {@code h}
     */
    boolean binContains(int binNum, int h);
}
