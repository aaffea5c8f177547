/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Annotations and history in the allocator: chunks, summary, out-of-memory message and listeners. */
class ProvenanceTest {

    private static BfcAllocator allocator(long limit) {
        return new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false), limit, "prov",
                BfcOptions.builder().allowRetryOnFailure(false).build());
    }

    private static Provenance at(BfcAllocator a, long ptr) {
        return a.memoryMap().chunks().stream().filter(c -> c.ptr() == ptr).findFirst().orElseThrow().provenance();
    }

    /** 256 bytes allocated while {@code annotation} is open on this thread. */
    private static long allocateUnder(BfcAllocator a, String annotation) {
        try (MemoryAnnotation x = MemoryAnnotation.push(annotation)) {
            return a.allocateRaw(64, 256);
        }
    }

    @Test
    void annotationsGoWithChunksOnlyWhenRecorded() {
        try (BfcAllocator a = allocator(64L << 20)) {
            long before;
            try (MemoryAnnotation x = MemoryAnnotation.push("encoder", 1)) {
                before = a.allocateRaw(64, 1000); // nothing recorded yet
                a.recordAnnotations(true);
                long p = a.allocateRaw(64, 1000);
                try (MemoryAnnotation y = MemoryAnnotation.push("attention")) {
                    long q = a.allocateRaw(64, 1000);
                    assertThat(at(a, q)).isEqualTo(new Provenance(-1, null, "attention", 1, List.of()));
                }
                assertThat(at(a, p)).isEqualTo(new Provenance(-1, null, "encoder", 1, List.of()));
            }
            assertThat(at(a, before)).isEqualTo(Provenance.UNKNOWN);
            long none = a.allocateRaw(64, 1000);
            assertThat(at(a, none)).isEqualTo(Provenance.UNKNOWN);

            // A handle freed and reused while recording is off is never given the old provenance.
            a.recordAnnotations(false);
            a.deallocateRaw(before);
            long again;
            try (MemoryAnnotation z = MemoryAnnotation.push("decoder", 2)) {
                again = a.allocateRaw(64, 1000);
            }
            a.recordAnnotations(true);
            assertThat(at(a, again)).isEqualTo(Provenance.UNKNOWN);
        }
    }

    @Test
    void eachThreadsChunksCarryItsOwnAnnotation() throws Exception {
        int threads = 4;
        int perThread = 200;
        try (BfcAllocator a = allocator(256L << 20)) {
            a.recordAnnotations(true);
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Thread> all = new ArrayList<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            long[][] ptrs = new long[threads][perThread];
            for (int t = 0; t < threads; t++) {
                final int id = t;
                Thread th = new Thread(() -> {
                    try (MemoryAnnotation mine = MemoryAnnotation.push("worker-" + id, id)) {
                        start.await();
                        for (int i = 0; i < perThread; i++) {
                            try (MemoryAnnotation inner = MemoryAnnotation.push("worker-" + id + "/op" + (i % 3))) {
                                ptrs[id][i] = a.allocateRaw(64, 256 + 64L * i);
                            }
                        }
                    } catch (Throwable e) {
                        failure.set(e);
                    }
                }, "worker-" + t);
                th.setDaemon(true);
                all.add(th);
                th.start();
            }
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, all.toArray(new Thread[0]));
            assertThat(failure.get()).isNull();
            for (int t = 0; t < threads; t++) {
                for (int i = 0; i < perThread; i++) {
                    assertThat(at(a, ptrs[t][i])).as("thread %d call %d", t, i)
                            .isEqualTo(new Provenance(-1, null, "worker-" + t + "/op" + (i % 3), t, List.of()));
                }
            }
            // This thread pushed nothing: its allocations have none.
            assertThat(at(a, a.allocateRaw(64, 256))).isEqualTo(Provenance.UNKNOWN);
            String summary = a.memorySummary();
            assertThat(summary).contains("Largest holders (in use, by annotation, else innermost frame outside"
                    + " org.bytedeco., else thread, else step, else runtime lent to):")
                    .contains("worker-3/op0 (step 3)");
        }
    }

    @Test
    void theHistoryRingKeepsTheLatestEventsAndCountsTheDropped() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordHistory(HistoryOptions.builder().maxEntries(10).stacks(false).build());
            for (int i = 0; i < 20; i++) {
                a.deallocateRaw(a.allocateRaw(64, 1000 + i));
            }
            MemoryHistory h = a.snapshot().history();
            assertThat(h.events()).hasSize(10);
            assertThat(h.droppedEvents()).isEqualTo(31); // 1 region + 40 calls - 10 kept
            assertThat(h.isComplete()).isFalse();
            assertThat(h.events().get(9).kind()).isEqualTo(MemoryEvent.Kind.FREE);
            assertThat(h.events().get(8).requestedBytes()).isEqualTo(1019);
            for (int i = 1; i < 10; i++) {
                assertThat(h.events().get(i).provenance().timeMicros())
                        .isGreaterThanOrEqualTo(h.events().get(i - 1).provenance().timeMicros());
            }
            a.stopHistory();
            a.allocateRaw(64, 5);
            MemoryHistory after = a.snapshot().history();
            assertThat(after.recording()).isFalse();
            assertThat(after.events()).isEqualTo(h.events()); // kept until the next start
        }
    }

    /**
     * A restart with another {@code maxEntries} keeps that many events: more than the first
     * recording's ring held, and then fewer.
     */
    @Test
    void aRestartWithAnotherMaxEntriesKeepsThatMany() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordHistory(HistoryOptions.builder().maxEntries(4).stacks(false).build());
            a.deallocateRaw(a.allocateRaw(64, 1000));
            for (int max : new int[] {8, 3}) {
                a.recordHistory(HistoryOptions.builder().maxEntries(max).stacks(false).build());
                for (int i = 0; i < 10; i++) {
                    a.deallocateRaw(a.allocateRaw(64, 1000 + i));
                }
                MemoryHistory h = a.snapshot().history();
                assertThat(h.events()).as("maxEntries=%d", max).hasSize(max);
                assertThat(h.droppedEvents()).as("maxEntries=%d", max).isEqualTo(20 - max);
                assertThat(h.events().get(max - 1).kind()).isEqualTo(MemoryEvent.Kind.FREE);
                assertThat(h.events().get(max - 2).requestedBytes()).isEqualTo(1009);
            }
        }
    }

    /**
     * With annotations recorded and no history, a failing call's provenance (an out-of-memory
     * listener's report) names its annotation and step; outside any annotation it is
     * {@link Provenance#UNKNOWN}.
     */
    @Test
    void withAnnotationsAloneAFailureNamesItsAnnotation() {
        try (BfcAllocator a = allocator(1L << 20)) {
            a.recordAnnotations(true);
            List<OutOfMemoryReport> reports = new ArrayList<>();
            a.addOutOfMemoryListener(reports::add);
            try (MemoryAnnotation g = MemoryAnnotation.push("grads", 7)) {
                assertThat(a.allocateRaw(64, 2L << 20)).isZero();
            }
            assertThat(a.allocateRaw(64, 2L << 20)).isZero();
            assertThat(reports).extracting(OutOfMemoryReport::provenance)
                    .containsExactly(new Provenance(-1, null, "grads", 7, List.of()), Provenance.UNKNOWN);
        }
    }

    /**
     * {@code stackMinBytes}: a stack for a request of at least that many bytes, none for one
     * byte less.
     */
    @Test
    void aRequestOfExactlyStackMinBytesGetsItsStack() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordHistory(HistoryOptions.builder().stackMinBytes(1000).build());
            long exactly = a.allocateRaw(64, 1000);
            long less = a.allocateRaw(64, 999);
            assertThat(at(a, exactly).stack()).isNotEmpty();
            assertThat(at(a, less).stack()).isEmpty();
        }
    }

    /**
     * An OUT_OF_MEMORY event's {@code availableBytes} is what the sub-allocator could still have
     * given under the limit: limit - reserved.
     */
    @Test
    void anOutOfMemoryEventGivesTheLimitLessTheReserved() {
        try (BfcAllocator a = allocator(4L << 20)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            assertThat(a.allocateRaw(64, 1L << 20)).isNotZero();
            long reserved = a.reservedBytes();
            assertThat(reserved).isLessThan(4L << 20);
            assertThat(a.allocateRaw(64, 8L << 20)).isZero();
            MemoryEvent oom = a.snapshot().history().events().stream()
                    .filter(e -> e.kind() == MemoryEvent.Kind.OUT_OF_MEMORY).findFirst().orElseThrow();
            assertThat(oom.availableBytes()).isEqualTo((4L << 20) - reserved);
        }
    }

    /**
     * A close refused for live allocations names who holds them when provenance is recorded
     * (the question the refusal raises), as the out-of-memory message does; without a recording
     * it names none.
     */
    @Test
    void aRefusedCloseNamesTheHoldersOfTheLiveAllocations() {
        BfcAllocator a = BfcAllocator.builder().name("prov").memoryLimit(64L << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .closePolicy(ClosePolicy.REFUSE).build();
        long unnamed = a.allocateRaw(256, 1L << 20);
        // (the 3 MiB below is served from a 4 MiB region of its own, unsplit: holders count chunks)
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessage("close() refused: allocator 'prov' has 1 live allocation (1.00MiB in use). Close (or"
                        + " deallocate) them first; or build the allocator with closePolicy(ClosePolicy.FORCE) to"
                        + " free the memory under them anyway.");
        a.recordAnnotations(true);
        long weights;
        try (MemoryAnnotation w = MemoryAnnotation.push("weights")) {
            weights = a.allocateRaw(256, 3L << 20);
        }
        assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                .hasMessageEndingWith("anyway. Largest holders: 4.00MiB by weights (1 chunk); 1.00MiB by (unknown)"
                        + " (1 chunk).");
        a.deallocateRaw(weights);
        a.deallocateRaw(unnamed);
        a.close();
        assertThat(a.isClosed()).isTrue();
    }

    @Test
    void outOfMemoryListenersSeeTheStateAtTheFailureAndTheMessageNamesTheHolders() {
        try (BfcAllocator a = BfcAllocator.builder().name("small").memoryLimit(16L << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .allowRetryOnFailure(false).allowGrowth(false).closePolicy(ClosePolicy.FORCE).build()) {
            a.recordHistory(HistoryOptions.defaults());
            List<OutOfMemoryReport> reports = new ArrayList<>();
            OutOfMemoryListener listener = reports::add;
            a.addOutOfMemoryListener(listener);
            a.addOutOfMemoryListener(r -> {
                throw new IllegalStateException("a broken listener"); // logged and ignored
            });
            Allocation weights;
            try (MemoryAnnotation w = MemoryAnnotation.push("weights")) {
                weights = a.allocate(5L << 20);
            }
            Allocation acts;
            try (MemoryAnnotation w = MemoryAnnotation.push("activations", 7)) {
                acts = a.allocate(2L << 20);
            }
            BfcOutOfMemoryException oom;
            try (MemoryAnnotation w = MemoryAnnotation.push("grads", 7)) {
                oom = org.junit.jupiter.api.Assertions.assertThrows(BfcOutOfMemoryException.class,
                        () -> a.allocate(10L << 20));
            }
            assertThat(oom.getMessage()).contains("Largest holders: 5.00MiB by weights (1 chunk); 2.00MiB by"
                    + " activations (step 7) (1 chunk).");
            assertThat(reports).hasSize(1);
            OutOfMemoryReport r = reports.get(0);
            assertThat(r.requestedBytes()).isEqualTo(10L << 20);
            assertThat(r.provenance().annotation()).isEqualTo("grads");
            assertThat(r.provenance().stack()).isNotEmpty(); // (its frames: StackProvenanceTest)
            MemoryMap m = r.snapshot().memoryMap();
            assertThat(m.stats().bytesInUse()).isEqualTo(7L << 20);
            assertThat(m.largestHolders(5)).extracting(MemoryMap.Holder::holder)
                    .containsExactly("weights", "activations (step 7)");
            assertThat(r.snapshot().history().events()).last()
                    .extracting(MemoryEvent::kind).isEqualTo(MemoryEvent.Kind.OUT_OF_MEMORY);
            assertThat(r.summary()).contains("OOMs: 1");

            // Frees after the failure do not change what the listener was given.
            weights.close();
            acts.close();
            assertThat(r.snapshot().memoryMap().stats().bytesInUse()).isEqualTo(7L << 20);
            assertThat(a.removeOutOfMemoryListener(listener)).isTrue();
            assertThat(a.allocateRaw(64, 1L << 30)).isZero();
            assertThat(reports).hasSize(1);
        }
    }

    @Test
    void theReportIsAPictureOfTheFailureNotALiveView() throws Exception {
        // A second thread waits for the failure and frees while the listener is told (the failing
        // call has not returned); the report still shows the allocations of the moment of failure.
        try (BfcAllocator a = allocator(4L << 20)) {
            a.recordAnnotations(true);
            long held;
            try (MemoryAnnotation w = MemoryAnnotation.push("held")) {
                held = a.allocateRaw(64, 3L << 20);
            }
            CountDownLatch failed = new CountDownLatch(1);
            CountDownLatch freed = new CountDownLatch(1);
            AtomicBoolean freedWhileTold = new AtomicBoolean();
            AtomicLong liveWhileTold = new AtomicLong(-1);
            AtomicLong reportedWhileTold = new AtomicLong(-1);
            List<OutOfMemoryReport> reports = new ArrayList<>();
            a.addOutOfMemoryListener(r -> {
                failed.countDown();
                try {
                    freedWhileTold.set(freed.await(30, TimeUnit.SECONDS)); // the other thread frees meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                liveWhileTold.set(a.bytesInUse());
                reportedWhileTold.set(r.snapshot().memoryMap().stats().bytesInUse());
                reports.add(r);
            });
            Thread freer = new Thread(() -> {
                try {
                    failed.await();
                    a.deallocateRaw(held);
                    freed.countDown();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "freer");
            freer.setDaemon(true);
            freer.start();
            assertThat(a.allocateRaw(64, 2L << 20)).isZero();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, freer);
            assertThat(freedWhileTold).as("the other thread freed while the listener was told, within 30 s").isTrue();
            assertThat(liveWhileTold).as("in use, read from the allocator after that free").hasValue(0);
            assertThat(a.bytesInUse()).isZero();
            // The 3 MiB request took the whole 4 MiB region (too small a rest to split off).
            assertThat(reportedWhileTold).as("in use, read from the report after that free").hasValue(4L << 20);
            assertThat(reports.get(0).snapshot().memoryMap().stats().bytesInUse()).isEqualTo(4L << 20);
            assertThat(reports.get(0).snapshot().memoryMap().largestHolders(1).get(0).holder()).isEqualTo("held");
        }
    }

    /**
     * bfc4j's own frames, left out of recorded stacks, are the allocator's packages and the
     * adapters that allocate for their callers (with their nested classes and lambdas); no other
     * class, whatever its name or package: bfc4j's tests and examples, an application's classes.
     */
    @Test
    void ownFramesAreTheAllocatorsPackagesAndItsAdaptersOnly() {
        for (String own : List.of("io.github.bfc4j.core.BfcAllocator", "io.github.bfc4j.core.BfcPort$Walk",
                "io.github.bfc4j.core.internal.ChunkTable", "io.github.bfc4j.core.sim.SimSubAllocator",
                "io.github.bfc4j.trace.WorkloadRunner", "io.github.bfc4j.cuda.GpuBfcAllocator",
                "io.github.bfc4j.onnxruntime.BfcOrtAllocator", "io.github.bfc4j.onnxruntime.BfcOrtAllocator$AllocCallback",
                "io.github.bfc4j.onnxruntime.BfcCudaProvider$1", "io.github.bfc4j.tensorflow.BfcTensors",
                "io.github.bfc4j.tensorflow.BfcTensors$$Lambda/0x000071f001234567")) {
            assertThat(HistoryRecorder.isOwn(own)).as(own).isTrue();
        }
        for (String app : List.of("io.github.bfc4j.onnxruntime.BfcOrtAllocatorTest",
                "io.github.bfc4j.onnxruntime.BfcCudaProviderGpuTest", "io.github.bfc4j.tensorflow.BfcTensorsTest",
                "io.github.bfc4j.cuda.GpuBfcAllocatorTest", "io.github.bfc4j.cli.BfcCommand",
                "io.github.bfc4j.myapp.BfcModel", "io.github.bfc4j.myapp.GpuBfcRunner",
                "io.github.bfc4j.onnxruntime.OnnxRuntimeExample", "io.github.bfc4j.corex.Model",
                "com.example.BfcAllocator", "BfcDefaultPackage")) {
            assertThat(HistoryRecorder.isOwn(app)).as(app).isFalse();
        }
    }

    /**
     * The holder is the application's frame that called into a native runtime through JavaCPP,
     * not the binding's frame every such call shares; a stack of binding frames only names its
     * innermost; an annotation still comes first.
     */
    @Test
    void theHolderSkipsJavaCppBindingFrames() {
        StackFrame run = new StackFrame("org.bytedeco.onnxruntime.SessionImpl", "Run", "SessionImpl.java", -2);
        StackFrame wrapper = new StackFrame("org.bytedeco.onnxruntime.Session", "Run", "Session.java", 40);
        StackFrame app = new StackFrame("com.example.Encoder", "embed", "Encoder.java", 42);
        assertThat(new Provenance(1, "main", null, -1, List.of(run, wrapper, app)).holder())
                .isEqualTo("com.example.Encoder.embed(Encoder.java:42)");
        assertThat(new Provenance(1, "main", null, -1, List.of(run, wrapper)).holder())
                .isEqualTo(run.toString());
        assertThat(new Provenance(1, "main", "encoder", 3, List.of(run, app)).holder()).isEqualTo("encoder (step 3)");
        StackFrame bytedecoLookalike = new StackFrame("org.bytedecoy.App", "main", "App.java", 7);
        assertThat(new Provenance(1, "main", null, -1, List.of(bytedecoLookalike, app)).holder())
                .isEqualTo("org.bytedecoy.App.main(App.java:7)");
    }

    /**
     * {@code isKnown()} is false only when nothing is known: each field alone (a time or step of
     * 0 being recorded values, -1 meaning none) makes the provenance known.
     */
    @Test
    void anyOneRecordedFieldMakesTheProvenanceKnown() {
        StackFrame app = new StackFrame("com.example.Encoder", "embed", "Encoder.java", 42);
        assertThat(Provenance.UNKNOWN.isKnown()).isFalse();
        assertThat(new Provenance(-1, null, null, -1, null).isKnown()).as("UNKNOWN's equal").isFalse();
        assertThat(new Provenance(0, null, null, -1, List.of()).isKnown()).as("time 0").isTrue();
        assertThat(new Provenance(1, null, null, -1, List.of()).isKnown()).as("time 1").isTrue();
        assertThat(new Provenance(-1, "main", null, -1, List.of()).isKnown()).as("thread").isTrue();
        assertThat(new Provenance(-1, null, "encoder", -1, List.of()).isKnown()).as("annotation").isTrue();
        assertThat(new Provenance(-1, null, null, 0, List.of()).isKnown()).as("step 0").isTrue();
        assertThat(new Provenance(-1, null, null, 5, List.of()).isKnown()).as("step 5").isTrue();
        assertThat(new Provenance(-1, null, null, -1, List.of(app)).isKnown()).as("stack").isTrue();
    }

    /** Step 0 is a step ({@code MemoryAnnotation.push(name, 0)}): the holder names it; -1 is none. */
    @Test
    void theHolderNamesStepZero() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordAnnotations(true);
            long p;
            try (MemoryAnnotation x = MemoryAnnotation.push("warmup", 0)) {
                p = a.allocateRaw(64, 1000);
            }
            assertThat(at(a, p).holder()).isEqualTo("warmup (step 0)");
            assertThat(a.memorySummary()).contains("warmup (step 0)");
        }
        assertThat(new Provenance(-1, null, "warmup", -1, List.of()).holder()).isEqualTo("warmup");
    }

    /**
     * A time of 0 (the epoch, as a replayed trace's {@code time_us=0} gives) and a step of 0 are
     * recorded values, not "none" (-1): the summary's "since" and a leak report's sentence give
     * them.
     */
    @Test
    void timeZeroAndStepZeroAreNamedInTheSummaryAndTheLeakReport() {
        Provenance epoch = new Provenance(0, null, "warmup", 0, List.of());
        assertThat(LeakGuard.recordedText(epoch))
                .isEqualTo(" Recorded when it was allocated: in annotation 'warmup' (step 0), at 1970-01-01 00:00:00.000 UTC.");
        try (BfcAllocator a = allocator(64L << 20)) {
            long p = a.allocateRaw(64, 1000);
            MemoryMap live = a.memoryMap();
            List<MemoryMap.Region> regions = new ArrayList<>();
            for (MemoryMap.Region r : live.regions()) {
                List<MemoryMap.Chunk> chunks = new ArrayList<>();
                for (MemoryMap.Chunk c : r.chunks()) {
                    chunks.add(c.ptr() != p ? c : new MemoryMap.Chunk(c.ptr(), c.size(), c.requestedSize(), c.inUse(),
                            c.allocationId(), c.bin(), c.freedAtCount(), c.notYetSafe(), epoch));
                }
                regions.add(new MemoryMap.Region(r.ptr(), r.size(), chunks));
            }
            MemoryMap map = new MemoryMap(live.allocatorName(), live.memoryType(), live.stats(), live.memoryStats(),
                    live.bins(), regions);
            assertThat(HolderText.summarySection(map)).endsWith(
                    "1 chunk   warmup (step 0)  (since 1970-01-01 00:00:00.000 UTC)" + System.lineSeparator());
        }
    }

    /**
     * An annotation that only gives a stack, outside any named one, may still give a step
     * ({@code MemoryAnnotation.push(null, 5, stack)}). With annotations recorded and no history,
     * the chunk keeps that step alone (no name, no stack, no thread, no time): the leak report
     * says the step it knows, and names no stack it does not have.
     */
    @Test
    void aLeakReportOfAChunkKnownOnlyByItsStepNamesTheStepNotAStack() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordAnnotations(true);
            long p;
            try (MemoryAnnotation s = MemoryAnnotation.push(null, 5, List.of(new StackFrame("app.Model", "forward",
                    "Model.java", 12)))) {
                p = a.allocateRaw(64, 1000);
            }
            Provenance known = a.memoryMap().chunks().stream().filter(c -> c.ptr() == p).findFirst().orElseThrow()
                    .provenance();
            assertThat(known).isEqualTo(new Provenance(-1, null, null, 5, List.of()));
            assertThat(LeakGuard.recordedText(known)).isEqualTo(" Recorded when it was allocated: in step 5.");
        }
        Provenance stackAndStep = new Provenance(-1, "main", null, 5,
                List.of(new StackFrame("app.Model", "forward", "Model.java", 12)));
        assertThat(LeakGuard.recordedText(stackAndStep)).isEqualTo(
                " Recorded when it was allocated: on thread 'main', in step 5.\n\tat " + stackAndStep.stack().get(0));
        Provenance stackOnly = new Provenance(-1, null, null, -1,
                List.of(new StackFrame("app.Model", "forward", "Model.java", 12)));
        assertThat(LeakGuard.recordedText(stackOnly)).isEqualTo(
                " Recorded when it was allocated: its stack.\n\tat " + stackOnly.stack().get(0));
    }

    /**
     * A chunk known only by the step of an annotation without a name (annotations alone keep
     * neither the stack it gives nor the thread) is held by that step: the summary, the
     * out-of-memory message and {@link MemoryMap#largestHolders} say {@code step 5}, not
     * {@code (unknown)}. A recorded thread still comes first, as for any chunk without an
     * annotation or a stack.
     */
    @Test
    void aChunkKnownOnlyByItsStepIsHeldByThatStep() {
        try (BfcAllocator a = allocator(1L << 20)) {
            a.recordAnnotations(true);
            long p;
            try (MemoryAnnotation s = MemoryAnnotation.push(null, 5, List.of(new StackFrame("app.Model", "forward",
                    "Model.java", 12)))) {
                p = a.allocateRaw(64, 1000);
            }
            assertThat(at(a, p).holder()).isEqualTo("step 5");
            assertThat(a.memoryMap().largestHolders(1)).extracting(MemoryMap.Holder::holder).containsExactly("step 5");
            assertThat(a.memorySummary()).contains("   step 5" + System.lineSeparator()).doesNotContain("(unknown)");
            assertThatThrownBy(() -> a.allocate(2L << 20)).isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("Largest holders: 1.0KiB by step 5 (1 chunk).");
        }
        assertThat(new Provenance(-1, "main", null, 5, List.of()).holder()).isEqualTo("thread 'main'");
        assertThat(new Provenance(-1, null, null, 0, List.of()).holder()).isEqualTo("step 0");
        assertThat(new Provenance(-1, null, null, -1, List.of()).holder()).isEqualTo("(unknown)");
    }

    /**
     * A recorded time is the wall-clock time of the call in epoch microseconds (within a second:
     * the monotonic clock the recording advances may drift from the wall clock a little), both
     * the chunk's and its ALLOC event's.
     */
    @Test
    void recordedTimesAreEpochMicrosecondsOfTheCall() throws InterruptedException {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long beforeMillis = System.currentTimeMillis();
            long beforeNanos = System.nanoTime();
            long p = a.allocateRaw(64, 1000);
            long afterMillis = System.currentTimeMillis();
            Thread.sleep(50);
            long q = a.allocateRaw(64, 1000);
            long spanMicros = (System.nanoTime() - beforeNanos) / 1000;
            long low = (beforeMillis - 1000) * 1000;
            long high = (afterMillis + 1000) * 1000;
            assertThat(at(a, p).timeMicros()).isBetween(low, high);
            MemoryEvent alloc = a.snapshot().history().events().stream()
                    .filter(e -> e.kind() == MemoryEvent.Kind.ALLOC && e.address() == p).findFirst().orElseThrow();
            assertThat(alloc.provenance().timeMicros()).isBetween(low, high);

            // Times go forward with the clock: an allocation 50 ms later is recorded 50 ms later.
            assertThat(at(a, q).timeMicros() - at(a, p).timeMicros()).isBetween(49_000L, spanMicros + 1_000);
        }
    }

    @Test
    void badArguments() {
        try (BfcAllocator a = allocator(1 << 20)) {
            assertThatThrownBy(() -> a.recordHistory(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> a.addOutOfMemoryListener(null)).isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> HistoryOptions.builder().maxEntries(0).build())
                    .hasMessageContaining("maxEntries=0 (expected: 1 to 16777216");
            assertThatThrownBy(() -> HistoryOptions.builder().stackEveryNth(0).build())
                    .hasMessageContaining("stackEveryNth=0 (expected: >= 1)");
        }
    }

    @Test
    void namesNoLiveChunkHoldsMakeRoomForNewOnes() {
        BfcAllocator a = allocator(512L << 20);
        a.recordAnnotations(true);
        long kept = allocateUnder(a, "kept");
        for (int i = 0; i < 70_000; i++) { // more names than the table holds, each freed at once
            try (MemoryAnnotation x = MemoryAnnotation.push("request-" + i)) {
                a.deallocateRaw(a.allocateRaw(64, 256));
            }
        }
        long weights;
        try (MemoryAnnotation x = MemoryAnnotation.push("weights")) {
            weights = a.allocateRaw(64, 1 << 20);
        }
        assertThat(at(a, weights).annotation()).isEqualTo("weights");
        assertThat(at(a, kept).annotation()).isEqualTo("kept");
        a.deallocateRaw(weights);
        a.deallocateRaw(kept);
        a.close();
    }

    @Test
    void onlyWhileTheTableIsFullOfLiveNamesIsANewOneMarked() {
        int max = 1 << 16;
        try (BfcAllocator a = allocator(512L << 20)) {
            a.recordAnnotations(true);
            a.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(16).build());
            long[] held = new long[max];
            for (int i = 0; i < max; i++) { // the table full, every name held by a live chunk
                held[i] = allocateUnder(a, "layer-" + i);
            }
            long over = allocateUnder(a, "one-too-many");
            assertThat(at(a, over).annotation()).isEqualTo("(more than 65536 annotation names)");
            List<MemoryEvent> events = a.snapshot().history().events();
            assertThat(events.get(events.size() - 1).provenance().annotation())
                    .as("the event still carries the name").isEqualTo("one-too-many");
            assertThat(at(a, held[max - 1]).annotation()).isEqualTo("layer-" + (max - 1));

            // Every chunk holding a name is freed: the table is no longer full of live names, so a
            // new name is kept at once, not after thousands more names.
            for (long p : held) {
                a.deallocateRaw(p);
            }
            a.deallocateRaw(over);
            long next = allocateUnder(a, "after");
            assertThat(at(a, next).annotation()).isEqualTo("after");
            a.deallocateRaw(next);
        }
    }

    @Test
    void namesOfChunksFreedWhileNothingWasRecordedMakeRoomToo() {
        int max = 1 << 16;
        try (BfcAllocator a = allocator(512L << 20)) {
            a.recordAnnotations(true);
            long[] held = new long[max];
            for (int i = 0; i < max; i++) {
                held[i] = allocateUnder(a, "layer-" + i);
            }
            a.recordAnnotations(false); // the frees below go unheard
            for (long p : held) {
                a.deallocateRaw(p);
            }
            a.recordAnnotations(true);
            long next = allocateUnder(a, "after");
            assertThat(at(a, next).annotation()).isEqualTo("after");
            a.deallocateRaw(next);
        }
    }

    @Test
    void provenanceHoldsPastTheFirstThousandHandles() {
        try (BfcAllocator a = allocator(512L << 20)) {
            List<Long> unrecorded = new ArrayList<>();
            for (int i = 0; i < 1500; i++) { // handles the recorder's arrays do not cover yet
                unrecorded.add(a.allocateRaw(64, 256));
            }
            a.recordAnnotations(true);
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            int n = 2500;
            long[] p = new long[n];
            for (int i = 0; i < n; i++) {
                try (MemoryAnnotation x = MemoryAnnotation.push("t-" + i)) {
                    p[i] = a.allocateRaw(64, 256 + i);
                }
            }
            for (long u : unrecorded) {
                a.deallocateRaw(u); // handles below and above the arrays' first 1024
            }
            for (int i = 0; i < n; i += 2) {
                a.deallocateRaw(p[i]);
            }
            java.util.Map<Long, Provenance> byPtr = new java.util.HashMap<>();
            for (MemoryMap.Chunk c : a.memoryMap().chunks()) {
                if (c.inUse()) {
                    byPtr.put(c.ptr(), c.provenance());
                }
            }
            assertThat(byPtr).hasSize(n / 2);
            for (int i = 1; i < n; i += 2) {
                assertThat(byPtr.get(p[i]).annotation()).isEqualTo("t-" + i);
            }
            List<MemoryEvent> frees = a.snapshot().history().events().stream()
                    .filter(e -> e.kind() == MemoryEvent.Kind.FREE).toList();
            assertThat(frees).hasSize(unrecorded.size() + n / 2);
            assertThat(a.memoryMap().largestHolders(n).stream().mapToLong(MemoryMap.Holder::bytes).sum())
                    .isEqualTo(a.bytesInUse());
            for (int i = 1; i < n; i += 2) {
                a.deallocateRaw(p[i]);
            }
        }
    }

    @Test
    void anAllocationThatSucceedsOnRetryIsRecordedOnceAsItsCallers() throws Exception {
        BfcAllocator a = BfcAllocator.builder().name("retry").memoryLimit(4L << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .allowRetryOnFailure(true).build();
        a.recordAnnotations(true);
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        long weights;
        try (MemoryAnnotation x = MemoryAnnotation.push("weights")) {
            weights = a.allocateRaw(64, 3L << 20);
        }
        long[] got = new long[1];
        Thread decoder = new Thread(() -> {
            try (MemoryAnnotation x = MemoryAnnotation.push("decoder", 9)) {
                got[0] = a.allocateRaw(64, 2L << 20); // fails at first, waits for the free below
            }
        }, "decoder-thread");
        decoder.start();
        TestThreads.awaitRetryWait(() -> decoder, () -> !decoder.isAlive());
        a.deallocateRaw(weights);
        decoder.join(10_000);
        assertThat(got[0]).isNotZero();
        assertThat(at(a, got[0])).extracting(Provenance::thread, Provenance::annotation, Provenance::step)
                .containsExactly("decoder-thread", "decoder", 9L);
        List<MemoryEvent> events = a.snapshot().history().events();
        assertThat(events).filteredOn(e -> e.kind() == MemoryEvent.Kind.ALLOC
                && "decoder".equals(e.provenance().annotation())).hasSize(1);
        assertThat(events).noneMatch(e -> e.kind() == MemoryEvent.Kind.OUT_OF_MEMORY);
        assertThat(a.memoryStats().oomsTotal()).isZero();
        assertThat(a.memoryMap().largestHolders(5)).extracting(MemoryMap.Holder::holder, MemoryMap.Holder::bytes)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("decoder (step 9)", 2L << 20));
        a.deallocateRaw(got[0]);
        a.close();
    }

    /**
     * The answers docs/observability.md gives ("Three questions, answered"), followed as written:
     * the largest holder now, who allocated an address inside a chunk, what was live at the peak.
     */
    @Test
    void theDocumentedAnswersToThreeQuestionsHold() {
        long mib = 1L << 20;
        BfcAllocator allocator = allocator(64 * mib);
        allocator.recordAnnotations(true);
        allocator.recordHistory(HistoryOptions.builder().stacks(false).build());
        Allocation weights;
        try (MemoryAnnotation x = MemoryAnnotation.push("weights")) {
            weights = allocator.allocate(3 * mib, 4096);
        }
        long a1;
        long a2;
        try (MemoryAnnotation x = MemoryAnnotation.push("activations", 1)) {
            a1 = allocator.allocateRaw(64, 2 * mib);
            a2 = allocator.allocateRaw(64, 2 * mib);
        }
        allocator.deallocateRaw(a1);
        allocator.deallocateRaw(a2);
        long a3;
        try (MemoryAnnotation x = MemoryAnnotation.push("activations", 2)) {
            a3 = allocator.allocateRaw(64, mib);
        }

        MemoryMap now = allocator.memoryMap();
        assertThat(now.largestHolders(1)).extracting(MemoryMap.Holder::holder).containsExactly("weights");
        long address = weights.address() + 12345; // inside the chunk, which starts before address()
        Provenance who = now.chunks().stream()
                .filter(c -> c.inUse() && Long.compareUnsigned(address - c.ptr(), c.size()) < 0)
                .map(MemoryMap.Chunk::provenance).findFirst().orElse(Provenance.UNKNOWN);
        assertThat(who.annotation()).isEqualTo("weights");
        assertThat(who.thread()).isEqualTo(Thread.currentThread().getName());
        long nowhere = a2 + 4096; // freed, and not allocated again: in no chunk in use
        assertThat(now.chunks().stream()
                .filter(c -> c.inUse() && Long.compareUnsigned(nowhere - c.ptr(), c.size()) < 0)
                .map(MemoryMap.Chunk::provenance).findFirst().orElse(Provenance.UNKNOWN)).isEqualTo(Provenance.UNKNOWN);

        MemoryHistory history = allocator.snapshot().history();
        assertThat(history.isComplete()).isTrue();
        List<MemoryEvent> liveAtPeak = history.liveAtPeak();
        assertThat(liveAtPeak.stream().mapToLong(MemoryEvent::bytes).sum()).isEqualTo(allocator.peakBytesInUse());
        assertThat(liveAtPeak).extracting(e -> e.provenance().holder())
                .containsExactly("weights", "activations (step 1)", "activations (step 1)");
        assertThat(liveAtPeak).extracting(MemoryEvent::address).endsWith(a1, a2);
        assertThat(liveAtPeak).extracting(MemoryEvent::kind).containsOnly(MemoryEvent.Kind.ALLOC);

        weights.close();
        allocator.deallocateRaw(a3);
        allocator.close();
    }

    /**
     * A stopped history is complete (it tells every call up to its stop, and replays as a
     * trace), but holds nothing after the stop: its peak is the one before the stop, not
     * peakBytesInUse() when the allocator went higher since.
     */
    @Test
    void liveAtPeakOfAStoppedHistoryIsItsPeakBeforeTheStop() {
        long mib = 1L << 20;
        try (BfcAllocator allocator = allocator(64 * mib)) {
            allocator.recordHistory(HistoryOptions.builder().stacks(false).build());
            long before = allocator.allocateRaw(64, mib);
            allocator.stopHistory();
            long after = allocator.allocateRaw(64, 2 * mib);

            MemoryHistory history = allocator.snapshot().history();
            assertThat(history.isComplete()).isTrue();
            assertThat(history.recording()).isFalse();
            assertThat(history.liveAtPeak()).extracting(MemoryEvent::address).containsExactly(before);
            assertThat(history.liveAtPeak().stream().mapToLong(MemoryEvent::bytes).sum()).isEqualTo(mib)
                    .isLessThan(allocator.peakBytesInUse());
            allocator.deallocateRaw(before);
            allocator.deallocateRaw(after);
        }
    }

    /**
     * liveAtPeak() of a history that started after some allocations: only the allocations it
     * holds count (the free of an older one is passed over, not subtracted), the first moment of
     * the most bytes is the peak (a later equal one is not), and the allocations are in the order
     * they were made; a history with no allocation has no peak.
     */
    @Test
    void liveAtPeakCountsOnlyTheAllocationsTheHistoryHolds() {
        long mib = 1L << 20;
        BfcAllocator a = allocator(64 * mib);
        assertThat(MemoryHistory.NONE.liveAtPeak()).isEmpty();
        long before = a.allocateRaw(64, 8 * mib);   // not recorded: its free must not count
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        assertThat(a.snapshot().history().liveAtPeak()).as("nothing allocated yet").isEmpty();
        long x = a.allocateRaw(64, 2 * mib);
        a.deallocateRaw(before);
        long y = a.allocateRaw(64, mib);
        long z = a.allocateRaw(64, mib);        // x + y + z = 4 MiB: the peak
        a.deallocateRaw(y);
        long w = a.allocateRaw(64, mib);        // 4 MiB again, later: not the peak
        a.deallocateRaw(x);
        List<MemoryEvent> peak = a.snapshot().history().liveAtPeak();
        assertThat(peak).extracting(MemoryEvent::address).containsExactly(x, y, z);
        assertThat(peak).extracting(MemoryEvent::bytes).containsExactly(2 * mib, mib, mib);
        a.deallocateRaw(z);
        a.deallocateRaw(w);
        a.close();
    }

    @Test
    void aRegionThatGarbageCollectionGivesBackIsRecordedAsTheAllocatingCallsDoing() {
        long mib = 1L << 20;
        BfcAllocator a = BfcAllocator.builder().name("gc").memoryLimit(4 * mib)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                .allowRetryOnFailure(false).garbageCollection(true).build();
        a.recordHistory(HistoryOptions.defaults());
        long small = a.allocateRaw(64, mib); // a 2 MiB region
        a.deallocateRaw(small);
        long big;
        try (MemoryAnnotation x = MemoryAnnotation.push("big", 3)) {
            big = a.allocateRaw(64, 3 * mib); // 2 + 4 MiB is above the limit: the free region goes back first
        }
        assertThat(big).isNotZero();
        List<MemoryEvent> events = a.snapshot().history().events();
        assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE, MemoryEvent.Kind.REGION_FREE,
                MemoryEvent.Kind.REGION_ALLOC, MemoryEvent.Kind.ALLOC);
        MemoryEvent given = events.get(3);
        assertThat(given).extracting(MemoryEvent::address, MemoryEvent::bytes, MemoryEvent::requestedBytes)
                .containsExactly(small, 2 * mib, 3 * mib);
        assertThat(given.provenance()).extracting(Provenance::annotation, Provenance::step, Provenance::thread)
                .containsExactly("big", 3L, Thread.currentThread().getName());
        // Its stack is recorded (this test's own frames are left out: its class is in bfc4j's package).
        assertThat(given.provenance().stack()).isNotEmpty();
        assertThat(a.memoryStats().regionFreesTotal()).isEqualTo(1);
        a.deallocateRaw(big);
        a.close();
    }

    /**
     * Thread names are kept per chunk, not in a table: more than 65,536 of them (a replayed
     * trace's, set as a replay sets them) each stay with their chunk, and each is its holder.
     */
    @Test
    void moreThan65536ThreadNamesEachStayWithTheirChunk() {
        int n = (1 << 16) + 100;
        try (BfcAllocator a = allocator(512L << 20)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(1000).build());
            long[] p = new long[n];
            for (int i = 0; i < n; i++) {
                io.github.bfc4j.core.internal.ReplayedCall.begin(-1, "t-" + i);
                try {
                    p[i] = a.allocateRaw(64, 256);
                } finally {
                    io.github.bfc4j.core.internal.ReplayedCall.end();
                }
            }
            MemoryMap m = a.memoryMap();
            java.util.Map<Long, String> threadOf = new java.util.HashMap<>();
            for (MemoryMap.Chunk c : m.chunks()) {
                if (c.inUse()) {
                    threadOf.put(c.ptr(), c.provenance().thread());
                }
            }
            for (int i = 0; i < n; i++) {
                assertThat(threadOf.get(p[i])).as("chunk %d", i).isEqualTo("t-" + i);
            }
            assertThat(m.largestHolders(n + 1)).hasSize(n).allMatch(h -> h.chunks() == 1);
            assertThat(m.toJson()).contains("\"thread\": \"t-" + (n - 1) + "\"");
            for (long x : p) {
                a.deallocateRaw(x);
            }
        }
    }

    @Test
    void withTheHistoryOnAChunkKeepsItsAnnotationEvenWithAnnotationsOff() {
        try (BfcAllocator a = allocator(64L << 20)) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build()); // recordAnnotations never called
            long p;
            try (MemoryAnnotation x = MemoryAnnotation.push("encoder", 2)) {
                p = a.allocateRaw(64, 1000);
            }
            assertThat(at(a, p)).extracting(Provenance::annotation, Provenance::step).containsExactly("encoder", 2L);
            a.stopHistory();
            long q;
            try (MemoryAnnotation x = MemoryAnnotation.push("decoder")) {
                q = a.allocateRaw(64, 1000);
            }
            assertThat(at(a, q)).isEqualTo(Provenance.UNKNOWN); // neither recorded
            assertThat(at(a, p).annotation()).as("kept after the history stopped").isEqualTo("encoder");
            a.deallocateRaw(p);
            a.deallocateRaw(q);
        }
    }

    @Test
    void anAlignedAllocationsFailureGivesTheRequestWithItsPadding() {
        long mib = 1L << 20;
        BfcAllocator a = allocator(4 * mib);
        a.recordHistory(HistoryOptions.builder().stacks(false).build());
        List<OutOfMemoryReport> reports = new ArrayList<>();
        a.addOutOfMemoryListener(reports::add);
        assertThatThrownBy(() -> a.allocate(5 * mib, 4096)).isInstanceOfSatisfying(BfcOutOfMemoryException.class,
                e -> assertThat(e.requestedBytes()).isEqualTo(5 * mib + 4096 - 256));
        assertThat(reports).singleElement().extracting(OutOfMemoryReport::requestedBytes).isEqualTo(5 * mib + 4096 - 256);
        assertThat(a.snapshot().history().events()).filteredOn(e -> e.kind() == MemoryEvent.Kind.OUT_OF_MEMORY)
                .singleElement().extracting(MemoryEvent::requestedBytes).isEqualTo(5 * mib + 4096 - 256);
        a.close();
    }

    /**
     * A forced close names who holds the allocations it frees (in the warning it logs), and its
     * history records a free of each, under the closing thread's annotation, then the regions.
     */
    @Test
    void aForcedCloseNamesTheHoldersItFreesAndRecordsTheirFrees() {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(BfcPort.LOGGER_NAME);
        List<String> logged = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(handler);
        try {
            BfcAllocator a = BfcAllocator.builder().name("forced").memoryLimit(64L << 20)
                    .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false))
                    .closePolicy(ClosePolicy.FORCE).build();
            a.recordAnnotations(true);
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            try (MemoryAnnotation x = MemoryAnnotation.push("cache", 5)) {
                a.allocateRaw(64, 4L << 20); // a chunk of exactly 4 MiB
            }
            try (MemoryAnnotation x = MemoryAnnotation.push("tmp")) {
                a.deallocateRaw(a.allocateRaw(64, 1L << 20));
            }
            try (MemoryAnnotation x = MemoryAnnotation.push("shutdown")) {
                a.close();
            }
            assertThat(logged).filteredOn(m -> m.startsWith("close() forced: allocator 'forced'")).singleElement()
                    .asString().endsWith(" Largest holders: 4.00MiB by cache (step 5) (1 chunk).");
            List<MemoryEvent> events = a.snapshot().history().events();
            assertThat(events).extracting(MemoryEvent::kind).endsWith(MemoryEvent.Kind.FREE, MemoryEvent.Kind.FREE,
                    MemoryEvent.Kind.REGION_FREE, MemoryEvent.Kind.REGION_FREE); // tmp's, the forced one, two regions
            MemoryEvent free = events.get(events.size() - 3);
            assertThat(free.bytes()).isEqualTo(4L << 20);
            assertThat(free.provenance().annotation()).as("the closing thread's").isEqualTo("shutdown");
        } finally {
            log.removeHandler(handler);
        }
    }
}
