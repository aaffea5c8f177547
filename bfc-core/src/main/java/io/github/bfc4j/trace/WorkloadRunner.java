/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.internal.LongList;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.IOException;
import java.util.Objects;

/**
 * Drives a {@link BfcAllocator} with the calls of a trace and measures the memory, ignoring any
 * expected answers the trace holds (a workload trace has none; in a conformance trace the
 * {@code =>} results and the {@code sub}, {@code chunk} and {@code stats} lines are skipped).
 * This is what {@code bfc replay}, {@code bfc whatif} and {@code bfc report} run; unlike
 * {@link TraceReplayer} it may run the calls under options other than the header's.
 *
 * <p>Each call line is made as {@link TraceReplayer} makes it: {@code alloc} with its alignment
 * and {@code freed_before} (never retrying), {@code free} of the address that id got (a no-op
 * if it got null), {@code frontier}, {@code clear_stats}. A {@link SharedCounter} is set when the
 * header says {@code timing_counter=true}. The result ({@link WorkloadResult}) holds the peak in
 * use, the peak reserved (pool bytes), the fragmentation at the peak, the regions, every
 * out-of-memory failure and every region obtained, with their trace lines. An optional
 * {@link WorkloadListener} sees every call.
 *
 * <p>Per call the runner creates no objects, so a million-call trace replays in about the
 * time the reader and the allocator take; the lists of failures and regions grow only when
 * one happens.
 *
 * <pre>{@code
 * try (TraceReader r = TraceReader.open(path)) {
 *     WorkloadResult w = WorkloadRunner.forHeader(r.header()).run(r);
 *     System.out.println(w.peakBytesInUse() + " " + w.oomCount());
 * }
 * }</pre>
 */
public final class WorkloadRunner {

    /**
     * Regions of slack added to the simulated space when {@link #simFor} enlarges it for a
     * larger memory limit: room for this many gaps.
     */
    static final long SIM_SLACK_REGIONS = 4096;

    private final long memoryLimit;
    private final BfcOptions options;
    private final SubAllocator subAllocator;
    private boolean timingCounter;
    private String name = "workload";
    private WorkloadListener listener;

    /**
     * A runner for one replay.
     *
     * @param memoryLimit the allocator's total memory
     * @param options the allocator's options (retry on failure is forced off: a replay never
     *     sleeps)
     * @param subAllocator where regions come from, e.g. {@link #simFor}; used by one replay only
     * @throws IllegalArgumentException if {@code memoryLimit} is not positive
     * @throws NullPointerException if an argument is null
     */
    public WorkloadRunner(long memoryLimit, BfcOptions options, SubAllocator subAllocator) {
        if (memoryLimit <= 0) {
            throw new IllegalArgumentException("memoryLimit=" + memoryLimit + " (expected: > 0)");
        }
        this.memoryLimit = memoryLimit;
        this.options = Objects.requireNonNull(options, "options=null (expected: BfcOptions, e.g. BfcOptions.defaults())").toBuilder().allowRetryOnFailure(false).build();
        this.subAllocator = Objects.requireNonNull(subAllocator, "subAllocator=null (expected: a SubAllocator, e.g. WorkloadRunner.simFor(...))");
    }

    /**
     * A runner with exactly the trace header's memory limit, options, timing counter and
     * simulated sub-allocator.
     *
     * @param header the trace's header
     * @return the runner
     * @throws NullPointerException if {@code header} is null
     */
    public static WorkloadRunner forHeader(TraceHeader header) {
        Objects.requireNonNull(header, "header=null (expected: a trace's header, e.g. reader.header())");
        return new WorkloadRunner(header.memoryLimit(), header.bfcOptions(), simFor(header, header.memoryLimit()))
                .timingCounter(header.timingCounter());
    }

