/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.List;
import java.util.Objects;

/**
 * A read-only view of a {@link BfcAllocator}: its name, options, statistics, summaries, memory
 * map and per-allocation queries, and nothing that allocates, frees, closes or changes it. An
 * owner that must be the only one to allocate and free (bfc-cuda's {@code GpuBfcAllocator},
 * whose frees are ordered by CUDA streams) hands this out instead of the allocator. Every method
 * reads the allocator as the method of the same name does, under the allocator's lock, and is
 * as thread-safe.
 */
public final class BfcAllocatorView {

    private final BfcAllocator allocator;

    /** Made once per allocator, by the allocator. */
    BfcAllocatorView(BfcAllocator allocator) {
        this.allocator = allocator;
    }

    /**
     * The view of an allocator: the same object on every call for the same allocator, which
     * lives as long as the allocator does (what holds it weakly, as Micrometer's meters do, reads
     * the allocator for as long as it is reachable).
     *
     * @param allocator the allocator to read
     * @return its view
     * @throws NullPointerException if {@code allocator} is null
     */
    public static BfcAllocatorView of(BfcAllocator allocator) {
        return Objects.requireNonNull(allocator, "allocator=null (expected: the BfcAllocator to read)").readOnlyView;
    }

    /**
     * {@link BfcAllocator#name()}.
     *
     * @return the allocator's name
     */
    public String name() {
        return allocator.name();
    }

    /**
     * {@link BfcAllocator#memoryLimit()}.
     *
     * @return the memory limit in bytes
     */
    public long memoryLimit() {
        return allocator.memoryLimit();
    }

    /**
     * {@link BfcAllocator#options()}.
     *
     * @return the options given at construction
     */
    public BfcOptions options() {
        return allocator.options();
    }

    /**
     * {@link BfcAllocator#getMemoryType()}.
     *
     * @return the sub-allocator's memory type
     */
    public MemoryType getMemoryType() {
        return allocator.getMemoryType();
    }

    /**
     * {@link BfcAllocator#deviceId()}.
     *
     * @return the sub-allocator's device, by its CUDA ordinal
     */
    public int deviceId() {
        return allocator.deviceId();
    }

    /**
     * {@link BfcAllocator#getStats()}.
     *
     * @return the statistics exactly as the classic upstream reports them
     */
    public AllocatorStats getStats() {
        return allocator.getStats();
    }

    /**
     * {@link BfcAllocator#memoryStats()}.
     *
     * @return a consistent snapshot of every figure beyond upstream's statistics
     */
    public MemoryStats memoryStats() {
        return allocator.memoryStats();
    }

    /**
     * {@link BfcAllocator#bytesInUse()}.
     *
     * @return the bytes of chunks in use now
     */
    public long bytesInUse() {
        return allocator.bytesInUse();
    }

    /**
     * {@link BfcAllocator#peakBytesInUse()}.
     *
     * @return the largest bytes in use since creation or the last reset of the peaks
     */
    public long peakBytesInUse() {
        return allocator.peakBytesInUse();
    }

    /**
     * {@link BfcAllocator#reservedBytes()}.
     *
     * @return the bytes of the regions held from the sub-allocator
     */
    public long reservedBytes() {
        return allocator.reservedBytes();
    }

    /**
     * {@link BfcAllocator#bytesHeldForViews()}.
     *
     * @return the bytes of regions given back whose memory waits for their views to be collected
     */
    public long bytesHeldForViews() {
        return allocator.bytesHeldForViews();
    }

    /**
     * {@link BfcAllocator#peakReservedBytes()}.
     *
     * @return the largest reserved bytes since creation or the last reset of the peaks
     */
    public long peakReservedBytes() {
        return allocator.peakReservedBytes();
    }

    /**
     * {@link BfcAllocator#largestFreeChunkBytes()}.
     *
     * @return the size of the largest free chunk, 0 if none is free
     */
    public long largestFreeChunkBytes() {
        return allocator.largestFreeChunkBytes();
    }

