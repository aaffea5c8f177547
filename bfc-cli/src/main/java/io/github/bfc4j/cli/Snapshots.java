/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadStep;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Takes the memory map ({@link BfcAllocator#forEachChunk}) right after chosen calls of a
 * replay, and remembers the trace line of every successful allocation (by allocation id, which
 * the allocator hands out 1, 2, 3, ... in call order) so that each chunk in use can name the
 * line that allocated it.
 */
final class Snapshots implements WorkloadListener {

    /** One memory map. */
    static final class Snapshot {
        final String label;
        final long call;
        final long line;
        long bytesInUse;
        long poolBytes;
        List<BfcAllocator.BinDebugInfo> bins;
        final List<long[]> regions = new ArrayList<>(); // {ptr, bytes}
        int chunks;
        int[] region = new int[256];
        long[] offset = new long[256];
        long[] size = new long[256];
        long[] requested = new long[256];
        long[] allocationId = new long[256];

        Snapshot(String label, long call, long line) {
            this.label = label;
            this.call = call;
            this.line = line;
        }

        void add(int r, long off, long bytes, long req, long id) {
            if (chunks == region.length) {
                int n = chunks * 2;
                region = Arrays.copyOf(region, n);
                offset = Arrays.copyOf(offset, n);
                size = Arrays.copyOf(size, n);
                requested = Arrays.copyOf(requested, n);
                allocationId = Arrays.copyOf(allocationId, n);
            }
            region[chunks] = r;
            offset[chunks] = off;
            size[chunks] = bytes;
            requested[chunks] = req;
            allocationId[chunks] = id;
            chunks++;
        }
    }

    private final long[] calls;
    private final String[] labels;
    private final long binsAtCall;
    private int next;
    final List<Snapshot> taken = new ArrayList<>();
    long[] allocationLine = new long[1024];

    /**
     * @param calls the call indices to take maps after, ascending, no duplicates
     * @param labels a label per call
     * @param binsAtCall the call whose map also records the per-bin figures
     */
    Snapshots(long[] calls, String[] labels, long binsAtCall) {
        this.calls = calls;
        this.labels = labels;
        this.binsAtCall = binsAtCall;
    }

    @Override
    public void afterCall(WorkloadStep s) {
        if (s.kind() == TraceEvent.Kind.ALLOC && s.result() != 0) {
            long id = s.allocations();
            if (id >= allocationLine.length) {
                allocationLine = Arrays.copyOf(allocationLine, (int) Math.max(id + 1, 2L * allocationLine.length));
            }
            allocationLine[(int) id] = s.lineNumber();
        }
        if (next < calls.length && s.callIndex() == calls[next]) {
            Snapshot snap = new Snapshot(labels[next], s.callIndex(), s.lineNumber());
            snap.bytesInUse = s.bytesInUse();
            snap.poolBytes = s.poolBytes();
            BfcAllocator a = s.allocator();
            a.forEachChunk((r, regionPtr, regionBytes, ptr, bytes, req, id) -> {
                if (r == snap.regions.size()) {
                    snap.regions.add(new long[] {regionPtr, regionBytes});
                }
                snap.add(r, ptr - regionPtr, bytes, req, id);
            });
            if (s.callIndex() == binsAtCall) {
                snap.bins = a.getBinDebugInfo();
            }
            taken.add(snap);
            next++;
        }
    }

    /** The line of the call that made an allocation, 0 if unknown. */
    long lineOf(long allocationId) {
        return allocationId > 0 && allocationId < allocationLine.length ? allocationLine[(int) allocationId] : 0;
    }
}
