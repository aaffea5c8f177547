/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's BFCAllocator::RegionManager (Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The regions held from the sub-allocator, sorted by end address, and the map from a chunk's
 * start address to its handle. Port of {@code BFCAllocator::RegionManager}.
 *
 * <p>Upstream answers {@code get_handle(p)} from the per-region slot array of the region
 * containing {@code p}; here from directories per GiB of address space and pages of slots
 * shared by all regions ({@link AddressHandleMap}), with no search for the region. The
 * answers are the same: upstream sets a slot only where a chunk starts ({@code set_handle})
 * and clears it when the chunk is deleted ({@code erase}), and deleting a region deletes
 * every chunk in it first. For an address outside every region upstream aborts
 * ({@code LOG(FATAL)}) or reads out of bounds; here it has no entry, so the answer is "no
 * handle" ({@link ChunkTable#INVALID_CHUNK_HANDLE}).
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class RegionManager {
    /**
     * Runs before the region list grows: a test's way to fail there (an
     * {@link OutOfMemoryError}). Null but in tests.
     */
    static volatile Runnable beforeGrowth;

    private final ArrayList<AllocationRegion> regions = new ArrayList<>(8);
    /** The regions {@link #regions} holds without growing (its capacity, which it does not tell). */
    private int regionCapacity = 8;
    private final List<AllocationRegion> regionsView = Collections.unmodifiableList(regions);
    private final AddressHandleMap handles;

    /**
     * @param chunks the allocator's chunk table (the address map checks chunk starts in it)
     */
    public RegionManager(ChunkTable chunks) {
        this.handles = new AddressHandleMap(chunks);
    }

    /**
     * Upstream's {@code std::upper_bound(regions_, ptr, Comparator)}: the index of the first
     * region whose end address is above {@code ptr}.
     */
    private int upperBound(long ptr) {
        int lo = 0;
        int hi = regions.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(ptr, regions.get(mid).endPtr()) < 0) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    /**
     * Port of {@code RegionManager::AddAllocationRegion}: inserts a region, sorted by end.
     *
     * @param ptr the start address
     * @param memorySize the size
     */
    public void addAllocationRegion(long ptr, long memorySize) {
        final AllocationRegion region = new AllocationRegion(ptr, memorySize);
        reserveRegion();
        regions.add(upperBound(ptr), region);
    }

    /**
     * Not in upstream: makes room for one more region, so that adding it creates nothing but
     * the region itself (for a caller that must fail before it changes anything).
     *
     * @throws OutOfMemoryError if the list must grow and cannot; it is unchanged then
     */
    public void reserveRegion() {
        if (regions.size() < regionCapacity) {
            return;
        }
        final Runnable hook = beforeGrowth;
        if (hook != null) {
            hook.run();
        }
        final int capacity = regionCapacity * 2;
        regions.ensureCapacity(capacity);
        regionCapacity = capacity;
    }

    /**
     * Port of {@code RegionManager::AddOrExtendAllocationRegion}: extends the region that ends
     * exactly at {@code ptr}, or inserts a new one. A region that starts where the new range
     * ends is not merged (as upstream).
     *
     * @param ptr the start address
     * @param memorySize the size
     * @return the extended region, or {@code null} if a new region was inserted
     */
    public AllocationRegion addOrExtendAllocationRegion(long ptr, long memorySize) {
        int entry = upperBound(ptr);
        if (entry > 0) {
            AllocationRegion preceding = regions.get(entry - 1);
            if (preceding.endPtr() == ptr) {
                preceding.extend(memorySize);
                return preceding;
            }
        }
        final AllocationRegion region = new AllocationRegion(ptr, memorySize);
        reserveRegion();
        regions.add(entry, region);
        return null;
    }

    /**
     * Port of {@code RegionManager::RemoveAllocationRegion}.
     *
     * @param index the region's position in {@link #regions()}
     */
    public void removeAllocationRegion(int index) {
        regions.remove(index);
    }

    /**
     * Not in upstream: lets the address map's empty pages and directories go, once regions
     * were removed (their chunks deleted). Slow path.
     *
     * @throws OutOfMemoryError if the map's block table cannot be rebuilt; the map's answers
     *     are unchanged then
     */
    public void trimHandles() {
        handles.trimPool();
    }

    /**
     * Port of {@code RegionManager::get_handle}.
     *
     * @param p an address
     * @return the handle of the chunk starting at {@code p}, or
     *     {@link ChunkTable#INVALID_CHUNK_HANDLE}
     */
    public int getHandle(long p) {
        return handles.get(p);
    }

    /**
     * Port of {@code RegionManager::set_handle}.
     *
     * @param p the start address of a chunk inside a region (not checked here: upstream's
     *     {@code RegionFor} would abort; BfcAllocator.checkInvariants() catches an entry
     *     without a chunk)
     * @param h its handle
     */
    public void setHandle(long p, int h) {
        handles.put(p, h);
    }

    /**
     * Not in upstream: makes room for {@link #setHandle setHandle(p, h)}, so that it cannot fail
     * (for a caller that must fail before it changes anything). See
     * {@link AddressHandleMap#reserve}.
     *
     * @param p the start address of a chunk about to be recorded
     * @throws IllegalStateException if {@code setHandle(p, h)} would refuse {@code p} (another
     *     chunk starts in its 256-byte slot); nothing is changed then
     * @throws OutOfMemoryError if the map cannot make room; its answers are unchanged
     */
    public void reserveHandle(long p) {
        handles.reserve(p);
    }

    /**
     * Port of {@code RegionManager::erase}.
     *
     * @param p the start address of a deleted chunk
     */
    public void erase(long p) {
        handles.remove(p);
    }

    /**
     * The region holding an address.
     *
     * @param p an address
     * @return the index in {@link #regions()} of the region containing {@code p}, or -1
     */
    public int regionIndexFor(long p) {
        int entry = upperBound(p);
        if (entry < regions.size() && Long.compareUnsigned(p, regions.get(entry).ptr()) >= 0) {
            return entry;
        }
        return -1;
    }

    /** @return the regions, sorted by address (read-only view) */
    public List<AllocationRegion> regions() {
        return regionsView;
    }

    /** @return the number of chunk start addresses recorded */
    public int handleCount() {
        return handles.size();
    }

    /**
     * Forgets every region and handle.
     *
     * @throws OutOfMemoryError if the address map's new (empty) arrays cannot be made; every
     *     region and handle is forgotten all the same
     */
    public void clear() {
        regions.clear();
        handles.clear();
    }
}
