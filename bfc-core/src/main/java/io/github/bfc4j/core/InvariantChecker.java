/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;

/**
 * The invariant checker: every structural invariant of the allocator, checked through the
 * {@link PortView} in time linear in the number of chunks (plus the bins' ordered walk), and
 * the exception with a dump of the offending region when one does not hold. What is checked is
 * listed on {@link BfcAllocator#checkInvariants()}. Safe to run on a corrupt structure: every
 * walk is bounded and every handle is checked before it is read.
 */
final class InvariantChecker {

    /** At most this many chunks of one region are listed in a violation's dump. */
    private static final int DUMP_MAX_CHUNKS = 200;

    private final PortView view;

    InvariantChecker(PortView view) {
        this.view = view;
    }

    /**
     * Checks every invariant. Needs the lock.
     *
     * @throws BfcInvariantViolation on the first invariant that does not hold
     */
    void checkLocked() {
        final PortView v = view;
        final int regionCount = v.regionCount();
        if (v.closed()) {
            if (regionCount != 0 || v.addressMapSize() != 0) {
                throw violation("closed, but still holds " + regionCount + " regions and "
                        + v.addressMapSize() + " chunk addresses", -1);
            }
            for (int b = 0; b < BfcPort.NUM_BINS; b++) {
                if (v.binChunkCount(b) != 0) {
                    throw violation("closed, but bin " + b + " still holds "
                            + v.binChunkCount(b) + " chunks", -1);
                }
            }
            return;
        }
        final AllocatorStats stats = v.stats();
        final long nextAllocationId = v.nextAllocationId();
        final boolean timingCounterEverSet = v.timingCounterEverSet();
        final boolean lazyAddressMap = v.lazyAddressMap();
        final int handles = v.handleCount();
        final boolean[] live = new boolean[handles];
        int liveChunks = 0;
        int mappedChunks = 0;
        int freeChunkCount = 0;
        long poolSum = 0;
        long inUseSum = 0;
        long prevRegionEnd = 0;
        final ChunkWalk c = v.walk();
        for (int r = 0; r < regionCount; r++) {
            c.region(r);
            final long start = c.regionPtr();
            final long end = c.regionEnd();
            final long regionBytes = c.regionBytes();
            if (regionBytes <= 0 || regionBytes % BfcPort.MIN_ALLOCATION_SIZE != 0
                    || end - start != regionBytes) {
                throw violation("region " + r + " has size " + regionBytes
                        + " (expected: a positive multiple of 256 equal to end - start)", r);
            }
            if (r > 0 && Long.compareUnsigned(start, prevRegionEnd) < 0) {
                throw violation("region " + r + " starts at " + hex(start)
                        + ", before the previous region ends at " + hex(prevRegionEnd)
                        + " (regions must be sorted and disjoint)", r);
            }
            prevRegionEnd = end;
            poolSum += regionBytes;

            long cursor = start;
            int prevH = ChunkTable.INVALID_CHUNK_HANDLE;
            boolean prevFree = false;
            long prevSize = 0;
            if (!c.next()) {
                throw violation("no chunk starts at the region's start " + hex(start), r);
            }
            do {
                final int h = c.handle();
                if (h < 0 || h >= handles) {
                    throw violation("handle " + h + " after " + hex(cursor)
                            + " is not a handle of the chunk table (" + handles + " handles)", r);
                }
                if (live[h]) {
                    throw violation("chunk h=" + h + " is reached twice (a cycle, or shared by"
                            + " two regions)", r);
                }
                live[h] = true;
                liveChunks++;
                final long ptr = c.ptr();
                final long size = c.size();
                if (c.prevHandle() != prevH) {
                    throw violation("chunk h=" + h + " at " + hex(ptr) + " has prev="
                            + c.prevHandle() + ", but follows h=" + prevH, r);
                }
                if (ptr != cursor) {
                    throw violation("chunk h=" + h + " starts at " + hex(ptr) + ", but the chunk"
                            + " before it ends at " + hex(cursor) + " (chunks must tile the"
                            + " region without gap or overlap)", r);
                }
                if (size <= 0 || size % BfcPort.MIN_ALLOCATION_SIZE != 0
                        || Long.compareUnsigned(size, end - cursor) > 0) {
                    throw violation("chunk h=" + h + " at " + hex(ptr) + " has size " + size
                            + " (expected: a positive multiple of 256 within the region, at most "
                            + (end - cursor) + ")", r);
                }
                if (c.inUse()) {
                    final long id = c.allocationId();
                    final long requested = c.requestedSize();
                    if (c.binNum() != ChunkTable.INVALID_BIN_NUM) {
                        throw violation("chunk h=" + h + " at " + hex(ptr) + " is in use but has"
                                + " bin_num=" + c.binNum(), r);
                    }
                    if (id <= 0 || id >= nextAllocationId) {
                        throw violation("chunk h=" + h + " at " + hex(ptr) + " has allocation id "
                                + id + " (expected: 1 to " + (nextAllocationId - 1) + ")", r);
                    }
                    if (requested <= 0 || requested > BfcPort.MAX_ALLOCATION_BYTES
                            || BfcPort.roundedBytes(requested) > size) {
                        throw violation("chunk h=" + h + " at " + hex(ptr) + " of size " + size
                                + " holds a request of " + requested + " bytes", r);
                    }
                    inUseSum += size;
                } else {
                    final int binNum = BfcPort.binNumForSize(size);
                    if (c.binNum() != binNum) {
                        throw violation("free chunk h=" + h + " at " + hex(ptr) + " of size " + size
                                + " has bin_num=" + c.binNum() + " (expected: " + binNum + ")", r);
                    }
                    if (!v.binContains(binNum, h)) {
                        throw violation("free chunk h=" + h + " at " + hex(ptr) + " is not in bin "
                                + binNum, r);
                    }
                    if (!timingCounterEverSet && prevFree) {
                        throw violation("free chunks h=" + prevH + " at " + hex(cursor - prevSize)
                                + " and h=" + h + " at " + hex(ptr) + " are adjacent and not"
                                + " coalesced (no timing counter was ever set)", r);
                    }
                    freeChunkCount++;
                }
                if (lazyAddressMap && (ptr & (BfcPort.MIN_ALLOCATION_SIZE - 1)) != 0) {
                    throw violation("chunk h=" + h + " starts at " + hex(ptr) + ", off a 256-byte"
                            + " boundary, while the address map still leaves free chunks out (the"
                            + " first region there must put every chunk start in the map)", r);
                }
                if (c.mapped()) {
                    mappedChunks++;
                    if (v.handleAt(ptr) != h) {
                        throw violation("the address map gives " + v.handleAt(ptr)
                                + " for " + hex(ptr) + ", where chunk h=" + h + " starts", r);
                    }
                } else if (!lazyAddressMap || ptr == start) {
                    throw violation("chunk h=" + h + " at " + hex(ptr) + " is not in the address"
                            + " map (only a free chunk that does not begin its region's memory may"
                            + " be left out, and only while every region starts on 256 bytes)", r);
                } else if (v.handleAt(ptr) != ChunkTable.INVALID_CHUNK_HANDLE) {
                    throw violation("the address map gives " + v.handleAt(ptr) + " for "
                            + hex(ptr) + ", where chunk h=" + h + " starts and is marked as left"
                            + " out of the map", r);
                }
                prevFree = !c.inUse();
                prevSize = size;
                cursor += size;
                prevH = h;
            } while (c.next());
            if (cursor != end) {
                throw violation("the chunks of region " + r + " end at " + hex(cursor)
                        + ", the region at " + hex(end), r);
            }
        }
        checkBinsLocked(c, live, freeChunkCount);
        if (v.addressMapSize() != mappedChunks) {
            throw violation("the address map holds " + v.addressMapSize()
                    + " addresses, the regions " + mappedChunks + " chunks in the map (of "
                    + liveChunks + ")", -1);
        }
        checkStatsLocked(stats, inUseSum, poolSum, nextAllocationId);
    }

