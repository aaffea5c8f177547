/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static io.github.bfc4j.core.DebugQueries.humanReadableNumBytes;

import io.github.bfc4j.core.BfcAllocator.BinDebugInfo;
import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * The reports beyond upstream's statistics, read through the {@link PortView}: the figures of
 * {@link MemoryStats} (upstream's stats, the {@link MemoryCounters} and the pool's shape), the
 * text summary in the spirit of PyTorch's {@code memory_summary()}, and the memory map (port
 * of {@code RecordMemoryMapInternal}). Each needs the lock held; none changes anything.
 */
final class MemoryReports {

    private final PortView view;
    private final DebugQueries debug;

    /** Who holds each chunk, when recorded. */
    private final HistoryRecorder history;

    /** The runtimes that lent chunks are lent to, for the holders of lent memory. */
    private final Loans loans;

    /** {@link MemoryStats#bytesHeldForViews()}. */
    private final LongSupplier bytesHeldForViews;

    MemoryReports(PortView view, DebugQueries debug, HistoryRecorder history, Loans loans,
            LongSupplier bytesHeldForViews) {
        this.view = view;
        this.debug = debug;
        this.history = history;
        this.loans = loans;
        this.bytesHeldForViews = bytesHeldForViews;
    }

    /**
     * Whether the memory map can name holders of live memory, so that the summary, the
     * out-of-memory message and a refused close list the largest: provenance was ever recorded
     * here (annotations on, or a history started), or a loan holds a number (memory may be lent
     * to a runtime, which then holds it). Needs the lock.
     */
    boolean namesHoldersLocked() {
        return history.recorded() || loans.anyNumbered();
    }

    /** Every figure beyond upstream's statistics. Needs the lock. */
    MemoryStats memoryStatsLocked() {
        final PortView v = view;
        final AllocatorStats s = v.stats();
        final MemoryCounters c = v.counters();
        return new MemoryStats(s.bytesInUse(), s.peakBytesInUse(), c.allocatedBytesTotal(),
                c.freedBytesTotal(), s.poolBytes(), s.peakPoolBytes(), c.reservedBytesTotal(),
                c.releasedBytesTotal(), c.allocationsTotal() - c.freesTotal(),
                c.peakActiveAllocations(), c.allocationsTotal(), c.freesTotal(), c.oomsTotal(),
                v.regionCount(), c.regionExtendsTotal(), c.regionFreesTotal(), v.largestFreeChunk(),
                v.fragmentation(), v.memoryLimit(), fragmentationWithinRegionsLocked(),
                bytesHeldForViews.getAsLong());
    }

    /**
     * {@link MemoryStats#fragmentationWithinRegions()}: {@code 1 - (sum over regions of each
     * region's largest free chunk) / free bytes}, 0 when nothing is free. Walks the bins from
     * the largest sizes down, so that each region's first chunk met is its largest, and stops
     * once every region has one or every free chunk was seen: at most the free chunks, each
     * placed in its region by a binary search. Needs the lock.
     */
    double fragmentationWithinRegionsLocked() {
        final PortView v = view;
        final long free = v.poolBytes() - v.bytesInUse();
        if (free <= 0) {
            return 0.0;
        }
        return (double) (free - regionsLargestFreeSumLocked()) / free;
    }

    /**
     * The sum over regions of each region's largest free chunk, for
     * {@link #fragmentationWithinRegionsLocked()} (and a sharded allocator's, over all shards).
     * Needs the lock.
     */
    long regionsLargestFreeSumLocked() {
        final PortView v = view;
        final long free = v.poolBytes() - v.bytesInUse();
        if (free <= 0) {
            return 0;
        }
        final int regionCount = v.regionCount();
        final long[] largest = new long[regionCount];
        final ChunkWalk c = v.walk();
        int regionsDone = 0;
        long seen = 0;
        long sumOfLargest = 0;
        for (int b = BfcPort.NUM_BINS - 1; b >= 0 && regionsDone < regionCount && seen < free; b--) {
            // Every chunk of bin b is smaller than every chunk of bin b + 1: a region whose
            // largest was found in a higher bin is done.
            for (int h = v.binFirst(b); h != ChunkTable.INVALID_CHUNK_HANDLE; h = v.binHigher(b, h)) {
                c.at(h);
                final int r = v.regionIndexFor(c.ptr());
                seen += c.size();
                if (largest[r] >= 0 && c.size() > largest[r]) {
                    largest[r] = c.size();
                }
            }
            for (int r = 0; r < regionCount; r++) {
                if (largest[r] > 0) {
                    sumOfLargest += largest[r];
                    largest[r] = -1;
                    regionsDone++;
                }
            }
        }
        return sumOfLargest;
    }

