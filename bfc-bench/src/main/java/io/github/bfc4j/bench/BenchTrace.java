/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * A bundled trace decoded up front into primitive arrays, so that replaying it measures the
 * allocator and not the parser. Only {@code alloc} and {@code free} calls are kept; the
 * answers are not checked (conformance-tests does that).
 *
 * <p>Call {@code i} is an allocation of {@code bytes[i]} bytes aligned to {@code alignment[i]}
 * into slot {@code slot[i]} when {@code bytes[i] >= 0}, else a free of slot {@code slot[i]}.
 * Slots are the trace's ids renumbered densely from 0.
 */
public final class BenchTrace {

    /** The traces bundled in benchmarks.jar (copied from conformance-tests at build time). */
    public static final String[] BUNDLED = {
        "big-random-1m-s71", "tf-resnet-train", "infer-qwen1.5b-bf16-dynamic-16gib",
        "train-qwen1.5b-bf16-b8-s256-40gib-growth",
    };

    /** The header: memory limit, options, sim sub-allocator. */
    public final TraceHeader header;
    /** Number of calls. */
    public final int calls;
    /** Per call: the bytes to allocate, or -1 for a free. */
    public final long[] bytes;
    /** Per call: the alignment of an allocation. */
    public final long[] alignment;
    /** Per call: the slot allocated into or freed. */
    public final int[] slot;
    /** Number of distinct slots. */
    public final int slots;
    /** The largest allocation in the trace. */
    public final long maxBytes;

    private BenchTrace(TraceHeader header, int calls, long[] bytes, long[] alignment, int[] slot,
            int slots, long maxBytes) {
        this.header = header;
        this.calls = calls;
        this.bytes = bytes;
        this.alignment = alignment;
        this.slot = slot;
        this.slots = slots;
        this.maxBytes = maxBytes;
    }

    /**
     * Loads a bundled trace.
     *
     * @param name one of {@link #BUNDLED}
     * @return the decoded trace
     * @throws IllegalArgumentException if there is no such trace or it uses timestamped frees
     */
    public static BenchTrace load(String name) {
        String plain = "/bench-traces/" + name + ".bfctrace";
        InputStream in = BenchTrace.class.getResourceAsStream(plain);
        String file = plain;
        if (in == null) {
            file = plain + ".gz";
            in = BenchTrace.class.getResourceAsStream(file);
        }
        if (in == null) {
            throw new IllegalArgumentException("trace=" + name + " (expected: one of "
                    + Arrays.toString(BUNDLED) + ")");
        }
        try (TraceReader reader = TraceReader.open(in, file)) {
            return decode(reader, name);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static BenchTrace decode(TraceReader reader, String name) throws IOException {
        TraceHeader header = reader.header();
        if (header.timingCounter()) {
            throw new IllegalArgumentException("trace=" + name
                    + " (expected: a trace without timing_counter; its frontiers are not replayed here)");
        }
        long[] bytes = new long[1 << 16];
        long[] alignment = new long[1 << 16];
        int[] slot = new int[1 << 16];
        Map<Long, Integer> slots = new HashMap<>();
        int n = 0;
        int nextSlot = 0;
        long maxBytes = 0;
        for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
            TraceEvent.Kind kind = e.kind();
            if (kind != TraceEvent.Kind.ALLOC && kind != TraceEvent.Kind.FREE) {
                continue;
            }
            if (n == bytes.length) {
                bytes = Arrays.copyOf(bytes, n * 2);
                alignment = Arrays.copyOf(alignment, n * 2);
                slot = Arrays.copyOf(slot, n * 2);
            }
            if (kind == TraceEvent.Kind.ALLOC) {
                // A fresh slot per allocation, even where the trace reuses a freed id.
                int s = nextSlot++;
                slots.put(e.id(), s);
                bytes[n] = e.bytes();
                alignment[n] = e.alignment();
                slot[n] = s;
                maxBytes = Math.max(maxBytes, e.bytes());
            } else {
                Integer s = slots.get(e.id());
                if (s == null) {
                    throw new IllegalArgumentException(name + " line " + e.lineNumber()
                            + ": free of unknown id " + e.id());
                }
                bytes[n] = -1;
                slot[n] = s;
            }
            n++;
        }
        return new BenchTrace(header, n, Arrays.copyOf(bytes, n), Arrays.copyOf(alignment, n),
                Arrays.copyOf(slot, n), nextSlot, maxBytes);
    }
}
