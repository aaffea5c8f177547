/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadStep;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Takes the memory map ({@link BfcAllocator#memoryMap}) right after chosen calls of a replay,
 * and remembers the trace line of every successful allocation (by allocation id, which the
 * allocator hands out 1, 2, 3, ... in call order) so that each chunk in use can name the line
 * that allocated it; with the trace's provenance (annotation, stack, thread), each chunk in use
 * names who allocated it, and each map its largest holders. Who allocated a chunk is what the
 * trace says of the call ({@link WorkloadStep#provenance()}), never the replay's own thread.
 *
 * <p>The maps of calls other than the peak's are taken only while their chunk records stay within
 * a budget, so that asking for every failure's map ({@code --maps 1000000}) holds no more than
 * the report can keep.
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
        /** The largest holders of the memory in use, when the trace gives provenance. */
        List<MemoryMap.Holder> holders = List.of();
        // Grown as chunks are added: many maps of a few chunks each stay small.
        int[] provenance = new int[16]; // index into Snapshots.provenanceTexts, -1: none
        int[] region = new int[16];
        long[] offset = new long[16];
        long[] size = new long[16];
        long[] requested = new long[16];
        long[] allocationId = new long[16];

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
                provenance = Arrays.copyOf(provenance, n);
            }
            provenance[chunks] = -1;
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
    private final long chunkBudget;
    /** Chunk records of the maps taken but the peak's; set once one more would pass the budget. */
    private long otherChunks;
    private boolean otherFull;
    private int next;
    final List<Snapshot> taken = new ArrayList<>();
    long[] allocationLine = new long[1024];
    /** Distinct provenance texts of the chunks in the maps. */
    final List<String> provenanceTexts = new ArrayList<>();
    private final Map<Provenance, Integer> provenanceIds = new HashMap<>();
    /** The trace's provenance of each live allocation that has one, by address. */
    private final Map<Long, Provenance> live = new HashMap<>();

    /** Holders listed per map. */
    static final int HOLDERS = 10;

    /** Frames shown in a chunk's tooltip. */
    static final int FRAMES = 6;

    /**
     * @param calls the call indices to take maps after, ascending, no duplicates
     * @param labels a label per call
     * @param binsAtCall the call whose map also records the per-bin figures (the peak's), taken
     *     whatever its size
     * @param chunkBudget the chunk records of the other maps (a map of no chunk counted as one):
     *     the first of them is taken whatever its size, the others while their records, added up in
     *     call order, stay within it
     */
    Snapshots(long[] calls, String[] labels, long binsAtCall, long chunkBudget) {
        this.calls = calls;
        this.labels = labels;
        this.binsAtCall = binsAtCall;
        this.chunkBudget = chunkBudget;
    }

    @Override
    public void afterCall(WorkloadStep s) {
        if (s.kind() == TraceEvent.Kind.ALLOC && s.result() != 0) {
            long id = s.allocations();
            if (id >= allocationLine.length) {
                allocationLine = Arrays.copyOf(allocationLine, (int) Math.max(id + 1, 2L * allocationLine.length));
            }
            allocationLine[(int) id] = s.lineNumber();
            if (s.provenance() != null) {
                live.put(s.result(), s.provenance());
            }
        } else if (s.kind() == TraceEvent.Kind.FREE && s.result() != 0) {
            live.remove(s.result());
        }
        if (next < calls.length && s.callIndex() == calls[next] && otherFull && s.callIndex() != binsAtCall) {
            next++; // past the budget: not taken
        } else if (next < calls.length && s.callIndex() == calls[next]) {
            Snapshot snap = new Snapshot(labels[next], s.callIndex(), s.lineNumber());
            snap.bytesInUse = s.bytesInUse();
            snap.poolBytes = s.poolBytes();
            BfcAllocator a = s.allocator();
            MemoryMap map = a.memoryMap();
            boolean named = false;
            Map<String, long[]> holders = new HashMap<>();
            for (int r = 0; r < map.regions().size(); r++) {
                MemoryMap.Region region = map.regions().get(r);
                snap.regions.add(new long[] {region.ptr(), region.size()});
                for (MemoryMap.Chunk c : region.chunks()) {
                    snap.add(r, c.ptr() - region.ptr(), c.size(), c.inUse() ? c.requestedSize() : 0,
                            c.inUse() ? c.allocationId() : -1);
                    if (!c.inUse()) {
                        continue;
                    }
                    Provenance p = live.getOrDefault(c.ptr(), Provenance.UNKNOWN);
                    if (names(p)) {
                        snap.provenance[snap.chunks - 1] = provenanceIndex(p);
                    }
                    named |= p.isKnown();
                    long[] h = holders.computeIfAbsent(p.holder(), k -> new long[3]);
                    h[0] += c.size();
                    h[1] += c.requestedSize();
                    h[2]++;
                }
            }
            if (named) {
                snap.holders = holders.entrySet().stream()
                        .map(e -> new MemoryMap.Holder(e.getKey(), e.getValue()[0], e.getValue()[1],
                                (int) e.getValue()[2]))
                        .sorted(Comparator.comparingLong(MemoryMap.Holder::bytes).reversed()
                                .thenComparing(MemoryMap.Holder::holder))
                        .limit(HOLDERS)
                        .toList();
            }
            next++;
            if (s.callIndex() == binsAtCall) {
                snap.bins = a.getBinDebugInfo();
            } else if (otherChunks > 0 && otherChunks + Math.max(1, snap.chunks) > chunkBudget) {
                otherFull = true;
                return;
            } else {
                otherChunks += Math.max(1, snap.chunks);
            }
            taken.add(snap);
        }
    }

    /** Whether the trace gives an annotation, a step or a stack for a chunk's tooltip. */
    private static boolean names(Provenance p) {
        return p.annotation() != null || p.step() >= 0 || !p.stack().isEmpty();
    }

    /**
     * The text of a provenance for the report's tooltips: annotation (or a step given without
     * one), then the innermost frames; written once for all the chunks that show it (whatever
     * their thread and time).
     */
    private int provenanceIndex(Provenance p) {
        Provenance shown = new Provenance(-1, null, p.annotation(), p.step(), p.stack());
        return provenanceIds.computeIfAbsent(shown, k -> {
            StringBuilder sb = new StringBuilder();
            if (p.annotation() != null || p.step() >= 0) {
                // The annotation and its step, or "step N" alone, as bfc4j names them.
                sb.append("\n  ").append(new Provenance(-1, null, p.annotation(), p.step(), List.of()).holder());
            }
            for (int i = 0; i < Math.min(FRAMES, p.stack().size()); i++) {
                sb.append("\n  at ").append(p.stack().get(i));
            }
            if (p.stack().size() > FRAMES) {
                sb.append("\n  ... (").append(p.stack().size() - FRAMES).append(" more frames)");
            }
            provenanceTexts.add(sb.toString());
            return provenanceTexts.size() - 1;
        });
    }

    /** The line of the call that made an allocation, 0 if unknown. */
    long lineOf(long allocationId) {
        return allocationId > 0 && allocationId < allocationLine.length ? allocationLine[(int) allocationId] : 0;
    }
}
