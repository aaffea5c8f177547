/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/**
 * What {@link BfcAllocator#recordHistory(HistoryOptions)} records, in the spirit of PyTorch's
 * {@code torch.cuda.memory._record_memory_history(max_entries=..., stacks=...)}: a ring of the
 * last {@link #maxEntries()} events and, optionally, the Java stack of each allocation, with
 * two ways to keep its cost down (only allocations of at least {@link #stackMinBytes()} bytes,
 * only every {@link #stackEveryNth()}-th allocation). Build with {@link #builder()}.
 *
 * @param maxEntries the events kept; the oldest are dropped (and counted) beyond it
 * @param stacks whether allocations, out-of-memory failures and region events record the Java
 *     stack (a stack given by a {@link MemoryAnnotation} is recorded either way)
 * @param stackDepth the most frames kept per stack (after bfc4j's own frames are left out)
 * @param stackMinBytes stacks only for allocations, and regions obtained, for requests of at
 *     least this many bytes (0: all); an out-of-memory failure and a region given back always
 *     record theirs
 * @param stackEveryNth stacks only for every n-th successful allocation since recording started
 *     (1: all); the chunks of the others have no stack, so {@link Provenance#holder()} groups
 *     them by thread, apart from the sampled ones of the same call site
 */
public record HistoryOptions(int maxEntries, boolean stacks, int stackDepth, long stackMinBytes, int stackEveryNth) {

    /** The default {@link #maxEntries()}. */
    public static final int DEFAULT_MAX_ENTRIES = 100_000;

    /** The default {@link #stackDepth()}. */
    public static final int DEFAULT_STACK_DEPTH = 32;

    private static final HistoryOptions DEFAULTS = builder().build();

    /**
     * Checks the options.
     *
     * @throws IllegalArgumentException if {@code maxEntries} or {@code stackDepth} is below 1
     *     or above 2^24 (resp. 1024), {@code stackMinBytes} is negative or {@code stackEveryNth}
     *     is below 1
     */
    public HistoryOptions {
        if (maxEntries < 1 || maxEntries > 1 << 24) {
            throw new IllegalArgumentException("maxEntries=" + maxEntries
                    + " (expected: 1 to 16777216; the default is " + DEFAULT_MAX_ENTRIES + ")");
        }
        if (stackDepth < 1 || stackDepth > 1024) {
            throw new IllegalArgumentException("stackDepth=" + stackDepth + " (expected: 1 to 1024)");
        }
        if (stackMinBytes < 0) {
            throw new IllegalArgumentException("stackMinBytes=" + stackMinBytes + " (expected: >= 0)");
        }
        if (stackEveryNth < 1) {
            throw new IllegalArgumentException("stackEveryNth=" + stackEveryNth + " (expected: >= 1)");
        }
    }

    /**
     * The defaults: 100,000 events, stacks of every allocation, 32 frames deep.
     *
     * @return the default options
     */
    public static HistoryOptions defaults() {
        return DEFAULTS;
    }

    /**
     * A builder starting from the defaults.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link HistoryOptions}; every setter checks its value when {@link #build()} runs. */
    public static final class Builder {
        private int maxEntries = DEFAULT_MAX_ENTRIES;
        private boolean stacks = true;
        private int stackDepth = DEFAULT_STACK_DEPTH;
        private long stackMinBytes;
        private int stackEveryNth = 1;

        private Builder() {
        }

        /**
         * @param maxEntries the events kept (default 100,000)
         * @return this builder
         */
        public Builder maxEntries(int maxEntries) {
            this.maxEntries = maxEntries;
            return this;
        }

        /**
         * @param stacks whether to record Java stacks (default true)
         * @return this builder
         */
        public Builder stacks(boolean stacks) {
            this.stacks = stacks;
            return this;
        }

        /**
         * @param stackDepth the most frames per stack (default 32)
         * @return this builder
         */
        public Builder stackDepth(int stackDepth) {
            this.stackDepth = stackDepth;
            return this;
        }

        /**
         * @param stackMinBytes record stacks only for allocations (and regions obtained) for
         *     requests of at least this size (default 0)
         * @return this builder
         */
        public Builder stackMinBytes(long stackMinBytes) {
            this.stackMinBytes = stackMinBytes;
            return this;
        }

        /**
         * @param stackEveryNth record stacks only for every n-th successful allocation (default 1)
         * @return this builder
         */
        public Builder stackEveryNth(int stackEveryNth) {
            this.stackEveryNth = stackEveryNth;
            return this;
        }

        /**
         * @return the options
         * @throws IllegalArgumentException if a value is out of range (see the record's
         *     constructor)
         */
        public HistoryOptions build() {
            return new HistoryOptions(maxEntries, stacks, stackDepth, stackMinBytes, stackEveryNth);
        }
    }
}
