/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * Replays a trace on a {@link BfcAllocator} and compares every answer with the reference's
 * ({@code docs/trace-format.md}).
 *
 * <p>The allocator is built from the header: {@code memory_limit} is its total memory, the
 * options come from {@link TraceHeader#bfcOptions()} (never retrying on failure), a
 * {@link SharedCounter} is set with {@link BfcAllocator#setTimingCounter} if
 * {@code timing_counter=true}, and its sub-allocator is the {@link SimSubAllocator} of the
 * {@code suballocator sim} line behind a recorder of every sub-allocator call.
 *
 * <p>Then each line is replayed in order:
 * <ul>
 * <li>{@code alloc}: {@link BfcAllocator#allocateRaw(long, long, AllocationAttributes)} with the
 *     line's alignment and {@code freed_before} (as the attributes' {@code freedByFunc}, none
 *     for 0), never retrying; the returned address must equal the expected one (0 for
 *     {@code null}). The address is remembered under the line's id.</li>
 * <li>{@code free}: {@link BfcAllocator#deallocateRaw(long)} of the address remembered under the
 *     id (0, a no-op, if that allocation returned null).</li>
 * <li>{@code frontier}: {@link BfcAllocator#setSafeFrontier(long)}; {@code clear_stats}:
 *     {@link BfcAllocator#clearStats()}.</li>
 * <li>{@code sub alloc} / {@code sub free}: the next sub-allocator call that the preceding call
 *     made must be this one (same kind, bytes and address). When the next non-{@code sub} line
 *     comes, or the trace ends, every sub-allocator call that the preceding call made must have
 *     been matched: a missing, extra or different call is a difference.</li>
 * <li>{@code chunk}: {@link BfcAllocator#allocatedSize}, {@link BfcAllocator#requestedSize}
 *     and {@link BfcAllocator#allocationId} of the id's address.</li>
 * <li>{@code stats}: {@link BfcAllocator#getStats()}, every key present on the line.</li>
 * </ul>
 * The replay stops at the first difference and reports its line, the expected and the actual
 * answer ({@link ReplayResult}). An exception thrown by the allocator (or an assertion error of
 * its internal checks) is a difference too, reported at the line whose call threw. A workload
 * trace (no answers) is replayed without comparisons; only its own consistency is checked, by
 * the reader. After a replay that passed, the allocator is closed; if that throws, the replay
 * fails at the last line.
 *
 * <p>Lines are read as they are replayed: a format error after the first difference is not
 * reported, and a format error before it ends the replay with a {@link TraceFormatException}.
 */
public final class TraceReplayer {

    private TraceReplayer() {
    }

    /**
     * Replays a trace file (plain or gzip).
     *
     * @param path the trace
     * @return the outcome: passed, or the first difference
     * @throws TraceFormatException if the trace does not follow format version 1 (up to the
     *     first difference), or if the last line read has no line break after it (a file cut
     *     short, whose lines read may all pass or whose cut line may differ)
     * @throws java.nio.file.NoSuchFileException if the file does not exist
     * @throws IOException if the file cannot be read
     * @throws NullPointerException if {@code path} is null
     */
    public static ReplayResult replay(Path path) throws IOException {
        Objects.requireNonNull(path, "path=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        try (TraceReader reader = TraceReader.open(path)) {
            return refuseCut(reader, replay(reader));
        }
    }

    /**
     * Replays a trace read from a stream (plain or gzip); the stream is closed afterwards.
     *
     * @param in the trace's bytes
     * @param file the trace's name, for messages
     * @return the outcome: passed, or the first difference
     * @throws TraceFormatException if the trace does not follow format version 1 (up to the
     *     first difference), or if the last line read has no line break after it (a stream cut
     *     short, whose lines read may all pass or whose cut line may differ)
     * @throws IOException if the stream cannot be read
     * @throws NullPointerException if {@code in} or {@code file} is null (the stream is then
     *     neither read nor closed)
     */
    public static ReplayResult replay(InputStream in, String file) throws IOException {
        try (TraceReader reader = TraceReader.open(in, file)) {
            return refuseCut(reader, replay(reader));
        }
    }

    /**
     * {@code r}, unless the reader's last line had no line break after it: a trace cut inside
     * its last line ({@code free 648} cut to {@code free 6} is a valid line), which {@code bfc
     * verify} refuses too.
     */
    private static ReplayResult refuseCut(TraceReader reader, ReplayResult r) throws TraceFormatException {
        if (reader.lastLineUnterminated()) {
            throw new TraceFormatException(reader.file(), reader.lineNumber(),
                    "no line break after the last line (the file may be truncated)",
                    "one, as after every line (a whole trace ends with one: add it if nothing is missing)");
        }
        return r;
    }

    /**
     * Replays the body of an open trace, from the reader's current position (normally right
     * after the header). The reader is not closed. A trace cut inside its last line is not
     * refused here (the caller has the reader: {@link TraceReader#lastLineUnterminated()} tells
     * it once the replay has read that line).
     *
     * @param reader the trace
     * @return the outcome: passed, or the first difference
     * @throws TraceFormatException if the trace does not follow format version 1 (up to the
     *     first difference)
     * @throws IOException if the trace cannot be read
     * @throws NullPointerException if {@code reader} is null
     */
    public static ReplayResult replay(TraceReader reader) throws IOException {
        Objects.requireNonNull(reader, "reader=null (expected: an open trace, e.g. TraceReader.open(path))");
        return replay(reader, UnaryOperator.identity());
    }

    /**
     * Replays with the sim sub-allocator wrapped by {@code decorateSim} (beneath the recorder):
     * a seam for tests that need a misbehaving sub-allocator.
     */
    static ReplayResult replay(TraceReader reader, UnaryOperator<SubAllocator> decorateSim) throws IOException {
        return new Replay(reader, decorateSim).run();
    }

    /** The state of one replay. */
    private static final class Replay {
        private final TraceReader reader;
        private final UnaryOperator<SubAllocator> decorateSim;
        private final TraceHeader header;
        private final boolean answered;
        private final CallApplier applier = new CallApplier();
        /** The last call line (or none: the allocator's construction), which made the recorded sub calls. */
        private final TraceEvent lastCall = new TraceEvent();
        private long lastCallLine;
        private RecordingSubAllocator recorder;
        private BfcAllocator allocator;
        private int subMatched;
        private long calls;

        Replay(TraceReader reader, UnaryOperator<SubAllocator> decorateSim) {
            this.reader = reader;
            this.decorateSim = decorateSim;
            this.header = reader.header();
            this.answered = !header.isWorkload();
        }

        ReplayResult run() throws IOException {
            ReplayResult r = setUp();
            if (r != null) {
                return r;
            }
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                TraceEvent.Kind kind = e.kind();
                if (kind != TraceEvent.Kind.SUB_ALLOC && kind != TraceEvent.Kind.SUB_FREE) {
                    r = checkSubCallsMatched();
                    if (r != null) {
                        return r;
                    }
                }
                try {
                    r = apply(e);
                } catch (RuntimeException | AssertionError ex) {
                    return thrown(e, ex);
                }
                if (r != null) {
                    return r;
                }
            }
            r = checkSubCallsMatched();
            if (r != null) {
                return r;
            }
            try {
                allocator.close();
            } catch (RuntimeException | AssertionError ex) {
                return ReplayResult.fail(calls, reader.lineNumber(), "close() to return", describe(ex),
                        "line " + reader.lineNumber() + " (end of trace): close() threw " + describe(ex), ex);
            }
            return ReplayResult.pass(calls);
        }

        private ReplayResult setUp() {
            SubAllocator sim;
            try {
                sim = decorateSim.apply(new SimSubAllocator(header.simBase(), header.simCapacity(), header.simGap(),
                        header.simCoalescing()));
            } catch (RuntimeException | AssertionError ex) {
                long line = reader.suballocatorLine();
                return ReplayResult.fail(0, line, "a sim sub-allocator", describe(ex),
                        "line " + line + " (suballocator): creating the sim sub-allocator threw " + describe(ex), ex);
            }
            recorder = new RecordingSubAllocator(sim);
            try {
                allocator = new BfcAllocator(recorder, header.memoryLimit(), allocatorName(header.name()),
                        header.bfcOptions());
                if (header.timingCounter()) {
                    allocator.setTimingCounter(new SharedCounter());
                }
            } catch (RuntimeException | AssertionError ex) {
                long line = reader.optionsLine();
                return ReplayResult.fail(0, line, "an allocator", describe(ex),
                        "line " + line + " (options): creating the allocator threw " + describe(ex), ex);
            }
            lastCallLine = reader.optionsLine();
            return null;
        }

        /** The trace's name up to the first ':' or space (e.g. "tiny-single"), else "replay". */
        private static String allocatorName(String traceName) {
            int end = 0;
            while (end < traceName.length() && traceName.charAt(end) != ':' && traceName.charAt(end) != ' ') {
                end++;
            }
            return end == 0 ? "replay" : traceName.substring(0, end);
        }

        /** Applies one line; returns a failure, or null if the line matched. */
        private ReplayResult apply(TraceEvent e) {
            final BfcAllocator a = allocator;
            switch (e.kind()) {
                case ALLOC: {
                    startCall(e);
                    long ptr = applier.apply(a, e);
                    if (answered && ptr != e.address()) {
                        return differs(e, address(e.address()), address(ptr));
                    }
                    return null;
                }
                case FREE:
                case FRONTIER:
                case CLEAR_STATS:
                    startCall(e);
                    applier.apply(a, e);
                    return null;
                case SUB_ALLOC:
                case SUB_FREE:
                    return matchSubCall(e);
                case CHUNK: {
                    long ptr = applier.ptr(e.id());
                    long size = a.allocatedSize(ptr);
                    if (size != e.size()) {
                        return differs(e, "chunk " + e.id() + " size=" + e.size(), Long.toString(size));
                    }
                    long requested = a.requestedSize(ptr);
                    if (requested != e.requested()) {
                        return differs(e, "chunk " + e.id() + " requested=" + e.requested(), Long.toString(requested));
                    }
                    long allocationId = a.allocationId(ptr);
                    if (allocationId != e.allocationId()) {
                        return differs(e, "chunk " + e.id() + " allocation_id=" + e.allocationId(),
                                Long.toString(allocationId));
                    }
                    return null;
                }
                case STATS: {
                    AllocatorStats stats = a.getStats();
                    for (int i = 0; i < e.statCount(); i++) {
                        StatKey key = e.statKey(i);
                        long actual = key.valueIn(stats);
                        if (actual != e.statValue(i)) {
                            return differs(e, "stats " + key.traceName() + "=" + e.statValue(i), Long.toString(actual));
                        }
                    }
                    return null;
                }
                default:
                    throw new AssertionError(e.kind());
            }
        }

        private void startCall(TraceEvent e) {
            calls++;
            lastCall.copyFrom(e);
            lastCallLine = e.lineNumber();
        }

        private ReplayResult matchSubCall(TraceEvent e) {
            final RecordingSubAllocator rec = recorder;
            if (subMatched >= rec.size()) {
                return ReplayResult.fail(calls, e.lineNumber(), e.toString(), "no further sub-allocator call",
                        "line " + e.lineNumber() + " (" + e + ", made by " + callDescription()
                                + "): expected " + e + ", got no further sub-allocator call", null);
            }
            int i = subMatched;
            boolean same = e.kind() == TraceEvent.Kind.SUB_ALLOC
                    ? rec.kind(i) == RecordingSubAllocator.ALLOC
                    : rec.kind(i) == RecordingSubAllocator.FREE;
            if (!same || rec.bytes(i) != e.bytes() || rec.ptr(i) != e.address()) {
                String actual = rec.describe(i);
                return ReplayResult.fail(calls, e.lineNumber(), e.toString(), actual,
                        "line " + e.lineNumber() + " (sub-allocator call " + (i + 1) + " of " + callDescription()
                                + "): expected " + e + ", got " + actual, null);
            }
            subMatched++;
            return null;
        }

        /** Fails if the last call made sub-allocator calls that its sub lines did not list; then forgets them. */
        private ReplayResult checkSubCallsMatched() {
            final RecordingSubAllocator rec = recorder;
            if (answered && subMatched < rec.size()) {
                String actual = rec.describe(subMatched);
                int extra = rec.size() - subMatched;
                return ReplayResult.fail(calls, lastCallLine, "no further sub-allocator call", actual,
                        "line " + lastCallLine + " (" + callText() + "): made " + extra
                                + " more sub-allocator call" + (extra == 1 ? "" : "s") + " than the trace lists"
                                + ": expected no further sub-allocator call, got " + actual, null);
            }
            rec.clear();
            subMatched = 0;
            return null;
        }

        private String callText() {
            return lastCall.kind() == null ? "the allocator's construction" : lastCall.toString();
        }

        private String callDescription() {
            return lastCall.kind() == null ? "the allocator's construction" : lastCall + " on line " + lastCallLine;
        }

        private ReplayResult differs(TraceEvent e, String expected, String actual) {
            return ReplayResult.fail(calls, e.lineNumber(), expected, actual,
                    "line " + e.lineNumber() + " (" + e + "): expected " + expected + ", got " + actual, null);
        }

        private ReplayResult thrown(TraceEvent e, Throwable ex) {
            String expected = e.kind() == TraceEvent.Kind.ALLOC && answered ? address(e.address()) : "no exception";
            return ReplayResult.fail(calls, e.lineNumber(), expected, describe(ex),
                    "line " + e.lineNumber() + " (" + e + "): expected " + expected + ", got " + describe(ex), ex);
        }

        private static String address(long ptr) {
            return ptr == 0 ? "null" : "0x" + Long.toHexString(ptr);
        }

        private static String describe(Throwable ex) {
            return ex.getMessage() == null ? ex.getClass().getSimpleName()
                    : ex.getClass().getSimpleName() + ": " + ex.getMessage();
        }
    }
}
