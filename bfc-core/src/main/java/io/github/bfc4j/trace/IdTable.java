/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.util.Arrays;
import java.util.HashMap;

/**
 * A map from trace ids (non-negative longs) to long values, 0 meaning absent. Trace ids are
 * normally dense (1, 2, 3, ...), so ids below {@link #DENSE_LIMIT} live in a growable array
 * (no boxing, 8 bytes per id: 8 MiB for the 1,000,000-call trace); larger ids fall back to a
 * {@link HashMap}.
 */
final class IdTable {
    /** Ids below this live in the array (at most 32 MiB of longs). */
    static final long DENSE_LIMIT = 1L << 22;

    private long[] dense = new long[1024];
    private HashMap<Long, Long> sparse;

    long get(long id) {
        if (id < dense.length) {
            return dense[(int) id];
        }
        if (id < DENSE_LIMIT || sparse == null) {
            return 0;
        }
        Long v = sparse.get(id);
        return v == null ? 0 : v;
    }

    void put(long id, long value) {
        if (id < dense.length) {
            dense[(int) id] = value;
        } else if (id < DENSE_LIMIT) {
            long newLength = Math.max(id + 1, Math.min(DENSE_LIMIT, 2L * dense.length));
            dense = Arrays.copyOf(dense, (int) newLength);
            dense[(int) id] = value;
        } else {
            if (sparse == null) {
                sparse = new HashMap<>();
            }
            sparse.put(id, value);
        }
    }
}
