/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryHistory;
import io.github.bfc4j.core.MemorySnapshot;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes the recorded history of a {@link MemorySnapshot} as a workload trace: the live
 * workload of a real Java program, replayable by {@code bfc replay}, {@code whatif} and
 * {@code report}. Every allocation call (failed ones too, which replay as calls that may fail
 * again) becomes an {@code alloc} line preceded by its provenance (provenance extension of
 * docs/trace-format.md), every free a {@code free} line, in the order the allocator's lock
 * serialised them, so that the calls of many threads replay as the one sequence the allocator
 * saw.
 *
 * <p>The simulated sub-allocator of the header starts at {@value #SIM_BASE} (hex) with
 * {@code gap=0}, twice the memory limit of space and the coalescing of the recorded
 * sub-allocator. A replay makes the same calls; where the recorded sub-allocator returned
 * regions at other relative addresses, decisions that depend on address order (ties between
 * free chunks of equal size) may differ.
 */
public final class SnapshotTraces {

    /** The base address of the simulated address space in the header. */
    public static final long SIM_BASE = 0x7f0000000000L;

    private SnapshotTraces() {
    }

    /**
     * The header of the trace of a snapshot, named after the allocator
     * ({@code <allocator name>: recorded}).
     *
     * @param snapshot the snapshot
     * @return a workload trace header with the allocator's options
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     */
    public static TraceHeader header(MemorySnapshot snapshot) {
        return header(snapshot, defaultName(snapshot));
    }

    /**
     * The header of the trace of a snapshot, with a {@code name} line of the caller's choosing
     * (its first word, up to a colon or space, names the allocator when {@code bfc} replays the
     * trace). The {@code source} line says that bfc4j recorded it, from which allocator, and how
     * many events.
     *
     * @param snapshot the snapshot
     * @param name the trace's name, e.g. {@code "my-server: 200 requests from 4 threads"}
     * @return a workload trace header with the allocator's options
     * @throws IllegalArgumentException if {@code name} is null, empty or holds a line break
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     */
    public static TraceHeader header(MemorySnapshot snapshot, String name) {
        check(snapshot);
        BfcOptions o = snapshot.options();
        long limit = snapshot.memoryMap().stats().bytesLimit();
        long capacity = limit > (Long.MAX_VALUE - SIM_BASE) / 2 ? Long.MAX_VALUE - SIM_BASE : 2 * limit;
        MemoryHistory h = snapshot.history();
        return new TraceHeader(name,
                TraceHeader.WORKLOAD_SOURCE_PREFIX + " recorded by bfc4j from allocator '"
                        + oneLine(snapshot.memoryMap().allocatorName()) + "' (" + h.events().size()
                        + " events of its history)",
                limit, o.allowGrowth(), o.garbageCollection(), o.fragmentationFraction(), false, SIM_BASE,
                capacity, 0, snapshot.coalescingRegions());
    }

    /**
     * Writes the trace to a file ({@code .gz}: gzip-compressed), created or replaced.
     *
     * @param snapshot the snapshot
     * @param file the trace file
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws IOException if the file cannot be written
     */
    public static void write(MemorySnapshot snapshot, Path file) throws IOException {
        write(snapshot, file, defaultName(snapshot));
    }

    /**
     * Writes the trace to a file ({@code .gz}: gzip-compressed), created or replaced, with a
     * {@code name} line of the caller's choosing (see {@link #header(MemorySnapshot, String)}).
     *
     * @param snapshot the snapshot
     * @param file the trace file
     * @param name the trace's name
     * @throws IllegalArgumentException if {@code name} is null, empty or holds a line break
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws IOException if the file cannot be written
     */
    public static void write(MemorySnapshot snapshot, Path file, String name) throws IOException {
        TraceHeader header = header(snapshot, name);
        try (TraceWriter w = TraceWriter.create(file)) {
            write(snapshot, header, w);
        }
    }

    /**
     * Writes the trace: the header, then one line per allocation call and free.
     *
     * @param snapshot the snapshot
     * @param w a writer whose header is not written yet
     * @throws IllegalStateException if the history is not complete ({@link MemoryHistory#isComplete()}:
     *     recorded from before the allocator's first region, with nothing dropped), or the
     *     allocator had a timing counter (frontier calls are not recorded)
     * @throws IOException if writing fails
     */
    public static void write(MemorySnapshot snapshot, TraceWriter w) throws IOException {
        write(snapshot, header(snapshot), w);
    }

    private static void write(MemorySnapshot snapshot, TraceHeader header, TraceWriter w) throws IOException {
        w.header(header);
        Map<Long, Long> traceIdOf = new HashMap<>();
        long next = 1;
        for (MemoryEvent e : snapshot.history().events()) {
            switch (e.kind()) {
                case ALLOC, OUT_OF_MEMORY -> {
                    long id = next++;
                    if (e.kind() == MemoryEvent.Kind.ALLOC) {
                        traceIdOf.put(e.allocationId(), id);
                    }
                    w.provenance(id, e.provenance());
                    w.workloadAlloc(id, e.requestedBytes(), Math.max(1, e.alignment()), 0);
                }
                case FREE -> {
                    Long id = traceIdOf.remove(e.allocationId());
                    if (id == null) {
                        throw new IllegalStateException("the history frees allocation " + e.allocationId()
                                + ", which it never allocated");
                    }
                    w.free(id);
                }
                default -> {
                    // Region events follow from the calls: a replay makes them again.
                }
            }
        }
    }

    private static String defaultName(MemorySnapshot snapshot) {
        return oneLine(snapshot.memoryMap().allocatorName()) + ": recorded";
    }

    private static String oneLine(String text) {
        return text.replace('\n', ' ').replace('\r', ' ');
    }

    private static void check(MemorySnapshot snapshot) {
        MemoryHistory h = snapshot.history();
        if (h.options() == null) {
            throw new IllegalStateException("allocator '" + snapshot.memoryMap().allocatorName() + "' recorded no"
                    + " history: call recordHistory(...) before its first allocation to write its workload as a trace");
        }
        if (!h.startedEmpty()) {
            throw new IllegalStateException("the history of allocator '" + snapshot.memoryMap().allocatorName()
                    + "' starts after it had obtained memory: call recordHistory(...) before its first allocation"
                    + " to write its workload as a trace");
        }
        if (h.droppedEvents() > 0) {
            throw new IllegalStateException("the history of allocator '" + snapshot.memoryMap().allocatorName()
                    + "' dropped its " + h.droppedEvents() + " oldest events: record with"
                    + " HistoryOptions.builder().maxEntries(n) large enough for the whole workload (it holds "
                    + h.options().maxEntries() + ")");
        }
        if (snapshot.timingCounterUsed()) {
            throw new IllegalStateException("allocator '" + snapshot.memoryMap().allocatorName() + "' had a timing"
                    + " counter: its frontier calls are not in the history, so it cannot be written as a trace");
        }
    }
}
