/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random allocations, immediate and stream-ordered frees, and event completions in random order,
 * against a shadow model of what the GPU may still be using: no allocation may ever overlap a
 * live allocation or memory freed on a stream whose event has not completed. Runs over plain
 * and virtual memory, with garbage collection. Seed: {@code -Dbfc4j.test.seed=N}.
 */
class RandomizedStreamFreeTest {

    private static final long G = 64 << 10;
    private static final int STEPS = 3000;

    private record Range(long ptr, long bytes, long event) {
    }

    @ParameterizedTest(name = "virtualMemory={0}")
    @ValueSource(booleans = {false, true})
    void nothingStillInUseIsEverHandedOut(boolean virtualMemory) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        String context = "seed " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + "), virtualMemory=" + virtualMemory;
        System.out.println("RandomizedStreamFreeTest: " + context);
        Random rnd = new Random(seed);
        SimulatedCudaDriver driver = new SimulatedCudaDriver(512 * G, G);
        GpuBfcOptions o = GpuBfcOptions.builder().environment(Map.<String, String>of()::get)
                .memoryLimitBytes(8L << 20).virtualMemory(virtualMemory).garbageCollection(true)
                .allowRetryOnFailure(false).eventPollIntervalMicros(0).build();
        TreeMap<Long, Long> live = new TreeMap<>();
        List<Range> unsafe = new ArrayList<>();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(driver, 0, o)) {
            for (int step = 0; step < STEPS; step++) {
                // An event completed in an earlier step may since have been reused.
                forgetCompleted(driver, unsafe);
                int op = rnd.nextInt(10);
                if (op < 5 || live.isEmpty()) {
                    long n = 256L * (1 + rnd.nextInt(rnd.nextBoolean() ? 16 : 2048));
                    long p = a.allocateRaw(256, n, false);
                    forgetCompleted(driver, unsafe);
                    if (p != 0) {
                        long size = a.allocator().allocatedSize(p);
                        assertThat(size).isGreaterThanOrEqualTo(n);
                        assertDisjoint(p, size, live, unsafe, context + ", step " + step);
                        live.put(p, size);
                    }
                } else if (op < 8) {
                    List<Long> keys = new ArrayList<>(live.keySet());
                    long p = keys.get(rnd.nextInt(keys.size()));
                    long size = live.remove(p);
                    if (op == 5) {
                        a.deallocateRaw(p);
                    } else {
                        Set<Long> before = new HashSet<>(driver.pendingEvents());
                        a.deallocateRaw(p, rnd.nextInt(3));
                        Set<Long> after = new HashSet<>(driver.pendingEvents());
                        after.removeAll(before);
                        assertThat(after).as(context).hasSize(1);
                        unsafe.add(new Range(p, size, after.iterator().next()));
                    }
                } else {
                    List<Long> pending = driver.pendingEvents();
                    if (!pending.isEmpty()) {
                        driver.completeEvent(pending.get(rnd.nextInt(pending.size())));
                    }
                    if (op == 9) {
                        a.pollEvents();
                    }
                }
                long sum = 0;
                for (long s : live.values()) {
                    sum += s;
                }
                assertThat(a.getStats().bytesInUse()).as(context).isEqualTo(sum);
            }
            for (long p : live.keySet()) {
                a.deallocateRaw(p);
            }
        }
        assertThat(driver.deviceBytesUsed()).as(context).isZero();
        assertThat(driver.liveEvents()).as(context).isZero();
        assertThat(driver.liveReservations()).as(context).isZero();
    }

    /** Events the allocator waited for itself (before giving a region back) are complete too. */
    private static void forgetCompleted(SimulatedCudaDriver driver, List<Range> unsafe) {
        Set<Long> pending = new HashSet<>(driver.pendingEvents());
        unsafe.removeIf(r -> !pending.contains(r.event()));
    }

    private static void assertDisjoint(long p, long size, TreeMap<Long, Long> live, List<Range> unsafe,
            String context) {
        Map.Entry<Long, Long> below = live.floorEntry(p + size - 1);
        assertThat(below == null || below.getKey() + below.getValue() <= p)
                .as("%s: [0x%x, +%d) overlaps live %s", context, p, size, below).isTrue();
        for (Range r : unsafe) {
            assertThat(p + size <= r.ptr() || r.ptr() + r.bytes() <= p)
                    .as("%s: [0x%x, +%d) overlaps %s, freed on a stream whose event is pending",
                            context, p, size, r).isTrue();
        }
    }
}
