/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.jfr.OutOfMemoryEvent;
import java.lang.System.Logger.Level;

/**
 * Reports an out-of-memory failure, from the port's out-of-memory event point: the figures of
 * {@link BfcOutOfMemoryException} (with the largest holders when provenance is recorded),
 * upstream's memory log (when its {@code dump_log_on_failure} asks, for the first failures of
 * the process), the {@link OutOfMemoryEvent}, and the {@link OutOfMemoryReport} for the
 * {@link OutOfMemoryListener}s and the rate-limited dumps of
 * {@link BfcOptions#dumpOnOomDirectory()}.
 *
 * <p>Everything the report says is taken in {@link #outOfMemoryLocked}, with the lock held by
 * the failing call, so it describes the moment of failure even if other threads allocate or
 * free before the caller hears of it. Only the slow work that must not hold the lock (the
 * listeners, writing the dump, committing the event) waits for {@link #outOfMemoryReported},
 * in the same thread. The report is kept per thread until {@link BfcAllocator#allocate(long)}
 * turns it into its exception (or the thread's next failure replaces it).
 */
final class OutOfMemoryReporter extends PortListener {

    private static final System.Logger LOG = System.getLogger(BfcPort.LOGGER_NAME);

    /** This thread's latest failure (of any allocator). */
    private static final ThreadLocal<Report> LAST = new ThreadLocal<>();

    /**
     * Set while this thread tells listeners of a failure: a failure inside a listener (of any
     * allocator) tells none and writes no dump, so that a listener that allocates cannot recurse.
     */
    private static final ThreadLocal<Boolean> NOTIFYING = new ThreadLocal<>();

    /** One failure, as it was when it happened. */
    private static final class Report {
        final long requestedBytes;
        final long roundedBytes;
        final long bytesInUse;
        final long poolBytes;
        final int regionCount;
        final long memoryLimit;
        final long largestFreeChunkBytes;
        final AllocatorStats stats;
        /** The picture for the listeners and the dump, until they are told; null if none wants it. */
        OutOfMemoryReport report;
        /** Whether the listeners and the dump writer hear of it (the picture may still be skipped). */
        boolean notify;
        /** {@code ""}, or the sentence naming the largest holders (when provenance is recorded). */
        String holders = "";
        /** The event until it is committed, then null. */
        OutOfMemoryEvent event;
        /** {@code ""}, or the sentence naming the dump file (or why it is missing). */
        String note = "";
        /** The dump file's absolute path, or null. */
        String dumpFile;

        Report(PortView v, long requestedBytes, long roundedBytes) {
            this.requestedBytes = requestedBytes;
            this.roundedBytes = roundedBytes;
            this.stats = v.stats();
            this.bytesInUse = stats.bytesInUse();
            this.poolBytes = stats.poolBytes();
            this.regionCount = v.regionCount();
            this.memoryLimit = v.memoryLimit();
            this.largestFreeChunkBytes = v.largestFreeChunk();
        }
    }

    /**
     * Long memory dumps logged per process: upstream's {@code kMaxFailureLogs}, for every path
     * (upstream logs one after every failed retry too).
     */
    static final int MAX_DUMP_LOGS = 10;

    private static final java.util.concurrent.atomic.AtomicInteger DUMP_LOGS =
            new java.util.concurrent.atomic.AtomicInteger();

    private final PortView view;
    private final MemoryReports reports;
    private final DebugQueries debug;
    private final HistoryRecorder history;
    private final OutOfMemoryListeners listeners;
    private final BfcOptions options;

    OutOfMemoryReporter(PortView view, MemoryReports reports, DebugQueries debug, HistoryRecorder history,
            OutOfMemoryListeners listeners, BfcOptions options) {
        this.view = view;
        this.reports = reports;
        this.debug = debug;
        this.history = history;
        this.listeners = listeners;
        this.options = options;
    }

