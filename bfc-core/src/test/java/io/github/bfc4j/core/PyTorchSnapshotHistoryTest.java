/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The history of a PyTorch memory snapshot agrees with its segments, as pytorch.org/memory_viz
 * replays it backwards from them ({@link MemoryVizReplay}), whatever happened to the allocator
 * and to the recording.
 */
class PyTorchSnapshotHistoryTest {

    private static final long BASE = 0x7f0000000000L;

    private static BfcAllocator allocator() {
        return new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false), 64L << 20, "h",
                BfcOptions.builder().allowRetryOnFailure(false).build());
    }

    @Test
    void closeFreesTheLiveAllocationsBeforeItGivesBackTheirRegions() throws Exception {
        BfcAllocator a = allocator();
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long p = a.allocateRaw(64, 1000);
        long q = a.allocateRaw(64, 2000);
        a.close();

        List<MemoryEvent> events = a.snapshot().history().events();
        assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE, MemoryEvent.Kind.FREE,
                MemoryEvent.Kind.REGION_FREE);
        assertThat(events.subList(3, 5)).extracting(MemoryEvent::address).containsExactlyInAnyOrder(p, q);
        Map<String, Object> pickle = MemoryVizReplay.pickle(a.snapshot());
        assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action")).endsWith("free_completed",
                "segment_free");
        MemoryVizReplay.check(pickle);
    }

    @Test
    void aStoppedRecordingIsWrittenAsSegmentsWithoutTheirHistory() throws Exception {
        BfcAllocator a = allocator();
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long p = a.allocateRaw(64, 1000);
        long q = a.allocateRaw(64, 1000);
        a.deallocateRaw(p);
        a.stopHistory();
        a.deallocateRaw(q);
        a.emptyCache(); // not recorded: the ring says a region is still there, the allocator has none

        MemorySnapshot s = a.snapshot();
        assertThat(s.history().recording()).isFalse();
        assertThat(s.history().events()).hasSize(4); // the Java API keeps the stopped ring
        Map<String, Object> pickle = MemoryVizReplay.pickle(s);
        assertThat((List<?>) pickle.get("segments")).isEmpty();
        assertThat(MemoryVizReplay.trace(pickle)).isEmpty(); // as PyTorch's, cleared when recording stops
        MemoryVizReplay.check(pickle);

        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        a.allocateRaw(64, 1000);
        assertThat(MemoryVizReplay.trace(MemoryVizReplay.pickle(a.snapshot()))).extracting(t -> t.get("action"))
                .containsExactly("segment_alloc", "alloc");
    }

    @Test
    @SuppressWarnings("unchecked")
    void aSegmentsFramesAreThoseOfTheRegionThatIsThereNow() throws Exception {
        BfcAllocator a = allocator();
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        try (MemoryAnnotation first = MemoryAnnotation.push("first-owner")) {
            a.deallocateRaw(a.allocateRaw(64, 1000));
        }
        a.emptyCache();
        try (MemoryAnnotation second = MemoryAnnotation.push("second-owner")) {
            a.allocateRaw(64, 1000); // the same address again
        }
        List<Map<String, Object>> segments = (List<Map<String, Object>>) MemoryVizReplay.pickle(a.snapshot())
                .get("segments");
        assertThat(segments).singleElement().extracting(seg -> seg.get("frames").toString())
                .asString().contains("second-owner").doesNotContain("first-owner");

        // Given back and obtained again while nothing was recorded: who obtained it is not known.
        a.deallocateRaw(a.snapshot().memoryMap().regions().get(0).chunks().get(0).ptr());
        a.emptyCache();
        a.stopHistory();
        try (MemoryAnnotation third = MemoryAnnotation.push("third-owner")) {
            a.allocateRaw(64, 1000);
        }
        segments = (List<Map<String, Object>>) MemoryVizReplay.pickle(a.snapshot()).get("segments");
        assertThat(segments).singleElement().extracting(seg -> (List<?>) seg.get("frames")).asList().isEmpty();
    }

    /**
     * A stamped free of an allocation made before the history started gets its
     * {@code FREE_COMPLETED} when the allocator knew that allocation (annotations were recorded
     * for it), and none when nothing was recorded for it; either way the snapshot replays.
     */
    @Test
    void aFreeOfAnAllocationMadeBeforeTheHistoryCompletesWhenItsAnnotationWasRecorded() throws Exception {
        for (boolean annotations : new boolean[] {false, true}) {
            BfcAllocator a = allocator();
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordAnnotations(annotations);
            long p;
            try (MemoryAnnotation ignored = MemoryAnnotation.push("early")) {
                p = a.allocateRaw(256, 1000);
            }
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.deallocateRaw(p); // stamped
            a.setSafeFrontier(counter.next());
            List<MemoryEvent> events = a.snapshot().history().events();
            if (annotations) {
                assertThat(events).extracting(MemoryEvent::kind).as("annotations recorded")
                        .containsExactly(MemoryEvent.Kind.FREE, MemoryEvent.Kind.FREE_COMPLETED);
            } else {
                assertThat(events).extracting(MemoryEvent::kind).as("nothing recorded")
                        .containsExactly(MemoryEvent.Kind.FREE);
            }
            MemoryVizReplay.check(MemoryVizReplay.pickle(a.snapshot()));
            a.close();
        }
    }

    /**
     * As PyTorch's {@code snapshot()} writes a block whose free waits for its streams: state
     * {@code active_pending_free}, the allocation's requested size and frames, counted in the
     * segment's active and requested sizes but not in its allocated size; its free requested and
     * not completed. Once the frontier passes it, a free block as any other.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aFreeStillWaitingForItsStreamsIsPyTorchsPendingFreeUntilItIsSafe() throws Exception {
        BfcAllocator a = allocator();
        SharedCounter counter = new SharedCounter();
        a.setTimingCounter(counter);
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long weights;
        long kept;
        try (MemoryAnnotation ignored = MemoryAnnotation.push("weights", 3)) {
            weights = a.allocateRaw(256, 5000);
        }
        try (MemoryAnnotation ignored = MemoryAnnotation.push("activations")) {
            kept = a.allocateRaw(256, 3000);
        }
        a.deallocateRaw(weights); // stamped: waits until the frontier passes it

        Map<String, Object> pickle = MemoryVizReplay.pickle(a.snapshot());
        Map<String, Object> seg = ((List<Map<String, Object>>) pickle.get("segments")).get(0);
        List<Map<String, Object>> blocks = (List<Map<String, Object>>) seg.get("blocks");
        Map<String, Object> pending = blocks.get(0);
        assertThat(MemoryVizReplay.num(pending.get("address"))).isEqualTo(weights);
        assertThat(pending.get("state")).isEqualTo("active_pending_free");
        assertThat(MemoryVizReplay.num(pending.get("requested_size"))).isEqualTo(5000);
        assertThat(pending.get("frames").toString()).contains("weights", "<annotation step 3>");
        Map<String, Object> held = blocks.get(1);
        assertThat(MemoryVizReplay.num(held.get("address"))).isEqualTo(kept);
        assertThat(held.get("state")).isEqualTo("active_allocated");
        long pendingSize = MemoryVizReplay.num(pending.get("size"));
        long heldSize = MemoryVizReplay.num(held.get("size"));
        assertThat(MemoryVizReplay.num(seg.get("allocated_size"))).isEqualTo(heldSize);
        assertThat(MemoryVizReplay.num(seg.get("active_size"))).isEqualTo(pendingSize + heldSize);
        assertThat(MemoryVizReplay.num(seg.get("requested_size"))).isEqualTo(5000 + 3000);
        assertThat(blocks.subList(2, blocks.size())).extracting(b -> b.get("state")).containsOnly("inactive");
        assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action"))
                .containsExactly("segment_alloc", "alloc", "alloc", "free_requested");
        MemoryVizReplay.check(pickle);

        long requestedAt = a.snapshot().history().events().get(3).provenance().timeMicros();
        Thread.sleep(5); // so that the free completes at a later microsecond than it was requested
        a.setSafeFrontier(counter.next()); // every free so far is safe now
        List<MemoryEvent> events = a.snapshot().history().events();
        assertThat(events).extracting(MemoryEvent::kind).endsWith(MemoryEvent.Kind.FREE,
                MemoryEvent.Kind.FREE_COMPLETED);
        MemoryEvent free = events.get(events.size() - 2);
        MemoryEvent completed = events.get(events.size() - 1);
        assertThat(completed).extracting(MemoryEvent::address, MemoryEvent::bytes, MemoryEvent::requestedBytes,
                MemoryEvent::allocationId).containsExactly(weights, free.bytes(), 5000L, free.allocationId());
        assertThat(completed.provenance().timeMicros()).isGreaterThan(requestedAt);
        assertThat(completed.provenance().thread()).isEqualTo(Thread.currentThread().getName());
        pickle = MemoryVizReplay.pickle(a.snapshot());
        seg = ((List<Map<String, Object>>) pickle.get("segments")).get(0);
        Map<String, Object> safe = ((List<Map<String, Object>>) seg.get("blocks")).get(0);
        assertThat(safe.get("state")).isEqualTo("inactive");
        assertThat(MemoryVizReplay.num(safe.get("requested_size"))).isEqualTo(5000); // kept, as PyTorch keeps it
        assertThat((List<?>) safe.get("frames")).isEmpty();
        assertThat(MemoryVizReplay.num(seg.get("active_size"))).isEqualTo(heldSize);
        List<Map<String, Object>> trace = MemoryVizReplay.trace(pickle);
        assertThat(trace).extracting(t -> t.get("action"))
                .containsExactly("segment_alloc", "alloc", "alloc", "free_requested", "free_completed");
        // Requested at the free, completed when the frontier passed it, as PyTorch's trace says
        // when the streams' work was done.
        assertThat(MemoryVizReplay.num(trace.get(3).get("time_us"))).isEqualTo(requestedAt);
        assertThat(MemoryVizReplay.num(trace.get(4).get("time_us"))).isEqualTo(completed.provenance().timeMicros());
        assertThat(MemoryVizReplay.num(trace.get(4).get("addr"))).isEqualTo(weights);
        assertThat(MemoryVizReplay.num(trace.get(4).get("size"))).isEqualTo(5000);
        MemoryVizReplay.check(pickle);

        // The frontier moving again completes nothing more.
        a.setSafeFrontier(counter.next() + 10);
        assertThat(a.snapshot().history().events()).hasSameSizeAs(events);
        a.close();
    }

    /**
     * Each waiting free completes when the frontier passes its own stamp, oldest first; a free
     * stamped below the frontier completes at once; a free whose chunk is allocated again
     * before it is safe (by an allocation whose freed-before count allows its stamp) never
     * completes on its own: its block was taken over, and the trace completes it at its request.
     */
    @Test
    void eachWaitingFreeCompletesWhenTheFrontierPassesItsStamp() throws Exception {
        BfcAllocator a = allocator();
        a.setTimingCounter(new SharedCounter());
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long p = a.allocateRaw(256, 1000);
        long q = a.allocateRaw(256, 2000);
        long r = a.allocateRaw(256, 8000);
        long keep = a.allocateRaw(256, 4000); // keeps r from the free rest of the region
        a.deallocateRaw(p); // stamped 1
        a.deallocateRaw(q); // stamped 2
        a.setSafeFrontier(2); // passes 1 only
        assertThat(completions(a)).containsExactly(p);
        a.setSafeFrontier(3);
        assertThat(completions(a)).containsExactly(p, q);

        a.deallocateRaw(r); // stamped 3, not yet safe
        long again = a.allocateRaw(256, 8000, new AllocationAttributes(false, () -> 3));
        assertThat(again).as("the waiting chunk, which its freed-before count allows").isEqualTo(r);
        a.setSafeFrontier(10);
        assertThat(completions(a)).containsExactly(p, q);
        Map<String, Object> pickle = MemoryVizReplay.pickle(a.snapshot());
        assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action") + "@" + MemoryVizReplay.num(t.get("addr")))
                .endsWith("free_requested@" + r, "free_completed@" + r, "alloc@" + r);
        MemoryVizReplay.check(pickle);

        a.deallocateRaw(keep); // stamped 5 (the allocation took 4), below the frontier: safe at once
        List<MemoryEvent> events = a.snapshot().history().events();
        assertThat(events.subList(events.size() - 2, events.size())).extracting(MemoryEvent::kind, MemoryEvent::address)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(MemoryEvent.Kind.FREE, keep),
                        org.assertj.core.groups.Tuple.tuple(MemoryEvent.Kind.FREE_COMPLETED, keep));
        MemoryVizReplay.check(MemoryVizReplay.pickle(a.snapshot()));
        a.deallocateRaw(again);
        a.close();
    }

    /**
     * The frontier moved by another thread while frees are stamped (as GpuBfcAllocator's event
     * poller does): every free completes once, after it was requested, and none is missed
     * when a free and a frontier pass each other; the trace replays. Every 50th free waits for
     * the poller to move the frontier past it, so that frees complete however the threads are
     * scheduled (on a loaded machine the poller may not otherwise run before the last call).
     */
    @Test
    void aFrontierMovedByAnotherThreadCompletesEveryFreeOnce() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("aFrontierMovedByAnotherThreadCompletesEveryFreeOnce seed=" + seed);
        java.util.Random random = new java.util.Random(seed);
        BfcAllocator a = allocator();
        SharedCounter counter = new SharedCounter();
        a.setTimingCounter(counter);
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicLong passes = new java.util.concurrent.atomic.AtomicLong();
        Thread poller = new Thread(() -> {
            while (!done.get()) {
                a.setSafeFrontier(counter.next());
                passes.incrementAndGet();
            }
        }, "poller");
        poller.setDaemon(true);
        poller.start();
        List<Long> live = new ArrayList<>();
        int frees = 0;
        int awaited = 0;
        for (int i = 0; i < 5_000; i++) {
            if (live.isEmpty() || random.nextInt(3) > 0) {
                long ptr = a.allocateRaw(256, 256 + random.nextInt(4096), new AllocationAttributes(false,
                        counter::get));
                if (ptr != 0) {
                    live.add(ptr);
                }
            } else {
                a.deallocateRaw(live.remove(random.nextInt(live.size())));
                if (++frees % 50 == 0) {
                    // The pass under way may have read the counter before this free's stamp:
                    // the one after it moves the frontier past it, and nothing takes its chunk
                    // over in between.
                    long seen = passes.get();
                    while (passes.get() < seen + 2) {
                        assertThat(poller.isAlive()).as("the poller runs").isTrue();
                        Thread.yield();
                    }
                    awaited++;
                }
            }
        }
        done.set(true);
        TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, poller);
        a.setSafeFrontier(counter.next() + 1); // every free safe now
        List<MemoryEvent> events = a.snapshot().history().events();
        Map<Long, Integer> freeAt = new java.util.HashMap<>();
        Map<Long, Integer> completedAt = new java.util.HashMap<>();
        for (int i = 0; i < events.size(); i++) {
            MemoryEvent e = events.get(i);
            if (e.kind() == MemoryEvent.Kind.FREE) {
                assertThat(freeAt.put(e.allocationId(), i)).isNull();
            } else if (e.kind() == MemoryEvent.Kind.FREE_COMPLETED) {
                assertThat(completedAt.put(e.allocationId(), i)).as("completed once").isNull();
                assertThat(freeAt.get(e.allocationId())).as("after its free").isNotNull().isLessThan(i);
            }
        }
        // A free not completed is one whose chunk an allocation took (its freed-before count
        // allows any stamp) before the frontier passed it: the next event at its address is that.
        for (Map.Entry<Long, Integer> f : freeAt.entrySet()) {
            if (!completedAt.containsKey(f.getKey())) {
                MemoryEvent free = events.get(f.getValue());
                assertThat(events.subList(f.getValue() + 1, events.size())).as("free of %d", f.getKey())
                        .filteredOn(e -> e.address() == free.address()).first().extracting(MemoryEvent::kind)
                        .isEqualTo(MemoryEvent.Kind.ALLOC);
            }
        }
        // At least the frees waited for; the others as the threads met.
        assertThat(completedAt).as("completed frees").hasSizeGreaterThanOrEqualTo(awaited);
        assertThat(awaited).isPositive();
        MemoryVizReplay.check(MemoryVizReplay.pickle(a.snapshot()));
        for (long ptr : live) {
            a.deallocateRaw(ptr);
        }
        a.close();
    }

    /**
     * With the frontier standing still (no setSafeFrontier comes), frees whose chunks are taken
     * over again and again leave no growing queue behind: it holds at most the chunks still
     * waiting, as upstream's queue of timestamped chunks.
     */
    @Test
    void freesTakenOverWhileTheFrontierStandsStillAreNotKept() throws Exception {
        BfcAllocator a = allocator();
        a.setTimingCounter(new SharedCounter());
        a.recordHistory(HistoryOptions.builder().maxEntries(1000).stacks(false).build());
        AllocationAttributes anyStamp = new AllocationAttributes(false, () -> Long.MAX_VALUE);
        long ptr = a.allocateRaw(256, 4096);
        // (Not more: the allocator's own queue of stamped chunks keeps an entry per free of a
        // chunk that is free again when an allocation merges, as upstream's does, so that each
        // allocation here takes longer than the one before.)
        for (int i = 0; i < 2_000; i++) {
            a.deallocateRaw(ptr);
            ptr = a.allocateRaw(256, 4096, anyStamp); // the waiting chunk, taken over
        }
        java.lang.reflect.Field history = BfcAllocator.class.getDeclaredField("history");
        history.setAccessible(true);
        java.lang.reflect.Field queue = HistoryRecorder.class.getDeclaredField("waitingHandle");
        queue.setAccessible(true);
        assertThat(((int[]) queue.get(history.get(a))).length).as("the queue's capacity").isLessThanOrEqualTo(64);
        assertThat(completions(a)).isEmpty();
        a.deallocateRaw(ptr);
        a.close();
    }

    /**
     * More frees wait than the queue first holds (64), with its head part way round when it
     * grows: each completes once, in the order it was stamped, and until then its chunk names
     * the allocation freed into it; a free whose chunk is taken over before it is safe never
     * completes.
     */
    @Test
    void hundredsOfWaitingFreesCompleteInOrderAcrossTheQueuesGrowth() {
        BfcAllocator a = allocator();
        SharedCounter counter = new SharedCounter();
        a.setTimingCounter(counter);
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        int n = 300;
        long[] p = new long[n];
        for (int i = 0; i < n; i++) {
            try (MemoryAnnotation x = MemoryAnnotation.push("tensor-" + i)) {
                p[i] = a.allocateRaw(256, 256);
            }
        }
        for (int i = 0; i < 40; i++) {
            a.deallocateRaw(p[i]); // stamped i + 1
        }
        a.setSafeFrontier(31); // the first 30 complete: the queue's head is at 30 of 64
        List<Long> expected = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            expected.add(p[i]);
        }
        assertThat(completions(a)).containsExactlyElementsOf(expected);
        for (int i = 40; i < n; i++) {
            a.deallocateRaw(p[i]); // 260 more wait: the queue wraps round, then grows, twice
        }
        long again = a.allocateRaw(256, 256, new AllocationAttributes(false, () -> Long.MAX_VALUE));
        java.util.Set<Long> waiting = new java.util.HashSet<>();
        for (int i = 30; i < n; i++) {
            waiting.add(p[i]);
        }
        assertThat(waiting).as("a waiting chunk, taken over").contains(again);
        Map<Long, Integer> index = new java.util.HashMap<>();
        for (int i = 0; i < n; i++) {
            index.put(p[i], i);
        }
        for (MemoryMap.Chunk c : a.memoryMap().chunks()) {
            if (c.notYetSafe()) {
                int i = index.get(c.ptr());
                assertThat(i).as("chunk at 0x%x", c.ptr()).isGreaterThanOrEqualTo(30);
                assertThat(c.provenance().annotation()).as("chunk at 0x%x", c.ptr()).isEqualTo("tensor-" + i);
            }
        }
        assertThat(a.memoryMap().chunks()).filteredOn(MemoryMap.Chunk::notYetSafe).hasSize(n - 30 - 1);
        a.setSafeFrontier(counter.get() + 1);
        for (int i = 30; i < n; i++) {
            if (p[i] != again) {
                expected.add(p[i]);
            }
        }
        assertThat(completions(a)).containsExactlyElementsOf(expected);
        a.deallocateRaw(again);
        a.close();
    }

    /** The addresses of the FREE_COMPLETED events of the history, in order. */
    private static List<Long> completions(BfcAllocator a) {
        return a.snapshot().history().events().stream().filter(e -> e.kind() == MemoryEvent.Kind.FREE_COMPLETED)
                .map(MemoryEvent::address).toList();
    }

    /**
     * A chunk still waiting that is no longer the one a free left (merged by an allocation that
     * found no chunk large enough, the rest split off) is no one allocation's block: inactive,
     * and every free completed, so that the viewer finds each freed block where it replays it.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aWaitingChunkMergedFromSeveralFreesIsInactive() throws Exception {
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false), 4L << 20, "m",
                BfcOptions.builder().allowGrowth(false).garbageCollection(false).allowRetryOnFailure(false).build());
        a.setTimingCounter(new SharedCounter());
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long mib = 1 << 20;
        List<Long> p = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            p.add(a.allocateRaw(256, mib));
        }
        a.deallocateRaw(p.get(1));
        a.deallocateRaw(p.get(0));
        a.deallocateRaw(p.get(2));
        long merged = a.allocateRaw(256, mib + mib / 4); // merges the three waiting chunks
        assertThat(merged).isEqualTo(p.get(0));
        MemoryMap.Chunk rest = a.memoryMap().chunks().get(1);
        assertThat(rest.notYetSafe()).isTrue();
        assertThat(rest.provenance()).isEqualTo(Provenance.UNKNOWN);

        Map<String, Object> pickle = MemoryVizReplay.pickle(a.snapshot());
        List<Map<String, Object>> blocks = (List<Map<String, Object>>) ((List<Map<String, Object>>) pickle
                .get("segments")).get(0).get("blocks");
        assertThat(blocks).extracting(b -> b.get("state"))
                .containsExactly("active_allocated", "inactive", "active_allocated");
        assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action")).filteredOn(x -> x.equals("free_completed"))
                .hasSize(3);
        MemoryVizReplay.check(pickle);

        // Once the frontier passes them, none of the three completes on its own: their chunks
        // are gone (merged, and the merged chunk split), and the trace completed them at the free.
        a.setSafeFrontier(1000);
        assertThat(completions(a)).isEmpty();
        pickle = MemoryVizReplay.pickle(a.snapshot());
        assertThat(MemoryVizReplay.trace(pickle)).extracting(t -> t.get("action")).filteredOn(x -> x.equals("free_completed"))
                .hasSize(3);
        MemoryVizReplay.check(pickle);
        a.close();
    }
}
