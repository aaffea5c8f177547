/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import io.github.bfc4j.core.MemoryStats;
import io.micrometer.common.docs.KeyName;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.docs.MeterDocumentation;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

/**
 * Every meter {@link BfcAllocatorMetrics} registers: name, type, base unit, tags, what it reads
 * and its Prometheus name. docs/metrics.md lists the same (a test keeps them in step).
 *
 * <p>All meters carry the tags of {@link Tags}. Gauges and counters read one
 * {@link MemoryStats} snapshot each (one lock acquisition per meter per scrape); nothing is
 * counted on the allocation path beyond the allocator's own plain counters.
 */
public enum BfcAllocatorMeters implements MeterDocumentation {

    /** Bytes of chunks in use: upstream's {@code bytes_in_use}. */
    MEMORY_USED("bfc.allocator.memory.used", Meter.Type.GAUGE, "bytes",
            "Bytes of chunks in use (chunk sizes, multiples of 256): upstream's bytes_in_use",
            MemoryStats::bytesInUse),

    /** The largest {@code bytes_in_use}: upstream's {@code peak_bytes_in_use}. */
    MEMORY_PEAK("bfc.allocator.memory.peak", Meter.Type.GAUGE, "bytes",
            "Peak bytes in use since creation, clearStats() or resetPeakStats(): upstream's peak_bytes_in_use",
            MemoryStats::peakBytesInUse),

    /** The memory limit. */
    MEMORY_LIMIT("bfc.allocator.memory.limit", Meter.Type.GAUGE, "bytes",
            "The memory limit (upstream's bytes_limit)", MemoryStats::bytesLimit),

    /** Bytes of regions held from the sub-allocator (reserved): upstream's pool bytes. */
    POOL_SIZE("bfc.allocator.pool.size", Meter.Type.GAUGE, "bytes",
            "Reserved bytes: regions held from the sub-allocator (upstream's pool_bytes)",
            MemoryStats::reservedBytes),

    /** The largest pool size: upstream's {@code peak_pool_bytes}. */
    POOL_PEAK("bfc.allocator.pool.peak", Meter.Type.GAUGE, "bytes",
            "Peak reserved bytes since creation or resetPeakStats() (upstream's peak_pool_bytes)",
            MemoryStats::peakReservedBytes),

    /** Bytes of regions given back whose memory waits for Java views of it to be collected. */
    HELD_FOR_VIEWS("bfc.allocator.held.for.views", Meter.Type.GAUGE, "bytes",
            "Bytes of regions given back (not in the pool) whose memory goes to the sub-allocator once"
                    + " the Java views of it are collected",
            MemoryStats::bytesHeldForViews),

    /** Reserved bytes not in use. */
    POOL_FREE("bfc.allocator.pool.free", Meter.Type.GAUGE, "bytes",
            "Reserved bytes not in use (pool size - memory used)", MemoryStats::freeBytesInPool),

    /** The largest free chunk: the largest request served without extending. */
    LARGEST_FREE_CHUNK("bfc.allocator.largest.free.chunk", Meter.Type.GAUGE, "bytes",
            "The largest free chunk: the largest request that needs no new region",
            MemoryStats::largestFreeChunkBytes),

    /** {@code 1 - largest free chunk / free in pool}: upstream's {@code GetFragmentation}. */
    FRAGMENTATION("bfc.allocator.fragmentation", Meter.Type.GAUGE, "ratio",
            "1 - largest free chunk / free bytes in pool (0 when nothing is free): upstream's"
                    + " GetFragmentation",
            MemoryStats::fragmentation),

    /** Fragmentation that region boundaries do not count. */
    FRAGMENTATION_WITHIN_REGIONS("bfc.allocator.fragmentation.within.regions", Meter.Type.GAUGE, "ratio",
            "1 - sum of each region's largest free chunk / free bytes in pool (0 when nothing is free):"
                    + " fragmentation that region boundaries do not count",
            MemoryStats::fragmentationWithinRegions),

    /** Regions held now. */
    REGIONS("bfc.allocator.regions", Meter.Type.GAUGE, null,
            "Regions held from the sub-allocator", MemoryStats::regionCount),