    @Override
    void outOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
        final PortView v = view;
        final Report r = new Report(v, numBytes, roundedBytes);
        MemoryMap map = null;
        if (reports.namesHoldersLocked() && !v.closed()) {
            map = reports.memoryMapLocked();
            r.holders = HolderText.messageSentence(map);
        }
        if (listeners.wanted() && !v.closed() && NOTIFYING.get() == null) {
            r.notify = true;
        }
        if (r.notify && listeners.pictureWanted()) {
            if (map == null) {
                map = reports.memoryMapLocked();
            }
            MemorySnapshot snapshot = new MemorySnapshot(history.now(), map, options, v.coalescing(),
                    v.timingCounterEverSet(), history.history(), v.shardIndex() < 0 ? null : v.userName(),
                    v.shardIndex(), v.shardCount(), v.deviceId());
            r.report = new OutOfMemoryReport(v.name(), numBytes, roundedBytes,
                    history.isOn() ? history.lastFailure() : Provenance.UNKNOWN, snapshot,
                    reports.memorySummaryLocked(), v.shardIndex() < 0 ? null : v.userName(), v.shardIndex(),
                    v.shardCount());
        }
        final OutOfMemoryEvent event = new OutOfMemoryEvent();
        if (event.isEnabled()) {
            event.allocator = v.userName();
            event.shard = v.shardIndex();
            event.requestedBytes = numBytes;
            event.bytesInUse = r.bytesInUse;
            event.poolBytes = r.poolBytes;
            event.limitBytes = r.memoryLimit;
            event.largestFreeChunkBytes = r.largestFreeChunkBytes;
            event.annotation = JfrRecorder.currentAnnotation();
            r.event = event;
        }
        if (dumpLogOnFailure && LOG.isLoggable(Level.WARNING) && DUMP_LOGS.getAndIncrement() < MAX_DUMP_LOGS) {
            // Upstream's AllocateRawInternal: the memory log and the occupancy, for the first
            // failures of allocations that may be retried when retrying is off, or after the
            // last retry. DEVIATION(port): upstream logs it after every failed retry; here only
            // the first MAX_DUMP_LOGS of the process, as its other path.
            LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate {1} bytes"
                    + " (rounded to {2}).{3} (This dump is logged for the first {4} failures of the"
                    + " process; memorySummary() tells the state at any time; logger {5} at level"
                    + " ERROR turns it off.)\nCurrent allocation summary follows.\n{6}\n{7}",
                    v.logName(), numBytes, roundedBytes, r.holders, MAX_DUMP_LOGS, BfcPort.LOGGER_NAME,
                    debug.dumpMemoryLogLocked(roundedBytes), debug.renderOccupancyLocked());
        }
        LAST.set(r);
    }

    @Override
    void outOfMemoryReported(long numBytes) {
        final Report r = LAST.get();
        if (r == null) {
            return;
        }
        if (r.notify) {
            OomDumpWriter.Result dump;
            NOTIFYING.set(Boolean.TRUE);
            try {
                dump = listeners.notify(r.report);
            } finally {
                NOTIFYING.remove();
                // A failure inside a listener replaced this thread's report with its own.
                LAST.set(r);
                // Told, or a listener threw an Error past the others: either way the picture
                // (a snapshot, perhaps with a long history) must not stay reachable from this
                // thread until its next failure.
                r.report = null;
                r.notify = false;
            }
            r.note = dump.note();
            r.dumpFile = dump.file();
            if (!r.note.isEmpty()) {
                LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate {1} bytes.{2}",
                        view.logName(), numBytes, r.note);
            }
        }
        if (r.event != null) {
            r.event.dumpFile = r.dumpFile;
            r.event.commit();
            r.event = null;
        }
    }

    /**
     * The exception for this thread's latest failure, which must be the failure of the
     * {@code allocateRaw} that {@code allocate(bytes)} just made: figures from the moment of
     * failure, the dump's note and file.
     *
     * @param bytes the bytes {@code allocate} asked for
     * @return the exception
     */
    BfcOutOfMemoryException exceptionForLastFailure(long bytes) {
        final Report r = LAST.get();
        LAST.remove();
        if (r == null || r.requestedBytes != bytes) {
            throw new IllegalStateException("allocator " + view.described() + " has no out-of-memory"
                    + " report for this thread's failed allocation of " + bytes + " bytes");
        }
        return new BfcOutOfMemoryException(view.name(), view.shardIndex() < 0 ? null : view.userName(),
                view.shardIndex(), view.shardCount(), bytes, r.roundedBytes, r.bytesInUse,
                r.poolBytes, r.regionCount, r.memoryLimit, r.largestFreeChunkBytes, r.stats,
                r.holders + interruptedNote(r), r.note, r.dumpFile);
    }

    /**
     * {@code ""}, or, when the allocator retries on failure and the calling thread is interrupted
     * (which ends that wait, docs/deviations.md #16), a sentence saying that the allocation may
     * not have waited for other threads' frees: a failure within milliseconds, unexplained
     * otherwise.
     */
    private String interruptedNote(Report r) {
        if (!options.allowRetryOnFailure() || r.roundedBytes > r.memoryLimit
                || !Thread.currentThread().isInterrupted()) {
            return "";
        }
        return " This thread is interrupted, which ends the wait for other threads to free memory"
                + " (allowRetryOnFailure waits up to 10 s otherwise): the allocation may have failed"
                + " without waiting.";
    }
}
