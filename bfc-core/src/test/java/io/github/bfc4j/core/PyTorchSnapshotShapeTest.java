/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;

/**
 * bfc4j's PyTorch snapshots have the shape of the snapshot PyTorch 2.11 itself writes (the
 * resource {@code pytorch-2.11-snapshot-shape.tsv}, taken from PyTorch on a GPU): every path
 * there, with the same Python types, except PyTorch's allocator settings; and nothing more than
 * the frames of a segment, which bfc4j fills with the stack of the region's {@code Extend}.
 */
class PyTorchSnapshotShapeTest {

    private static final long MIB = 1L << 20;
    /** PyTorch's own allocator's settings: no counterpart here (docs/observability.md). */
    private static final String NO_COUNTERPART = ".allocator_settings";
    /** PyTorch 2.11 writes a segment's frames empty; bfc4j writes the region's Extend stack. */
    private static final Set<String> MORE_THAN_PYTORCH = Set.of(".segments[].frames[]",
            ".segments[].frames[].filename", ".segments[].frames[].line", ".segments[].frames[].name");

    private static Map<String, Set<String>> pytorchShape() throws IOException {
        Map<String, Set<String>> shape = new TreeMap<>();
        try (InputStream in = PyTorchSnapshotShapeTest.class.getResourceAsStream("pytorch-2.11-snapshot-shape.tsv")) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (line.isBlank() || line.startsWith("#")) {
                    continue;
                }
                String[] pathTypes = line.split("\t");
                shape.put(pathTypes[0], new TreeSet<>(List.of(pathTypes[1].split(","))));
            }
        }
        return shape;
    }

    /** What Python calls the unpickled value's type. */
    private static String pythonType(Object v) {
        if (v instanceof Map) {
            return "dict";
        } else if (v instanceof List) {
            return "list";
        } else if (v instanceof Object[]) {
            return "tuple";
        } else if (v instanceof String) {
            return "str";
        } else if (v instanceof Boolean) {
            return "bool";
        } else if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
            return "int";
        } else if (v instanceof Double) {
            return "float";
        }
        return v == null ? "NoneType" : v.getClass().getName();
    }

    /** The same walk as the resource's: keys, items, events tagged by their action. */
    @SuppressWarnings("unchecked")
    private static void shape(Object obj, String path, Map<String, Set<String>> out) {
        if (obj instanceof Map<?, ?> map) {
            Object action = map.get("action");
            String tag = action == null ? path : path + "<" + action + ">";
            for (Map.Entry<String, Object> e : ((Map<String, Object>) map).entrySet()) {
                String p = tag + "." + e.getKey();
                out.computeIfAbsent(p, k -> new TreeSet<>()).add(pythonType(e.getValue()));
                shape(e.getValue(), p, out);
            }
        } else if (obj instanceof List<?> || obj instanceof Object[]) {
            List<?> items = obj instanceof Object[] array ? List.of(array) : (List<?>) obj;
            for (Object item : items) {
                out.computeIfAbsent(path + "[]", k -> new TreeSet<>()).add(pythonType(item));
                shape(item, path + "[]", out);
            }
        }
    }

    /**
     * The shape of the snapshots of two allocators, a plain and a coalescing one, each with
     * annotated allocations and frees (with stacks), an out-of-memory failure and regions given
     * back by {@code emptyCache()}: every event kind of both, and the plain one's segments.
     */
    private static Map<String, Set<String>> bfc4jShape() throws IOException {
        Map<String, Set<String>> shape = new TreeMap<>();
        for (boolean coalescing : new boolean[] {false, true}) {
            BfcAllocator a = new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, coalescing), 64 * MIB,
                    "shape", BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build());
            a.recordHistory(HistoryOptions.builder().stackDepth(4).build());
            List<Long> live = new ArrayList<>();
            try (MemoryAnnotation step = MemoryAnnotation.push("train_step", 1)) {
                for (int i = 1; i <= 12; i++) {
                    live.add(a.allocateRaw(256, i * 1_000_000L));
                }
                for (int i = 0; i < live.size(); i += 2) {
                    a.deallocateRaw(live.get(i));
                }
                assertThat(a.allocateRaw(256, 60 * MIB)).as("an out-of-memory event").isZero();
            }
            if (coalescing) { // its regions merged into one: it goes back once nothing is in it
                for (int i = 1; i < live.size(); i += 2) {
                    a.deallocateRaw(live.get(i));
                }
            }
            assertThat(a.emptyCache()).as("segment_free or segment_unmap events").isPositive();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            a.snapshot().writePyTorchPickle(out);
            shape(new Unpickler().loads(out.toByteArray()), "", shape);
            a.close(); // FORCE (the constructor's policy): the plain allocator's live blocks go too
        }
        return shape;
    }

    @Test
    void everyPathPyTorchWritesIsWrittenWithItsTypes() throws IOException {
        Map<String, Set<String>> pytorch = pytorchShape();
        Map<String, Set<String>> ours = bfc4jShape();
        List<String> missing = new ArrayList<>();
        List<String> otherTypes = new ArrayList<>();
        for (Map.Entry<String, Set<String>> e : pytorch.entrySet()) {
            if (e.getKey().equals(NO_COUNTERPART)) {
                continue;
            }
            Set<String> types = ours.get(e.getKey());
            if (types == null) {
                missing.add(e.getKey());
            } else if (!types.equals(e.getValue())) {
                otherTypes.add(e.getKey() + ": PyTorch " + e.getValue() + ", bfc4j " + types);
            }
        }
        assertThat(missing).as("paths PyTorch writes that bfc4j does not").isEmpty();
        assertThat(otherTypes).as("paths with other types").isEmpty();
        assertThat(pytorch.keySet()).as("the resource was read").hasSizeGreaterThan(100);
    }

    @Test
    void nothingIsWrittenThatPyTorchDoesNotWriteButASegmentsStack() throws IOException {
        Set<String> extra = new TreeSet<>(bfc4jShape().keySet());
        extra.removeAll(pytorchShape().keySet());
        assertThat(extra).isEqualTo(MORE_THAN_PYTORCH);
    }
}
