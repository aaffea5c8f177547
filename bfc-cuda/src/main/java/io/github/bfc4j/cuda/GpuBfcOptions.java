/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's GPUBFCAllocator::Options (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.BfcOptions;
import java.util.function.Function;

/**
 * The options of {@link GpuBfcAllocators#create(int, GpuBfcOptions)}: TensorFlow's
 * {@code GPUBFCAllocator::Options} (with its environment overrides), the memory limit that
 * TensorFlow's GPU device factory computes, and bfc-cuda's own choices (virtual memory, the
 * event poller). Immutable; build with {@link #builder()}.
 */
public final class GpuBfcOptions {

    private final boolean allowGrowth;
    private final Boolean garbageCollection;
    private final boolean allowRetryOnFailure;
    private final double fragmentationFraction;
    private final long memoryLimitBytes;
    private final double memoryFraction;
    private final boolean virtualMemory;
    private final long virtualAddressSpaceBytes;
    private final long eventPollIntervalMicros;
    private final Function<String, String> environment;

    /** The longest event poll interval: an hour (in nanoseconds it still fits a long). */
    public static final long MAX_EVENT_POLL_INTERVAL_MICROS = 3_600_000_000L;

    private GpuBfcOptions(Builder b) {
        this.allowGrowth = b.allowGrowth;
        this.garbageCollection = b.garbageCollection;
        this.allowRetryOnFailure = b.allowRetryOnFailure;
        this.fragmentationFraction = b.fragmentationFraction;
        this.memoryLimitBytes = b.memoryLimitBytes;
        this.memoryFraction = b.memoryFraction;
        this.virtualMemory = b.virtualMemory;
        this.virtualAddressSpaceBytes = b.virtualAddressSpaceBytes;
        this.eventPollIntervalMicros = b.eventPollIntervalMicros;
        this.environment = b.environment;
    }

    /**
     * A builder starting from TensorFlow's defaults: growth allowed, garbage collection from
     * {@code TF_ENABLE_GPU_GARBAGE_COLLECTION} (true when unset), retry on failure, the whole
     * free memory as the limit, plain {@code cuMemAlloc} regions.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * TensorFlow's defaults (see {@link #builder()}).
     *
     * @return the default options
     */
    public static GpuBfcOptions defaults() {
        return builder().build();
    }

    /**
     * Upstream's {@code allow_growth} as given, before {@code TF_FORCE_GPU_ALLOW_GROWTH}.
     *
     * @return the configured value
     */
    public boolean allowGrowth() {
        return allowGrowth;
    }

    /**
     * Upstream's {@code garbage_collection}: {@code null} means "from
     * {@code TF_ENABLE_GPU_GARBAGE_COLLECTION}, true when unset".
     *
     * @return the configured value, or null
     */
    public Boolean garbageCollection() {
        return garbageCollection;
    }

    /**
     * Upstream's {@code allow_retry_on_failure}.
     *
     * @return whether failed allocations wait (up to 10 s) for frees
     */
    public boolean allowRetryOnFailure() {
        return allowRetryOnFailure;
    }

    /**
     * Upstream's {@code fragmentation_fraction}.
     *
     * @return the fraction, 0 for upstream's 128 MiB threshold
     */
    public double fragmentationFraction() {
        return fragmentationFraction;
    }

    /**
     * The absolute memory limit, if set.
     *
     * @return bytes, or -1 to use {@link #memoryFraction()}
     */
    public long memoryLimitBytes() {
        return memoryLimitBytes;
    }

    /**
     * The memory limit as a fraction of the device's free memory ({@code cuMemGetInfo}) when the
     * allocator is created; used when {@link #memoryLimitBytes()} is -1.
     *
     * @return a fraction in (0, 1]
     */
    public double memoryFraction() {
        return memoryFraction;
    }

    /**
     * Whether regions come from {@link CudaVirtualMemorySubAllocator} (contiguous, coalescing,
     * pausable) rather than {@link CudaDeviceSubAllocator}.
     *
     * @return true for virtual memory
     */
    public boolean virtualMemory() {
        return virtualMemory;
    }

    /**
     * The virtual range to reserve when {@link #virtualMemory()} is true.
     *
     * @return bytes, or 0 for the memory limit
     */
    public long virtualAddressSpaceBytes() {
        return virtualAddressSpaceBytes;
    }

    /**
     * How often the background poller checks the events of stream-ordered frees.
     *
     * @return microseconds, or 0 for no background thread (events are then polled on each
     *     allocation and by {@link GpuBfcAllocator#pollEvents()})
     */
    public long eventPollIntervalMicros() {
        return eventPollIntervalMicros;
    }

    /**
     * Where environment variables are read from.
     *
     * @return {@code System::getenv} unless replaced (tests replace it)
     */
    public Function<String, String> environment() {
        return environment;
    }

    @Override
    public String toString() {
        return "GpuBfcOptions{allowGrowth=" + allowGrowth + ", garbageCollection=" + garbageCollection
                + ", allowRetryOnFailure=" + allowRetryOnFailure
                + ", fragmentationFraction=" + fragmentationFraction
                + ", memoryLimitBytes=" + memoryLimitBytes + ", memoryFraction=" + memoryFraction
                + ", virtualMemory=" + virtualMemory + ", virtualAddressSpaceBytes=" + virtualAddressSpaceBytes
                + ", eventPollIntervalMicros=" + eventPollIntervalMicros + '}';
    }

