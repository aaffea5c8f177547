/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcOptions;

/**
 * The header of a trace (format version 1): its {@code name}, {@code source}, {@code options}
 * and {@code suballocator sim} lines.
 *
 * @param name the {@code name} line's free text
 * @param source the {@code source} line's free text; it starts with {@value #WORKLOAD_SOURCE_PREFIX}
 *     for a workload trace (calls without the reference's answers)
 * @param memoryLimit {@code memory_limit}: the allocator's total memory, in bytes
 * @param allowGrowth {@code allow_growth}
 * @param garbageCollection {@code garbage_collection}
 * @param fragmentationFraction {@code fragmentation_fraction}
 * @param timingCounter {@code timing_counter}: whether the allocator was given a shared timing
 *     counter
 * @param simBase {@code base}: the start of the simulated address space
 * @param simCapacity {@code capacity}: the size of the simulated address space, gaps included
 * @param simGap {@code gap}: the bytes kept free after every simulated region
 * @param simCoalescing {@code coalescing}: what the simulated sub-allocator's
 *     {@code supportsCoalescing()} answers
 */
public record TraceHeader(
        String name,
        String source,
        long memoryLimit,
        boolean allowGrowth,
        boolean garbageCollection,
        double fragmentationFraction,
        boolean timingCounter,
        long simBase,
        long simCapacity,
        long simGap,
        boolean simCoalescing) {

    /** The format version this package reads and writes. */
    public static final int VERSION = 1;

    /** How the {@code source} of a workload trace (no expected answers) starts. */
    public static final String WORKLOAD_SOURCE_PREFIX = "workload:";

    /**
     * Validates the header.
     *
     * @param name the {@code name} line's free text
     * @param source the {@code source} line's free text
     * @param memoryLimit {@code memory_limit}, in bytes
     * @param allowGrowth {@code allow_growth}
     * @param garbageCollection {@code garbage_collection}
     * @param fragmentationFraction {@code fragmentation_fraction}
     * @param timingCounter {@code timing_counter}
     * @param simBase {@code base} of the simulated address space
     * @param simCapacity {@code capacity} of the simulated address space
     * @param simGap {@code gap} after every simulated region
     * @param simCoalescing {@code coalescing} of the simulated sub-allocator
     * @throws IllegalArgumentException if {@code name} or {@code source} is null, empty or
     *     holds a line break; {@code memoryLimit} is not positive; {@code fragmentationFraction}
     *     is negative, NaN or infinite; {@code simBase} is not a positive multiple of 256;
     *     {@code simCapacity} is not positive; {@code simGap} is negative; or the address space
     *     would end past {@link Long#MAX_VALUE}
     */
    public TraceHeader {
        checkText("name", name);
        checkText("source", source);
        if (memoryLimit <= 0) {
            throw new IllegalArgumentException("memoryLimit=" + memoryLimit + " (expected: > 0)");
        }
        if (!(fragmentationFraction >= 0) || Double.isInfinite(fragmentationFraction)) {
            throw new IllegalArgumentException("fragmentationFraction=" + fragmentationFraction
                    + " (expected: a finite value >= 0)");
        }
        if (simBase <= 0 || (simBase & 255) != 0) {
            throw new IllegalArgumentException("simBase=0x" + Long.toHexString(simBase)
                    + " (expected: a positive multiple of 256)");
        }
        if (simCapacity <= 0) {
            throw new IllegalArgumentException("simCapacity=" + simCapacity + " (expected: > 0)");
        }
        if (simGap < 0) {
            throw new IllegalArgumentException("simGap=" + simGap + " (expected: >= 0)");
        }
        if (simBase + simCapacity < 0) {
            throw new IllegalArgumentException("simCapacity=" + simCapacity
                    + " (expected: simBase + simCapacity <= Long.MAX_VALUE)");
        }
    }

    private static void checkText(String what, String text) {
        if (text == null || text.isEmpty() || text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0) {
            throw new IllegalArgumentException(what + "=" + text
                    + " (expected: non-empty text without line breaks)");
        }
    }

    /**
     * Whether this is a workload trace: calls without the reference's answers (no
     * {@code => ...} on {@code alloc} lines, no {@code sub}, {@code chunk} or {@code stats}
     * lines). That is the case exactly when {@link #source()} starts with
     * {@value #WORKLOAD_SOURCE_PREFIX}.
     *
     * @return true for a workload trace, false for a conformance trace
     */
    public boolean isWorkload() {
        return source.startsWith(WORKLOAD_SOURCE_PREFIX);
    }

    /**
     * The allocator options this trace asks for. Retry on failure is always off: replay is
     * single-threaded and must never sleep.
     *
     * @return options with this header's growth, garbage collection and fragmentation fraction
     */
    public BfcOptions bfcOptions() {
        return BfcOptions.builder()
                .allowGrowth(allowGrowth)
                .allowRetryOnFailure(false)
                .garbageCollection(garbageCollection)
                .fragmentationFraction(fragmentationFraction)
                .build();
    }
}
