/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The open loans of an allocator ({@link MemoryAllocator#lendTo}), and the advice a refused
 * {@code close()} gives with them.
 */
final class Loans {

    /** The calls a loan allocates and frees with: its allocator's, for lent memory. */
    interface Lending {

        /**
         * {@link MemoryAllocator#allocateRawOrThrow}, the chunk marked as lent
         * ({@code ChunkTable.LOAN_OWNED}): the allocator's raw free refuses it.
         */
        long allocateLentOrThrow(long alignment, long numBytes);

        /** {@code allocateRaw(alignment, numBytes, attr)}, the chunk marked as lent. */
        long allocateLent(long alignment, long numBytes, AllocationAttributes attr);

        /** {@link MemoryAllocator#deallocateRaw} of lent memory only. */
        void deallocateLent(long ptr);
    }

    /** What one loan says; removed by identity when the loan is closed. */
    private static final class Entry implements MemoryAllocator.Loan {
        private final List<Entry> open;
        private final String runtime;
        private final String advice;
        private final Lending lending;
        private volatile boolean closed;

        Entry(List<Entry> open, String runtime, String release, Lending lending) {
            this.open = open;
            this.runtime = runtime;
            this.advice = runtime + " may hold memory of it: " + release + ".";
            this.lending = lending;
        }

        @Override
        public long allocateRawOrThrow(long alignment, long numBytes) {
            refuseIfClosed();
            return lending.allocateLentOrThrow(alignment, numBytes);
        }

        @Override
        public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) {
            refuseIfClosed();
            return lending.allocateLent(alignment, numBytes, attr);
        }

        private void refuseIfClosed() {
            if (closed) {
                throw new IllegalStateException("the loan to " + runtime + " is closed: it lends no more"
                        + " memory. Allocate through a loan only while it is open (lendTo makes a new one).");
            }
        }

        @Override
        public void deallocateRaw(long ptr) {
            lending.deallocateLent(ptr);
        }

        @Override
        public void close() {
            closed = true;
            open.remove(this);
        }
    }

    private final List<Entry> open = new CopyOnWriteArrayList<>();

    MemoryAllocator.Loan lend(String runtime, String release, Lending lending) {
        Objects.requireNonNull(runtime, "runtime=null (expected: who holds the memory, e.g. \"ONNX Runtime"
                + " (BfcOrtAllocator 'x')\")");
        Objects.requireNonNull(release, "release=null (expected: what frees it, e.g. \"release the sessions,"
                + " then close the BfcOrtAllocator\")");
        Entry e = new Entry(open, runtime, release, lending);
        open.add(e);
        return e;
    }

    /**
     * Who lent memory may be with, for a refused raw free of it: the runtimes of the open loans,
     * each once, or "a runtime" when none is open.
     */
    String runtimes() {
        Set<String> each = new LinkedHashSet<>();
        for (Entry e : open) {
            each.add(e.runtime);
        }
        return each.isEmpty() ? "a runtime" : String.join(" or ", each);
    }

    /** The advice for memory the caller holds itself, when nothing is lent. */
    private static final String OWN = "Close (or deallocate) them first; or build the allocator with"
            + " closePolicy(ClosePolicy.FORCE) to free the memory under them anyway.";

    /**
     * What a {@code close()} refused for live allocations advises: to close them or use
     * {@link ClosePolicy#FORCE} (for memory the caller holds) when nothing is lent, else each
     * loan's advice and a word for the caller's own.
     */
    String advice() {
        // Each advice once (the same loan made twice), by equality: an advice that is only a
        // part of another's text (runtime "R" beside "Runtime R") is another loan's.
        Set<String> each = new LinkedHashSet<>();
        for (Entry e : open) {
            each.add(e.advice);
        }
        StringBuilder b = new StringBuilder(String.join(" ", each));
        return b.length() == 0 ? OWN
                : b.append(" Close (or deallocate) any allocations of your own as well, then close this allocator.")
                        .toString();
    }
}
