/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.LimitingSubAllocator;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryHistory;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A live multi-threaded workload, recorded by the allocator's history, replays as a trace. */
class SnapshotTracesTest {

    private static final long SEED = Long.getLong("bfc4j.test.seed", 1414L);

    @TempDir
    Path dir;

    @Test
    void aRecordedMultiThreadedProgramReplaysToTheSamePeak() throws Exception {
        System.out.println("SnapshotTracesTest seed " + SEED + " (-Dbfc4j.test.seed)");
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build();
        long limit = 48L << 20;
        // The sub-allocator the trace's header describes, so that the replay makes the same decisions.
        SimSubAllocator sim = new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false);
        BfcAllocator a = new BfcAllocator(sim, limit, "live", opts);
        a.recordHistory(HistoryOptions.builder().stackDepth(4).build());

        int threads = 4;
        CyclicBarrier start = new CyclicBarrier(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final long seed = SEED + t;
            Thread th = new Thread(() -> {
                Random rnd = new Random(seed);
                Deque<Long> mine = new ArrayDeque<>();
                try (MemoryAnnotation w = MemoryAnnotation.push(Thread.currentThread().getName(), 0)) {
                    start.await();
                    for (int i = 0; i < 2000; i++) {
                        if (mine.size() > 20 || (!mine.isEmpty() && rnd.nextInt(3) == 0)) {
                            a.deallocateRaw(rnd.nextBoolean() ? mine.pollFirst() : mine.pollLast());
                        } else {
                            long p = a.allocateRaw(rnd.nextInt(4) == 0 ? 4096 : 64, 1 + rnd.nextInt(1 << 20));
                            if (p != 0) {
                                mine.add(p);
                            }
                        }
                    }
                    // Some stay live at the end.
                } catch (Throwable e) {
                    failure.set(e);
                }
            }, "worker-" + t);
            th.setDaemon(true); // one that hangs must not keep the test JVM alive
            all.add(th);
            th.start();
        }
        for (Thread th : all) {
            th.join(TimeUnit.MINUTES.toMillis(5));
            assertThat(th.isAlive()).as("%s still running after 5 minutes", th.getName()).isFalse();
        }
        assertThat(failure.get()).isNull();
        MemorySnapshot s = a.snapshot();
        long peak = a.memoryStats().peakBytesInUse();
        long peakReserved = a.memoryStats().peakReservedBytes();
        long ooms = a.memoryStats().oomsTotal();
        assertThat(s.history().isComplete()).isTrue();

        Path trace = dir.resolve("live.bfctrace.gz");
        SnapshotTraces.write(s, trace);
        WorkloadResult r;
        try (TraceReader reader = TraceReader.open(trace)) {
            assertThat(reader.header().isWorkload()).isTrue();
            r = WorkloadRunner.forHeader(reader.header()).run(reader);
        }
        assertThat(r.peakBytesInUse()).isEqualTo(peak);
        assertThat(r.peakPoolBytes()).isEqualTo(peakReserved);
        assertThat((long) r.oomCount()).isEqualTo(ooms);
        assertThat(r.allocations()).isEqualTo(a.memoryStats().allocationsTotal());

