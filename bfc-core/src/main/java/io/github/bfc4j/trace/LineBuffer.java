/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Formats trace lines into a growable byte buffer: the single definition of the canonical line
 * format, used by {@link TraceWriter} and by {@link TraceEvent#toString()}. Formatting numbers
 * by hand keeps {@link TraceWriter} free of garbage per line.
 */
final class LineBuffer {
    private static final byte[] HEX_DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private byte[] buf;
    private int len;

    LineBuffer(int initialCapacity) {
        buf = new byte[initialCapacity];
    }

    int length() {
        return len;
    }

    void clear() {
        len = 0;
    }

    void writeTo(OutputStream out) throws IOException {
        out.write(buf, 0, len);
    }

    @Override
    public String toString() {
        return new String(buf, 0, len, StandardCharsets.UTF_8);
    }

    private void ensure(int extra) {
        if (len + extra > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + extra));
        }
    }

    LineBuffer ascii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            buf[len++] = (byte) s.charAt(i);
        }
        return this;
    }

    LineBuffer text(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        ensure(b.length);
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
        return this;
    }

    LineBuffer ch(char c) {
        ensure(1);
        buf[len++] = (byte) c;
        return this;
    }

    LineBuffer dec(long v) {
        if (v < 0) {
            return ascii(Long.toString(v));
        }
        ensure(20);
        int digits = 1;
        for (long t = v / 10; t != 0; t /= 10) {
            digits++;
        }
        int end = len + digits;
        for (int i = end - 1; i >= len; i--) {
            buf[i] = (byte) ('0' + (v % 10));
            v /= 10;
        }
        len = end;
        return this;
    }

    LineBuffer hex(long v) {
        ensure(18);
        buf[len++] = '0';
        buf[len++] = 'x';
        int digits = v == 0 ? 1 : (64 - Long.numberOfLeadingZeros(v) + 3) / 4;
        int end = len + digits;
        for (int i = end - 1; i >= len; i--) {
            buf[i] = HEX_DIGITS[(int) (v & 15)];
            v >>>= 4;
        }
        len = end;
        return this;
    }

    LineBuffer address(long ptr) {
        return ptr == 0 ? ascii("null") : hex(ptr);
    }

    LineBuffer bool(boolean b) {
        return ascii(b ? "true" : "false");
    }

    LineBuffer key(String key, long v) {
        return ch(' ').ascii(key).ch('=').dec(v);
    }

    LineBuffer key(String key, boolean v) {
        return ch(' ').ascii(key).ch('=').bool(v);
    }

    LineBuffer nl() {
        return ch('\n');
    }

    /** The five header lines, each ending in a newline. */
    LineBuffer header(TraceHeader h) {
        ascii("bfctrace ").dec(TraceHeader.VERSION).nl();
        ascii("name ").text(h.name()).nl();
        ascii("source ").text(h.source()).nl();
        ascii("options").key("memory_limit", h.memoryLimit())
                .key("allow_growth", h.allowGrowth())
                .key("garbage_collection", h.garbageCollection())
                .ch(' ').ascii("fragmentation_fraction=").ascii(formatFraction(h.fragmentationFraction()))
                .key("timing_counter", h.timingCounter()).nl();
        ascii("suballocator sim base=").hex(h.simBase())
                .key("capacity", h.simCapacity())
                .key("gap", h.simGap())
                .key("coalescing", h.simCoalescing()).nl();
        return this;
    }

    /** A decimal without exponent or trailing zeros: 0, 0.01, 0.000001. */
    static String formatFraction(double fraction) {
        return BigDecimal.valueOf(fraction).stripTrailingZeros().toPlainString();
    }

    LineBuffer alloc(long id, long bytes, long alignment, boolean writeAlignment, long freedBefore,
            boolean writeFreedBefore, boolean answered, long result) {
        ascii("alloc ").dec(id).ch(' ').dec(bytes);
        if (writeAlignment) {
            key("align", alignment);
        }
        if (writeFreedBefore) {
            key("freed_before", freedBefore);
        }
        if (answered) {
            ascii(" => ").address(result);
        }
        return this;
    }

    LineBuffer free(long id) {
        return ascii("free ").dec(id);
    }

    LineBuffer frontier(long count) {
        return ascii("frontier ").dec(count);
    }

    LineBuffer clearStats() {
        return ascii("clear_stats");
    }

    LineBuffer subAlloc(long bytes, long result) {
        return ascii("sub alloc ").dec(bytes).ascii(" => ").address(result);
    }

    LineBuffer subFree(long ptr, long bytes) {
        return ascii("sub free ").hex(ptr).ch(' ').dec(bytes);
    }

    LineBuffer chunk(long id, long size, long requested, long allocationId) {
        return ascii("chunk ").dec(id).key("size", size).key("requested", requested)
                .key("allocation_id", allocationId);
    }

    LineBuffer stats(StatKey[] keys, long[] values, int count) {
        ascii("stats");
        for (int i = 0; i < count; i++) {
            key(keys[i].traceName(), values[i]);
        }
        return this;
    }

    /** The event's line, as it was read (explicit default keys kept), without a newline. */
    LineBuffer event(TraceEvent e) {
        switch (e.kind()) {
            case ALLOC:
                return alloc(e.id(), e.bytes(), e.alignment(), e.alignmentGiven(), e.freedBefore(),
                        e.freedBeforeGiven(), e.answered(), e.address());
            case FREE:
                return free(e.id());
            case FRONTIER:
                return frontier(e.count());
            case CLEAR_STATS:
                return clearStats();
            case SUB_ALLOC:
                return subAlloc(e.bytes(), e.address());
            case SUB_FREE:
                return subFree(e.address(), e.bytes());
            case CHUNK:
                return chunk(e.id(), e.size(), e.requested(), e.allocationId());
            case STATS:
                return stats(e.statKeys, e.statValues, e.statCount());
            default:
                throw new AssertionError(e.kind());
        }
    }
}
