/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.jfr.OutOfMemoryEvent;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reports an out-of-memory failure, from the port's out-of-memory event point: the figures of
 * {@link BfcOutOfMemoryException}, upstream's memory log (when its {@code dump_log_on_failure}
 * asks), the {@link OutOfMemoryEvent} and, when {@link BfcOptions#dumpOnOomDirectory()} is set,
 * the dump (memory summary and memory map as JSON, docs/observability.md).
 *
 * <p>Everything the report says is taken in {@link #outOfMemoryLocked}, with the lock held by
 * the failing call, so it describes the moment of failure even if other threads allocate or
 * free before the caller hears of it. Only the slow work that must not hold the lock (writing
 * the file, committing the event) waits for {@link #outOfMemoryReported}, in the same thread.
 * The report is kept per thread until {@link BfcAllocator#allocate(long)} turns it into its
 * exception (or the thread's next failure replaces it).
 */
final class OutOfMemoryReporter extends PortListener {

    private static final System.Logger LOG = System.getLogger(BfcPort.LOGGER_NAME);

    /** Successive numbers for dump file names, so that two dumps never share a name. */
    private static final AtomicLong DUMP_SEQUENCE = new AtomicLong();

    /** This thread's latest failure (of any allocator). */
    private static final ThreadLocal<Report> LAST = new ThreadLocal<>();

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
        /** The dump's text until it is written, then null. */
        String dumpJson;
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

    private final PortView view;
    private final MemoryReports reports;
    private final DebugQueries debug;
    /** Where dumps go, or null for none. */
    private final Path dumpDirectory;

    OutOfMemoryReporter(PortView view, MemoryReports reports, DebugQueries debug, Path dumpDirectory) {
        this.view = view;
        this.reports = reports;
        this.debug = debug;
        this.dumpDirectory = dumpDirectory;
    }

    @Override
    void outOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
        final PortView v = view;
        final Report r = new Report(v, numBytes, roundedBytes);
        if (dumpDirectory != null && !v.closed()) {
            StringBuilder sb = new StringBuilder();
            sb.append("{\n\"schema\": \"bfc4j.oom-dump/1\",\n\"allocatorName\": ");
            MemoryMap.string(sb, v.name());
            sb.append(",\n\"requestedBytes\": ").append(numBytes)
                    .append(",\n\"roundedBytes\": ").append(roundedBytes)
                    .append(",\n\"summary\": ");
            MemoryMap.string(sb, reports.memorySummaryLocked());
            sb.append(",\n\"memoryMap\": ").append(reports.memoryMapLocked().toJson()).append("}\n");
            r.dumpJson = sb.toString();
        }
        final OutOfMemoryEvent event = new OutOfMemoryEvent();
        if (event.isEnabled()) {
            event.allocator = v.name();
            event.requestedBytes = numBytes;
            event.bytesInUse = r.bytesInUse;
            event.poolBytes = r.poolBytes;
            event.limitBytes = r.memoryLimit;
            event.largestFreeChunkBytes = r.largestFreeChunkBytes;
            r.event = event;
        }
        if (dumpLogOnFailure && LOG.isLoggable(Level.WARNING)) {
            // Upstream's AllocateRawInternal: the memory log and the occupancy, for the first
            // failures of allocations that may be retried when retrying is off, or after the
            // last retry.
            LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate {1} bytes"
                    + " (rounded to {2}).\nCurrent allocation summary follows.\n{3}\n{4}",
                    v.name(), numBytes, roundedBytes, debug.dumpMemoryLogLocked(roundedBytes),
                    debug.renderOccupancyLocked());
        }
        LAST.set(r);
    }

    @Override
    void outOfMemoryReported(long numBytes) {
        final Report r = LAST.get();
        if (r == null) {
            return;
        }
        if (r.dumpJson != null) {
            writeDump(r);
            LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate {1} bytes.{2}",
                    view.name(), numBytes, r.note);
        }
        if (r.event != null) {
            r.event.dumpFile = r.dumpFile;
            r.event.commit();
            r.event = null;
        }
    }

    /** Writes the dump of {@code r} (outside the lock) and says where in its note. */
    private void writeDump(Report r) {
        final Path dir = dumpDirectory;
        String fileName = "bfc-oom-" + view.name().replaceAll("[^A-Za-z0-9._-]", "_") + "-"
                + System.currentTimeMillis() + "-" + DUMP_SEQUENCE.incrementAndGet() + ".json";
        Path file = dir.resolve(fileName);
        try {
            Files.createDirectories(dir);
            Files.writeString(file, r.dumpJson, StandardCharsets.UTF_8, StandardOpenOption.CREATE_NEW);
            r.dumpFile = file.toAbsolutePath().toString();
            r.note = " Memory map and summary written to " + r.dumpFile + ".";
        } catch (IOException | RuntimeException e) {
            r.note = " Could not write the memory dump to " + file.toAbsolutePath() + ": " + e
                    + " (set BfcOptions.dumpOnOomDirectory or -Dbfc4j.dumpOnOom to a writable"
                    + " directory).";
        }
        r.dumpJson = null;
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
            throw new IllegalStateException("allocator '" + view.name() + "' has no out-of-memory"
                    + " report for this thread's failed allocation of " + bytes + " bytes");
        }
        return new BfcOutOfMemoryException(view.name(), bytes, r.roundedBytes, r.bytesInUse,
                r.poolBytes, r.regionCount, r.memoryLimit, r.largestFreeChunkBytes, r.stats,
                r.note, r.dumpFile);
    }
}