    /** The text summary (docs/observability.md shows one). Needs the lock. */
    String memorySummaryLocked() {
        final MemoryStats m = memoryStatsLocked();
        final String rule = "|" + "=".repeat(75) + "|\n";
        final String thin = "|" + "-".repeat(75) + "|\n";
        final String row = "| %-21s | %10s | %10s | %10s | %10s |%n";
        StringBuilder sb = new StringBuilder(4096);
        sb.append(rule);
        // A shard is titled by the name given to its sharded allocator and its index, as its
        // log lines name it, not by its own name (NAME/I), which the user never gave.
        String title = "bfc4j memory summary: " + view.logName() + " (" + view.memoryType() + ")";
        int pad = Math.max(0, 75 - title.length());
        sb.append('|').append(" ".repeat(pad / 2)).append(title).append(" ".repeat(pad - pad / 2))
                .append("|\n");
        sb.append(thin);
        sb.append(line(String.format(Locale.ROOT, "OOMs: %d  |  region extends: %d  |  region frees (GC, emptyCache): %d",
                m.oomsTotal(), m.regionExtendsTotal(), m.regionFreesTotal())));
        sb.append(rule);
        sb.append(String.format(Locale.ROOT, row, "Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"));
        sb.append(thin);
        sb.append(String.format(Locale.ROOT, row, "Allocated memory", humanReadableNumBytes(m.bytesInUse()),
                humanReadableNumBytes(m.peakBytesInUse()), humanReadableNumBytes(m.allocatedBytesTotal()),
                humanReadableNumBytes(m.freedBytesTotal())));
        sb.append(String.format(Locale.ROOT, row, "Reserved memory", humanReadableNumBytes(m.reservedBytes()),
                humanReadableNumBytes(m.peakReservedBytes()), humanReadableNumBytes(m.reservedBytesTotal()),
                humanReadableNumBytes(m.releasedBytesTotal())));
        sb.append(String.format(Locale.ROOT, row, "Allocations", m.activeAllocations(),
                m.peakActiveAllocations(), m.allocationsTotal(), m.freesTotal()));
        sb.append(String.format(Locale.ROOT, row, "Regions", m.regionCount(), "-",
                m.regionExtendsTotal(), m.regionFreesTotal()));
        sb.append(rule);
        sb.append(line("Limit: " + humanReadableNumBytes(m.bytesLimit()) + "  Free in pool: "
                + humanReadableNumBytes(m.freeBytesInPool()) + "  Largest free chunk: "
                + humanReadableNumBytes(m.largestFreeChunkBytes())));
        sb.append(line(String.format(Locale.ROOT, "Fragmentation: %.4f  (1 - largest free chunk / free in pool)",
                m.fragmentation())));
        sb.append(line(String.format(Locale.ROOT, "Fragmentation within regions: %.4f  (region boundaries not counted)",
                m.fragmentationWithinRegions())));
        if (m.bytesHeldForViews() > 0) {
            sb.append(line("Held for views: " + humanReadableNumBytes(m.bytesHeldForViews())
                    + "  (out of the pool; freed once its views are collected)"));
        }
        appendNotYetSafeLocked(sb);
        sb.append(rule);
        for (BinDebugInfo info : debug.getBinDebugInfoLocked()) {
            DebugQueries.appendBinLine(sb, info);
        }
        sb.append("Occupancy (* requested, x padding, _ free):\n")
                .append(debug.renderOccupancyLocked()).append('\n');
        if (namesHoldersLocked()) {
            MemoryMap map = memoryMapLocked();
            sb.append(HolderText.summarySection(map));
            sb.append(HolderText.waitingSection(map));
        }
        return sb.toString();
    }

