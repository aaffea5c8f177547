/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The series of one scrape come from one snapshot; single reads stay fresh. */
class ScrapeSnapshotTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator sim() {
        return new BfcAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, false), 32 * MIB, "snap",
                BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(null).build());
    }

    @Test
    void aScrapeDuringAllocationsIsConsistent() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ScrapeSnapshotTest seed: -Dbfc4j.test.seed=" + seed);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim()) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            AtomicBoolean stop = new AtomicBoolean();
            Thread churn = new Thread(() -> {
                Random rnd = new Random(seed);
                List<Long> live = new ArrayList<>();
                while (!stop.get()) {
                    if (live.size() < 50 && (live.isEmpty() || rnd.nextBoolean())) {
                        long p = a.allocateRaw(256, 1 + rnd.nextInt(200_000));
                        if (p != 0) {
                            live.add(p);
                        }
                    } else {
                        a.deallocateRaw(live.remove(rnd.nextInt(live.size())));
                    }
                }
            }, "churn");
            churn.setDaemon(true);
            churn.start();
            try {
                for (int i = 0; i < 150; i++) {
                    PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
                    double allocs = one(e, "bfc_allocator_allocations_total");
                    double frees = one(e, "bfc_allocator_frees_total");
                    double active = one(e, "bfc_allocator_allocations_active");
                    double allocated = one(e, "bfc_allocator_allocated_bytes_total");
                    double freed = one(e, "bfc_allocator_freed_bytes_total");
                    double used = one(e, "bfc_allocator_memory_used_bytes");
                    double pool = one(e, "bfc_allocator_pool_size_bytes");
                    double free = one(e, "bfc_allocator_pool_free_bytes");
                    assertThat(active).as("scrape %d (seed %d)", i, seed).isEqualTo(allocs - frees);
                    assertThat(used).as("scrape %d (seed %d)", i, seed).isEqualTo(allocated - freed);
                    assertThat(free).as("scrape %d (seed %d)", i, seed).isEqualTo(pool - used);
                }
            } finally {
                stop.set(true);
                TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, churn);
            }
        }
    }

    @Test
    void scrapesOnSeveralThreadsAtOnceEachAgreeWithThemselves() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ScrapeSnapshotTest seed: -Dbfc4j.test.seed=" + seed);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // Growth and garbage collection, so that regions come and go while the scrapes run.
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, true), 32 * MIB, "snap",
                BfcOptions.builder().allowRetryOnFailure(false).allowGrowth(true).garbageCollection(true)
                        .dumpOnOomDirectory(null).build())) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> churn = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                Random rnd = new Random(seed + t);
                Thread th = new Thread(() -> {
                    List<Long> live = new ArrayList<>();
                    while (!stop.get()) {
                        if (live.size() < 50 && (live.isEmpty() || rnd.nextBoolean())) {
                            long p = a.allocateRaw(256, 1 + rnd.nextInt(4_000_000));
                            if (p != 0) {
                                live.add(p);
                            }
                        } else {
                            a.deallocateRaw(live.remove(rnd.nextInt(live.size())));
                        }
                        if (rnd.nextInt(500) == 0) {
                            a.emptyCache();
                        }
                    }
                    live.forEach(a::deallocateRaw);
                }, "churn-" + t);
                th.setDaemon(true);
                th.start();
                churn.add(th);
            }
            ExecutorService scrapers = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    done.add(scrapers.submit(() -> {
                        for (int i = 0; i < 200; i++) {
                            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
                            double limit = one(e, "bfc_allocator_memory_limit_bytes");
                            double used = one(e, "bfc_allocator_memory_used_bytes");
                            double pool = one(e, "bfc_allocator_pool_size_bytes");
                            double free = one(e, "bfc_allocator_pool_free_bytes");
                            double largest = one(e, "bfc_allocator_largest_free_chunk_bytes");
                            double allocs = one(e, "bfc_allocator_allocations_total");
                            double frees = one(e, "bfc_allocator_frees_total");
                            double active = one(e, "bfc_allocator_allocations_active");
                            String at = "scrape " + i + " on " + Thread.currentThread().getName() + " (seed " + seed
                                    + "): used=" + used + " pool=" + pool + " free=" + free + " largest=" + largest;
                            assertThat(used).as(at).isBetween(0.0, pool);
                            assertThat(pool).as(at).isLessThanOrEqualTo(limit);
                            assertThat(free).as(at).isEqualTo(pool - used);
                            assertThat(largest).as(at).isLessThanOrEqualTo(free);
                            assertThat(active).as(at).isEqualTo(allocs - frees);
                        }
                        return null;
                    }));
                }
                for (int t = 0; t < done.size(); t++) {
                    TestThreads.getOrFail(TestThreads.RUN_LIMIT, "seed " + seed + ": scraper " + t + "'s 200 scrapes",
                            done.get(t));
                }
            } finally {
                scrapers.shutdown();
                stop.set(true);
                TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, churn.toArray(new Thread[0]));
            }
        }
    }

    @Test
    void aScrapeOnAnotherThreadDoesNotChangeTheSnapshotOfOneUnderWay() throws Exception {
        try (BfcAllocator a = sim()) {
            // A clock that stands still: the snapshot does not age out however slowly the
            // threads run (aSnapshotServesOneRoundOfReadsOnlyAndAgesOut checks the ageing).
            AtomicLong clock = new AtomicLong();
            ScrapeSnapshot<BfcAllocator> s = new ScrapeSnapshot<>(a, BfcAllocator::memoryStats, BfcAllocator::isClosed,
                    clock::get);
            // This thread's scrape begins: nothing allocated yet.
            assertThat(s.read(BfcAllocatorMeters.MEMORY_USED)).isZero();
            long p = a.allocateRaw(256, 1000);
            // A whole scrape on another thread, after the allocation.
            double[] other = new double[2];
            Thread t = new Thread(() -> {
                other[0] = s.read(BfcAllocatorMeters.MEMORY_USED);
                other[1] = s.read(BfcAllocatorMeters.ALLOCATIONS);
            }, "other-scrape");
            t.setDaemon(true);
            t.start();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, t);
            assertThat(other).as("the other thread's scrape").containsExactly(1024, 1);
            // This thread's scrape goes on: the rest of its meters agree with its memory used.
            assertThat(s.read(BfcAllocatorMeters.ALLOCATIONS)).as("allocations in this scrape").isZero();
            assertThat(s.read(BfcAllocatorMeters.ALLOCATIONS_ACTIVE)).as("active in this scrape").isZero();
            a.deallocateRaw(p);
        }
    }

    private static double one(PrometheusText.Exposition e, String name) {
        List<PrometheusText.Sample> s = e.named(name);
        assertThat(s).as(name).hasSize(1);
        return s.get(0).value();
    }

    @Test
    void aSnapshotServesOneRoundOfReadsOnlyAndAgesOut() {
        AtomicLong clock = new AtomicLong();
        try (BfcAllocator a = sim()) {
            ScrapeSnapshot<BfcAllocator> s = new ScrapeSnapshot<>(a, BfcAllocator::memoryStats, BfcAllocator::isClosed, clock::get);
            assertThat(s.read(BfcAllocatorMeters.MEMORY_USED)).isZero();
            long p = a.allocateRaw(256, 1000);
            // Another meter of the same round: the same snapshot.
            assertThat(s.read(BfcAllocatorMeters.ALLOCATIONS)).isZero();
            // A meter read again: a new round, a new snapshot.
            assertThat(s.read(BfcAllocatorMeters.MEMORY_USED)).isEqualTo(1024);
            a.deallocateRaw(p);
            assertThat(s.read(BfcAllocatorMeters.FREES)).as("same round").isZero();
            clock.addAndGet(ScrapeSnapshot.MAX_AGE_NANOS + 1);
            assertThat(s.read(BfcAllocatorMeters.MEMORY_PEAK)).isEqualTo(1024);
            assertThat(s.read(BfcAllocatorMeters.ALLOCATIONS_ACTIVE)).as("aged out: fresh").isZero();
        }
    }
}
