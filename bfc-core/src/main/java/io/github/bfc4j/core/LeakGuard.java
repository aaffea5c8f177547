/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Leak detection for one {@link Allocation}: the {@link BfcCleaner} action registered for the
 * allocation and for each {@code ByteBuffer} view of it. When every registered object has become
 * unreachable and the allocation was never closed, it reports the leak once and returns the
 * memory. Holds no reference to the allocation or its views (that would keep them reachable).
 */
final class LeakGuard implements Runnable {

    private static final System.Logger LOG = System.getLogger(LeakDetection.class.getName());

    private final BfcAllocator allocator;
    /** The chunk's start, which is freed. */
    private final long chunkAddress;
    /** The address the allocation handed out. */
    private final long address;
    private final long size;
    private final long requestedSize;
    private final long allocationId;
    /** Where the allocation was made; null unless paranoid. */
    private final Throwable site;

    /** Registered objects not yet found unreachable. */
    private final AtomicInteger reachable = new AtomicInteger(1);
    private final AtomicBoolean done = new AtomicBoolean();

    private LeakGuard(BfcAllocator allocator, long chunkAddress, long address, long size,
            long requestedSize, long allocationId, Throwable site) {
        this.allocator = allocator;
        this.chunkAddress = chunkAddress;
        this.address = address;
        this.size = size;
        this.requestedSize = requestedSize;
        this.allocationId = allocationId;
        this.site = site;
    }

    /** Makes the handle for a fresh allocation, watched when {@code level} asks for it. */
    static Allocation newAllocation(BfcAllocator allocator, LeakDetection level, long chunkAddress,
            long address, long size, long requestedSize, long allocationId) {
        if (level == LeakDetection.DISABLED) {
            return new Allocation(allocator, chunkAddress, address, size, requestedSize, allocationId, null);
        }
        Throwable site = level == LeakDetection.PARANOID
                ? new Throwable("allocation #" + allocationId + " was made here") : null;
        LeakGuard guard = new LeakGuard(allocator, chunkAddress, address, size, requestedSize,
                allocationId, site);
        Allocation allocation = new Allocation(allocator, chunkAddress, address, size, requestedSize,
                allocationId, guard);
        BfcCleaner.CLEANER.register(allocation, guard);
        return allocation;
    }

    /** Also waits for {@code view} to become unreachable. The allocation must be reachable. */
    void watch(Object view) {
        reachable.incrementAndGet();
        BfcCleaner.CLEANER.register(view, this);
    }

    /** @return true if the caller (close) is the one to free the memory */
    boolean markClosed() {
        return done.compareAndSet(false, true);
    }

    /** Undoes {@link #markClosed()}: the handle's free failed and left the memory its own. */
    void reopen() {
        done.set(false);
    }

    /** Called by the Cleaner once per registered object. */
    @Override
    public void run() {
        if (reachable.decrementAndGet() != 0 || !done.compareAndSet(false, true)) {
            return;
        }
        // Returned as the handle's close would return it (its own allocation only); once the
        // allocator is closed there is nothing to return and nothing to report. What was recorded
        // is read first: a reclaim that fails must still say where the leak was made.
        Provenance recorded = Provenance.UNKNOWN;
        try {
            recorded = allocator.recordedProvenance(chunkAddress, allocationId);
            if (!allocator.reclaimLeak(chunkAddress, allocationId)) {
                return;
            }
        } catch (Throwable t) {
            // The Cleaner drops what its actions throw: say it, or the leak and its memory,
            // which nothing can free now, would go unreported.
            LOG.log(Level.WARNING, report(", and its memory could not be returned (" + t + "); it stays in use"
                    + " until the allocator is closed with ClosePolicy.FORCE.", recorded), t);
            return;
        }
        LOG.log(Level.WARNING, report("; its memory has been returned.", recorded));
    }

    /**
     * The leak's report, the same whether its memory was returned or not: the allocation (id,
     * sizes, address, allocator), {@code outcome}, the advice, what was recorded when it was
     * allocated ({@link #recordedText}) and, when paranoid, the stack where it was made (else,
     * with no recorded stack, how to get one).
     */
    private String report(String outcome, Provenance recorded) {
        String message = "LEAK: allocation #" + allocationId + " of " + requestedSize + " bytes ("
                + size + " reserved) at 0x" + Long.toHexString(address) + " from allocator "
                + allocator.described() + " became unreachable without close()" + outcome
                + " Close every Allocation (try-with-resources) when done with it."
                + recordedText(recorded);
        if (site == null) {
            if (recorded.stack().isEmpty()) {
                message += " Run with -D" + LeakDetection.PROPERTY + "=paranoid to see where it was allocated.";
            }
        } else {
            StringWriter w = new StringWriter();
            site.printStackTrace(new PrintWriter(w));
            message += "\n" + w;
        }
        return message;
    }

    /**
     * What the allocator recorded of the allocation when it was made (with
     * {@link BfcAllocator#recordHistory} or {@link BfcAllocator#recordAnnotations}): a sentence
     * naming the thread, the annotation (or a step given without one) and the time, then the
     * recorded stack, a frame a line; empty when nothing was recorded.
     */
    static String recordedText(Provenance p) {
        if (!p.isKnown()) {
            return "";
        }
        List<String> parts = new ArrayList<>();
        if (p.thread() != null) {
            parts.add("on thread '" + p.thread() + "'");
        }
        if (p.annotation() != null) {
            parts.add("in annotation '" + p.annotation() + "'" + Provenance.stepSuffix(p.step()));
        } else if (p.step() >= 0) {
            // A step without a name: an annotation that only gives a stack, outside any named one.
            parts.add("in step " + p.step());
        }
        if (p.timeMicros() >= 0) {
            parts.add("at " + Provenance.timeText(p.timeMicros()));
        }
        StringBuilder sb = new StringBuilder(" Recorded when it was allocated: ");
        sb.append(parts.isEmpty() ? "its stack" : String.join(", ", parts)).append('.');
        for (StackFrame f : p.stack()) {
            sb.append("\n\tat ").append(f);
        }
        return sb.toString();
    }
}