    /**
     * Every bin holds only free chunks of live regions that name it, in (size, address) order
     * (compared here, not by the bins' own comparator), and the bins together hold exactly the
     * {@code freeChunkCount} free chunks. Needs the lock.
     */
    private void checkBinsLocked(ChunkWalk c, boolean[] live, int freeChunkCount) {
        final PortView v = view;
        int binned = 0;
        for (int b = 0; b < BfcPort.NUM_BINS; b++) {
            int before = ChunkTable.INVALID_CHUNK_HANDLE;
            long beforeSize = 0;
            long beforePtr = 0;
            int inThisBin = 0;
            for (int h = v.binFirst(b); h != ChunkTable.INVALID_CHUNK_HANDLE; h = v.binHigher(b, h)) {
                if (++binned > freeChunkCount) {
                    throw violation("the bins hold more chunks than the " + freeChunkCount
                            + " free chunks of the regions (bin " + b + ")", -1);
                }
                if (h < 0 || h >= live.length || !live[h]) {
                    throw violation("bin " + b + " holds h=" + h + ", which is no chunk of any"
                            + " region", -1);
                }
                c.at(h);
                if (c.inUse() || c.binNum() != b) {
                    throw violation("bin " + b + " holds chunk h=" + h + " at " + hex(c.ptr())
                            + " with in_use=" + c.inUse() + ", bin_num=" + c.binNum(),
                            v.regionIndexFor(c.ptr()));
                }
                if (before != ChunkTable.INVALID_CHUNK_HANDLE && (beforeSize != c.size()
                        ? Long.compareUnsigned(beforeSize, c.size()) > 0
                        : Long.compareUnsigned(beforePtr, c.ptr()) >= 0)) {
                    throw violation("bin " + b + " is out of (size, address) order at h=" + h,
                            v.regionIndexFor(c.ptr()));
                }
                before = h;
                beforeSize = c.size();
                beforePtr = c.ptr();
                inThisBin++;
            }
            if (inThisBin != v.binChunkCount(b)) {
                throw violation("bin " + b + " says it holds " + v.binChunkCount(b) + " chunks, its"
                        + " walk finds " + inThisBin, -1);
            }
        }
        if (binned != freeChunkCount) {
            throw violation("the bins hold " + binned + " chunks, the regions "
                    + freeChunkCount + " free chunks", -1);
        }
    }