    /** Builds {@link GpuBfcOptions}; each setter validates its value. */
    public static final class Builder {
        // DEVIATION(port): GPUBFCAllocator::Options defaults allow_growth to false; here it is
        // true, as BFCAllocator::Options, so that a first allocation does not take the whole
        // device (docs/deviations.md C8).
        private boolean allowGrowth = true;
        private Boolean garbageCollection;
        private boolean allowRetryOnFailure = true;
        private double fragmentationFraction;
        private long memoryLimitBytes = -1;
        private double memoryFraction = 1.0;
        private boolean virtualMemory;
        private long virtualAddressSpaceBytes;
        private long eventPollIntervalMicros = 100;
        private Function<String, String> environment = System::getenv;

        private Builder() {
        }

        /**
         * Sets upstream's {@code allow_growth} (default true, where TensorFlow's is false: regions
         * start at 2 MiB and double instead of one region of the whole limit);
         * {@code TF_FORCE_GPU_ALLOW_GROWTH} overrides it.
         *
         * @param allowGrowth the value
         * @return this builder
         */
        public Builder allowGrowth(boolean allowGrowth) {
            this.allowGrowth = allowGrowth;
            return this;
        }

        /**
         * Sets upstream's {@code garbage_collection}; {@code null} (the default) reads
         * {@code TF_ENABLE_GPU_GARBAGE_COLLECTION}, true when unset.
         *
         * @param garbageCollection the value, or null
         * @return this builder
         */
        public Builder garbageCollection(Boolean garbageCollection) {
            this.garbageCollection = garbageCollection;
            return this;
        }

        /**
         * Sets upstream's {@code allow_retry_on_failure} (default true).
         *
         * @param allowRetryOnFailure the value
         * @return this builder
         */
        public Builder allowRetryOnFailure(boolean allowRetryOnFailure) {
            this.allowRetryOnFailure = allowRetryOnFailure;
            return this;
        }

        /**
         * Sets upstream's {@code fragmentation_fraction} (default 0).
         *
         * @param fragmentationFraction a finite value, 0 or positive
         * @return this builder
         * @throws IllegalArgumentException if negative, NaN or infinite
         */
        public Builder fragmentationFraction(double fragmentationFraction) {
            BfcOptions.builder().fragmentationFraction(fragmentationFraction); // bfc-core's check and message
            this.fragmentationFraction = fragmentationFraction;
            return this;
        }

        /**
         * Sets an absolute memory limit (TensorFlow's per-device {@code memory_limit}).
         *
         * @param memoryLimitBytes bytes, positive
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder memoryLimitBytes(long memoryLimitBytes) {
            if (memoryLimitBytes <= 0) {
                throw new IllegalArgumentException("memoryLimitBytes=" + memoryLimitBytes
                        + " (expected: > 0; or use memoryFraction)");
            }
            this.memoryLimitBytes = memoryLimitBytes;
            return this;
        }

        /**
         * Sets the memory limit as a fraction of the device's free memory at creation (default
         * 1.0), and clears an absolute limit.
         *
         * @param memoryFraction a fraction in (0, 1]
         * @return this builder
         * @throws IllegalArgumentException if outside (0, 1]
         */
        public Builder memoryFraction(double memoryFraction) {
            if (!(memoryFraction > 0 && memoryFraction <= 1)) {
                throw new IllegalArgumentException("memoryFraction=" + memoryFraction
                        + " (expected: a fraction in (0, 1] of the device's free memory)");
            }
            this.memoryFraction = memoryFraction;
            this.memoryLimitBytes = -1;
            return this;
        }

        /**
         * Chooses {@link CudaVirtualMemorySubAllocator} (true) or {@link CudaDeviceSubAllocator}
         * (false, the default) for regions.
         *
         * @param virtualMemory the choice
         * @return this builder
         */
        public Builder virtualMemory(boolean virtualMemory) {
            this.virtualMemory = virtualMemory;
            return this;
        }

        /**
         * Sets the virtual range reserved with virtual memory (default 0: the memory limit).
         *
         * @param virtualAddressSpaceBytes bytes, 0 or positive
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder virtualAddressSpaceBytes(long virtualAddressSpaceBytes) {
            if (virtualAddressSpaceBytes < 0) {
                throw new IllegalArgumentException("virtualAddressSpaceBytes=" + virtualAddressSpaceBytes
                        + " (expected: >= 0; 0 reserves the memory limit)");
            }
            this.virtualAddressSpaceBytes = virtualAddressSpaceBytes;
            return this;
        }

        /**
         * Sets how often a background thread polls the events of stream-ordered frees (default
         * 100 microseconds); 0 starts no thread.
         *
         * @param eventPollIntervalMicros microseconds, 0 to {@value GpuBfcOptions#MAX_EVENT_POLL_INTERVAL_MICROS}
         *     (an hour)
         * @return this builder
         * @throws IllegalArgumentException if outside that range
         */
        public Builder eventPollIntervalMicros(long eventPollIntervalMicros) {
            if (eventPollIntervalMicros < 0 || eventPollIntervalMicros > MAX_EVENT_POLL_INTERVAL_MICROS) {
                throw new IllegalArgumentException("eventPollIntervalMicros=" + eventPollIntervalMicros
                        + " (expected: 0 to " + MAX_EVENT_POLL_INTERVAL_MICROS + ", an hour; 0 polls only on"
                        + " allocation)");
            }
            this.eventPollIntervalMicros = eventPollIntervalMicros;
            return this;
        }

        /**
         * Replaces where environment variables are read from (default {@code System::getenv}).
         *
         * @param environment maps a variable's name to its value, or null if unset
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder environment(Function<String, String> environment) {
            if (environment == null) {
                throw new IllegalArgumentException("environment=null (expected: a function from a variable's name"
                        + " to its value or null when unset, e.g. System::getenv or Map.of(...)::get)");
            }
            this.environment = environment;
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the immutable options
         */
        public GpuBfcOptions build() {
            return new GpuBfcOptions(this);
        }
    }
}
