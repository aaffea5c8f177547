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
 * containing {@code p}; here from the region's sparse directory and the pages of slots of
 * {@link AddressHandleMap}. The answers are the same: upstream sets a slot only where a chunk
 * starts ({@code set_handle}) and clears it when the chunk is deleted ({@code erase}), and
 * deleting a region deletes every chunk in it first. For an address outside every region upstream aborts ({@code LOG(FATAL)}) or reads out
 * of bounds; here the answer is "no handle" ({@link ChunkTable#INVALID_CHUNK_HANDLE}).
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock.
 */
public final class RegionManager {
    private final ArrayList<AllocationRegion> regions = new ArrayList<>();
    private final List<AllocationRegion> regionsView = Collections.unmodifiableList(regions);
    private final AddressHandleMap handles;

    /**
     * The region found last: most lookups fall in it (one region without growth; the newest
     * with growth), so the scan or search is skipped. Null when none.
     */
    private AllocationRegion lastRegion;

    // The regions again, as primitive arrays for regionFor's scan (rebuilt by reindex() on the
    // slow path, whenever a region is added, extended or removed). A scan of a few contiguous
    // longs instead of a binary search through the list's objects: measured on
    // tf-resnet-train (4 regions, addresses spread over all of them), docs/performance.md.
    private long[] starts = new long[0];
    private long[] sizes = new long[0];
    private AllocationRegion[] byIndex = new AllocationRegion[0];
    /** Up to this many regions are scanned; above, regionFor searches by halves. */
    private static final int SCAN_LIMIT = 8;

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
        regions.add(upperBound(ptr), new AllocationRegion(ptr, memorySize));
        reindex();
    }

    private void reindex() {
        int n = regions.size();
        starts = new long[n];
        sizes = new long[n];
        byIndex = regions.toArray(new AllocationRegion[n]);
        for (int i = 0; i < n; i++) {
            starts[i] = byIndex[i].ptr();
            sizes[i] = byIndex[i].memorySize();
        }
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
                reindex();
                return preceding;
            }
        }
        regions.add(entry, new AllocationRegion(ptr, memorySize));
        reindex();
        return null;
    }

    /**
     * Port of {@code RegionManager::RemoveAllocationRegion}.
     *
     * @param index the region's position in {@link #regions()}
     */
    public void removeAllocationRegion(int index) {
        if (regions.remove(index) == lastRegion) {
            lastRegion = null;
        }
        reindex();
        // The region's chunks are deleted: let their empty address-map pages go.
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
        final AllocationRegion r = regionFor(p);
        return r == null ? ChunkTable.INVALID_CHUNK_HANDLE : handles.get(r, p);
    }

    /** Upstream's {@code RegionFor}, or null (not a fatal error) for an address outside. */
    private AllocationRegion regionFor(long p) {
        AllocationRegion r = lastRegion;
        if (r != null && Long.compareUnsigned(p - r.ptr(), r.memorySize()) < 0) {
            return r;
        }
        final AllocationRegion[] all = byIndex;
        if (all.length <= SCAN_LIMIT) {
            final long[] s = starts;
            final long[] z = sizes;
            for (int i = 0; i < all.length; i++) {
                if (Long.compareUnsigned(p - s[i], z[i]) < 0) {
                    r = all[i];
                    lastRegion = r;
                    return r;
                }
            }
            return null;
        }
        int i = regionIndexFor(p);
        if (i < 0) {
            return null;
        }
        r = regions.get(i);
        lastRegion = r;
        return r;
    }

    /**
     * Port of {@code RegionManager::set_handle}.
     *
     * @param p the start address of a chunk inside a region
     * @param h its handle
     */
    public void setHandle(long p, int h) {
        final AllocationRegion r = regionFor(p);
        if (r == null) {
            throw new IllegalStateException("no region holds 0x" + Long.toHexString(p));
        }
        handles.put(r, p, h);
    }

    /**
     * Port of {@code RegionManager::erase}.
     *
     * @param p the start address of a deleted chunk
     */
    public void erase(long p) {
        final AllocationRegion r = regionFor(p);
        if (r != null) {
            handles.remove(r, p);
        }
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

    /** Forgets every region and handle. */
    public void clear() {
        regions.clear();
        lastRegion = null;
        reindex();
        handles.clear();
    }
}
