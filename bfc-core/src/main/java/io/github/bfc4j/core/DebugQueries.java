/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's BFCAllocator debug queries (tensorflow/tensorflow @ 5263072435bf,
 * third_party/xla/xla/tsl/framework/bfc_allocator.cc; Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.BfcAllocator.BinDebugInfo;
import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Upstream's debug queries, read through the {@link PortView}: {@code get_bin_debug_info},
 * {@code RenderOccupancy} (with {@code RenderRegion}), {@code DumpMemoryLog} (with
 * {@code Chunk::DebugString}), and {@code strings::HumanReadableNumBytes}. They change
 * nothing; each needs the lock held.
 */
final class DebugQueries {

    private final PortView view;

    DebugQueries(PortView view) {
        this.view = view;
    }

    /**
     * Port of {@code BFCAllocator::get_bin_debug_info}: walks every chunk of every region.
     * Needs the lock.
     */
    List<BinDebugInfo> getBinDebugInfoLocked() {
        final int numBins = BfcPort.NUM_BINS;
        long[] bytesInUse = new long[numBins];
        long[] bytesInBin = new long[numBins];
        long[] requestedInUse = new long[numBins];
        long[] chunksInUse = new long[numBins];
        long[] chunksInBin = new long[numBins];
        for (ChunkWalk c = view.walk().all(); c.next(); ) {
            int binNum = BfcPort.binNumForSize(c.size());
            bytesInBin[binNum] += c.size();
            chunksInBin[binNum]++;
            if (c.inUse()) {
                bytesInUse[binNum] += c.size();
                requestedInUse[binNum] += c.requestedSize();
                chunksInUse[binNum]++;
            } else {
                BfcPort.check(view.binContains(binNum, c.handle()), "free chunk not in its bin");
                BfcPort.check(c.binNum() == binNum, "free chunk's bin_num is not its size's bin");
            }
        }
        List<BinDebugInfo> infos = new ArrayList<>(numBins);
        for (int b = 0; b < numBins; b++) {
            infos.add(new BinDebugInfo(b, BfcPort.binNumToSize(b), bytesInUse[b], bytesInBin[b],
                    requestedInUse[b], chunksInUse[b], chunksInBin[b]));
        }
        return Collections.unmodifiableList(infos);
    }

    /** Port of upstream's {@code RenderRegion}. */
    private static void renderRegion(char[] rendered, int resolution, long totalRenderSize,
            long offset, long basePtr, long ptr, long size, char c) {
        int startLocation = location(ptr - basePtr + offset, resolution, totalRenderSize);
        int endLocation = location(ptr + size - 1 - basePtr + offset, resolution, totalRenderSize);
        startLocation = Math.max(0, Math.min(resolution - 1, startLocation));
        endLocation = Math.max(0, Math.min(resolution - 1, endLocation));
        for (int i = startLocation; i <= endLocation; ++i) {
            rendered[i] = c;
        }
    }

    /**
     * {@code (offset * resolution) / total}, exact as upstream's {@code size_t} arithmetic is
     * (a {@code double} rounds the product above 2^53 and can move a boundary by one
     * position), and without overflowing where upstream's product would (pools of about 160
     * PiB and more).
     */
    private static int location(long offset, int resolution, long total) {
        if (offset <= Long.MAX_VALUE / resolution) {
            return (int) (offset * resolution / total);
        }
        return BigInteger.valueOf(offset).multiply(BigInteger.valueOf(resolution))
                .divide(BigInteger.valueOf(total)).intValue();
    }

    /** Port of {@code BFCAllocator::RenderOccupancy}. Needs the lock. */
    String renderOccupancyLocked() {
        // Make a buffer for the ASCII-art representation.
        final int resolution = 100;
        char[] rendered = new char[resolution];

        // Compute the total region size to render over.
        final int regionCount = view.regionCount();
        final ChunkWalk c = view.walk();
        long totalRegionSize = 0;
        for (int r = 0; r < regionCount; r++) {
            totalRegionSize += c.region(r).regionBytes();
        }
        if (totalRegionSize == 0) {
            return "<allocator contains no memory>";
        }

        // Start out with everything empty.
        renderRegion(rendered, resolution, totalRegionSize, 0, 0, 0, totalRegionSize, '_');

        long regionOffset = 0;
        for (int r = 0; r < regionCount; r++) {
            // Then render each chunk left to right.
            for (c.region(r); c.next(); ) {
                if (c.inUse()) {
                    // Render the wasted space.
                    long wasted = c.size() - c.requestedSize();
                    if (wasted > 0) {
                        renderRegion(rendered, resolution, totalRegionSize,
                                regionOffset + c.requestedSize(), c.regionPtr(), c.ptr(), wasted, 'x');
                    }
                    // Then the occupied space.
                    renderRegion(rendered, resolution, totalRegionSize, regionOffset, c.regionPtr(),
                            c.ptr(), c.requestedSize(), '*');
                }
            }
            regionOffset += c.regionBytes();
        }
        return new String(rendered);
    }

