/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.Provenance;
import java.util.Objects;

/**
 * One body line of a trace, as returned by {@link TraceReader#next()}. The reader reuses one
 * instance for every line (so that reading creates no garbage per line): an event is valid only
 * until the next call of {@code next()}.
 *
 * <p>Which accessors mean something depends on {@link #kind()}:
 * <table>
 * <caption>Accessors by kind</caption>
 * <tr><th>kind</th><th>line</th><th>accessors</th></tr>
 * <tr><td>{@link Kind#ALLOC}</td><td>{@code alloc <id> <bytes> [align=<n>] [freed_before=<n>] [=> <hex|null>]}</td>
 *     <td>{@link #id()}, {@link #bytes()}, {@link #alignment()}, {@link #freedBefore()},
 *     {@link #answered()}, {@link #address()} (the expected result, 0 for null)</td></tr>
 * <tr><td>{@link Kind#FREE}</td><td>{@code free <id>}</td><td>{@link #id()}</td></tr>
 * <tr><td>{@link Kind#FRONTIER}</td><td>{@code frontier <n>}</td><td>{@link #count()}</td></tr>
 * <tr><td>{@link Kind#CLEAR_STATS}</td><td>{@code clear_stats}</td><td>none</td></tr>
 * <tr><td>{@link Kind#SUB_ALLOC}</td><td>{@code sub alloc <bytes> => <hex|null>}</td>
 *     <td>{@link #bytes()}, {@link #address()} (the expected result, 0 for null)</td></tr>
 * <tr><td>{@link Kind#SUB_FREE}</td><td>{@code sub free <hex> <bytes>}</td>
 *     <td>{@link #address()}, {@link #bytes()}</td></tr>
 * <tr><td>{@link Kind#CHUNK}</td><td>{@code chunk <id> size=<n> requested=<n> allocation_id=<n>}</td>
 *     <td>{@link #id()}, {@link #size()}, {@link #requested()}, {@link #allocationId()}</td></tr>
 * <tr><td>{@link Kind#STATS}</td><td>{@code stats k=v ...}</td>
 *     <td>{@link #statCount()}, {@link #statKey(int)}, {@link #statValue(int)}</td></tr>
 * </table>
 */
public final class TraceEvent {

    /** The alignment of an {@code alloc} line without {@code align=}. */
    public static final long DEFAULT_ALIGNMENT = 64;

    /** The kinds of body line. */
    public enum Kind {
        /** {@code alloc}: a call of {@code AllocateRaw}. */
        ALLOC(true),
        /** {@code free}: a call of {@code DeallocateRaw}. */
        FREE(true),
        /** {@code frontier}: a call of {@code SetSafeFrontier}. */
        FRONTIER(true),
        /** {@code clear_stats}: a call of {@code ClearStats}. */
        CLEAR_STATS(true),
        /** {@code sub alloc}: an expected sub-allocator {@code Alloc} made by the preceding call. */
        SUB_ALLOC(false),
        /** {@code sub free}: an expected sub-allocator {@code Free} made by the preceding call. */
        SUB_FREE(false),
        /** {@code chunk}: expected sizes and id of a live allocation. */
        CHUNK(false),
        /** {@code stats}: expected statistics. */
        STATS(false);

        private final boolean call;

        Kind(boolean call) {
            this.call = call;
        }

        /**
         * Whether a line of this kind is a call on the allocator (rather than an expectation).
         *
         * @return true for {@code alloc}, {@code free}, {@code frontier} and {@code clear_stats}
         */
        public boolean isCall() {
            return call;
        }
    }

    Kind kind;
    long lineNumber;
    long id;
    long bytes;
    long alignment;
    boolean alignmentGiven;
    long freedBefore;
    boolean freedBeforeGiven;
    boolean answered;
    long address;
    long count;
    long size;
    long requested;
    long allocationId;
    final StatKey[] statKeys = new StatKey[StatKey.values().length];
    final long[] statValues = new long[StatKey.values().length];
    int statCount;
    Provenance provenance;

    TraceEvent() {
    }

    void copyFrom(TraceEvent o) {
        kind = o.kind;
        lineNumber = o.lineNumber;
        id = o.id;
        bytes = o.bytes;
        alignment = o.alignment;
        alignmentGiven = o.alignmentGiven;
        freedBefore = o.freedBefore;
        freedBeforeGiven = o.freedBeforeGiven;
        answered = o.answered;
        address = o.address;
        count = o.count;
        size = o.size;
        requested = o.requested;
        allocationId = o.allocationId;
        statCount = o.statCount;
        provenance = o.provenance;
        System.arraycopy(o.statKeys, 0, statKeys, 0, o.statCount);
        System.arraycopy(o.statValues, 0, statValues, 0, o.statCount);
    }

