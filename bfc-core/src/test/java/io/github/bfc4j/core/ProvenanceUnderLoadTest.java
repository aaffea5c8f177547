/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Who holds the memory, while four threads allocate and free by every path (allocate,
 * allocate with an alignment, allocateRaw with and without attributes, allocateRawOrThrow,
 * failures, garbage collection, emptyCache; on a sharded allocator, frees on another thread):
 * each picture taken (memory map, snapshot, out-of-memory report and message) names, for every
 * chunk in use, the allocation that made it, and its holders add up to the bytes in use of the
 * same moment. Each allocation carries a unique step, so a chunk naming another allocation's (or
 * a freed one's) is caught. Seeded ({@code -Dbfc4j.test.seed}).
 */
class ProvenanceUnderLoadTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;
    private static final int WORKERS = 4;

    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ProvenanceUnderLoadTest." + test + " seed: " + seed);
        return seed;
    }

    /** What each allocation asked for, by its unique step. */
    private record Asked(String thread, long bytes, boolean raw) {
    }

    /** The allocations, the frees finished, and each thread's call in progress. */
    private static final class Ledger {
        final Map<Long, Asked> asked = new ConcurrentHashMap<>();
        final Set<Long> freed = ConcurrentHashMap.newKeySet();
        final AtomicLong nextStep = new AtomicLong(1);
        final ThreadLocal<Long> current = new ThreadLocal<>();
        final ThreadLocal<OutOfMemoryReport> lastReport = new ThreadLocal<>();
        final AtomicLong failures = new AtomicLong();
        final AtomicLong checkedMessages = new AtomicLong();
        final AtomicLong pictures = new AtomicLong();
    }

    /** A live allocation of a worker: its step and how to free it. */
    private record Live(long step, Allocation handle, long ptr) {
    }

    /**
     * One allocation by one of the paths, annotated {@code w<id>} with a fresh step; null if it
     * failed (the out-of-memory message was checked against the report of the same failure).
     */
    private static Live allocateOne(MemoryAllocator a, Ledger l, Random rnd, int id) {
        long step = l.nextStep.getAndIncrement();
        long bytes = 1 + rnd.nextInt(rnd.nextInt(12) == 0 ? (int) (3 * MIB) : 96 * 1024);
        int path = rnd.nextInt(5);
        boolean raw = path >= 2;
        l.asked.put(step, new Asked(Thread.currentThread().getName(), bytes, raw));
        l.current.set(step);
        l.lastReport.remove();
        try (MemoryAnnotation ann = MemoryAnnotation.push("w" + id, step)) {
            switch (path) {
                case 0 -> {
                    return new Live(step, a.allocate(bytes), 0);
                }
                case 1 -> {
                    return new Live(step, a.allocate(bytes, 4096), 0);
                }
                case 2 -> {
                    long p = a.allocateRaw(256, bytes);
                    return p == 0 ? null : new Live(step, null, p);
                }
                case 3 -> {
                    long p = a.allocateRaw(256, bytes, new AllocationAttributes(rnd.nextBoolean(), () -> 0));
                    return p == 0 ? null : new Live(step, null, p);
                }
                default -> {
                    long p = a instanceof BfcAllocator b ? b.allocateRawOrThrow(256, bytes)
                            : ((ShardedBfcAllocator) a).allocateRawOrThrow(256, bytes);
                    return new Live(step, null, p);
                }
            }
        } catch (BfcOutOfMemoryException e) {
            if (a instanceof BfcAllocator) {
                checkMessageAgainstReport(e, l.lastReport.get(), l);
            }
            return null;
        } finally {
            l.current.remove();
        }
    }

    private static void free(MemoryAllocator a, Ledger l, Live x) {
        if (x.handle() != null) {
            x.handle().close();
        } else {
            a.deallocateRaw(x.ptr());
        }
        l.freed.add(x.step());
    }

    /**
     * The listener: the report's picture adds up, and names the failing call as its provenance.
     */
    private static OutOfMemoryListener listener(Ledger l, List<Throwable> faults) {
        return report -> {
            try {
                l.failures.incrementAndGet();
                Long step = l.current.get();
                if (step != null) {
                    assertThat(report.provenance().step()).as("the failing call's step").isEqualTo(step);
                    assertThat(report.provenance().annotation()).startsWith("w");
                }
                checkPicture(report.snapshot().memoryMap(), l, Set.of());
                l.lastReport.set(report);
            } catch (Throwable t) {
                faults.add(t);
            }
        };
    }

    private static final Pattern HOLDER = Pattern.compile("(?:: |; )\\S+ by (.+?) \\((\\d+) chunks?\\)");

    /**
     * The exception's figures and largest holders are those of the report taken at the same
     * failure: the five largest chunks in use there (each allocation is its own holder, by its
     * step), in order of bytes, then name.
     */
    private static void checkMessageAgainstReport(BfcOutOfMemoryException e, OutOfMemoryReport r, Ledger l) {
        assertThat(r).as("the report of this failure, on this thread").isNotNull();
        MemoryMap m = r.snapshot().memoryMap();
        assertThat(e.bytesInUse()).isEqualTo(m.stats().bytesInUse());
        assertThat(e.reservedBytes()).isEqualTo(m.memoryStats().reservedBytes());
        List<MemoryMap.Chunk> inUse = new ArrayList<>(m.chunks().stream().filter(MemoryMap.Chunk::inUse).toList());
        inUse.sort(Comparator.comparingLong(MemoryMap.Chunk::size).reversed()
                .thenComparing(c -> c.provenance().annotation() + " (step " + c.provenance().step() + ")"));
        List<String> expected = inUse.stream().limit(5)
                .map(c -> c.provenance().annotation() + " (step " + c.provenance().step() + ") x1").toList();
        String msg = e.getMessage();
        int at = msg.indexOf("Largest holders:");
        if (inUse.isEmpty()) {
            assertThat(at).as(msg).isNegative();
            return;
        }
        assertThat(at).as(msg).isNotNegative();
        Matcher h = HOLDER.matcher(msg.substring(at + "Largest holders".length()));
        List<String> named = new ArrayList<>();
        while (h.find() && named.size() < 5) {
            named.add(h.group(1) + " x" + h.group(2));
        }
        assertThat(named).as(msg).containsExactlyElementsOf(expected);
        l.checkedMessages.incrementAndGet();
    }

    /**
     * One picture: holders add up to the bytes and chunks in use; each chunk in use names the
     * allocation that made it (its thread, its size), no two chunks name the same, and none names
     * an allocation whose free had finished before the picture was taken.
     */
    private static void checkPicture(MemoryMap m, Ledger l, Set<Long> freedBefore) {
        MemoryMapChecks.assertAddsUp(m);
        List<MemoryMap.Holder> holders = m.largestHolders(Integer.MAX_VALUE);
        assertThat(holders.stream().mapToLong(MemoryMap.Holder::bytes).sum()).as("%s: holders' bytes", m.allocatorName())
                .isEqualTo(m.stats().bytesInUse());
        assertThat(holders.stream().mapToLong(MemoryMap.Holder::chunks).sum()).as("%s: holders' chunks", m.allocatorName())
                .isEqualTo(m.memoryStats().activeAllocations());
        Set<Long> seen = new HashSet<>();
        Set<Long> waiting = new HashSet<>();
        for (MemoryMap.Chunk c : m.chunks()) {
            if (!c.inUse()) {
                if (c.provenance().isKnown()) {
                    assertThat(c.notYetSafe()).as("free chunk 0x%x names an allocation", c.ptr()).isTrue();
                    assertThat(l.asked).containsKey(c.provenance().step());
                    assertThat(waiting.add(c.provenance().step())).as("two waiting chunks name step %d",
                            c.provenance().step()).isTrue();
                }
                continue;
            }
            Provenance p = c.provenance();
            assertThat(p.isKnown()).as("chunk 0x%x", c.ptr()).isTrue();
            long step = p.step();
            Asked asked = l.asked.get(step);
            assertThat(asked).as("chunk 0x%x: step %d", c.ptr(), step).isNotNull();
            assertThat(seen.add(step)).as("two chunks name step %d", step).isTrue();
            assertThat(freedBefore).as("chunk 0x%x names a freed allocation", c.ptr()).doesNotContain(step);
            assertThat(p.thread()).as("chunk 0x%x: thread", c.ptr()).isEqualTo(asked.thread());
            assertThat(p.annotation()).isEqualTo("w" + asked.thread().substring(asked.thread().length() - 1));
            if (asked.raw()) {
                assertThat(c.requestedSize()).as("chunk 0x%x: requested", c.ptr()).isEqualTo(asked.bytes());
            } else {
                assertThat(c.requestedSize()).as("chunk 0x%x: requested", c.ptr()).isGreaterThanOrEqualTo(asked.bytes());
            }
        }
        waiting.retainAll(seen);
        assertThat(waiting).as("%s: allocations named by a chunk in use and a waiting one", m.allocatorName()).isEmpty();
        l.pictures.incrementAndGet();
    }

    @Test
    void everyPictureNamesTheHoldersOfItsMomentWhileFourThreadsAllocateAndFree() throws Exception {
        allocateAndFreeWhileObserved(seed("everyPictureNamesTheHoldersOfItsMomentWhileFourThreadsAllocateAndFree"), false);
    }

    /**
     * With a timing counter, frees wait for the frontier (moved by the observer now and then):
     * a chunk not yet safe names the allocation freed into it, counts in no holder, and no chunk
     * in use names that allocation.
     */
    @Test
    void withStreamOrderedFreesTheWaitingChunksNameTheirAllocationsAndHoldNothing() throws Exception {
        allocateAndFreeWhileObserved(seed("withStreamOrderedFreesTheWaitingChunksNameTheirAllocationsAndHoldNothing"), true);
    }

    private static void allocateAndFreeWhileObserved(long seed, boolean stamped) throws Exception {
        BfcAllocator a = BfcAllocator.builder().name("prov-load").memoryLimit(8 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 32 * MIB, 0, seed % 2 == 0))
                .allowRetryOnFailure(false).garbageCollection(true).closePolicy(ClosePolicy.FORCE).build();
        Ledger l = new Ledger();
        List<Throwable> faults = java.util.Collections.synchronizedList(new ArrayList<>());
        a.addOutOfMemoryListener(listener(l, faults));
        SharedCounter counter = new SharedCounter();
        if (stamped) {
            a.setTimingCounter(counter);
        }
        a.recordAnnotations(true);
        a.recordHistory(HistoryOptions.builder().maxEntries(4096).stackEveryNth(7).build());
        AtomicBoolean stop = new AtomicBoolean();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        TestThreads.runTogether(WORKERS + 1, seed, id -> {
            Random rnd = new Random(seed * 31 + id);
            if (id == WORKERS) {
                try {
                    while (System.nanoTime() < deadline) {
                        Set<Long> freedBefore = Set.copyOf(l.freed);
                        checkPicture(rnd.nextBoolean() ? a.memoryMap() : a.snapshot().memoryMap(), l, freedBefore);
                        if (stamped && rnd.nextInt(4) == 0) {
                            a.setSafeFrontier(counter.get() - rnd.nextInt(20));
                        }
                    }
                } finally {
                    stop.set(true);
                }
                return;
            }
            Thread.currentThread().setName("prov-worker-" + id);
            List<Live> mine = new ArrayList<>();
            while (!stop.get()) {
                int op = rnd.nextInt(100);
                if (mine.isEmpty() || op < 55) {
                    Live x = allocateOne(a, l, rnd, id);
                    if (x != null) {
                        mine.add(x);
                    }
                } else if (op < 99) {
                    free(a, l, mine.remove(rnd.nextInt(mine.size())));
                } else {
                    a.emptyCache();
                }
            }
            for (Live x : mine) {
                free(a, l, x);
            }
        });
        assertThat(faults).as("faults in the listener").isEmpty();
        System.out.println("pictures " + l.pictures + ", failures " + l.failures + ", messages " + l.checkedMessages);
        assertThat(l.failures.get()).as("failures").isPositive();
        assertThat(l.checkedMessages.get()).as("messages checked").isPositive();
        assertThat(a.bytesInUse()).isZero();
        checkPicture(a.memoryMap(), l, Set.copyOf(l.freed));
        a.close();
    }

    @Test
    void aShardedAllocatorsShardsNameTheirHoldersWhileThreadsFreeEachOthersMemory() throws Exception {
        long seed = seed("aShardedAllocatorsShardsNameTheirHoldersWhileThreadsFreeEachOthersMemory");
        ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("prov-sharded").memoryLimit(8 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 32 * MIB, 0, seed % 2 == 0)).shards(3)
                .options(BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build())
                .closePolicy(ClosePolicy.FORCE).build();
        Ledger l = new Ledger();
        List<Throwable> faults = java.util.Collections.synchronizedList(new ArrayList<>());
        a.addOutOfMemoryListener(listener(l, faults));
        a.recordAnnotations(true);
        a.recordHistory(HistoryOptions.builder().maxEntries(4096).stacks(false).build());
        List<Queue<Live>> handedOver = new ArrayList<>();
        for (int i = 0; i < WORKERS; i++) {
            handedOver.add(new ConcurrentLinkedQueue<>());
        }
        AtomicBoolean stop = new AtomicBoolean();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        TestThreads.runTogether(WORKERS + 1, seed, id -> {
            Random rnd = new Random(seed * 31 + id);
            if (id == WORKERS) {
                try {
                    while (System.nanoTime() < deadline) {
                        Set<Long> freedBefore = Set.copyOf(l.freed);
                        Set<Long> steps = new HashSet<>();
                        for (MemorySnapshot s : a.snapshots()) {
                            checkPicture(s.memoryMap(), l, freedBefore);
                            for (MemoryMap.Chunk c : s.memoryMap().chunks()) {
                                if (c.inUse()) {
                                    assertThat(steps.add(c.provenance().step()))
                                            .as("step %d in two shards", c.provenance().step()).isTrue();
                                }
                            }
                        }
                    }
                } finally {
                    stop.set(true);
                }
                return;
            }
            Thread.currentThread().setName("prov-worker-" + id);
            List<Live> mine = new ArrayList<>();
            while (!stop.get()) {
                int op = rnd.nextInt(100);
                Live given = handedOver.get(id).poll();
                if (given != null) {
                    free(a, l, given); // made on another thread, perhaps on another shard
                } else if (mine.isEmpty() || op < 55) {
                    Live x = allocateOne(a, l, rnd, id);
                    if (x != null) {
                        mine.add(x);
                    }
                } else if (op < 80) {
                    free(a, l, mine.remove(rnd.nextInt(mine.size())));
                } else if (op < 99) {
                    handedOver.get(rnd.nextInt(WORKERS)).add(mine.remove(rnd.nextInt(mine.size())));
                } else {
                    a.emptyCache();
                }
            }
            for (Live x : mine) {
                free(a, l, x);
            }
        });
        for (Queue<Live> q : handedOver) {
            for (Live x : q) {
                free(a, l, x);
            }
        }
        assertThat(faults).as("faults in the listener").isEmpty();
        System.out.println("pictures " + l.pictures + ", failures " + l.failures);
        assertThat(a.bytesInUse()).isZero();
        for (MemorySnapshot s : a.snapshots()) {
            checkPicture(s.memoryMap(), l, Set.copyOf(l.freed));
        }
        a.close();
    }
}
