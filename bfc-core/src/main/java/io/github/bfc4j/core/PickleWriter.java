/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes a tree of maps, lists, tuples ({@code Object[]}), strings, longs, booleans and nulls as
 * a Python pickle of protocol 2, in the opcodes Python's own pickler uses for them; what
 * {@link PyTorchSnapshotWriter} writes, for pytorch.org/memory_viz, whose page has an unpickler
 * of its own that reads only some opcodes (all of those used here).
 *
 * <p>Each distinct string is written once (later uses refer to it through the memo), and so is
 * each object the caller names as shared (a stack's frames, which many events carry); other maps
 * and lists are written where they stand, without a memo entry, so the memo holds no more than
 * what is referred to again.
 *
 * <p>It buffers what it writes and hands {@code out} blocks of up to 64 KiB, so {@code out}
 * needs no buffer of its own.
 *
 * <p>Format: Python's {@code Lib/pickletools.py} describes every opcode; the ones here are
 * {@code PROTO}, {@code STOP}, {@code NONE}, {@code NEWTRUE}, {@code NEWFALSE},
 * {@code BININT1}, {@code BININT2}, {@code BININT}, {@code LONG1}, {@code BINUNICODE},
 * {@code EMPTY_DICT}, {@code EMPTY_LIST}, {@code EMPTY_TUPLE}, {@code TUPLE1..3}, {@code MARK},
 * {@code TUPLE}, {@code SETITEMS}, {@code APPENDS}, {@code BINPUT}, {@code LONG_BINPUT},
 * {@code BINGET} and {@code LONG_BINGET}.
 */
final class PickleWriter {

    private static final int PROTO = 0x80;
    private static final int STOP = '.';
    private static final int NONE = 'N';
    private static final int NEWTRUE = 0x88;
    private static final int NEWFALSE = 0x89;
    private static final int BININT1 = 'K';
    private static final int BININT2 = 'M';
    private static final int BININT = 'J';
    private static final int LONG1 = 0x8a;
    private static final int BINUNICODE = 'X';
    private static final int EMPTY_DICT = '}';
    private static final int EMPTY_LIST = ']';
    private static final int EMPTY_TUPLE = ')';
    private static final int TUPLE1 = 0x85;
    private static final int TUPLE2 = 0x86;
    private static final int TUPLE3 = 0x87;
    private static final int MARK = '(';
    private static final int TUPLE = 't';
    private static final int SETITEMS = 'u';
    private static final int APPENDS = 'e';
    private static final int BINPUT = 'q';
    private static final int LONG_BINPUT = 'r';
    private static final int BINGET = 'h';
    private static final int LONG_BINGET = 'j';

    private final OutputStream out;
    private final Set<Object> shared;
    private final Map<Object, Integer> sharedMemo = new IdentityHashMap<>();
    private final Map<String, Integer> stringMemo = new HashMap<>();
    private int nextMemo;
    private final byte[] buf = new byte[1 << 16];
    private int pos;

    private PickleWriter(OutputStream out, Set<Object> shared) {
        this.out = out;
        this.shared = shared;
    }

    /**
     * Writes {@code root} as one pickle (not closing {@code out}).
     *
     * @param root the tree: {@code Map} (keys and values of these kinds), {@code List},
     *     {@code Object[]} (a tuple), {@code String}, {@code Long} or {@code Integer},
     *     {@code Boolean}, null
     * @param shared the maps and lists (by identity) that the tree holds in more than one place,
     *     each written once
     * @throws IllegalArgumentException for an object of another kind (naming its class)
     * @throws IOException if writing fails
     */
    static void write(Object root, Set<Object> shared, OutputStream out) throws IOException {
        PickleWriter w = new PickleWriter(out, shared);
        w.put(PROTO);
        w.put(2);
        w.save(root);
        w.put(STOP);
        w.flush();
    }

    private void save(Object o) throws IOException {
        if (o == null) {
            put(NONE);
        } else if (o instanceof Long || o instanceof Integer) {
            saveLong(((Number) o).longValue());
        } else if (o instanceof String) {
            saveString((String) o);
        } else if (o instanceof Boolean) {
            put((Boolean) o ? NEWTRUE : NEWFALSE);
        } else if (o instanceof Map || o instanceof List) {
            Integer index = sharedMemo.get(o);
            if (index != null) {
                get(index);
            } else if (o instanceof Map) {
                saveMap((Map<?, ?>) o);
            } else {
                saveList((List<?>) o);
            }
        } else if (o instanceof Object[]) {
            saveTuple((Object[]) o);
        } else {
            throw new IllegalArgumentException("cannot pickle a " + o.getClass().getName()
                    + " (expected: Map, List, Object[], String, Long, Integer, Boolean or null)");
        }
    }

    private void saveMap(Map<?, ?> m) throws IOException {
        put(EMPTY_DICT);
        memoIfShared(m);
        if (m.isEmpty()) {
            return;
        }
        put(MARK);
        for (Map.Entry<?, ?> e : m.entrySet()) {
            save(e.getKey());
            save(e.getValue());
        }
        put(SETITEMS);
    }

    private void saveList(List<?> l) throws IOException {
        put(EMPTY_LIST);
        memoIfShared(l);
        if (l.isEmpty()) {
            return;
        }
        put(MARK);
        for (Object o : l) {
            save(o);
        }
        put(APPENDS);
    }

    private void saveTuple(Object[] t) throws IOException {
        switch (t.length) {
            case 0 -> put(EMPTY_TUPLE);
            case 1, 2, 3 -> {
                for (Object o : t) {
                    save(o);
                }
                put(t.length == 1 ? TUPLE1 : t.length == 2 ? TUPLE2 : TUPLE3);
            }
            default -> {
                put(MARK);
                for (Object o : t) {
                    save(o);
                }
                put(TUPLE);
            }
        }
    }

    private void saveString(String s) throws IOException {
        Integer index = stringMemo.get(s);
        if (index != null) {
            get(index);
            return;
        }
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        put(BINUNICODE);
        putInt32(utf8.length);
        putBytes(utf8);
        stringMemo.put(s, nextMemo);
        memoPut();
    }

    /** Python's choice: the smallest of BININT1, BININT2, BININT, else LONG1 with the fewest bytes. */
    private void saveLong(long v) throws IOException {
        if (v >= 0 && v <= 0xff) {
            put(BININT1);
            put((int) v);
        } else if (v >= 0 && v <= 0xffff) {
            put(BININT2);
            put((int) v & 0xff);
            put((int) (v >>> 8));
        } else if (v == (int) v) {
            put(BININT);
            putInt32((int) v);
        } else {
            // The fewest bytes of two's complement whose top bit is the sign: 5 to 8.
            int n = 5;
            while (n < 8 && (v >> (8 * n - 1)) != 0 && (v >> (8 * n - 1)) != -1) {
                n++;
            }
            put(LONG1);
            put(n);
            for (int i = 0; i < n; i++) {
                put((int) (v >>> (8 * i)) & 0xff);
            }
        }
    }

    private void memoIfShared(Object o) throws IOException {
        if (shared.contains(o)) {
            sharedMemo.put(o, nextMemo);
            memoPut();
        }
    }

    /** Stores the object just written at the next memo index. */
    private void memoPut() throws IOException {
        memoOp(BINPUT, LONG_BINPUT, nextMemo++);
    }

    /** Refers to the object at memo index {@code index}. */
    private void get(int index) throws IOException {
        memoOp(BINGET, LONG_BINGET, index);
    }

    /** A memo opcode with a one-byte index, or its four-byte form beyond 255. */
    private void memoOp(int oneByte, int fourBytes, int index) throws IOException {
        if (index <= 0xff) {
            put(oneByte);
            put(index);
        } else {
            put(fourBytes);
            putInt32(index);
        }
    }

    private void putInt32(int v) throws IOException {
        put(v & 0xff);
        put((v >>> 8) & 0xff);
        put((v >>> 16) & 0xff);
        put(v >>> 24);
    }

    private void put(int b) throws IOException {
        if (pos == buf.length) {
            flush();
        }
        buf[pos++] = (byte) b;
    }

    private void putBytes(byte[] b) throws IOException {
        if (b.length > buf.length - pos) {
            flush();
            if (b.length > buf.length) {
                out.write(b);
                return;
            }
        }
        System.arraycopy(b, 0, buf, pos, b.length);
        pos += b.length;
    }

    private void flush() throws IOException {
        out.write(buf, 0, pos);
        pos = 0;
    }
}