    /**
     * The kind of line.
     *
     * @return the kind
     */
    public Kind kind() {
        return kind;
    }

    /**
     * Where the line is.
     *
     * @return the 1-based line number in the trace
     */
    public long lineNumber() {
        return lineNumber;
    }

    /**
     * The allocation id of an {@code alloc}, {@code free} or {@code chunk} line.
     *
     * @return the id
     */
    public long id() {
        return id;
    }

    /**
     * The bytes of an {@code alloc}, {@code sub alloc} or {@code sub free} line.
     *
     * @return the number of bytes
     */
    public long bytes() {
        return bytes;
    }

    /**
     * The alignment of an {@code alloc} line.
     *
     * @return the {@code align=} value, or {@link #DEFAULT_ALIGNMENT} if absent
     */
    public long alignment() {
        return alignment;
    }

    /**
     * Whether the {@code alloc} line spelled out {@code align=} (even with the default value).
     *
     * @return true if the line has an {@code align=} token
     */
    public boolean alignmentGiven() {
        return alignmentGiven;
    }

    /**
     * The timestamp constraint of an {@code alloc} line.
     *
     * @return the {@code freed_before=} value, or 0 (no constraint) if absent
     */
    public long freedBefore() {
        return freedBefore;
    }

    /**
     * Whether the {@code alloc} line spelled out {@code freed_before=} (even with 0).
     *
     * @return true if the line has a {@code freed_before=} token
     */
    public boolean freedBeforeGiven() {
        return freedBeforeGiven;
    }

    /**
     * Whether the {@code alloc} line carries the reference's answer ({@code => <hex|null>});
     * false only in a workload trace.
     *
     * @return true if {@link #address()} is an expected result
     */
    public boolean answered() {
        return answered;
    }

    /**
     * The address of the line: the expected result of an answered {@code alloc} or of a
     * {@code sub alloc} (0 for {@code null}), or the pointer of a {@code sub free}.
     *
     * @return the address, 0 for null
     */
    public long address() {
        return address;
    }

    /**
     * The count of a {@code frontier} line.
     *
     * @return the safe frontier
     */
    public long count() {
        return count;
    }

    /**
     * The expected {@code AllocatedSize} of a {@code chunk} line.
     *
     * @return the {@code size=} value
     */
    public long size() {
        return size;
    }

    /**
     * The expected {@code RequestedSize} of a {@code chunk} line.
     *
     * @return the {@code requested=} value
     */
    public long requested() {
        return requested;
    }

    /**
     * The expected {@code AllocationId} of a {@code chunk} line.
     *
     * @return the {@code allocation_id=} value
     */
    public long allocationId() {
        return allocationId;
    }

    /**
     * The number of keys on a {@code stats} line.
     *
     * @return how many keys the line holds (1 to 10)
     */
    public int statCount() {
        return statCount;
    }

    /**
     * A key of a {@code stats} line, in the line's order.
     *
     * @param i the index, {@code 0 <= i < statCount()}
     * @return the key
     * @throws IndexOutOfBoundsException if {@code i} is out of range
     */
    public StatKey statKey(int i) {
        Objects.checkIndex(i, statCount);
        return statKeys[i];
    }

    /**
     * A value of a {@code stats} line, in the line's order.
     *
     * @param i the index, {@code 0 <= i < statCount()}
     * @return the expected value of {@link #statKey(int) statKey(i)}
     * @throws IndexOutOfBoundsException if {@code i} is out of range
     */
    public long statValue(int i) {
        Objects.checkIndex(i, statCount);
        return statValues[i];
    }

    /**
     * The provenance of an {@code alloc} line: who made the call, given by the {@code #@ alloc}
     * line of the provenance extension right before it (docs/trace-format.md).
     *
     * @return the thread, time, annotation and stack of the call, or {@code null} if the trace
     *     gives none (and for every other kind of line)
     */
    public Provenance provenance() {
        return provenance;
    }

    /**
     * The line as it reads in canonical form (keys spelled out on the original line kept).
     *
     * @return the line's text, without a line break
     */
    @Override
    public String toString() {
        if (kind == null) {
            return "(no line)";
        }
        return new LineBuffer(64).event(this).toString();
    }
}