    /**
     * With a timing counter (stream-ordered frees): the free bytes whose free is not yet safe
     * (stamped at or after the safe frontier). They count as free in the pool, but an allocation
     * with a {@code freedByFunc} skips them until its count passes their stamp. Needs the lock.
     */
    private void appendNotYetSafeLocked(StringBuilder sb) {
        // Once a counter was ever set (not only while one is): a chunk stamped before the counter
        // was taken away still waits, as emptyCache() and freedByFunc read it.
        if (!view.timingCounterEverSet()) {
            return;
        }
        final long frontier = view.safeFrontier();
        long bytes = 0;
        long count = 0;
        for (ChunkWalk c = view.walk().all(); c.next(); ) {
            if (!c.inUse() && BfcPort.notYetSafe(c.freedAtCount(), frontier)) {
                bytes += c.size();
                count++;
            }
        }
        if (count > 0) {
            sb.append(line("Not yet safe: " + humanReadableNumBytes(bytes) + " in " + count + " free chunk"
                    + (count == 1 ? "" : "s") + " (freed on busy streams)"));
        }
    }

    private static String line(String text) {
        return String.format(Locale.ROOT, "| %-73s |%n", text);
    }

    /** Port of {@code BFCAllocator::RecordMemoryMapInternal}. Needs the lock. */
    MemoryMap memoryMapLocked() {
        final PortView v = view;
        // Record summary data for every bin.
        List<BinDebugInfo> binInfos = debug.getBinDebugInfoLocked();
        for (int b = 0; b < BfcPort.NUM_BINS; b++) {
            BinDebugInfo info = binInfos.get(b);
            assert v.binChunkCount(b) == info.totalChunksInBin() - info.totalChunksInUse();
        }
        // Record the state of every chunk.
        // freedAtCount as upstream's map: 0 unless a counter is set now. notYetSafe (not
        // upstream's) reads the stamp once a counter was ever set: a chunk stamped before the
        // counter was taken away still waits for the frontier (emptyCache() keeps its region,
        // a freedByFunc skips it).
        final boolean timestamps = v.timingCounterSet();
        final boolean stamps = v.timingCounterEverSet();
        final long frontier = v.safeFrontier();
        final int regionCount = v.regionCount();
        List<MemoryMap.Region> regions = new ArrayList<>(regionCount);
        final ChunkWalk c = v.walk();
        // The runtime of each loan number met, asked of the loans once per number.
        final String[] runtimes = new String[ChunkTable.MAX_LOANS + 1];
        for (int r = 0; r < regionCount; r++) {
            List<MemoryMap.Chunk> list = new ArrayList<>();
            for (c.region(r); c.next(); ) {
                final boolean inUse = c.inUse();
                final long stamp = !stamps || inUse ? 0 : c.freedAtCount();
                final long freedAt = timestamps ? stamp : 0;
                final boolean notYetSafe = BfcPort.notYetSafe(stamp, frontier);
                final int lender = c.lender();
                if (lender != 0 && runtimes[lender] == null) {
                    runtimes[lender] = loans.runtimeOf(lender);
                }
                list.add(new MemoryMap.Chunk(c.ptr(), c.size(), c.requestedSize(), inUse,
                        c.allocationId(), c.binNum(), freedAt, notYetSafe,
                        inUse ? history.chunkProvenance(c.handle(), c.allocationId())
                                : notYetSafe ? history.freedChunkProvenance(c.handle(), c.ptr(), c.size(), stamp)
                                : Provenance.UNKNOWN,
                        runtimes[lender]));
            }
            regions.add(new MemoryMap.Region(c.regionPtr(), c.regionBytes(), list));
        }
        return new MemoryMap(v.name(), v.memoryType(), v.stats(), memoryStatsLocked(), binInfos,
                regions);
    }
}
