/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkTable;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The loans of an allocator ({@link MemoryAllocator#lendTo}): the number each lends under, the
 * advice a refused {@code close()} gives while a loan is open, and the runtime a refused free
 * of lent memory names.
 *
 * <p>Each loan has a number from 1 to {@value ChunkTable#MAX_LOANS}, kept in the chunks it lends
 * ({@link ChunkTable#lentBy(int)}): a loan frees only the memory it lent, and a raw free of lent
 * memory names the runtime it was lent to. A number is free again once its loan is closed and
 * all it lent is freed (or taken back by a forced close); a free through that loan is then
 * refused without asking the allocator, since a chunk marked with the number is another loan's.
 */
final class Loans {

    /** The calls a loan allocates and frees with: its allocator's, for the memory it lends. */
    interface Lending {

        /**
         * {@link MemoryAllocator#allocateRawOrThrow}, the chunk marked as lent by the loan
         * numbered {@code loan}: the allocator's raw free refuses it.
         */
        long allocateLentOrThrow(int loan, long alignment, long numBytes);

        /** {@code allocateRaw(alignment, numBytes, attr)}, the chunk marked as lent by {@code loan}. */
        long allocateLent(int loan, long alignment, long numBytes, AllocationAttributes attr);

        /**
         * {@link MemoryAllocator#deallocateRaw} of memory that {@code loan} lent, and of nothing
         * else.
         *
         * @param lent the loan's count of chunks lent: decremented once the chunk is sure to be
         *     freed, under the allocator's lock, also where a listener told of the free then throws
         */
        void deallocateLent(int loan, long ptr, AtomicLong lent);
    }

    /** One loan; removed from the open ones by identity when it is closed. */
    private final class Entry implements MemoryAllocator.Loan {
        /**
         * {@link #lent}'s bit for a closed loan; below it, the chunks it has lent and not freed,
         * and its calls in flight.
         */
        private static final long CLOSED = 1L << 62;

        private final int number;
        private final String runtime;
        private final String advice;
        private final Lending lending;
        /**
         * The chunks lent and not yet freed (counted from before the allocation starts), and the
         * frees in flight, so that the number is never given back under either; and
         * {@link #CLOSED}. {@code CLOSED} alone: the number is given back (it may be another
         * loan's by now).
         */
        private final AtomicLong lent = new AtomicLong();

        Entry(int number, String runtime, String release, Lending lending) {
            this.number = number;
            this.runtime = runtime;
            this.advice = runtime + " may hold memory of it: " + release + ".";
            this.lending = lending;
        }

        @Override
        public long allocateRawOrThrow(long alignment, long numBytes) {
            reserve();
            long ptr = 0;
            try {
                ptr = lending.allocateLentOrThrow(number, alignment, numBytes);
            } finally {
                if (ptr == 0) {
                    unreserve();
                }
            }
            return ptr;
        }

        @Override
        public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) {
            reserve();
            long ptr = 0;
            try {
                ptr = lending.allocateLent(number, alignment, numBytes, attr);
            } finally {
                if (ptr == 0) {
                    unreserve();
                }
            }
            return ptr;
        }

        /** Counts a chunk about to be lent, or refuses if the loan is closed. */
        private void reserve() {
            for (;;) {
                long n = lent.get();
                if ((n & CLOSED) != 0) {
                    throw new IllegalStateException("the loan to " + runtime + " is closed: it lends no more"
                            + " memory. Allocate through a loan only while it is open (lendTo makes a new one).");
                }
                if (lent.compareAndSet(n, n + 1)) {
                    return;
                }
            }
        }

        /** Counts a chunk no longer lent, or a call returned; the last of a closed loan frees its number. */
        private void unreserve() {
            if (lent.decrementAndGet() == CLOSED) {
                release(this);
            }
        }

        @Override
        public void deallocateRaw(long ptr) {
            if (ptr == 0) {
                lending.deallocateLent(number, 0, lent);
                return;
            }
            hold(ptr);
            try {
                // Counts the chunk off as it frees it (never the last count: this free's own is
                // still held), also if the free then throws.
                lending.deallocateLent(number, ptr, lent);
            } finally {
                unreserve();
            }
        }

        /**
         * Counts a free in flight, so that the number stays this loan's until it returns; or
         * refuses it once the number is given back: a chunk marked with the number now is
         * another loan's.
         */
        private void hold(long ptr) {
            for (;;) {
                long n = lent.get();
                if (n == CLOSED) {
                    throw new IllegalArgumentException("0x" + Long.toHexString(ptr) + " is not memory the loan to "
                            + runtime + " lent: that loan is closed and nothing it lent is left (freed, or taken"
                            + " back by a forced close); free each address once. Nothing was freed.");
                }
                if (lent.compareAndSet(n, n + 1)) {
                    return;
                }
            }
        }

        @Override
        public long lentAllocations() {
            return lent.get() & ~CLOSED;
        }

        @Override
        public void close() {
            long n = lent.getAndUpdate(v -> v | CLOSED);
            if ((n & CLOSED) == 0) {
                try {
                    open.remove(this);
                } finally {
                    // Also where the list's copy failed for want of heap: the number of a
                    // closed loan that lent nothing is free again.
                    if (n == 0) {
                        release(this);
                    }
                }
            }
        }
    }

    /**
     * The open loans, in the order they were made, for {@link #advice}; and a closed one whose
     * {@code close()} could not copy the list for want of heap, which {@link #advice} skips.
     */
    private final List<Entry> open = new CopyOnWriteArrayList<>();

    /**
     * Guarded by this: the loan holding each number, until it is closed and all it lent is freed
     * (or taken back by a forced close).
     */
    private final Entry[] numbered = new Entry[ChunkTable.MAX_LOANS + 1];

    MemoryAllocator.Loan lend(String runtime, String release, Lending lending) {
        Objects.requireNonNull(runtime, "runtime=null (expected: who holds the memory, e.g. \"ONNX Runtime"
                + " (BfcOrtAllocator 'x')\")");
        Objects.requireNonNull(release, "release=null (expected: what frees it, e.g. \"release the sessions,"
                + " then close the BfcOrtAllocator\")");
        Entry e;
        synchronized (this) {
            int n = 1;
            while (n < numbered.length && numbered[n] != null) {
                n++;
            }
            if (n == numbered.length) {
                throw new IllegalStateException(ChunkTable.MAX_LOANS + " loans of this allocator are open or"
                        + " have lent memory that is not yet freed: it can lend to no more runtimes at once."
                        + " Close the loans of runtimes that are done (for ONNX Runtime, close its"
                        + " BfcOrtAllocator once its sessions are released), or share one loan between adapters.");
            }
            e = new Entry(n, runtime, release, lending);
            // Listed before it takes its number: an Error copying the list leaves no number
            // taken by a loan nobody holds.
            open.add(e);
            numbered[n] = e;
        }
        return e;
    }

    private synchronized void release(Entry e) {
        numbered[e.number] = null;
    }

    /**
     * A chunk that the loan numbered {@code number} lent was taken back by a forced close (of the
     * allocator, or of a shard on its own): it is no longer lent.
     */
    void takenBack(int number) {
        Entry e;
        synchronized (this) {
            e = numbered[number];
        }
        if (e != null) {
            e.unreserve();
        }
    }

    /**
     * Whether some loan holds a number: it is open, or memory it lent is not yet freed. While
     * none does, no chunk is lent.
     */
    synchronized boolean anyNumbered() {
        for (Entry e : numbered) {
            if (e != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * The runtime the loan numbered {@code number} lends to: for a refused free of its memory,
     * and as the holder of the chunks it lent where nothing else names one.
     */
    synchronized String runtimeOf(int number) {
        Entry e = number > 0 && number < numbered.length ? numbered[number] : null;
        return e == null ? "a runtime" : e.runtime;
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
            if ((e.lent.get() & Entry.CLOSED) == 0) {
                each.add(e.advice);
            }
        }
        StringBuilder b = new StringBuilder(String.join(" ", each));
        return b.length() == 0 ? OWN
                : b.append(" Close (or deallocate) any allocations of your own as well, then close this allocator.")
                        .toString();
    }
}
