/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.util.Arrays;

/**
 * What a {@link WorkloadRunner} replay measured.
 *
 * <p><b>Fragmentation</b> is external fragmentation of the pool at the moment of peak bytes in
 * use: {@code 1 - largestFreeChunk / freeBytes}, where {@code freeBytes = poolBytes -
 * bytesInUse} are the bytes of the regions held that no allocation uses. It is 0 when all
 * free memory is one chunk (any request up to {@code freeBytes} fits without growing the
 * pool) and approaches 1 when free memory is scattered in small chunks; it is 0 when nothing is
 * free. Internal fragmentation (chunk padding) is not counted: it is in use.
 *
 * <p>The peak is the first call that reached the highest {@code bytesInUse}.
 */
public final class WorkloadResult {
    private final long calls;
    private final long allocations;
    private final long peakBytesInUse;
    private final long peakCall;
    private final long peakLine;
    private final long poolBytesAtPeak;
    private final long largestFreeChunkAtPeak;
    private final long peakPoolBytes;
    private final int regionsAtEnd;
    private final int maxRegions;
    private final long[] oomCalls;
    private final long[] oomLines;
    private final long[] oomBytes;
    private final long[] extendCalls;
    private final long[] extendLines;
    private final long[] extendBytes;

    WorkloadResult(long calls, long allocations, long peakBytesInUse, long peakCall, long peakLine,
            long poolBytesAtPeak, long largestFreeChunkAtPeak, long peakPoolBytes, int regionsAtEnd, int maxRegions,
            long[] oomCalls, long[] oomLines, long[] oomBytes, long[] extendCalls, long[] extendLines,
            long[] extendBytes) {
        this.calls = calls;
        this.allocations = allocations;
        this.peakBytesInUse = peakBytesInUse;
        this.peakCall = peakCall;
        this.peakLine = peakLine;
        this.poolBytesAtPeak = poolBytesAtPeak;
        this.largestFreeChunkAtPeak = largestFreeChunkAtPeak;
        this.peakPoolBytes = peakPoolBytes;
        this.regionsAtEnd = regionsAtEnd;
        this.maxRegions = maxRegions;
        this.oomCalls = oomCalls;
        this.oomLines = oomLines;
        this.oomBytes = oomBytes;
        this.extendCalls = extendCalls;
        this.extendLines = extendLines;
        this.extendBytes = extendBytes;
    }

    /** @return the number of call lines replayed */
    public long calls() {
        return calls;
    }

    /** @return the number of {@code alloc} calls that returned an address */
    public long allocations() {
        return allocations;
    }

    /** @return the highest {@code bytesInUse} (chunk sizes of allocations live at once) */
    public long peakBytesInUse() {
        return peakBytesInUse;
    }

    /** @return the 0-based call index of the peak, -1 if nothing was ever in use */
    public long peakCall() {
        return peakCall;
    }

    /** @return the trace line of the peak's call, 0 if nothing was ever in use */
    public long peakLine() {
        return peakLine;
    }

    /** @return the pool bytes (reserved) at the peak */
    public long poolBytesAtPeak() {
        return poolBytesAtPeak;
    }

    /** @return free bytes in the pool at the peak: {@code poolBytesAtPeak - peakBytesInUse} */
    public long freeBytesAtPeak() {
        return poolBytesAtPeak - peakBytesInUse;
    }

    /** @return the largest free chunk at the peak */
    public long largestFreeChunkAtPeak() {
        return largestFreeChunkAtPeak;
    }

    /**
     * Fragmentation at the peak, as defined in the class comment.
     *
     * @return {@code 1 - largestFreeChunkAtPeak / freeBytesAtPeak}, 0 if nothing is free
     */
    public double fragmentationAtPeak() {
        long free = freeBytesAtPeak();
        return free <= 0 ? 0.0 : 1.0 - (double) largestFreeChunkAtPeak / free;
    }

    /** @return the highest pool bytes: memory reserved from the sub-allocator at once */
    public long peakPoolBytes() {
        return peakPoolBytes;
    }

    /** @return the regions held after the last call */
    public int regionsAtEnd() {
        return regionsAtEnd;
    }

    /** @return the most regions held at once */
    public int maxRegions() {
        return maxRegions;
    }

    /** @return the number of {@code alloc} calls of at least one byte that returned null */
    public int oomCount() {
        return oomCalls.length;
    }

    /**
     * @param i {@code 0 <= i < oomCount()}, in trace order
     * @return the 0-based call index of the i-th out-of-memory failure
     */
    public long oomCall(int i) {
        return oomCalls[i];
    }

    /**
     * @param i {@code 0 <= i < oomCount()}, in trace order
     * @return the trace line of the i-th out-of-memory failure
     */
    public long oomLine(int i) {
        return oomLines[i];
    }

    /**
     * @param i {@code 0 <= i < oomCount()}, in trace order
     * @return the bytes the i-th failed {@code alloc} requested
     */
    public long oomBytes(int i) {
        return oomBytes[i];
    }

    /** @return the number of regions obtained from the sub-allocator ({@code Extend}s) */
    public int extendCount() {
        return extendCalls.length;
    }

    /**
     * @param i {@code 0 <= i < extendCount()}, in order
     * @return the 0-based index of the call during which the i-th region was obtained
     */
    public long extendCall(int i) {
        return extendCalls[i];
    }

    /**
     * @param i {@code 0 <= i < extendCount()}, in order
     * @return the trace line of that call
     */
    public long extendLine(int i) {
        return extendLines[i];
    }

    /**
     * @param i {@code 0 <= i < extendCount()}, in order
     * @return the bytes of the i-th region obtained
     */
    public long extendBytes(int i) {
        return extendBytes[i];
    }

    @Override
    public String toString() {
        return "WorkloadResult[calls=" + calls + ", peakBytesInUse=" + peakBytesInUse + ", peakPoolBytes="
                + peakPoolBytes + ", fragmentationAtPeak=" + fragmentationAtPeak() + ", regionsAtEnd=" + regionsAtEnd
                + ", ooms=" + oomCalls.length + ", firstOomLines="
                + Arrays.toString(Arrays.copyOf(oomLines, Math.min(5, oomLines.length))) + "]";
    }
}
