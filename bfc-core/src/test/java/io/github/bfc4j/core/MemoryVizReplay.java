/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import net.razorvine.pickle.Unpickler;

/**
 * Replays a PyTorch memory snapshot as pytorch.org/memory_viz's "Allocator State History" does:
 * from the segments and blocks of the snapshot, the events undone backwards one by one. The
 * viewer draws every state on the way, so each must hold: no two segments overlap, and every
 * live block lies in a live segment (else the viewer throws).
 */
final class MemoryVizReplay {

    private MemoryVizReplay() {
    }

    /** The pickle {@code writePyTorchPickle} writes, read back. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> pickle(MemorySnapshot s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        s.writePyTorchPickle(out);
        return (Map<String, Object>) new Unpickler().loads(out.toByteArray());
    }

    /** The trace of device 0. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> trace(Map<String, Object> pickle) {
        return ((List<List<Map<String, Object>>>) pickle.get("device_traces")).get(0);
    }

    /**
     * Replays the snapshot's events backwards (segments never merged: a sub-allocator that does
     * not coalesce), checking every state the viewer draws.
     */
    @SuppressWarnings("unchecked")
    static void check(Map<String, Object> pickle) {
        TreeMap<Long, Long> segs = new TreeMap<>(); // address -> size
        Map<Long, Long> blocks = new HashMap<>(); // address -> size of active blocks
        for (Map<String, Object> seg : (List<Map<String, Object>>) pickle.get("segments")) {
            long addr = num(seg.get("address"));
            assertThat(segs.put(addr, num(seg.get("total_size")))).as("segment 0x%x listed once", addr).isNull();
            long cursor = addr;
            for (Map<String, Object> b : (List<Map<String, Object>>) seg.get("blocks")) {
                // The viewer's live blocks: in use, and freed but pending (PyTorch's record_stream).
                if (b.get("state").equals("active_allocated") || b.get("state").equals("active_pending_free")) {
                    blocks.put(cursor, num(b.get("size")));
                }
                cursor += num(b.get("size"));
            }
        }
        List<Map<String, Object>> trace = trace(pickle);
        checkState(segs, blocks, trace.size());
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
            switch (action) {
                // The viewer marks the block not yet freed: it throws if the later state has none there.
                case "free_requested" -> assertThat(blocks).as("event %d: free requested of a block the later state has", i)
                        .containsKey(addr);
                case "alloc" -> assertThat(blocks.remove(addr)).as("event %d: alloc of a block the later state has", i)
                        .isNotNull();
                case "free_completed" -> assertThat(blocks.put(addr, num(e.get("size"))))
                        .as("event %d: free of a block not live again", i).isNull();
                case "segment_alloc" -> assertThat(segs.remove(addr))
                        .as("event %d: segment 0x%x obtained is in the later state", i, addr).isNotNull();
                case "segment_free" -> assertThat(segs.put(addr, num(e.get("size"))))
                        .as("event %d: segment 0x%x given back is not live later", i, addr).isNull();
                default -> throw new AssertionError("unexpected action " + action);
            }
            checkState(segs, blocks, i);
        }
    }

    /** The state before event {@code i}: segments apart, every block in one. */
    private static void checkState(TreeMap<Long, Long> segs, Map<Long, Long> blocks, int i) {
        long end = Long.MIN_VALUE;
        for (Map.Entry<Long, Long> s : segs.entrySet()) {
            assertThat(s.getKey()).as("before event %d: segment 0x%x overlaps the one before it", i, s.getKey())
                    .isGreaterThanOrEqualTo(end);
            end = s.getKey() + s.getValue();
        }
        for (long b : blocks.keySet()) {
            Map.Entry<Long, Long> s = segs.floorEntry(b);
            assertThat(s != null && b < s.getKey() + s.getValue())
                    .as("before event %d: block 0x%x lies in a segment", i, b).isTrue();
        }
    }

    static long num(Object o) {
        return ((Number) o).longValue();
    }
}