    /**
     * Port of {@code BFCAllocator::DumpMemoryLog}, returned as text rather than logged. Needs
     * the lock.
     */
    String dumpMemoryLogLocked(long numBytes) {
        StringBuilder sb = new StringBuilder();
        List<BinDebugInfo> binInfos = getBinDebugInfoLocked();
        sb.append("BFCAllocator dump for ").append(view.logName()).append('\n');
        for (int binNum = 0; binNum < BfcPort.NUM_BINS; binNum++) {
            BinDebugInfo info = binInfos.get(binNum);
            BfcPort.check(view.binChunkCount(binNum) == info.totalChunksInBin() - info.totalChunksInUse(),
                    "bin " + binNum + " holds a chunk that is not free");
            appendBinLine(sb, info);
        }

        // Find the bin that we would have liked to allocate in, so we can get some further
        // analysis about fragmentation.
        final int b = BfcPort.binNumForSize(numBytes);
        sb.append("Bin for ").append(humanReadableNumBytes(numBytes)).append(" was ")
                .append(humanReadableNumBytes(BfcPort.binNumToSize(b))).append(", Chunk State: \n");
        final ChunkWalk c = view.walk();
        for (int h = view.binFirst(b); h != ChunkTable.INVALID_CHUNK_HANDLE; h = view.binHigher(b, h)) {
            appendChunkDebugString(sb, c, h, true);
            sb.append('\n');
        }

        // Next show the chunks that are in use, and also summarise their number by size.
        Map<Long, Integer> inUseBySize = new TreeMap<>();
        for (int r = 0; r < view.regionCount(); r++) {
            c.region(r);
            sb.append("Next region of size ").append(c.regionBytes()).append('\n');
            while (c.next()) {
                if (c.inUse()) {
                    inUseBySize.merge(c.size(), 1, Integer::sum);
                }
                sb.append(c.inUse() ? "InUse" : "Free ").append(" at ")
                        .append(Long.toHexString(c.ptr())).append(" of size ")
                        .append(c.size()).append(" next ").append(c.nextHandle());
                if (view.timingCounterSet()) {
                    sb.append(" freed_at_count ").append(Long.toUnsignedString(c.freedAtCount()));
                }
                sb.append('\n');
            }
        }
        sb.append("     Summary of in-use Chunks by size: \n");
        long totalBytes = 0;
        for (Map.Entry<Long, Integer> e : inUseBySize.entrySet()) {
            long bytes = e.getKey() * e.getValue();
            sb.append(e.getValue()).append(" Chunks of size ").append(e.getKey())
                    .append(" totalling ").append(humanReadableNumBytes(bytes)).append('\n');
            totalBytes += bytes;
        }
        sb.append("Sum Total of in-use chunks: ").append(humanReadableNumBytes(totalBytes)).append('\n');
        final long poolBytes = view.poolBytes();
        final long memoryLimit = view.memoryLimit();
        sb.append("Total bytes in pool: ").append(poolBytes).append(" memory_limit_: ")
                .append(memoryLimit).append(" available bytes: ").append(memoryLimit - poolBytes)
                .append(" curr_region_allocation_bytes_: ")
                .append(Long.toUnsignedString(view.currRegionAllocationBytes()))
                .append('\n');
        sb.append("Stats: \n").append(view.stats().debugString());
        return sb.toString();
    }

    /** One bin's line of {@code DumpMemoryLog}, also used by the memory summary. */
    static void appendBinLine(StringBuilder sb, BinDebugInfo info) {
        sb.append("Bin (").append(info.binSize()).append("): \tTotal Chunks: ")
                .append(info.totalChunksInBin()).append(", Chunks in use: ")
                .append(info.totalChunksInUse()).append(". ")
                .append(humanReadableNumBytes(info.totalBytesInBin())).append(" allocated for chunks. ")
                .append(humanReadableNumBytes(info.totalBytesInUse())).append(" in use in bin. ")
                .append(humanReadableNumBytes(info.totalRequestedBytesInUse()))
                .append(" client-requested in use in bin.\n");
    }

    /** Port of {@code BFCAllocator::Chunk::DebugString}; moves {@code c} to look at {@code h}. */
    private static void appendChunkDebugString(StringBuilder dbg, ChunkWalk c, int h, boolean recurse) {
        c.at(h);
        final int prev = c.prevHandle();
        final int next = c.nextHandle();
        dbg.append("  Size: ").append(humanReadableNumBytes(c.size()))
                .append(" | Requested Size: ").append(humanReadableNumBytes(c.requestedSize()))
                .append(" | in_use: ").append(c.inUse() ? 1 : 0)
                .append(" | bin_num: ").append(c.binNum());
        if (recurse && prev != ChunkTable.INVALID_CHUNK_HANDLE) {
            dbg.append(", prev: ");
            appendChunkDebugString(dbg, c, prev, false);
        }
        if (recurse && next != ChunkTable.INVALID_CHUNK_HANDLE) {
            dbg.append(", next: ");
            appendChunkDebugString(dbg, c, next, false);
        }
    }

    /**
     * Port of {@code tsl::strings::HumanReadableNumBytes}: {@code 1023B}, {@code 1.0KiB},
     * {@code 512.0KiB}, {@code 12.50MiB}, {@code 80.00GiB} (one decimal for KiB, two above).
     */
    static String humanReadableNumBytes(long numBytes) {
        if (numBytes == Long.MIN_VALUE) {
            // Special case for a number whose negation is not representable.
            return "-8E";
        }
        String neg = numBytes < 0 ? "-" : "";
        if (numBytes < 0) {
            numBytes = -numBytes;
        }
        if (numBytes < 1024) {
            // No fractions for bytes.
            return neg + numBytes + "B";
        }
        final String units = "KMGTPE";
        int unit = 0;
        while (numBytes >= 1024L * 1024) {
            numBytes /= 1024;
            ++unit;
        }
        return String.format(Locale.ROOT, unit == 0 ? "%s%.1f%ciB" : "%s%.2f%ciB",
                neg, numBytes / 1024.0, units.charAt(unit));
    }
}