    /** Allocations not yet freed. */
    ALLOCATIONS_ACTIVE("bfc.allocator.allocations.active", Meter.Type.GAUGE, null,
            "Allocations not yet freed", MemoryStats::activeAllocations),

    /** Successful allocations. */
    ALLOCATIONS("bfc.allocator.allocations", Meter.Type.COUNTER, null,
            "Successful allocations since creation", MemoryStats::allocationsTotal),

    /** Bytes of successful allocations (chunk sizes). */
    ALLOCATED_BYTES("bfc.allocator.allocated", Meter.Type.COUNTER, "bytes",
            "Bytes handed out (chunk sizes) since creation", MemoryStats::allocatedBytesTotal),

    /** Frees. */
    FREES("bfc.allocator.frees", Meter.Type.COUNTER, null,
            "Frees since creation", MemoryStats::freesTotal),

    /** Bytes freed (chunk sizes). */
    FREED_BYTES("bfc.allocator.freed", Meter.Type.COUNTER, "bytes",
            "Bytes freed (chunk sizes) since creation", MemoryStats::freedBytesTotal),

    /** Allocation calls that returned 0 for a non-zero request. */
    OOM("bfc.allocator.oom", Meter.Type.COUNTER, null,
            "Failed allocations (out of memory) since creation", MemoryStats::oomsTotal),

    /** Regions obtained from the sub-allocator ({@code Extend}). */
    REGION_EXTENDS("bfc.allocator.region.extends", Meter.Type.COUNTER, null,
            "Regions obtained from the sub-allocator (Extend) since creation",
            MemoryStats::regionExtendsTotal),

    /** Regions given back by garbage collection or {@code emptyCache()}. */
    REGION_FREES("bfc.allocator.region.frees", Meter.Type.COUNTER, null,
            "Free regions given back to the sub-allocator by garbage collection or emptyCache() since creation",
            MemoryStats::regionFreesTotal);

    private final String name;
    private final Meter.Type type;
    private final String baseUnit;
    private final String description;
    private final ToDoubleFunction<MemoryStats> value;

    BfcAllocatorMeters(String name, Meter.Type type, String baseUnit, String description,
            ToDoubleFunction<MemoryStats> value) {
        this.name = name;
        this.type = type;
        this.baseUnit = baseUnit;
        this.description = description;
        this.value = value;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public Meter.Type getType() {
        return type;
    }

    @Override
    public String getBaseUnit() {
        return baseUnit;
    }

    @Override
    public KeyName[] getKeyNames() {
        return Tags.values();
    }

    /**
     * What the meter measures (also its Micrometer description).
     *
     * @return one sentence
     */
    public String description() {
        return description;
    }

    /**
     * The series name in Prometheus's text format (Micrometer's Prometheus naming: dots become
     * underscores, the base unit is appended, counters end in {@code _total}).
     *
     * @return e.g. {@code bfc_allocator_memory_used_bytes}
     */
    public String prometheusName() {
        String n = name.replace('.', '_');
        if (baseUnit != null) {
            n += "_" + baseUnit;
        }
        return type == Meter.Type.COUNTER ? n + "_total" : n;
    }

    /**
     * Reads this meter's value from a snapshot.
     *
     * @param stats a snapshot of the allocator
     * @return the value
     * @throws NullPointerException if {@code stats} is null
     */
    public double valueOf(MemoryStats stats) {
        return value.applyAsDouble(Objects.requireNonNull(stats, "stats=null (expected: MemoryStats, e.g. allocator.memoryStats())"));
    }

    /** The tags of every meter. */
    public enum Tags implements KeyName {
        /** The allocator's name ({@code BfcAllocator.name()}). */
        ALLOCATOR_NAME {
            @Override
            public String asString() {
                return "allocator.name";
            }
        },
        /** {@code device}, {@code host_pinned}, {@code host} or {@code sim}, from the memory type. */
        MEMORY_TYPE {
            @Override
            public String asString() {
                return "memory.type";
            }
        },
        /**
         * The device ordinal given to the binder, by default the allocator's own
         * ({@code BfcAllocator.deviceId()}: its sub-allocator's, {@code 0} for host or simulated
         * memory).
         */
        DEVICE_ID {
            @Override
            public String asString() {
                return "device.id";
            }
        }
    }
}
