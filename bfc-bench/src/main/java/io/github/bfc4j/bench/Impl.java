/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

/**
 * One allocator under test, behind slots: {@code alloc(s, ...)} stores what it got in slot
 * {@code s}, {@code free(s)} gives it back. Each implementation keeps its own slot array, so
 * that the benchmark loop is the same for all of them.
 */
public interface Impl extends AutoCloseable {

    /** The {@code impl} parameter values. */
    String BFC4J = "bfc4j";
    /** bfc4j's {@code ShardedBfcAllocator}: one shard per available processor (threads benchmark only). */
    String BFC4J_SHARDED = "bfc4j-sharded";
    /**
     * bfc4j's {@code ShardedBfcAllocator} with {@value ShardedImpl#PER_THREAD_SHARDS} shards:
     * up to that many threads, each allocates from a shard of its own and no two threads share
     * a lock (threads benchmark only; the control: what the threads do with nothing shared).
     */
    String BFC4J_SHARD_PER_THREAD = "bfc4j-shard-per-thread";
    /** Netty's {@code PooledByteBufAllocator}, direct buffers. */
    String NETTY = "netty";
    /** glibc malloc/free through JavaCPP. */
    String MALLOC = "malloc";

    /**
     * Allocates into a slot.
     *
     * @param slot an empty slot
     * @param bytes the size
     * @param alignment the alignment (only bfc4j passes it on)
     */
    void alloc(int slot, long bytes, long alignment);

    /**
     * Frees a slot and empties it (a no-op on an empty slot).
     *
     * @param slot the slot
     */
    void free(int slot);

    /** Frees every slot still holding memory. */
    void freeAll();

    @Override
    void close();

    /**
     * Creates an implementation by name.
     *
     * @param name {@link #BFC4J}, {@link #BFC4J_SHARDED} or {@link #BFC4J_SHARD_PER_THREAD}
     *     (with a {@code null} trace only), {@link #NETTY} or {@link #MALLOC}
     * @param slots the number of slots
     * @param trace the trace whose header configures bfc4j's allocator and sim sub-allocator,
     *     or {@code null} for a plain 1 GiB one
     * @return the implementation
     */
    static Impl create(String name, int slots, BenchTrace trace) {
        switch (name) {
            case BFC4J:
                return trace == null ? BfcImpl.plain(slots) : BfcImpl.forTrace(slots, trace);
            case BFC4J_SHARDED:
            case BFC4J_SHARD_PER_THREAD:
                if (trace != null) {
                    throw new IllegalArgumentException("impl=" + name + " with a trace (expected: no trace;"
                            + " a sharded allocator does not replay a trace's placement)");
                }
                return new ShardedImpl(slots, name.equals(BFC4J_SHARDED)
                        ? Runtime.getRuntime().availableProcessors() : ShardedImpl.PER_THREAD_SHARDS);
            case NETTY:
                if (trace != null && trace.maxBytes > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("impl=netty with a trace allocating "
                            + trace.maxBytes + " bytes (expected: a trace whose allocations fit"
                            + " in a ByteBuf, at most 2^31-1 bytes)");
                }
                return new NettyImpl(slots);
            case MALLOC:
                return new MallocImpl(slots);
            default:
                throw new IllegalArgumentException("impl=" + name
                        + " (expected: bfc4j, bfc4j-sharded, bfc4j-shard-per-thread, netty or malloc)");
        }
    }
}
