/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The out-of-memory listeners of one allocator ({@link BfcAllocator#addOutOfMemoryListener}),
 * and its rate-limited dump writer when {@link BfcOptions#dumpOnOomDirectory()} is set. The
 * allocator takes the picture under its lock only when {@link #wanted()}, and calls
 * {@link #notify} after releasing it.
 */
final class OutOfMemoryListeners {

    private static final Logger LOG = System.getLogger(BfcAllocator.class.getName());

    private final List<OutOfMemoryListener> listeners = new CopyOnWriteArrayList<>();
    private final OomDumpWriter dumps;
    /** What the report becomes before the dump and the listeners see it: a sharded allocator's addition. */
    private volatile UnaryOperator<OutOfMemoryReport> completion = UnaryOperator.identity();
    /** The snapshots a dump adds: a sharded allocator's, of all its shards. */
    private volatile Supplier<List<MemorySnapshot>> shardSnapshots = List::of;

    OutOfMemoryListeners(BfcOptions options) {
        this.dumps = options.dumpOnOomDirectory() == null ? null : new OomDumpWriter(options.dumpOnOomDirectory());
    }

    void add(OutOfMemoryListener l) {
        listeners.add(l);
    }

    boolean remove(OutOfMemoryListener l) {
        return listeners.remove(l);
    }

    /** Whether a failure needs its picture taken: a listener or the dump writer is there. */
    boolean wanted() {
        return dumps != null || !listeners.isEmpty();
    }

    /**
     * Whether the picture is needed now: a listener is there, or a dump is due (a dump the rate
     * limit will skip needs none, and a picture with a long history costs heap and lock time).
     */
    boolean pictureWanted() {
        return !listeners.isEmpty() || dumps != null && dumps.due();
    }

    /**
     * Sets what every report becomes before the dump and the listeners see it, and the
     * snapshots that a dump adds (taken only when one is written).
     */
    void complete(UnaryOperator<OutOfMemoryReport> completion, Supplier<List<MemorySnapshot>> shardSnapshots) {
        this.completion = completion;
        this.shardSnapshots = shardSnapshots;
    }

    /**
     * Completes the report ({@link #complete}), writes the dump (if configured), then tells every
     * listener; for a failure whose picture was not taken ({@code null}), counts a skipped dump.
     * A listener's exception is logged and otherwise ignored: the failing call fails as it would
     * have.
     *
     * @return what the failure's messages say about the dump
     */
    OomDumpWriter.Result notify(OutOfMemoryReport failure) {
        if (failure == null) { // no picture taken (pictureWanted): only the dump writer counts it
            return dumps == null ? OomDumpWriter.Result.NONE : dumps.skip();
        }
        OutOfMemoryReport report = completed(failure);
        OomDumpWriter.Result dump = dumps == null ? OomDumpWriter.Result.NONE : dumps.write(report, shardSnapshots);
        for (OutOfMemoryListener l : listeners) {
            try {
                l.onOutOfMemory(report);
            } catch (RuntimeException | Error e) {
                if (e instanceof VirtualMachineError) {
                    throw (VirtualMachineError) e;
                }
                LOG.log(Level.WARNING, "Out-of-memory listener " + l + " of allocator " + report.describedAllocator()
                        + " threw; ignored", e);
            }
        }
        return dump;
    }

    /** The completed report; the report as it was if the completion fails (logged). */
    private OutOfMemoryReport completed(OutOfMemoryReport report) {
        try {
            return completion.apply(report);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "Completing the out-of-memory report of allocator " + report.describedAllocator()
                    + " failed; its own report is used", e);
            return report;
        }
    }
}
