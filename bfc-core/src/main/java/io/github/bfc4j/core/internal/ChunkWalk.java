/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.List;

/**
 * The walk over the regions and their chunks, in address order, and a read-only look at one
 * chunk: what upstream writes out as {@code get_handle(region.ptr())} followed by
 * {@code c->next} until {@code kInvalidChunkHandle}, in one place. A cursor, not an iterator
 * object per walk: it creates nothing, and one instance can be reused for walk after walk.
 *
 * <pre>{@code
 * for (walk.all(); walk.next(); ) {          // every chunk of every region
 *     if (walk.inUse()) { ... walk.size() ... walk.regionIndex() ... }
 * }
 * walk.region(r);                             // the chunks of region r only
 * walk.at(h).size();                          // one chunk, by handle (no walking)
 * }</pre>
 *
 * <p>The chunk that follows is read when the walk arrives at a chunk, so the current chunk
 * may be deleted (its handle recycled) and the walk still goes on to the chunk that followed
 * it. A handle outside the chunk table (only on a corrupt structure) ends the walk after it:
 * read {@link #handle()} before the chunk's fields where the structure may be corrupt.
 *
 * <p>Not thread-safe: guarded by the owning allocator's lock, like the structures it reads.
 */
public final class ChunkWalk {
    private static final int ALL = -1;
    private static final int ONE_CHUNK = -2;

    private final ChunkTable chunks;
    private final RegionManager regionManager;

    /** {@link #ALL}, {@link #ONE_CHUNK}, or the one region being walked. */
    private int only;
    private int regionIndex;
    private long regionPtr;
    private long regionBytes;
    private long regionEnd;
    private int current = ChunkTable.INVALID_CHUNK_HANDLE;
    private int following = ChunkTable.INVALID_CHUNK_HANDLE;

    /**
     * @param chunks the chunk table
     * @param regionManager the regions and the address map over the same table
     */
    public ChunkWalk(ChunkTable chunks, RegionManager regionManager) {
        this.chunks = chunks;
        this.regionManager = regionManager;
    }

    /**
     * Starts a walk over every chunk of every region, in address order; {@link #next()} moves
     * to the first.
     *
     * @return this cursor
     */
    public ChunkWalk all() {
        only = ALL;
        regionIndex = -1;
        current = ChunkTable.INVALID_CHUNK_HANDLE;
        following = ChunkTable.INVALID_CHUNK_HANDLE;
        return this;
    }

    /**
     * Starts a walk over the chunks of one region, in address order; {@link #next()} moves to
     * the first. The region's accessors answer at once.
     *
     * @param r the region's index in {@link RegionManager#regions()}
     * @return this cursor
     * @throws IndexOutOfBoundsException if there is no region {@code r}
     */
    public ChunkWalk region(int r) {
        only = r;
        enterRegion(r);
        current = ChunkTable.INVALID_CHUNK_HANDLE;
        return this;
    }

    /**
     * Looks at one chunk, without walking: the chunk's accessors answer at once, the region's
     * do not apply, and {@link #next()} returns false.
     *
     * @param h a live handle
     * @return this cursor
     */
    public ChunkWalk at(int h) {
        only = ONE_CHUNK;
        regionIndex = -1;
        current = h;
        following = ChunkTable.INVALID_CHUNK_HANDLE;
        return this;
    }

    private void enterRegion(int r) {
        AllocationRegion region = regionManager.regions().get(r);
        regionIndex = r;
        regionPtr = region.ptr();
        regionBytes = region.memorySize();
        regionEnd = region.endPtr();
        following = regionManager.getHandle(regionPtr);
    }

    /**
     * Moves to the next chunk: the one after the current chunk in its region, else (walking
     * all regions) the first chunk of the next region.
     *
     * @return false when there is no further chunk
     */
    public boolean next() {
        int h = following;
        if (h == ChunkTable.INVALID_CHUNK_HANDLE && only == ALL) {
            final List<AllocationRegion> regions = regionManager.regions();
            while (h == ChunkTable.INVALID_CHUNK_HANDLE && regionIndex + 1 < regions.size()) {
                enterRegion(regionIndex + 1);
                h = following;
            }
        }
        current = h;
        if (h == ChunkTable.INVALID_CHUNK_HANDLE) {
            following = ChunkTable.INVALID_CHUNK_HANDLE;
            return false;
        }
        following = h >= 0 && h < chunks.count() ? chunks.next(h) : ChunkTable.INVALID_CHUNK_HANDLE;
        return true;
    }

    /** @return the current region's index in address order, from 0 */
    public int regionIndex() {
        return regionIndex;
    }

    /** @return the current region's start address */
    public long regionPtr() {
        return regionPtr;
    }

    /** @return the current region's size in bytes */
    public long regionBytes() {
        return regionBytes;
    }

    /** @return the address one past the current region's end */
    public long regionEnd() {
        return regionEnd;
    }

    /** @return the current chunk's handle */
    public int handle() {
        return current;
    }

    /** @return the current chunk's address */
    public long ptr() {
        return chunks.ptr(current);
    }

    /** @return the current chunk's size */
    public long size() {
        return chunks.size(current);
    }

    /** @return the bytes requested of the current chunk (of its last allocation, once freed) */
    public long requestedSize() {
        return chunks.requestedSize(current);
    }

    /** @return the current chunk's allocation id, -1 if it is free */
    public long allocationId() {
        return chunks.allocationId(current);
    }

    /** @return the number of the loan that lent the current chunk, 0 if it is free or not lent */
    public int lender() {
        return chunks.lender(current);
    }

    /** @return whether the current chunk is in use */
    public boolean inUse() {
        return chunks.inUse(current);
    }

    /** @return whether the address map holds the current chunk's start */
    public boolean mapped() {
        return chunks.mapped(current);
    }

    /** @return the current chunk's bin, {@link ChunkTable#INVALID_BIN_NUM} if in none */
    public int binNum() {
        return chunks.binNum(current);
    }

    /** @return the handle of the chunk before the current one in its region, or none */
    public int prevHandle() {
        return chunks.prev(current);
    }

    /** @return the handle of the chunk after the current one in its region, or none */
    public int nextHandle() {
        return chunks.next(current);
    }

    /** @return the current chunk's free timestamp (0 if none) */
    public long freedAtCount() {
        return chunks.freedAtCount(current);
    }
}
