/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadStep;

/**
 * Bytes in use and reserved over the calls of a replay, downsampled as it streams: the calls are
 * cut into buckets of {@code width} consecutive calls, each keeping the lowest and highest bytes
 * in use and the highest bytes reserved, so peaks survive any amount of downsampling. When the
 * buckets would exceed {@code 2 * points}, neighbours merge and the width doubles: memory stays
 * bounded whatever the trace's length, and at least {@code points} buckets cover any trace
 * longer than that.
 */
final class Timeline implements WorkloadListener {
    private final int maxBuckets;
    long width = 1;
    int count;
    long[] minInUse;
    long[] maxInUse;
    long[] maxPool;

    Timeline(int points) {
        this.maxBuckets = 2 * points;
        minInUse = new long[maxBuckets];
        maxInUse = new long[maxBuckets];
        maxPool = new long[maxBuckets];
    }

    @Override
    public void afterCall(WorkloadStep s) {
        long c = s.callIndex();
        long b = c / width;
        while (b >= maxBuckets) {
            merge();
            b = c / width;
        }
        int i = (int) b;
        long inUse = s.bytesInUse();
        long pool = s.poolBytes();
        if (i >= count) {
            for (int k = count; k < i; k++) {
                // Not reached by a call (cannot happen: calls are consecutive); keep it neutral.
                minInUse[k] = inUse;
                maxInUse[k] = inUse;
                maxPool[k] = pool;
            }
            minInUse[i] = inUse;
            maxInUse[i] = inUse;
            maxPool[i] = pool;
            count = i + 1;
        } else {
            minInUse[i] = Math.min(minInUse[i], inUse);
            maxInUse[i] = Math.max(maxInUse[i], inUse);
            maxPool[i] = Math.max(maxPool[i], pool);
        }
    }

    private void merge() {
        int n = (count + 1) / 2;
        for (int k = 0; k < n; k++) {
            int a = 2 * k;
            int b = a + 1;
            long min = minInUse[a];
            long max = maxInUse[a];
            long pool = maxPool[a];
            if (b < count) {
                min = Math.min(min, minInUse[b]);
                max = Math.max(max, maxInUse[b]);
                pool = Math.max(pool, maxPool[b]);
            }
            minInUse[k] = min;
            maxInUse[k] = max;
            maxPool[k] = pool;
        }
        count = n;
        width *= 2;
    }
}