    /** The statistics equal what the chunks and regions add up to. Needs the lock. */
    private void checkStatsLocked(AllocatorStats stats, long inUseSum, long poolSum, long nextAllocationId) {
        if (stats.bytesInUse() != inUseSum) {
            throw violation("stats say bytes_in_use=" + stats.bytesInUse() + ", the chunks in use"
                    + " add up to " + inUseSum, -1);
        }
        if (stats.poolBytes() != poolSum) {
            throw violation("stats say pool_bytes=" + stats.poolBytes() + ", the regions add up to "
                    + poolSum, -1);
        }
        if (stats.peakBytesInUse() < stats.bytesInUse() || stats.peakPoolBytes() < stats.poolBytes()) {
            throw violation("a peak is below its current value: peak_bytes_in_use="
                    + stats.peakBytesInUse() + " < bytes_in_use=" + stats.bytesInUse()
                    + " or peak_pool_bytes=" + stats.peakPoolBytes() + " < pool_bytes="
                    + stats.poolBytes(), -1);
        }
        if (stats.numAllocs() < 0 || stats.numAllocs() > nextAllocationId - 1
                || stats.largestAllocSize() < 0) {
            throw violation("stats say num_allocs=" + stats.numAllocs() + ", largest_alloc_size="
                    + stats.largestAllocSize() + ", but only " + (nextAllocationId - 1)
                    + " allocation ids were handed out", -1);
        }
    }

    /**
     * The exception for a broken invariant, with a dump of region {@code r} (or of every
     * region when {@code r < 0}). Needs the lock.
     */
    private BfcInvariantViolation violation(String what, int r) {
        final PortView v = view;
        StringBuilder dump = new StringBuilder();
        if (r >= 0 && r < v.regionCount()) {
            dumpRegionLocked(dump, r);
        } else {
            for (int i = 0; i < v.regionCount(); i++) {
                dumpRegionLocked(dump, i);
            }
            AllocatorStats stats = v.stats();
            dump.append("stats: num_allocs=").append(stats.numAllocs()).append(" bytes_in_use=")
                    .append(stats.bytesInUse()).append(" peak_bytes_in_use=").append(stats.peakBytesInUse())
                    .append(" pool_bytes=").append(stats.poolBytes()).append(" peak_pool_bytes=")
                    .append(stats.peakPoolBytes()).append(" next_allocation_id=").append(v.nextAllocationId())
                    .append('\n');
        }
        return new BfcInvariantViolation("allocator " + v.described() + ": " + what, dump.toString());
    }

    /** Appends one line per chunk of region {@code r}, at most {@link #DUMP_MAX_CHUNKS}. */
    private void dumpRegionLocked(StringBuilder dump, int r) {
        ChunkWalk c = view.walk().region(r);
        dump.append("region ").append(r).append(" [").append(hex(c.regionPtr())).append(", ")
                .append(hex(c.regionEnd())).append("), ").append(c.regionBytes())
                .append(" bytes:\n");
        final int handles = view.handleCount();
        int listed = 0;
        while (c.next()) {
            final int h = c.handle();
            if (h < 0 || h >= handles) {
                dump.append("  h=").append(h).append(" (not a handle)\n");
                return;
            }
            if (listed++ == DUMP_MAX_CHUNKS) {
                dump.append("  ... (more chunks not listed)\n");
                return;
            }
            dump.append("  h=").append(h).append(" ptr=").append(hex(c.ptr()))
                    .append(" size=").append(c.size())
                    .append(" requested=").append(c.requestedSize())
                    .append(" in_use=").append(c.inUse())
                    .append(" id=").append(c.allocationId())
                    .append(" bin=").append(c.binNum())
                    .append(" prev=").append(c.prevHandle())
                    .append(" next=").append(c.nextHandle())
                    .append(" freed_at=").append(Long.toUnsignedString(c.freedAtCount()))
                    .append('\n');
            if (Long.compareUnsigned(c.ptr(), c.regionEnd()) >= 0) {
                return;
            }
        }
    }

    private static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }
}