    /**
     * The simulated sub-allocator of a trace's header, enlarged if needed so that a device of
     * {@code memoryLimit} bytes fits: its capacity is the header's, or {@code memoryLimit}
     * plus room for 4096 gaps if that is more. With the header's own limit this is exactly the
     * header's space.
     *
     * @param header the trace's header
     * @param memoryLimit the memory limit the replay will use
     * @return a fresh simulated address space
     * @throws NullPointerException if {@code header} is null
     */
    public static SimSubAllocator simFor(TraceHeader header, long memoryLimit) {
        Objects.requireNonNull(header, "header=null (expected: a trace's header, e.g. reader.header())");
        long capacity = header.simCapacity();
        if (memoryLimit > header.memoryLimit()) {
            long wanted = saturatedAdd(memoryLimit, saturatedMultiply(header.simGap(), SIM_SLACK_REGIONS));
            capacity = Math.max(capacity, Math.min(wanted, Long.MAX_VALUE - header.simBase()));
        }
        return new SimSubAllocator(header.simBase(), capacity, header.simGap(), header.simCoalescing());
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private static long saturatedMultiply(long a, long b) {
        long hi = Math.multiplyHigh(a, b);
        long lo = a * b;
        return (hi == 0 && lo >= 0) ? lo : Long.MAX_VALUE;
    }

    /**
     * Whether the allocator gets a shared timing counter (the header's {@code timing_counter}).
     *
     * @param timingCounter true to call {@link BfcAllocator#setTimingCounter}
     * @return this runner
     */
    public WorkloadRunner timingCounter(boolean timingCounter) {
        this.timingCounter = timingCounter;
        return this;
    }

    /**
     * The allocator's name, for its log messages.
     *
     * @param name the name (default {@code workload})
     * @return this runner
     */
    public WorkloadRunner name(String name) {
        this.name = Objects.requireNonNull(name, "name=null (expected: a name for the allocator's log messages, e.g. workload)");
        return this;
    }

    /**
     * Who sees every call.
     *
     * @param listener the listener, or null for none
     * @return this runner
     */
    public WorkloadRunner listener(WorkloadListener listener) {
        this.listener = listener;
        return this;
    }

    /**
     * Replays the trace's calls from the reader's current position to its end, then frees the
     * allocations still live and closes the allocator (giving every region back to the
     * sub-allocator). The reader is not closed.
     *
     * @param reader the trace, normally positioned right after its header
     * @return what was measured
     * @throws TraceFormatException if the trace does not follow format version 1
     * @throws IOException if the trace cannot be read
     * @throws WorkloadException if the allocator or the sub-allocator threw; its message names
     *     the trace line
     * @throws NullPointerException if {@code reader} is null
     */
    public WorkloadResult run(TraceReader reader) throws IOException {
        Objects.requireNonNull(reader, "reader=null (expected: an open trace, e.g. TraceReader.open(path))");
        return new Run(reader).run();
    }

    /** Counts the regions the allocator obtains, so that extends are seen without a lookup per call. */
    private static final class CountingSubAllocator extends ForwardingSubAllocator {
        int obtainedThisCall;
        final LongList obtainedBytes = new LongList(16);

        CountingSubAllocator(SubAllocator upstream) {
            super(upstream);
        }

        @Override
        public Block alloc(long alignment, long numBytes) {
            Block b = upstream.alloc(alignment, numBytes);
            if (b != null) {
                obtainedThisCall++;
                obtainedBytes.add(b.bytes());
            }
            return b;
        }
    }

    /** The state of one replay. */
    private final class Run {
        private final TraceReader reader;
        private final CallApplier applier = new CallApplier();
        private final WorkloadStep step = new WorkloadStep();
        private final LongList oomCalls = new LongList(16);
        private final LongList oomLines = new LongList(16);
        private final LongList oomBytes = new LongList(16);
        private final LongList extendCalls = new LongList(16);
        private final LongList extendLines = new LongList(16);
        private final CountingSubAllocator counting = new CountingSubAllocator(subAllocator);

        Run(TraceReader reader) {
            this.reader = reader;
        }

        WorkloadResult run() throws IOException {
            final BfcAllocator a;
            try {
                a = new BfcAllocator(counting, memoryLimit, name, options);
            } catch (RuntimeException e) {
                throw new WorkloadException("creating the allocator failed: " + e.getMessage(), 0, e);
            }
            if (timingCounter) {
                a.setTimingCounter(new SharedCounter());
            }
            final WorkloadResult result;
            try {
                if (listener != null) {
                    listener.beforeRun(a);
                }
                result = replay(a);
                if (listener != null) {
                    listener.afterRun(a);
                }
            } catch (IOException | RuntimeException | Error e) {
                // Give the regions back (real memory, with a host sub-allocator) before failing,
                // also when the listener threw an Error.
                try {
                    a.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            try {
                freeWhatIsLive(a);
                a.close();
            } catch (RuntimeException ex) {
                throw new WorkloadException("end of trace: closing the allocator failed: " + ex, reader.lineNumber(),
                        ex);
            }
            return result;
        }

        /**
         * Frees the allocations still live at the trace's end (a snapshot's trace ends with
         * them), so that the close is a plain one: a forced close logs a warning, right for an
         * application, noise for a replay that has measured what it came for.
         */
        private void freeWhatIsLive(BfcAllocator a) {
            final LongList live = new LongList(16);
            a.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requestedBytes, allocationId) -> {
                if (allocationId >= 0) {
                    live.add(ptr);
                }
            });
            for (int i = 0; i < live.size(); i++) {
                a.deallocateRaw(live.get(i));
            }
        }

        /** Makes every call of the trace on the allocator and measures. */
        private WorkloadResult replay(BfcAllocator a) throws IOException {
            final WorkloadListener l = listener;
            final WorkloadStep s = step;
            s.allocator = a;
            long calls = 0;
            long allocations = 0;
            long peakBytesInUse = 0;
            long peakCall = -1;
            long peakLine = 0;
            long poolAtPeak = 0;
            long largestFreeAtPeak = 0;
            long peakPool = 0;
            long pool = 0;
            int regions = 0;
            int maxRegions = 0;
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                final TraceEvent.Kind kind = e.kind();
                if (!kind.isCall()) {
                    continue;
                }
                final long line = e.lineNumber();
                counting.obtainedThisCall = 0;
                s.id = 0;
                s.bytes = 0;
                s.result = 0;
                s.outOfMemory = false;
                s.provenance = null;
                try {
                    final long ptr = applier.apply(a, e);
                    if (kind == TraceEvent.Kind.ALLOC) {
                        s.id = e.id();
                        s.bytes = e.bytes();
                        s.result = ptr;
                        s.provenance = e.provenance();
                        if (ptr != 0) {
                            allocations++;
                        } else if (e.bytes() != 0) {
                            s.outOfMemory = true;
                            oomCalls.add(calls);
                            oomLines.add(line);
                            oomBytes.add(e.bytes());
                        }
                    } else if (kind == TraceEvent.Kind.FREE) {
                        s.id = e.id();
                        s.result = ptr;
                    }
                } catch (RuntimeException ex) {
                    throw new WorkloadException("line " + line + " (" + e + "): " + ex, line, ex);
                }
                final long inUse = a.bytesInUse();
                if (kind == TraceEvent.Kind.ALLOC) {
                    // The pool changes only in an alloc (Extend, garbage collection of free regions).
                    if (counting.obtainedThisCall > 0 || options.garbageCollection()) {
                        pool = a.reservedBytes();
                        regions = a.regionCount();
                        maxRegions = Math.max(maxRegions, regions);
                        peakPool = Math.max(peakPool, pool);
                        for (int i = 0; i < counting.obtainedThisCall; i++) {
                            extendCalls.add(calls);
                            extendLines.add(line);
                        }
                    }
                    if (inUse > peakBytesInUse) {
                        peakBytesInUse = inUse;
                        peakCall = calls;
                        peakLine = line;
                        poolAtPeak = pool;
                        largestFreeAtPeak = a.largestFreeChunkBytes();
                    }
                }
                if (l != null) {
                    s.callIndex = calls;
                    s.lineNumber = line;
                    s.kind = kind;
                    s.regionsObtained = counting.obtainedThisCall;
                    s.bytesInUse = inUse;
                    s.poolBytes = pool;
                    s.allocations = allocations;
                    l.afterCall(s);
                }
                calls++;
            }
            return new WorkloadResult(calls, allocations, peakBytesInUse, peakCall, peakLine, poolAtPeak,
                    largestFreeAtPeak, peakPool, regions, maxRegions, oomCalls.toArray(), oomLines.toArray(),
                    oomBytes.toArray(), extendCalls.toArray(), extendLines.toArray(),
                    counting.obtainedBytes.toArray());
        }
    }
}
