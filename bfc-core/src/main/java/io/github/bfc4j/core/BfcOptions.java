/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::Options (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * The options of a {@link BfcAllocator}. Port of {@code BFCAllocator::Options}, with upstream's
 * defaults. Immutable; build with {@link #builder()}.
 */
public final class BfcOptions {

    private final boolean allowGrowth;
    private final boolean allowRetryOnFailure;
    private final boolean garbageCollection;
    private final double fragmentationFraction;
    private final Path dumpOnOomDirectory;
    private final int jfrAllocationSamplePeriod;

    private BfcOptions(Builder b) {
        this.allowGrowth = b.allowGrowth;
        this.allowRetryOnFailure = b.allowRetryOnFailure;
        this.garbageCollection = b.garbageCollection;
        this.fragmentationFraction = b.fragmentationFraction;
        this.dumpOnOomDirectory = b.dumpOnOomDirectory;
        this.jfrAllocationSamplePeriod = b.jfrAllocationSamplePeriod;
    }

    /**
     * Upstream's default options: growth allowed, retry on failure allowed, no garbage
     * collection, fragmentation fraction 0 (split threshold 128 MiB); the dump directory and the
     * JFR sample period from their system properties, read now.
     *
     * @return the default options
     * @throws IllegalArgumentException if {@code bfc4j.jfr.allocationSamplePeriod} or
     *     {@code bfc4j.dumpOnOom} holds something that is no such value
     */
    public static BfcOptions defaults() {
        return builder().build();
    }

    /**
     * A builder starting from upstream's defaults, and from the system properties
     * {@code bfc4j.dumpOnOom} and {@code bfc4j.jfr.allocationSamplePeriod}, read now.
     *
     * @return a new builder
     * @throws IllegalArgumentException if one of those properties holds something that is no
     *     such value; the message names the property and what it expects
     */
    public static Builder builder() {
        return new Builder().dumpOnOomDirectory(Builder.dumpOnOomProperty())
                .jfrAllocationSamplePeriod(Builder.samplePeriodProperty());
    }

    /**
     * A builder starting from these options.
     *
     * @return a new builder holding these values
     */
    public Builder toBuilder() {
        return new Builder()
                .allowGrowth(allowGrowth)
                .allowRetryOnFailure(allowRetryOnFailure)
                .garbageCollection(garbageCollection)
                .fragmentationFraction(fragmentationFraction)
                .dumpOnOomDirectory(dumpOnOomDirectory)
                .jfrAllocationSamplePeriod(jfrAllocationSamplePeriod);
    }

    /**
     * Upstream's {@code allow_growth}: if true, regions start at min(limit, 2 MiB) and double;
     * if false, the first region is the whole memory limit.
     *
     * @return whether the pool grows on demand
     */
    public boolean allowGrowth() {
        return allowGrowth;
    }

    /**
     * Upstream's {@code allow_retry_on_failure}: if true, a failed allocation whose attributes
     * ask for retry waits (up to 10 s) for other threads to free memory before giving up; a
     * request larger than the memory limit (which no free can serve) fails at once
     * (docs/deviations.md #24). Upstream's default, true; {@link BfcAllocator#builder()}'s is
     * false.
     *
     * @return whether failed allocations may wait and retry
     */
    public boolean allowRetryOnFailure() {
        return allowRetryOnFailure;
    }

    /**
     * Upstream's {@code garbage_collection}: if true, when nothing else works the allocator
     * returns entirely free regions to the sub-allocator and tries to obtain one large region.
     *
     * @return whether free regions are garbage-collected on out-of-memory
     */
    public boolean garbageCollection() {
        return garbageCollection;
    }

    /**
     * Upstream's {@code fragmentation_fraction}: a free chunk is split when the waste would be
     * at least {@code fragmentationFraction * memoryLimit} bytes (or, if 0, 128 MiB), or the
     * chunk is at least twice the request.
     *
     * @return the fraction, 0 for upstream's default threshold
     */
    public double fragmentationFraction() {
        return fragmentationFraction;
    }

    /**
     * Where an out-of-memory failure writes its dump (the memory map and the memory summary as
     * JSON, and PyTorch's memory snapshot of the same moment by the same name with
     * {@code .pickle}, for pytorch.org/memory_viz; named in the log and in the exception). Not in
     * upstream.
     * Default: the system property {@code bfc4j.dumpOnOom}, else none.
     *
     * @return the directory, or {@code null} for no dumps
     */
    public Path dumpOnOomDirectory() {
        return dumpOnOomDirectory;
    }

    /**
     * Emit a JFR {@code io.github.bfc4j.AllocationSample} event for one in this many successful
     * allocations; 0 (the default) emits none and costs one field test per allocation. Not in
     * upstream. Default: the system property {@code bfc4j.jfr.allocationSamplePeriod}, else 0.
     *
     * @return the sampling period, 0 for off
     */
    public int jfrAllocationSamplePeriod() {
        return jfrAllocationSamplePeriod;
    }

    @Override
    public String toString() {
        return "BfcOptions{allowGrowth=" + allowGrowth
                + ", allowRetryOnFailure=" + allowRetryOnFailure
                + ", garbageCollection=" + garbageCollection
                + ", fragmentationFraction=" + fragmentationFraction
                + ", dumpOnOomDirectory=" + dumpOnOomDirectory
                + ", jfrAllocationSamplePeriod=" + jfrAllocationSamplePeriod + '}';
    }

    /** Builds {@link BfcOptions}; each setter validates its value. */
    public static final class Builder {
        private boolean allowGrowth = true;
        private boolean allowRetryOnFailure = true;
        private boolean garbageCollection = false;
        private double fragmentationFraction = 0;
        private Path dumpOnOomDirectory;
        private int jfrAllocationSamplePeriod;

        private Builder() {
        }

        private static Path dumpOnOomProperty() {
            String dir = System.getProperty("bfc4j.dumpOnOom");
            if (dir == null || dir.isEmpty()) {
                return null;
            }
            try {
                return Path.of(dir);
            } catch (InvalidPathException e) {
                throw new IllegalArgumentException("-Dbfc4j.dumpOnOom=" + dir
                        + " is no path here (" + e.getReason() + "); give a directory for the dumps", e);
            }
        }

        private static int samplePeriodProperty() {
            String v = System.getProperty("bfc4j.jfr.allocationSamplePeriod");
            if (v == null || v.isEmpty()) {
                return 0;
            }
            try {
                int period = Integer.parseInt(v.trim());
                if (period >= 0) {
                    return period;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException("-Dbfc4j.jfr.allocationSamplePeriod=" + v
                    + " (expected: an integer >= 0; 0 turns allocation samples off)");
        }

        /**
         * Sets {@link BfcOptions#dumpOnOomDirectory()}. The directory is created when the first
         * dump is written.
         *
         * @param dumpOnOomDirectory the directory, or {@code null} for no dumps
         * @return this builder
         */
        public Builder dumpOnOomDirectory(Path dumpOnOomDirectory) {
            this.dumpOnOomDirectory = dumpOnOomDirectory;
            return this;
        }

        /**
         * Sets {@link BfcOptions#jfrAllocationSamplePeriod()}.
         *
         * @param jfrAllocationSamplePeriod one event per this many allocations, 0 for none
         * @return this builder
         * @throws IllegalArgumentException if the value is negative
         */
        public Builder jfrAllocationSamplePeriod(int jfrAllocationSamplePeriod) {
            if (jfrAllocationSamplePeriod < 0) {
                throw new IllegalArgumentException("jfrAllocationSamplePeriod="
                        + jfrAllocationSamplePeriod + " (expected: >= 0; 0 turns samples off)");
            }
            this.jfrAllocationSamplePeriod = jfrAllocationSamplePeriod;
            return this;
        }

        /**
         * Sets {@link BfcOptions#allowGrowth()}.
         *
         * @param allowGrowth the value
         * @return this builder
         */
        public Builder allowGrowth(boolean allowGrowth) {
            this.allowGrowth = allowGrowth;
            return this;
        }

        /**
         * Sets {@link BfcOptions#allowRetryOnFailure()}.
         *
         * @param allowRetryOnFailure the value
         * @return this builder
         */
        public Builder allowRetryOnFailure(boolean allowRetryOnFailure) {
            this.allowRetryOnFailure = allowRetryOnFailure;
            return this;
        }

        /**
         * Sets {@link BfcOptions#garbageCollection()}.
         *
         * @param garbageCollection the value
         * @return this builder
         */
        public Builder garbageCollection(boolean garbageCollection) {
            this.garbageCollection = garbageCollection;
            return this;
        }

        /**
         * Sets {@link BfcOptions#fragmentationFraction()}. Whether the fraction gives a
         * threshold of at least one byte is checked against the memory limit when the
         * allocator is created.
         *
         * @param fragmentationFraction a finite value, 0 or positive
         * @return this builder
         * @throws IllegalArgumentException if the value is negative, NaN or infinite
         */
        public Builder fragmentationFraction(double fragmentationFraction) {
            if (!(fragmentationFraction >= 0) || Double.isInfinite(fragmentationFraction)) {
                throw new IllegalArgumentException("fragmentationFraction=" + fragmentationFraction
                        + " (expected: a finite value >= 0; 0 means upstream's 128 MiB threshold)");
            }
            this.fragmentationFraction = fragmentationFraction;
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the immutable options
         */
        public BfcOptions build() {
            return new BfcOptions(this);
        }
    }
}
