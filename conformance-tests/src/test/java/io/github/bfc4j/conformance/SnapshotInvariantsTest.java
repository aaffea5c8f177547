/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadRunner;
import io.github.bfc4j.trace.WorkloadStep;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every bundled trace, replayed with its history recorded, gives PyTorch memory snapshots (at
 * its peak and at its end) that hold what pytorch.org/memory_viz and {@code torch.cuda._memory_viz}
 * assume: the blocks of each segment tile it; allocated + internal free + external free = the
 * segment's size (the assertion of {@code _memory_viz.segsum}); the segments add up to the
 * allocator's reserved bytes and the active blocks to its bytes in use; and the event list,
 * replayed backwards from the snapshot as the viewer's "Allocator State History" does, never
 * frees an unknown block, allocates a block outside a live segment or over another block, or
 * gives back a segment that still holds a block (and, when the history is complete, ends at an
 * empty allocator); {@code time_us} never decreases.
 */
class SnapshotInvariantsTest {

    /** Enough for the small traces' whole history, and the latest events of the large one. */
    private static final int MAX_ENTRIES = 1 << 14;

    @TestFactory
    Stream<DynamicTest> snapshotsAtPeakAndEndHoldTheViewersInvariants() throws IOException, URISyntaxException {
        return WorkloadRunnerConformanceTest.allTraces().stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), p.toUri(), () -> {
            long peakCall;
            try (TraceReader r = TraceReader.open(p)) {
                peakCall = WorkloadRunner.forHeader(r.header()).run(r).peakCall();
            }
            List<MemorySnapshot> taken = new ArrayList<>();
            try (TraceReader r = TraceReader.open(p)) {
                WorkloadRunner.forHeader(r.header()).listener(new WorkloadListener() {
                    @Override
                    public void beforeRun(BfcAllocator a) {
                        a.recordHistory(HistoryOptions.builder().maxEntries(MAX_ENTRIES).stacks(false).build());
                    }

                    @Override
                    public void afterCall(WorkloadStep s) {
                        if (s.callIndex() == peakCall) {
                            taken.add(s.allocator().snapshot());
                        }
                    }

                    @Override
                    public void afterRun(BfcAllocator a) {
                        taken.add(a.snapshot());
                    }
                }).run(r);
            }
            assertThat(taken).hasSize(peakCall >= 0 ? 2 : 1);
            for (MemorySnapshot s : taken) {
                check(s);
            }
        }));
    }

    @SuppressWarnings("unchecked")
    static void check(MemorySnapshot s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        s.writePyTorchPickle(out);
        Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(out.toByteArray());
        List<Map<String, Object>> segments = (List<Map<String, Object>>) d.get("segments");
        long reserved = 0;
        long active = 0;
        TreeMap<Long, Long> segs = new TreeMap<>(); // address -> size, as the viewer keeps them
        Map<Long, Long> blocks = new HashMap<>(); // address -> requested size of active blocks
        for (Map<String, Object> seg : segments) {
            long addr = num(seg.get("address"));
            long size = num(seg.get("total_size"));
            long cursor = addr;
            long allocated = 0;
            long activeSize = 0;
            long requested = 0;
            long requestedAllocated = 0;
            long internalFree = 0;
            long externalFree = 0;
            for (Map<String, Object> b : (List<Map<String, Object>>) seg.get("blocks")) {
                assertThat(num(b.get("address"))).as("blocks tile segment 0x%x", addr).isEqualTo(cursor);
                long bs = num(b.get("size"));
                assertThat(bs).isPositive();
                cursor += bs;
                String state = (String) b.get("state");
                assertThat(state).isIn("active_allocated", "active_pending_free", "inactive");
                if (!state.equals("inactive")) {
                    // Live in the viewer: allocated, or freed and waiting for its streams.
                    long req = num(b.get("requested_size"));
                    assertThat(req).isBetween(1L, bs);
                    activeSize += bs;
                    requested += req;
                    blocks.put(num(b.get("address")), req);
                }
                if (state.equals("active_allocated")) { // segsum counts only these as allocated
                    long req = num(b.get("requested_size"));
                    allocated += bs;
                    requestedAllocated += req;
                    internalFree += bs - req;
                } else {
                    externalFree += bs;
                }
            }
            assertThat(cursor - addr).as("blocks of segment 0x%x add up to it", addr).isEqualTo(size);
            assertThat(requestedAllocated + internalFree + externalFree).isEqualTo(size); // _memory_viz.segsum
            assertThat(num(seg.get("allocated_size"))).isEqualTo(allocated);
            assertThat(num(seg.get("active_size"))).isEqualTo(activeSize);
            assertThat(num(seg.get("requested_size"))).isEqualTo(requested);
            reserved += size;
            active += allocated;
            segs.put(addr, size);
        }
        assertThat(reserved).isEqualTo(s.memoryMap().stats().poolBytes());
        assertThat(active).isEqualTo(s.memoryMap().stats().bytesInUse());

        // The events, backwards from the snapshot (the viewer's simulate_memory).
        boolean merge = s.coalescingRegions();
        List<Map<String, Object>> trace = ((List<List<Map<String, Object>>>) d.get("device_traces")).get(0);
        long laterTime = Long.MAX_VALUE;
        for (int i = trace.size() - 1; i >= 0; i--) {
            Map<String, Object> e = trace.get(i);
            String action = (String) e.get("action");
            long time = num(e.get("time_us"));
            assertThat(time).as("time_us at event %d", i).isLessThanOrEqualTo(laterTime);
            laterTime = time;
            if (action.equals("oom")) {
                continue;
            }
            long addr = num(e.get("addr"));
            long size = num(e.get("size"));
            switch (action) {
                case "alloc" -> {
                    assertThat(blocks.remove(addr)).as("event %d: alloc of a block the later state has", i)
                            .isEqualTo(size);
                    assertThat(segmentOf(segs, addr)).as("event %d: block inside a live segment", i).isNotNull();
                }
                case "free_completed" -> {
                    assertThat(blocks.put(addr, size)).as("event %d: free of a block not live again", i).isNull();
                    assertThat(segmentOf(segs, addr)).as("event %d: freed block inside a live segment", i).isNotNull();
                }
                case "free_requested" -> assertThat(blocks).containsEntry(addr, size);
                case "segment_alloc", "segment_map" -> {
                    Map.Entry<Long, Long> seg = segmentOf(segs, addr);
                    assertThat(seg).as("event %d: segment obtained is in the later state", i).isNotNull();
                    assertThat(seg.getKey() + seg.getValue()).isGreaterThanOrEqualTo(addr + size);
                    for (long b : blocks.keySet()) {
                        assertThat(b < addr || b >= addr + size).as("event %d: no block in a segment not yet obtained", i)
                                .isTrue();
                    }
                    unmap(segs, seg, addr, size, merge || action.equals("segment_map"));
                }
                case "segment_free", "segment_unmap" -> {
                    assertThat(segmentOf(segs, addr)).as("event %d: a segment given back is not live later", i).isNull();
                    segs.put(addr, size);
                    if (merge || action.equals("segment_unmap")) {
                        coalesce(segs, addr);
                    }
                }
                default -> throw new AssertionError("unknown action " + action);
            }
        }
        if (s.history().isComplete()) {
            assertThat(blocks).as("a complete history starts from nothing").isEmpty();
            assertThat(segs).as("a complete history starts from nothing").isEmpty();
        }
    }

    private static Map.Entry<Long, Long> segmentOf(TreeMap<Long, Long> segs, long addr) {
        Map.Entry<Long, Long> e = segs.floorEntry(addr);
        return e != null && addr < e.getKey() + e.getValue() ? e : null;
    }

    /** Takes [addr, addr + size) out of the segment holding it. */
    private static void unmap(TreeMap<Long, Long> segs, Map.Entry<Long, Long> seg, long addr, long size, boolean merge) {
        long start = seg.getKey();
        long end = start + seg.getValue();
        if (!merge) {
            assertThat(start).isEqualTo(addr);
            assertThat(end).isEqualTo(addr + size);
        }
        segs.remove(start);
        if (start < addr) {
            segs.put(start, addr - start);
        }
        if (addr + size < end) {
            segs.put(addr + size, end - addr - size);
        }
    }

    private static void coalesce(TreeMap<Long, Long> segs, long addr) {
        Long next = segs.higherKey(addr);
        if (next != null && addr + segs.get(addr) == next) {
            segs.put(addr, segs.get(addr) + segs.remove(next));
        }
        Map.Entry<Long, Long> prev = segs.lowerEntry(addr);
        if (prev != null && prev.getKey() + prev.getValue() == addr) {
            segs.put(prev.getKey(), prev.getValue() + segs.remove(addr));
        }
    }

    private static long num(Object o) {
        return ((Number) o).longValue();
    }
}