    /**
     * {@link BfcAllocator#regionCount()}.
     *
     * @return the number of regions held now
     */
    public int regionCount() {
        return allocator.regionCount();
    }

    /**
     * {@link BfcAllocator#fragmentation()}.
     *
     * @return upstream's fragmentation ratio, in {@code [0, 1)}
     */
    public double fragmentation() {
        return allocator.fragmentation();
    }

    /**
     * {@link BfcAllocator#fragmentationWithinRegions()}.
     *
     * @return the fragmentation that region boundaries do not count, in {@code [0, 1)}
     */
    public double fragmentationWithinRegions() {
        return allocator.fragmentationWithinRegions();
    }

    /**
     * {@link BfcAllocator#isClosed()}.
     *
     * @return whether the allocator is closed
     */
    public boolean isClosed() {
        return allocator.isClosed();
    }

    /**
     * {@link BfcAllocator#memorySummary()}.
     *
     * @return the text report, lines separated by {@code \n}
     */
    public String memorySummary() {
        return allocator.memorySummary();
    }

    /**
     * {@link BfcAllocator#memoryMap()}.
     *
     * @return an immutable snapshot of every region and chunk
     */
    public MemoryMap memoryMap() {
        return allocator.memoryMap();
    }

    /**
     * {@link BfcAllocator#getBinDebugInfo()}.
     *
     * @return one entry per bin, in bin order
     */
    public List<BfcAllocator.BinDebugInfo> getBinDebugInfo() {
        return allocator.getBinDebugInfo();
    }

    /**
     * {@link BfcAllocator#renderOccupancy()}.
     *
     * @return the 100-character picture of all regions
     */
    public String renderOccupancy() {
        return allocator.renderOccupancy();
    }

    /**
     * {@link BfcAllocator#dumpMemoryLog(long)}.
     *
     * @param numBytes the size of the request being explained
     * @return the dump, one line per upstream log line
     */
    public String dumpMemoryLog(long numBytes) {
        return allocator.dumpMemoryLog(numBytes);
    }

    /**
     * {@link BfcAllocator#forEachChunk(BfcAllocator.ChunkVisitor)}.
     *
     * @param visitor receives each chunk, under the allocator's lock; it must not call back into
     *     the allocator
     * @throws NullPointerException if {@code visitor} is null
     */
    public void forEachChunk(BfcAllocator.ChunkVisitor visitor) {
        allocator.forEachChunk(visitor);
    }

    /**
     * {@link BfcAllocator#tracksAllocationSizes()}.
     *
     * @return true
     */
    public boolean tracksAllocationSizes() {
        return allocator.tracksAllocationSizes();
    }

    /**
     * {@link BfcAllocator#requestedSize(long)}.
     *
     * @param ptr an address the allocator handed out
     * @return the bytes asked for
     * @throws IllegalArgumentException if no chunk of the allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long requestedSize(long ptr) {
        return allocator.requestedSize(ptr);
    }

    /**
     * {@link BfcAllocator#allocatedSize(long)}.
     *
     * @param ptr an address the allocator handed out
     * @return the size of the chunk backing it
     * @throws IllegalArgumentException if no chunk of the allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocatedSize(long ptr) {
        return allocator.allocatedSize(ptr);
    }

    /**
     * {@link BfcAllocator#allocationId(long)}.
     *
     * @param ptr an address the allocator handed out
     * @return the allocation's id, or -1 if the chunk is free
     * @throws IllegalArgumentException if no chunk of the allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocationId(long ptr) {
        return allocator.allocationId(ptr);
    }

    /**
     * {@link BfcAllocator#checkInvariants()}: reads and checks, changes nothing.
     *
     * @throws BfcInvariantViolation on the first invariant that does not hold
     */
    public void checkInvariants() {
        allocator.checkInvariants();
    }

    /**
     * The allocator's own description.
     *
     * @return {@link BfcAllocator#toString()}
     */
    @Override
    public String toString() {
        return allocator.toString();
    }
}