        // Every alloc line carries its thread and annotation.
        try (TraceReader reader = TraceReader.open(trace)) {
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    assertThat(e.provenance().thread()).startsWith("worker-");
                    assertThat(e.provenance().annotation()).isEqualTo(e.provenance().thread());
                    assertThat(e.provenance().stack()).isNotEmpty();
                }
            }
        }
        a.close();
    }

    @Test
    void theShardsOfAShardedAllocatorWriteOneTraceOfTheirCallsInTheOrderMade() throws Exception {
        long limit = 64L << 20;
        try (ShardedBfcAllocator host = ShardedBfcAllocator.builder().name("host").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false)).shards(2)
                .closePolicy(ClosePolicy.FORCE).build()) {
            host.recordHistory(HistoryOptions.builder().stacks(false).build());
            // Two threads take turns (a home shard each): call k asks for 1000 + k bytes, and
            // every third call of a thread also frees its oldest allocation.
            int calls = 300;
            AtomicInteger turn = new AtomicInteger();
            Set<Integer> shardsUsed = ConcurrentHashMap.newKeySet();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                final int first = t;
                Thread th = new Thread(() -> {
                    Deque<Long> live = new ArrayDeque<>();
                    try {
                        for (int k = first; k < calls; k += 2) {
                            while (turn.get() != k) {
                                if (failure.get() != null) {
                                    return;
                                }
                                Thread.onSpinWait();
                            }
                            long p = host.allocateRaw(64, 1000 + k);
                            shardsUsed.add(host.shards().indexOf(host.shardOf(p)));
                            live.add(p);
                            if (k % 3 == 0) {
                                host.deallocateRaw(live.poll());
                            }
                            spinMicros(2); // the next call is made at a later microsecond
                            turn.set(k + 1);
                        }
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                }, "turn-" + t);
                th.setDaemon(true);
                threads.add(th);
                th.start();
            }
            for (Thread th : threads) {
                th.join(30_000);
                assertThat(th.isAlive()).as("%s still running after 30 s", th.getName()).isFalse();
            }
            assertThat(failure.get()).isNull();
            assertThat(shardsUsed).containsExactlyInAnyOrder(0, 1);

            List<MemorySnapshot> snapshots = host.snapshots();
            assertThat(snapshots).hasSize(2);
            Path trace = dir.resolve("host.bfctrace.gz");
            SnapshotTraces.write(snapshots, trace, "host: two threads taking turns");
            List<Long> sizes = new ArrayList<>();
            try (TraceReader reader = TraceReader.open(trace)) {
                assertThat(reader.header().source()).isEqualTo("workload: recorded by bfc4j from allocator"
                        + " 'host', shards 0, 1 of 2 (" + (snapshots.get(0).history().events().size()
                        + snapshots.get(1).history().events().size()) + " events of their histories, merged by time)");
                assertThat(reader.header().memoryLimit()).isEqualTo(limit);
                for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                    if (e.kind() == TraceEvent.Kind.ALLOC) {
                        int k = (int) (e.bytes() - 1000);
                        assertThat(e.provenance().thread()).as("call %d", k).isEqualTo("turn-" + (k % 2));
                        sizes.add(e.bytes());
                    }
                }
            }
            List<Long> made = new ArrayList<>();
            for (int k = 0; k < calls; k++) {
                made.add(1000L + k);
            }
            assertThat(sizes).as("the calls in the order the threads made them").isEqualTo(made);
            try (TraceReader reader = TraceReader.open(trace)) {
                WorkloadResult r = WorkloadRunner.forHeader(reader.header()).run(reader);
                assertThat(r.allocations()).isEqualTo(calls);
                assertThat(r.oomCount()).isZero();
            }
        }
    }

    @Test
    void twoAllocatorsRecordOnOneClock() throws IOException {
        // Their events merge in the order made, whenever each recording began.
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "a", opts);
             BfcAllocator b = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "b", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            spinMicros(700);
            b.recordHistory(HistoryOptions.builder().stacks(false).build());
            for (int k = 0; k < 200; k++) {
                (k % 2 == 0 ? a : b).allocateRaw(64, 1000 + k);
                spinMicros(2);
            }
            Path trace = dir.resolve("ab.bfctrace");
            SnapshotTraces.write(List.of(a.snapshot(), b.snapshot()), trace, "a and b");
            long last = 0;
            try (TraceReader reader = TraceReader.open(trace)) {
                for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                    assertThat(e.bytes()).as("the call after %d bytes", last).isEqualTo(last == 0 ? 1000 : last + 1);
                    last = e.bytes();
                }
            }
            assertThat(last).isEqualTo(1199);
        }
    }

    /**
     * Two sharded allocators of one name are not read as one: the source line of their shards'
     * trace lists each shard as its messages name it. It read "allocator 'host', shards 0, 1,
     * 0, 1 of 2", one allocator with each shard twice.
     */
    @Test
    void theShardsOfTwoShardedAllocatorsOfOneNameAreNotNamedAsOne() {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (ShardedBfcAllocator first = ShardedBfcAllocator.builder().name("host").memoryLimit(64L << 20)
                .subAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false)).shards(2)
                .options(opts).build();
             ShardedBfcAllocator second = ShardedBfcAllocator.builder().name("host").memoryLimit(64L << 20)
                .subAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false)).shards(2)
                .options(opts).build()) {
            first.recordHistory(HistoryOptions.builder().stacks(false).build());
            second.recordHistory(HistoryOptions.builder().stacks(false).build());
            List<MemorySnapshot> all = new ArrayList<>(first.snapshots());
            all.addAll(second.snapshots());
            assertThat(SnapshotTraces.header(all, "t").source()).isEqualTo("workload: recorded by bfc4j from"
                    + " allocators 'host' (shard 0 of 2), 'host' (shard 1 of 2), 'host' (shard 0 of 2),"
                    + " 'host' (shard 1 of 2) (0 events of their histories, merged by time)");
            assertThat(SnapshotTraces.header(List.of(first.snapshots().get(0), second.snapshots().get(0)), "t")
                    .source()).isEqualTo("workload: recorded by bfc4j from allocators 'host' (shard 0 of 2),"
                    + " 'host' (shard 0 of 2) (0 events of their histories, merged by time)");
            // The shards of one, each once, are still named as one allocator.
            assertThat(SnapshotTraces.header(first.snapshots(), "t").source()).isEqualTo("workload: recorded by"
                    + " bfc4j from allocator 'host', shards 0, 1 of 2 (0 events of their histories, merged by time)");
        }
    }

    /**
     * A sharded allocator's trace and its refusals name the allocator the user built and the
     * shard ('host' (shard 0 of 2)), not the shard's own name (host/0, a name the user never
     * gave), which the memory map keeps.
     */
    @Test
    void theShardsOfAShardedAllocatorAreNamedByTheNameGivenAndTheShard() throws IOException {
        try (ShardedBfcAllocator host = ShardedBfcAllocator.builder().name("host").memoryLimit(64L << 20)
                .subAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, true)).shards(2).build()) {
            long early = host.allocateRaw(64, 1000); // shard 0 obtains memory before the recording
            host.recordHistory(HistoryOptions.builder().stacks(false).build());
            List<MemorySnapshot> snapshots = host.snapshots();
            assertThat(snapshots.get(0).memoryMap().allocatorName()).isEqualTo("host/0");
            assertThat(snapshots.get(0).shardedAllocatorName()).isEqualTo("host");
            assertThat(snapshots.get(0).shardIndex()).isZero();
            assertThat(snapshots.get(0).shardCount()).isEqualTo(2);
            assertThat(snapshots.get(1).describedAllocator()).isEqualTo("'host' (shard 1 of 2)");
            Path trace = dir.resolve("host.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(snapshots, trace, "t"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("the history of allocator 'host' (shard 0 of 2) starts after it had"
                            + " obtained memory: call recordHistory(...) before its first allocation")
                    .hasMessageNotContaining("host/");
            assertThat(trace).doesNotExist();
            host.deallocateRaw(early);

            // Shard 1 recorded from its start: its own trace, by the name given and the shard.
            BfcAllocator shard1 = host.shards().get(1);
            shard1.deallocateRaw(shard1.allocateRaw(64, 100));
            MemorySnapshot s = shard1.snapshot();
            TraceHeader h = SnapshotTraces.header(s);
            assertThat(h.name()).isEqualTo("host (shard 1 of 2): recorded");
            assertThat(h.source()).isEqualTo("workload: recorded by bfc4j from allocator 'host', shard 1 of 2 ("
                    + s.history().events().size() + " events of its history)");

            // With an allocator of its own, each is named as its messages name it.
            try (BfcAllocator other = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0,
                    true), 32L << 20, "other", BfcOptions.builder().allowRetryOnFailure(false).build())) {
                other.recordHistory(HistoryOptions.defaults());
                assertThatThrownBy(() -> SnapshotTraces.header(List.of(s, other.snapshot()), "x"))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("allocators 'host' (shard 1 of 2) and 'other' differ in memory limit");
            }
        }
    }

    @Test
    void snapshotsOfUnlikeAllocatorsAreNotOneTrace() {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "a", opts);
             BfcAllocator b = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                32L << 20, "b", opts)) {
            a.recordHistory(HistoryOptions.defaults());
            b.recordHistory(HistoryOptions.defaults());
            assertThatThrownBy(() -> SnapshotTraces.write(List.of(a.snapshot(), b.snapshot()), dir.resolve("x"), "x"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("allocators 'a' and 'b' differ in memory limit, options or sub-allocator");
            assertThatThrownBy(() -> SnapshotTraces.header(List.of(), "x"))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("no snapshot");
            assertThatThrownBy(() -> SnapshotTraces.header(java.util.Arrays.asList(a.snapshot(), null), "x"))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessage("snapshots[1]=null (expected: a MemorySnapshot, e.g. allocator.snapshot())");
            assertThat(dir.resolve("x")).doesNotExist();
        }
    }

    private static void spinMicros(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    /**
     * A replay of a trace recorded long ago, with live calls made on its allocator between the
     * replayed calls (by a {@link WorkloadListener}): the live calls carry the latest time the
     * trace gave, so that the history never goes back in time and writes as a trace. Before,
     * the live call carried the process's clock (today), the replayed calls after it the
     * trace's (earlier), and writing the history failed in TraceWriter.provenance.
     */
    @Test
    void liveCallsBetweenAReplaysCallsCarryItsLatestTime() throws IOException {
        Path recorded = dir.resolve("old.bfctrace");
        Files.writeString(recorded, "bfctrace 1\nname old\nsource workload: test\n"
                + "options memory_limit=67108864 allow_growth=true garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=134217728 gap=0 coalescing=false\n"
                + "#@ alloc 1 thread=w time_us=1000\nalloc 1 1000\n"
                + "#@ alloc 2 thread=w time_us=2000\nalloc 2 2000\nfree 1\n"
                + "#@ alloc 3 thread=w time_us=3000\nalloc 3 3000\n");
        AtomicReference<MemorySnapshot> snapshot = new AtomicReference<>();
        AtomicReference<Long> live = new AtomicReference<>();
        try (TraceReader r = TraceReader.open(recorded)) {
            WorkloadRunner.forHeader(r.header()).listener(new WorkloadListener() {
                private BfcAllocator allocator;
                private int calls;

                @Override
                public void beforeRun(BfcAllocator a) {
                    allocator = a;
                    a.recordHistory(HistoryOptions.builder().stacks(false).build());
                }

                @Override
                public void afterCall(WorkloadStep step) {
                    if (++calls == 2) { // after alloc 2 (time 2000), before free 1
                        live.set(allocator.allocateRaw(64, 700));
                    }
                }

                @Override
                public void afterRun(BfcAllocator a) {
                    snapshot.set(a.snapshot());
                }
            }).run(r);
        }
        MemorySnapshot s = snapshot.get();
        List<MemoryEvent> events = s.history().events();
        long before = -1;
        for (MemoryEvent e : events) {
            assertThat(e.provenance().timeMicros()).as("time of %s", e).isGreaterThanOrEqualTo(before);
            before = e.provenance().timeMicros();
        }
        MemoryEvent liveAlloc = events.stream()
                .filter(e -> e.kind() == MemoryEvent.Kind.ALLOC && e.requestedBytes() == 700).findFirst().orElseThrow();
        assertThat(liveAlloc.provenance().timeMicros()).isEqualTo(2000);
        assertThat(liveAlloc.provenance().thread()).isEqualTo(Thread.currentThread().getName());
        assertThat(s.memoryMap().chunks().stream().filter(c -> c.ptr() == live.get()).findFirst().orElseThrow()
                .provenance().timeMicros()).isEqualTo(2000);

        Path written = dir.resolve("written.bfctrace");
        SnapshotTraces.write(s, written);
        List<Long> times = new ArrayList<>();
        List<Long> bytes = new ArrayList<>();
        try (TraceReader reader = TraceReader.open(written)) {
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    times.add(e.provenance().timeMicros());
                    bytes.add(e.bytes());
                }
            }
        }
        assertThat(bytes).containsExactly(1000L, 2000L, 700L, 3000L);
        assertThat(times).containsExactly(1000L, 2000L, 2000L, 3000L);
    }

    /**
     * A snapshot built by hand (MemorySnapshot and MemoryHistory are public records) whose
     * history goes back in time is refused by SnapshotTraces, naming the allocator's history and
     * both events, before the file is touched; before, TraceWriter.provenance refused it,
     * naming the trace's id of the allocation and the writer's rule.
     */
    @Test
    void aHistoryWhoseTimesGoBackIsRefusedNamingIt() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "edited", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long p = a.allocateRaw(64, 100);
            long q = a.allocateRaw(64, 200);
            MemorySnapshot s = a.snapshot();
            List<MemoryEvent> events = new ArrayList<>(s.history().events());
            MemoryEvent first = events.get(1);
            MemoryEvent second = events.get(2);
            assertThat(first.kind()).isEqualTo(MemoryEvent.Kind.ALLOC);
            assertThat(second.kind()).isEqualTo(MemoryEvent.Kind.ALLOC);
            Provenance back = new Provenance(first.provenance().timeMicros() - 5, null, null, -1, null);
            events.set(2, new MemoryEvent(second.kind(), second.address(), second.bytes(), second.requestedBytes(),
                    second.alignment(), second.allocationId(), second.availableBytes(), back));
            MemoryHistory h = s.history();
            MemorySnapshot edited = new MemorySnapshot(s.timeMicros(), s.memoryMap(), s.options(),
                    s.coalescingRegions(), s.timingCounterUsed(), new MemoryHistory(h.options(), h.recording(),
                            h.startMicros(), h.startedEmpty(), h.droppedEvents(), events));
            Path trace = dir.resolve("edited.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(edited, trace))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("the history of allocator 'edited' goes back in time: its ALLOC of allocation "
                            + second.allocationId() + " at time " + back.timeMicros() + " comes after the ALLOC of"
                            + " allocation " + first.allocationId() + " at time " + first.provenance().timeMicros()
                            + " (epoch microseconds), and a trace's times never go back. An allocator records its"
                            + " events in time order: write the snapshot() of the allocator as taken, not a history"
                            + " joined or edited");
            assertThat(trace).doesNotExist();
            SnapshotTraces.write(s, trace); // as taken, it writes
            a.deallocateRaw(p);
            a.deallocateRaw(q);
        }
    }

    @Test
    void theCallerNamesTheTrace() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "named", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.deallocateRaw(a.allocateRaw(64, 100));
            MemorySnapshot s = a.snapshot();
            assertThat(SnapshotTraces.header(s).name()).isEqualTo("named: recorded");

            Path trace = dir.resolve("named.bfctrace");
            SnapshotTraces.write(s, trace, "my-server: 2 requests from 1 thread");
            try (TraceReader reader = TraceReader.open(trace)) {
                TraceHeader h = reader.header();
                assertThat(h.name()).isEqualTo("my-server: 2 requests from 1 thread");
                assertThat(h).isEqualTo(SnapshotTraces.header(s, h.name()));
                assertThat(h.source()).isEqualTo("workload: recorded by bfc4j from allocator 'named' ("
                        + s.history().events().size() + " events of its history)");
                assertThat(reader.next().kind()).isEqualTo(TraceEvent.Kind.ALLOC);
                assertThat(reader.next().kind()).isEqualTo(TraceEvent.Kind.FREE);
                assertThat(reader.next()).isNull();
            }

            // A name that cannot be a header line is refused before the file is touched.
            for (String bad : new String[] {null, "", "two\nlines"}) {
                assertThatThrownBy(() -> SnapshotTraces.write(s, trace, bad))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("name=")
                        .hasMessageContaining("expected: non-empty text without line breaks");
            }
            try (TraceReader reader = TraceReader.open(trace)) {
                assertThat(reader.header().name()).isEqualTo("my-server: 2 requests from 1 thread");
            }
        }
    }

    @Test
    void anIncompleteHistoryIsRefusedSayingWhy() {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "late", opts)) {
            assertThatThrownBy(() -> SnapshotTraces.header(a.snapshot())).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("recorded no history");
            a.deallocateRaw(a.allocateRaw(64, 100));
            a.recordHistory(HistoryOptions.defaults());
            assertThatThrownBy(() -> SnapshotTraces.header(a.snapshot()))
                    .hasMessageContaining("starts after it had obtained memory");
        }
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "small-ring", opts)) {
            a.recordHistory(HistoryOptions.builder().maxEntries(4).build());
            for (int i = 0; i < 3; i++) {
                a.deallocateRaw(a.allocateRaw(64, 100));
            }
            assertThatThrownBy(() -> SnapshotTraces.header(a.snapshot()))
                    .hasMessageContaining("dropped its 3 oldest events").hasMessageContaining("maxEntries");
        }
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "timed", opts)) {
            a.recordHistory(HistoryOptions.defaults());
            a.setTimingCounter(new SharedCounter());
            assertThatThrownBy(() -> SnapshotTraces.header(a.snapshot())).hasMessageContaining("timing counter");
        } catch (RuntimeException e) {
            throw e;
        }
    }

    @Test
    void aWriteThatFailsLeavesTheFileAsItWas() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "broken", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            for (int i = 0; i < 3; i++) {
                a.allocateRaw(64, 1000 + i);
            }
            // A history (made by hand) whose last event frees an allocation it never made: the
            // writer finds out after it has written the calls before it.
            MemorySnapshot s = a.snapshot();
            MemoryHistory h = s.history();
            List<MemoryEvent> events = new ArrayList<>(h.events());
            events.add(new MemoryEvent(MemoryEvent.Kind.FREE, 0x100, 256, 100, 0, 999, -1, Provenance.UNKNOWN));
            MemorySnapshot broken = new MemorySnapshot(s.timeMicros(), s.memoryMap(), s.options(),
                    s.coalescingRegions(), false, new MemoryHistory(h.options(), h.recording(), h.startMicros(),
                            h.startedEmpty(), 0, events));
            for (String file : new String[] {"kept.bfctrace", "kept.bfctrace.gz"}) {
                Path trace = dir.resolve(file);
                SnapshotTraces.write(a.snapshot(), trace, "the good one");
                byte[] before = Files.readAllBytes(trace);
                assertThatThrownBy(() -> SnapshotTraces.write(broken, trace, "broken"))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("frees allocation 999, which it never allocated");
                assertThat(java.util.Arrays.equals(Files.readAllBytes(trace), before)).as(file + " as it was").isTrue();
            }
            Path fresh = dir.resolve("fresh.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(broken, fresh, "broken"))
                    .isInstanceOf(IllegalStateException.class);
            assertThat(fresh).doesNotExist();
            try (var files = Files.list(dir)) {
                assertThat(files.map(f -> f.getFileName().toString()))
                        .containsExactlyInAnyOrder("kept.bfctrace", "kept.bfctrace.gz");
            }
            // A written trace replaces the file, compressed as its name says.
            Path gz = dir.resolve("kept.bfctrace.gz");
            assertThat(Files.readAllBytes(gz)[0] & 0xff).isEqualTo(0x1f);
            try (TraceReader r = TraceReader.open(gz)) {
                assertThat(r.header().name()).isEqualTo("the good one");
            }
        }
    }

    @Test
    void anAnnotationTooLongForATraceLineIsRefusedSayingWhich() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 1L << 30, 0, false),
                64L << 20, "long-names", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.allocateRaw(64, 100);
            try (MemoryAnnotation m = MemoryAnnotation.push("x".repeat(TraceReader.MAX_LINE_BYTES))) {
                a.allocateRaw(64, 200);
            }
            Path trace = dir.resolve("long.bfctrace.gz");
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), trace, "long"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("provenance of alloc 2: a line of 10486")
                    .hasMessageContaining("shorten the thread name, the annotation or the stack frame");
            assertThat(trace).doesNotExist();
        }
    }

    /** A history that would replay to other decisions than the live allocator made is refused. */
    @Test
    void aHistoryThatWouldReplayOtherwiseIsRefusedSayingWhy() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        long limit = 32L << 20;
        // emptyCache() gave a region back, then calls followed: the replay would keep the region
        // (a 2 MiB region live, then a new one of 4 MiB; one of 2 MiB in the replay).
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false),
                limit, "emptied", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.deallocateRaw(a.allocateRaw(64, 1 << 20));
            assertThat(a.emptyCache()).isEqualTo(2L << 20);
            // At the end, nothing follows that a replay could decide otherwise.
            SnapshotTraces.write(a.snapshot(), dir.resolve("emptied-at-end.bfctrace"), "x");
            a.allocateRaw(64, 1 << 20);
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), dir.resolve("emptied.bfctrace"), "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("allocator 'emptied' gave regions back by emptyCache() (on thread '"
                            + Thread.currentThread().getName() + "', 2097152 bytes at 0x7f0000000000 first), and"
                            + " calls followed: a trace has no such call");
        }
        // A sub-allocator that gives more than asked.
        SimSubAllocator sim = new SimSubAllocator(SnapshotTraces.SIM_BASE, 4 * limit, 0, false);
        SubAllocator generous = new ForwardingSubAllocator(sim) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                Block b = super.alloc(alignment, numBytes + 4096);
                return b == null ? null : new Block(b.ptr(), numBytes + 4096);
            }
        };
        try (BfcAllocator a = new BfcAllocator(generous, limit, "generous", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.allocateRaw(64, 1000);
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), dir.resolve("generous.bfctrace"), "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("the sub-allocator of allocator 'generous' gave a region of 2101248 bytes"
                            + " where the allocator asked for 2097152 (it gives more than asked): a replay on the"
                            + " trace's simulated sub-allocator");
        }
        // A sub-allocator that runs out below the memory limit: the allocator backs off to a
        // smaller region, then fails with room left under its limit.
        try (BfcAllocator a = new BfcAllocator(new LimitingSubAllocator(
                new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false), 5L << 20), limit, "short", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.allocateRaw(64, 1 << 20); // a region of 2 MiB
            a.allocateRaw(64, 2 << 20); // asks for 4 MiB, backs off by 0.9 until 2.9 MiB fit
            Path t = dir.resolve("short.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), t, "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("gave a region of 3057920 bytes where the allocator asked for 4194304 (it"
                            + " failed, and the allocator asked for less)");
        }
        try (BfcAllocator a = new BfcAllocator(new LimitingSubAllocator(
                new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false), 2L << 20), limit, "out", opts)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.allocateRaw(64, 1 << 20);
            assertThat(a.allocateRaw(64, 2 << 20)).isZero();
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), dir.resolve("out.bfctrace"), "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("allocator 'out' failed an allocation of 2097152 bytes with 31457280 bytes"
                            + " left under its memory limit: its sub-allocator failed");
        }
        // A sub-allocator whose free throws: the garbage collection of the 4 MiB call gives the
        // free 2 MiB region back, then the call throws, leaving no alloc line; a replay would
        // keep the region and serve the next 2 MiB from it (6 MiB reserved at most, 8 MiB live).
        boolean[] failFree = {false};
        SubAllocator throwing = new ForwardingSubAllocator(
                new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * (8L << 20), 0, false)) {
            @Override
            public void free(long ptr, long numBytes) {
                super.free(ptr, numBytes);
                if (failFree[0]) {
                    throw new IllegalStateException("injected: free failed");
                }
            }
        };
        try (BfcAllocator a = BfcAllocator.builder().name("threw").memoryLimit(8L << 20).subAllocator(throwing)
                .allowRetryOnFailure(false).garbageCollection(true).closePolicy(ClosePolicy.FORCE).build()) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long small = a.allocateRaw(64, 1 << 20); // region 1, 2 MiB
            a.allocateRaw(64, 3 << 20); // region 2, 4 MiB
            a.deallocateRaw(small);
            failFree[0] = true;
            assertThatThrownBy(() -> a.allocateRaw(64, 4 << 20)).hasMessage("injected: free failed");
            failFree[0] = false;
            Path t = dir.resolve("threw.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), t, "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("allocator 'threw' gave regions back by garbage collection for a request"
                            + " of 4194304 bytes (on thread '" + Thread.currentThread().getName() + "', 2097152 bytes"
                            + " at 0x7f0000000000 first), and that call then obtained no region and did not fail");
            a.allocateRaw(64, 2 << 20);
            assertThat(a.peakReservedBytes()).isEqualTo(8L << 20);
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), t, "x"))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("that call then obtained no region");
            assertThat(t).doesNotExist();
        }
        // What replays alike is written: garbage collection giving regions back within a call,
        // a failure at the memory limit, a forced close.
        try (BfcAllocator a = BfcAllocator.builder().name("alike").memoryLimit(limit)
                .subAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false))
                .allowRetryOnFailure(false).garbageCollection(true).closePolicy(ClosePolicy.FORCE).build()) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.deallocateRaw(a.allocateRaw(64, 1 << 20));
            a.deallocateRaw(a.allocateRaw(64, 6 << 20));
            a.deallocateRaw(a.allocateRaw(64, 12 << 20));
            long p = a.allocateRaw(64, 30 << 20); // collects the free regions first
            assertThat(p).isNotZero();
            assertThat(a.allocateRaw(64, 8 << 20)).isZero();
            a.close();
            MemorySnapshot s = a.snapshot();
            assertThat(s.history().events()).anyMatch(e -> e.kind() == MemoryEvent.Kind.REGION_FREE
                    && e.requestedBytes() == 30 << 20);
            Path t = dir.resolve("alike.bfctrace");
            SnapshotTraces.write(s, t, "x");
            try (TraceReader r = TraceReader.open(t)) {
                WorkloadResult w = WorkloadRunner.forHeader(r.header()).run(r);
                assertThat(w.oomCount()).isEqualTo(1);
                assertThat(w.peakPoolBytes()).isEqualTo(a.memoryStats().peakReservedBytes());
            }
        }
    }

    /**
     * A sub-allocator that fails below the memory limit in the first attempt of a call that the
     * retry then serves leaves no event of that attempt, but the attempt doubled the size of the
     * next region to fit the request (as upstream's Extend does before asking): the replay, whose
     * first attempt obtains the region, asks for the next region at half the live size. Refused
     * at that region; a history that ends before it replays alike and is written.
     */
    @Test
    void aRegionSizeGrownInAnAttemptTheRetryRepeatedIsRefusedSayingWhy() throws IOException {
        long limit = 1L << 30;
        AtomicInteger failNext = new AtomicInteger();
        SubAllocator busy = new ForwardingSubAllocator(new SimSubAllocator(SnapshotTraces.SIM_BASE, 2 * limit, 0, false)) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                return failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? null : super.alloc(alignment, numBytes);
            }
        };
        try (BfcAllocator a = BfcAllocator.builder().name("busy").memoryLimit(limit).subAllocator(busy)
                .allowRetryOnFailure(true).closePolicy(ClosePolicy.FORCE).build()) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.allocateRaw(64, 1 << 20); // a region of 2 MiB
            a.allocateRaw(64, 12 << 20); // the region size doubled to 16 MiB, a region of 16 MiB
            // 20 MiB: the first attempt doubles the region size to 32 MiB and asks for it; the
            // sub-allocator fails that and the back-off down to 21 MiB (5 calls). The retry's
            // first attempt asks for 32 MiB again and gets it; the region size doubles to 64 MiB
            // after it, where the replay's one attempt leaves it at 32 MiB.
            failNext.set(5);
            assertThat(a.allocateRaw(64, 20 << 20)).isNotZero();
            assertThat(a.reservedBytes()).isEqualTo(50L << 20);
            SnapshotTraces.write(a.snapshot(), dir.resolve("busy-so-far.bfctrace"), "x");
            a.allocateRaw(64, 3 << 20); // a region of 64 MiB; the replay's is of 32 MiB
            assertThat(a.reservedBytes()).isEqualTo(114L << 20);
            Path t = dir.resolve("busy.bfctrace");
            assertThatThrownBy(() -> SnapshotTraces.write(a.snapshot(), t, "x"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("allocator 'busy' asked its sub-allocator for a region of 67108864 bytes"
                            + " for a request of 3145728 bytes (on thread '" + Thread.currentThread().getName()
                            + "', at 0x7f0003200000), where a replay would ask for 33554432: its region size grew in"
                            + " an attempt that left no event");
            assertThat(t).doesNotExist();
        }
    }
}
