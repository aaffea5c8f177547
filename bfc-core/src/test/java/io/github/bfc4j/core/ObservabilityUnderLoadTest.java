/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Observability while threads allocate and free: every memory map, snapshot, summary and
 * statistic taken meanwhile is one consistent picture, histories keep each thread's events in
 * order, out-of-memory listeners run without the lock and may call back, and none of these
 * calls throws. Seeded ({@code -Dbfc4j.test.seed}); a few seconds on two cores.
 */
class ObservabilityUnderLoadTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ObservabilityUnderLoadTest." + test + " seed: " + seed);
        return seed;
    }

    /** One allocating thread's churn: allocations (some fail), frees, now and then emptyCache(). */
    private static void churn(MemoryAllocator a, Random rnd, int steps, AtomicBoolean stop) {
        List<Allocation> mine = new ArrayList<>();
        try (MemoryAnnotation ann = MemoryAnnotation.push(Thread.currentThread().getName(), 1)) {
            for (int i = 0; i < steps && !stop.get(); i++) {
                int op = rnd.nextInt(100);
                if (mine.isEmpty() || op < 55) {
                    long n = 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? (int) (3 * MIB) : 64 * 1024);
                    try {
                        mine.add(a.allocate(n));
                    } catch (BfcOutOfMemoryException expected) {
                        // the listeners heard of it
                    }
                } else if (op < 99) {
                    mine.remove(rnd.nextInt(mine.size())).close();
                } else if (a instanceof BfcAllocator b) {
                    b.emptyCache();
                } else {
                    ((ShardedBfcAllocator) a).emptyCache();
                }
            }
        }
        for (Allocation x : mine) {
            x.close();
        }
    }

    /** Something one thread does to an allocator over and over while others churn it. */
    private interface Observer {
        void observe(Random rnd) throws Exception;
    }

    /**
     * Three workers churn {@code a} (allocate, fail, free) while one more thread calls
     * {@code observer} over and over, for 4 s or until the workers are done.
     */
    private static void churnWhileObserved(MemoryAllocator a, long seed, Observer observer) throws Exception {
        int workers = 3;
        AtomicBoolean stop = new AtomicBoolean();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        TestThreads.runTogether(workers + 1, seed, id -> {
            Random rnd = new Random(seed * 31 + id);
            if (id == workers) {
                try {
                    while (!stop.get() && System.nanoTime() < deadline) {
                        observer.observe(rnd);
                    }
                } finally {
                    stop.set(true);
                }
            } else {
                Thread.currentThread().setName("worker-" + id);
                churn(a, rnd, 20_000, stop);
            }
        });
    }

    /**
     * The events of a history in order: sequence numbers and times grow, each thread's
     * allocation ids grow, and no allocation is freed before it was made or made twice.
     */
    static void assertHistoryInOrder(String name, MemoryHistory h) {
        long lastSeq = -1;
        long lastTime = Long.MIN_VALUE;
        Map<String, Long> lastIdOfThread = new HashMap<>();
        Map<Long, Boolean> live = new HashMap<>(); // id -> made in this window
        for (MemoryEvent e : h.events()) {
            assertThat(e.sequence()).as("%s: sequence of %s", name, e).isGreaterThan(lastSeq);
            assertThat(e.provenance().timeMicros()).as("%s: time of %s", name, e).isGreaterThanOrEqualTo(lastTime);
            lastSeq = e.sequence();
            lastTime = e.provenance().timeMicros();
            if (e.kind() == MemoryEvent.Kind.ALLOC) {
                Long prev = lastIdOfThread.put(e.provenance().thread(), e.allocationId());
                assertThat(e.allocationId()).as("%s: allocation ids of thread %s", name, e.provenance().thread())
                        .isGreaterThan(prev == null ? 0 : prev);
                assertThat(live.put(e.allocationId(), true)).as("%s: %s made twice", name, e).isNull();
            } else if (e.kind() == MemoryEvent.Kind.FREE) {
                Boolean was = live.remove(e.allocationId());
                assertThat(was == null || was).as("%s: %s", name, e).isTrue();
                live.put(e.allocationId(), false); // freed: a second free or a late alloc is wrong
            }
        }
    }

    /** Everything an observer may call, each checked; returns nothing, throws on the first fault. */
    private static void observe(BfcAllocator a, Random rnd) throws Exception {
        switch (rnd.nextInt(9)) {
            case 0 -> MemoryMapChecks.assertAddsUp(a.memoryMap());
            case 1 -> {
                MemorySnapshot s = a.snapshot();
                MemoryMapChecks.assertAddsUp(s.memoryMap());
                assertHistoryInOrder(a.name(), s.history());
                Map<String, Object> pickle = MemoryVizReplay.pickle(s);
                if (!s.coalescingRegions()) {
                    MemoryVizReplay.check(pickle);
                }
            }
            case 2 -> assertThat(a.memorySummary()).contains("memory summary");
            case 3 -> {
                MemoryStats m = a.memoryStats();
                assertThat(m.bytesInUse()).isLessThanOrEqualTo(m.reservedBytes());
                assertThat(m.activeAllocations()).isEqualTo(m.allocationsTotal() - m.freesTotal());
            }
            case 4 -> {
                AllocatorStats st = a.getStats();
                assertThat(st.bytesInUse()).isLessThanOrEqualTo(st.poolBytes());
            }
            case 5 -> a.recordHistory(HistoryOptions.builder().maxEntries(1 + rnd.nextInt(5000))
                    .stacks(rnd.nextBoolean()).build());
            case 6 -> a.stopHistory();
            case 7 -> a.recordAnnotations(rnd.nextBoolean());
            default -> {
                a.memoryMap().toJson();
                a.dumpMemoryLog(1);
                a.getBinDebugInfo();
                a.fragmentationWithinRegions();
            }
        }
    }

    /**
     * A listener that, on the failing thread, asks another thread to read the allocator: it
     * answers at once only if the listener runs without the allocator's lock. Then it calls
     * back into the allocator itself.
     */
    private static OutOfMemoryListener callingBack(BfcAllocator a, AtomicLong heard) {
        return report -> {
            heard.incrementAndGet();
            MemoryMapChecks.assertAddsUp(report.snapshot().memoryMap());
            try {
                CompletableFuture.supplyAsync(a::bytesInUse).get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("another thread could not read the allocator while a listener ran", e);
            }
            MemoryMapChecks.assertAddsUp(a.memoryMap());
        };
    }

    @Test
    void observersSeeOneConsistentPictureWhileThreadsAllocateAndFail() throws Exception {
        long seed = seed("observersSeeOneConsistentPictureWhileThreadsAllocateAndFail");
        long limit = 8 * MIB;
        BfcAllocator a = BfcAllocator.builder().name("load").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(BASE, 4 * limit, 0, seed % 2 == 0))
                .allowRetryOnFailure(false).garbageCollection(true).closePolicy(ClosePolicy.FORCE).build();
        AtomicLong heard = new AtomicLong();
        List<Throwable> listenerFaults = java.util.Collections.synchronizedList(new ArrayList<>());
        OutOfMemoryListener check = callingBack(a, heard);
        a.addOutOfMemoryListener(r -> {
            try {
                check.onOutOfMemory(r);
            } catch (Throwable t) {
                listenerFaults.add(t);
            }
        });
        a.recordHistory(HistoryOptions.builder().maxEntries(2000).build());
        a.recordAnnotations(true);
        churnWhileObserved(a, seed, rnd -> observe(a, rnd));
        assertThat(listenerFaults).as("faults in the listeners").isEmpty();
        assertThat(heard.get()).as("failures heard").isPositive();
        MemoryMapChecks.assertAddsUp(a.memoryMap());
        assertThat(a.bytesInUse()).isZero();
        a.checkInvariants();
        a.close();
    }

    /** What an observer of a sharded allocator may call, each checked. */
    private static void observe(ShardedBfcAllocator a, Random rnd) throws Exception {
        switch (rnd.nextInt(9)) {
            case 0 -> {
                List<MemorySnapshot> all = a.snapshots();
                long reserved = 0;
                List<MemoryMap.Region> regions = new ArrayList<>();
                for (MemorySnapshot s : all) {
                    MemoryMapChecks.assertAddsUp(s.memoryMap());
                    assertHistoryInOrder(s.memoryMap().allocatorName(), s.history());
                    reserved += s.memoryMap().memoryStats().reservedBytes();
                    regions.addAll(s.memoryMap().regions());
                }
                regions.sort(java.util.Comparator.comparingLong(MemoryMap.Region::ptr));
                for (int i = 1; i < regions.size(); i++) {
                    MemoryMap.Region p = regions.get(i - 1);
                    assertThat(p.ptr() + p.size()).as("region 0x%s in two shards", Long.toHexString(p.ptr()))
                            .isLessThanOrEqualTo(regions.get(i).ptr());
                }
                assertThat(reserved).isLessThanOrEqualTo(a.memoryLimit());
            }
            case 1 -> {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                a.writePyTorchPickle(out);
                @SuppressWarnings("unchecked")
                Map<String, Object> pickle = (Map<String, Object>) new net.razorvine.pickle.Unpickler()
                        .loads(out.toByteArray());
                if (!a.shards().get(0).snapshot().coalescingRegions()) {
                    MemoryVizReplay.check(pickle);
                }
            }
            case 2 -> assertThat(a.memorySummary()).contains("Sharded allocator");
            case 3 -> {
                AllocatorStats st = a.getStats();
                assertThat(st.bytesInUse()).isLessThanOrEqualTo(st.poolBytes());
                assertThat(st.poolBytes()).isLessThanOrEqualTo(a.memoryLimit());
            }
            case 4 -> a.recordHistory(HistoryOptions.builder().maxEntries(1 + rnd.nextInt(5000))
                    .stacks(rnd.nextBoolean()).build());
            case 5 -> a.stopHistory();
            case 6 -> a.recordAnnotations(rnd.nextBoolean());
            case 7 -> {
                BfcAllocator s = a.shards().get(rnd.nextInt(a.shards().size()));
                observe(s, rnd);
            }
            default -> {
                a.bytesInUse();
                a.reservedBytes();
                a.regionCount();
                a.largestFreeChunkBytes();
            }
        }
    }

    @Test
    void observersOfAShardedAllocatorSeeOneConsistentPicture() throws Exception {
        long seed = seed("observersOfAShardedAllocatorSeeOneConsistentPicture");
        long limit = 8 * MIB;
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("sharded-load").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(BASE, 4 * limit, 0, seed % 2 == 0)).shards(3)
                .options(BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build())
                .closePolicy(ClosePolicy.FORCE).build();
        AtomicLong heard = new AtomicLong();
        List<Throwable> listenerFaults = java.util.Collections.synchronizedList(new ArrayList<>());
        a.addOutOfMemoryListener(r -> {
            try {
                heard.incrementAndGet();
                MemoryMapChecks.assertAddsUp(r.snapshot().memoryMap());
                CompletableFuture.supplyAsync(a::getStats).get(5, TimeUnit.SECONDS);
                a.memorySummary();
                a.snapshots();
            } catch (Throwable t) {
                listenerFaults.add(t);
            }
        });
        a.recordHistory(HistoryOptions.builder().maxEntries(2000).build());
        a.recordAnnotations(true);
        churnWhileObserved(a, seed, rnd -> observe(a, rnd));
        assertThat(listenerFaults).as("faults in the listeners").isEmpty();
        assertThat(heard.get()).as("failures heard").isPositive();
        for (BfcAllocator s : a.shards()) {
            MemoryMapChecks.assertAddsUp(s.memoryMap());
            s.checkInvariants();
        }
        assertThat(a.bytesInUse()).isZero();
        a.close();
    }

    /** Runs {@code call}; after a close, an IllegalStateException that says so is its one allowed failure. */
    private static void closedOrAnswers(MemoryAllocator a, ThrowingCall call) throws Exception {
        try {
            call.run();
        } catch (IllegalStateException e) {
            if (!a.isClosed() && !(a instanceof ShardedBfcAllocator)) {
                throw e;
            }
            assertThat(e.getMessage()).as("message of %s", e).containsIgnoringCase("closed");
        }
    }

    private interface ThrowingCall {
        void run() throws Exception;
    }

    @Test
    void closeRacingObserversAndAllocatingThreads(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dumps)
            throws Exception {
        long seed = seed("closeRacingObserversAndAllocatingThreads");
        long limit = 8 * MIB;
        for (int round = 0; round < 6; round++) {
            boolean sharded = round % 2 == 1;
            BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true)
                    .dumpOnOomDirectory(dumps).build();
            SimSubAllocator sub = new SimSubAllocator(BASE, 4 * limit, 0, round % 3 == 0);
            MemoryAllocator a = sharded
                    ? ShardedBfcAllocator.builder().name("close-race").memoryLimit(limit).subAllocator(sub).shards(2)
                            .options(opts).closePolicy(ClosePolicy.FORCE).build()
                    : BfcAllocator.builder().name("close-race").memoryLimit(limit).subAllocator(sub).options(opts)
                            .closePolicy(ClosePolicy.FORCE).build();
            List<Throwable> listenerFaults = java.util.Collections.synchronizedList(new ArrayList<>());
            boolean listenerCloses = round >= 4; // then a listener closes it, on a failing thread
            AtomicLong failures = new AtomicLong();
            OutOfMemoryListener l = r -> {
                try {
                    if (listenerCloses && failures.incrementAndGet() == 5) {
                        a.close();
                    }
                    closedOrAnswers(a, () -> {
                        if (a instanceof BfcAllocator b) {
                            MemoryMapChecks.assertAddsUp(b.memoryMap());
                        } else {
                            ((ShardedBfcAllocator) a).memorySummary();
                        }
                    });
                } catch (Throwable t) {
                    listenerFaults.add(t);
                }
            };
            if (a instanceof BfcAllocator b) {
                b.addOutOfMemoryListener(l);
                b.recordHistory(HistoryOptions.defaults());
            } else {
                ((ShardedBfcAllocator) a).addOutOfMemoryListener(l);
                ((ShardedBfcAllocator) a).recordHistory(HistoryOptions.defaults());
            }
            int workers = 3;
            long s = seed * 131 + round;
            TestThreads.runTogether(workers + 2, s, id -> {
                Random rnd = new Random(s * 31 + id);
                if (id == workers) { // the closer
                    Thread.sleep(50 + rnd.nextInt(300));
                    // A generous bound, left as soon as a listener has closed it: the workers'
                    // five failures can take seconds on a loaded machine.
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (listenerCloses && !a.isClosed() && System.nanoTime() < until) {
                        Thread.sleep(10);
                    }
                    a.close(); // closed already, if a listener closed it
                    assertThat(!listenerCloses || failures.get() >= 5).as("a listener closed it").isTrue();
                } else if (id == workers + 1) { // the observer
                    while (!a.isClosed()) {
                        closedOrAnswers(a, () -> {
                            if (a instanceof BfcAllocator b) {
                                observe(b, rnd);
                            } else {
                                observe((ShardedBfcAllocator) a, rnd);
                            }
                        });
                    }
                    closedOrAnswers(a, () -> {
                        if (a instanceof BfcAllocator b) {
                            MemoryMapChecks.assertAddsUp(b.memoryMap());
                            b.snapshot().writePyTorchPickle(new ByteArrayOutputStream());
                            b.memorySummary();
                            b.memoryStats();
                            b.getStats();
                        } else {
                            ShardedBfcAllocator sh = (ShardedBfcAllocator) a;
                            sh.memorySummary();
                            sh.snapshots();
                            sh.writePyTorchPickle(new ByteArrayOutputStream());
                            sh.getStats();
                        }
                    });
                } else {
                    Thread.currentThread().setName("worker-" + id);
                    try {
                        churn(a, rnd, 1_000_000, new AtomicBoolean());
                    } catch (IllegalStateException e) {
                        assertThat(a.isClosed() || a instanceof ShardedBfcAllocator).as("%s", e).isTrue();
                        assertThat(e.getMessage()).as("message of %s", e).containsIgnoringCase("closed");
                    }
                }
            });
            assertThat(listenerFaults).as("faults in the listeners").isEmpty();
            assertThat(a.isClosed()).isTrue();
            assertThat(sub.reservedBytes()).as("round %d: memory given back", round).isZero();
        }
    }

    /** A JSON memory map's regions as {ptr, size}, each checked to be tiled by its chunks. */
    private static List<long[]> regionsOf(Map<?, ?> map, String what) {
        List<long[]> out = new ArrayList<>();
        for (Object o : (List<?>) map.get("regions")) {
            Map<?, ?> r = (Map<?, ?>) o;
            long ptr = Long.parseUnsignedLong(((String) r.get("ptr")).substring(2), 16);
            long size = ((Number) r.get("size")).longValue();
            long at = ptr;
            for (Object c : (List<?>) r.get("chunks")) {
                Map<?, ?> chunk = (Map<?, ?>) c;
                assertThat(Long.parseUnsignedLong(((String) chunk.get("ptr")).substring(2), 16))
                        .as("%s: chunk of region 0x%s", what, Long.toHexString(ptr)).isEqualTo(at);
                at += ((Number) chunk.get("size")).longValue();
            }
            assertThat(at).as("%s: end of the chunks of region 0x%s", what, Long.toHexString(ptr)).isEqualTo(ptr + size);
            out.add(new long[] {ptr, size});
        }
        return out;
    }

    @Test
    void dumpsOfFailuresOnSeveralThreadsShowEachRangeInOneShard(@org.junit.jupiter.api.io.TempDir
            java.nio.file.Path dumps) throws Exception {
        long seed = seed("dumpsOfFailuresOnSeveralThreadsShowEachRangeInOneShard");
        long limit = 8 * MIB;
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("dumps").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(BASE, 4 * limit, 0, false)).shards(2)
                .options(BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true)
                        .dumpOnOomDirectory(dumps).build())
                .closePolicy(ClosePolicy.FORCE).build();
        a.recordHistory(HistoryOptions.builder().maxEntries(500).build());
        TestThreads.runTogether(3, seed, id -> {
            Thread.currentThread().setName("worker-" + id);
            churn(a, new Random(seed * 31 + id), 2_000, new AtomicBoolean());
        });
        a.close();
        List<java.nio.file.Path> jsons;
        try (var files = java.nio.file.Files.list(dumps)) {
            jsons = files.filter(f -> f.toString().endsWith(".json")).sorted().toList();
        }
        assertThat(jsons).as("dumps written").isNotEmpty();
        for (java.nio.file.Path f : jsons) {
            String what = f.getFileName().toString();
            Map<?, ?> doc = (Map<?, ?>) TinyJson.parse(java.nio.file.Files.readString(f));
            Map<?, ?> failing = (Map<?, ?>) doc.get("memoryMap");
            List<long[]> all = new ArrayList<>();
            for (Object o : (List<?>) doc.get("shards")) {
                Map<?, ?> shard = (Map<?, ?>) o;
                all.addAll(regionsOf(shard, what + " " + shard.get("allocatorName")));
            }
            all.sort(java.util.Comparator.comparingLong(r -> r[0]));
            long reserved = 0;
            for (int k = 0; k < all.size(); k++) {
                reserved += all.get(k)[1];
                if (k > 0) {
                    assertThat(all.get(k - 1)[0] + all.get(k - 1)[1]).as("%s: region 0x%s in two shards", what,
                            Long.toHexString(all.get(k)[0])).isLessThanOrEqualTo(all.get(k)[0]);
                }
            }
            assertThat(reserved).as("%s: regions of all shards", what).isLessThanOrEqualTo(limit);
            regionsOf(failing, what + " memoryMap");
            String json = f.toString();
            byte[] pickle = java.nio.file.Files.readAllBytes(
                    java.nio.file.Path.of(json.substring(0, json.length() - ".json".length()) + ".pickle"));
            MemoryVizOpcodes.check(pickle);
            @SuppressWarnings("unchecked")
            Map<String, Object> p = (Map<String, Object>) new net.razorvine.pickle.Unpickler().loads(pickle);
            MemoryVizReplay.check(p);
        }
    }

    /**
     * Stream-ordered frees (a timing counter, as GpuBfcAllocator's): chunks wait for the safe
     * frontier, which another thread moves, while observers read the allocator.
     */
    @Test
    void observersSeeOneConsistentPictureWithStreamOrderedFrees() throws Exception {
        long seed = seed("observersSeeOneConsistentPictureWithStreamOrderedFrees");
        long limit = 8 * MIB;
        BfcAllocator a = BfcAllocator.builder().name("streams").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(BASE, 4 * limit, 0, false))
                .allowRetryOnFailure(false).garbageCollection(true).closePolicy(ClosePolicy.FORCE).build();
        SharedCounter counter = new SharedCounter();
        a.setTimingCounter(counter);
        a.recordHistory(HistoryOptions.builder().maxEntries(2000).build());
        a.recordAnnotations(true);
        List<Throwable> listenerFaults = java.util.Collections.synchronizedList(new ArrayList<>());
        a.addOutOfMemoryListener(r -> {
            try {
                MemoryMapChecks.assertAddsUp(r.snapshot().memoryMap());
                MemoryVizReplay.check(MemoryVizReplay.pickle(r.snapshot()));
            } catch (Throwable t) {
                listenerFaults.add(t);
            }
        });
        int workers = 2;
        AtomicBoolean stop = new AtomicBoolean();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        TestThreads.runTogether(workers + 2, seed, id -> {
            Random rnd = new Random(seed * 31 + id);
            if (id == workers) {
                try {
                    while (!stop.get() && System.nanoTime() < deadline) {
                        observe(a, rnd);
                    }
                } finally {
                    stop.set(true);
                }
            } else if (id == workers + 1) { // the streams: work completes, the frontier moves
                while (!stop.get()) {
                    long c = counter.next();
                    if (rnd.nextInt(4) == 0) {
                        a.setSafeFrontier(c - rnd.nextInt(8));
                    }
                    Thread.yield();
                }
            } else {
                Thread.currentThread().setName("worker-" + id);
                List<Long> mine = new ArrayList<>();
                try (MemoryAnnotation ann = MemoryAnnotation.push("worker-" + id, 1)) {
                    while (!stop.get()) {
                        if (mine.isEmpty() || rnd.nextInt(100) < 55) {
                            long n = 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? (int) (3 * MIB) : 64 * 1024);
                            long freedBefore = counter.get() - rnd.nextInt(4);
                            long p = a.allocateRaw(64, n, rnd.nextBoolean() ? AllocationAttributes.NO_RETRY
                                    : new AllocationAttributes(false, () -> freedBefore));
                            if (p != 0) {
                                mine.add(p);
                            }
                        } else {
                            a.deallocateRaw(mine.remove(rnd.nextInt(mine.size())));
                        }
                    }
                }
                for (long p : mine) {
                    a.deallocateRaw(p);
                }
            }
        });
        assertThat(listenerFaults).as("faults in the listeners").isEmpty();
        MemoryMapChecks.assertAddsUp(a.memoryMap());
        assertThat(a.bytesInUse()).isZero();
        a.checkInvariants();
        a.close();
    }
}
