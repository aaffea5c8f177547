/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.StackFrame;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadRunner;
import io.github.bfc4j.trace.WorkloadStep;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recorded stacks point at the application's code that allocated: the calling test method
 * first, bfc4j's own frames left out. This test lives outside bfc4j's packages, as an
 * application does.
 */
class StackProvenanceTest {

    private static BfcAllocator allocator() {
        return new BfcAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false), 256L << 20, "stacks",
                BfcOptions.builder().allowRetryOnFailure(false).build());
    }

    private static Provenance provenanceOf(BfcAllocator a, long ptr) {
        for (MemoryMap.Chunk c : a.memoryMap().chunks()) {
            if (c.ptr() == ptr) {
                return c.provenance();
            }
        }
        throw new AssertionError("no chunk at 0x" + Long.toHexString(ptr));
    }

    private long allocateHere(BfcAllocator a, long bytes) {
        return a.allocateRaw(64, bytes);
    }

    @TempDir
    Path dir;

    /**
     * A replayed trace's calls carry the stack the trace gives, and none where it gives none:
     * the replaying code's stack says nothing of the run the trace recorded, as its thread's
     * name does not. Before, an application replaying a trace with its history recorded
     * (stacks on, as HistoryOptions.defaults()) found every allocation the trace gives no stack
     * for, its region and its failure, held by its own call of WorkloadRunner.run.
     */
    @Test
    void aReplayedCallRecordsTheTracesStackNeverTheReplayers() throws IOException {
        Path trace = dir.resolve("replayed.bfctrace");
        Files.writeString(trace, "bfctrace 1\nname t\nsource workload: test\n"
                + "options memory_limit=4194304 allow_growth=true garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=8388608 gap=0 coalescing=false\n"
                + "#@ frame 1 com.example.Model forward Model.java 42\n#@ stack 1 1\n"
                + "#@ alloc 1 thread=w stack=1\nalloc 1 1000\n"
                + "#@ alloc 2 thread=w\nalloc 2 2000\n"
                + "alloc 3 3000\n"
                + "alloc 4 8388608\n"); // fails: above the limit
        List<MemoryEvent> events = new ArrayList<>();
        List<MemoryMap.Chunk> chunks = new ArrayList<>();
        try (TraceReader r = TraceReader.open(trace)) {
            WorkloadRunner.forHeader(r.header()).listener(new WorkloadListener() {
                @Override
                public void beforeRun(BfcAllocator a) {
                    a.recordHistory(HistoryOptions.defaults());
                }

                @Override
                public void afterCall(WorkloadStep step) {
                }

                @Override
                public void afterRun(BfcAllocator a) {
                    events.addAll(a.snapshot().history().events());
                    chunks.addAll(a.memoryMap().chunks());
                }
            }).run(r);
        }
        StackFrame model = new StackFrame("com.example.Model", "forward", "Model.java", 42);
        assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.ALLOC,
                MemoryEvent.Kind.OUT_OF_MEMORY);
        assertThat(events).extracting(e -> e.provenance().stack())
                .containsExactly(List.of(model), List.of(model), List.of(), List.of(), List.of());
        assertThat(chunks.stream().filter(MemoryMap.Chunk::inUse).map(c -> c.provenance().holder()).toList())
                .containsExactly("com.example.Model.forward(Model.java:42)", "thread 'w'", "(unknown)");
    }

    /**
     * The events and chunks of allocations made from one place share one list of frames (one
     * copy per stack, not per allocation), and a stack from another place shares its common frames.
     */
    @Test
    void allocationsFromOnePlaceShareOneStack() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.defaults());
            long[] ptrs = new long[100];
            for (int i = 0; i < ptrs.length; i++) {
                ptrs[i] = allocateHere(a, 4096);
            }
            long elsewhere = a.allocateRaw(64, 4096);
            List<MemoryEvent> allocs = a.snapshot().history().events().stream()
                    .filter(e -> e.kind() == MemoryEvent.Kind.ALLOC).toList();
            assertThat(allocs).hasSize(101);
            List<StackFrame> here = allocs.get(0).provenance().stack();
            assertThat(here.get(0).methodName()).isEqualTo("allocateHere");
            for (int i = 0; i < ptrs.length; i++) {
                assertThat(allocs.get(i).provenance().stack()).isSameAs(here);
                assertThat(provenanceOf(a, ptrs[i]).stack()).isSameAs(here);
            }
            List<StackFrame> there = allocs.get(100).provenance().stack();
            assertThat(there.get(0).methodName()).isEqualTo("allocationsFromOnePlaceShareOneStack");
            assertThat(there.get(1)).as("the frame below the test method, shared").isSameAs(here.get(2));
            for (long p : ptrs) {
                a.deallocateRaw(p);
            }
            a.deallocateRaw(elsewhere);
        }
    }

    @Test
    void stacksPointAtTheCallingTestMethod() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.defaults());
            long raw = a.allocateRaw(64, 1000);
            long viaHelper = allocateHere(a, 2000);
            Allocation handle = a.allocate(3000);

            List<StackFrame> s1 = provenanceOf(a, raw).stack();
            assertThat(s1.get(0).className()).isEqualTo(StackProvenanceTest.class.getName());
            assertThat(s1.get(0).methodName()).isEqualTo("stacksPointAtTheCallingTestMethod");
            assertThat(s1.get(0).fileName()).isEqualTo("StackProvenanceTest.java");
            assertThat(s1.get(0).lineNumber()).isPositive();
            assertThat(s1).noneMatch(f -> f.className().startsWith("io.github.bfc4j.core"));

            List<StackFrame> s2 = provenanceOf(a, viaHelper).stack();
            assertThat(s2.get(0).methodName()).isEqualTo("allocateHere");
            assertThat(s2.get(1).methodName()).isEqualTo("stacksPointAtTheCallingTestMethod");
            assertThat(s2.get(1).lineNumber()).isEqualTo(s1.get(0).lineNumber() + 1);

            // Through the Allocation API too (BfcAllocator.allocate, then allocateRaw): the test first.
            List<StackFrame> s3 = provenanceOf(a, handle.address()).stack();
            assertThat(s3.get(0).methodName()).isEqualTo("stacksPointAtTheCallingTestMethod");
            assertThat(s3.get(0).lineNumber()).isEqualTo(s1.get(0).lineNumber() + 2);

            // The events carry the same stacks and the thread.
            MemoryEvent alloc = a.snapshot().history().events().stream()
                    .filter(e -> e.kind() == MemoryEvent.Kind.ALLOC && e.address() == raw).findFirst().orElseThrow();
            assertThat(alloc.provenance().stack()).isEqualTo(s1);
            assertThat(alloc.provenance().thread()).isEqualTo(Thread.currentThread().getName());
            handle.close();
            a.deallocateRaw(raw);
            a.deallocateRaw(viaHelper);
        }
    }

    /**
     * Only the allocator's packages and bfc4j's adapters are its own frames: a class of the
     * application named {@code Bfc...}, in a package under {@code io.github.bfc4j}, is the
     * frame that allocated, and the holder of its memory.
     */
    @Test
    void anApplicationsClassNamedBfcIsKeptEvenUnderBfc4jsPackage() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.defaults());
            long ptr = BfcModel.loadWeights(a, 4096);
            Provenance p = provenanceOf(a, ptr);
            assertThat(p.stack().get(0).className()).isEqualTo(BfcModel.class.getName());
            assertThat(p.stack().get(0).methodName()).isEqualTo("loadWeights");
            assertThat(p.stack().get(1).methodName()).isEqualTo("anApplicationsClassNamedBfcIsKeptEvenUnderBfc4jsPackage");
            assertThat(a.memoryMap().largestHolders(1).get(0).holder()).startsWith(BfcModel.class.getName() + ".loadWeights(");
            a.deallocateRaw(ptr);
        }
    }

    private static Provenance regionFree(BfcAllocator a) {
        return a.snapshot().history().events().stream().filter(e -> e.kind() == MemoryEvent.Kind.REGION_FREE)
                .findFirst().orElseThrow().provenance();
    }

    @Test
    void aRegionGivenBackRecordsWhoGaveItBack() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.defaults());
            a.deallocateRaw(a.allocateRaw(64, 1000));
            try (MemoryAnnotation x = MemoryAnnotation.push("cleanup", 7)) {
                assertThat(a.emptyCache()).isPositive();
            }
            Provenance p = regionFree(a);
            assertThat(p.annotation()).isEqualTo("cleanup");
            assertThat(p.step()).isEqualTo(7);
            assertThat(p.thread()).isEqualTo(Thread.currentThread().getName());
            assertThat(p.stack()).first().extracting(StackFrame::methodName)
                    .isEqualTo("aRegionGivenBackRecordsWhoGaveItBack");

            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            a.deallocateRaw(a.allocateRaw(64, 1000));
            a.emptyCache();
            assertThat(regionFree(a)).extracting(Provenance::annotation, Provenance::stack)
                    .containsExactly(null, List.of());
        }
    }

    @Test
    void depthLimitAndSamplingKeepTheCostDown() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.builder().stackDepth(2).stackMinBytes(1 << 20).build());
            long small = a.allocateRaw(64, 1000);
            long large = a.allocateRaw(64, 2 << 20);
            assertThat(provenanceOf(a, small).stack()).isEmpty(); // below stackMinBytes
            assertThat(provenanceOf(a, large).stack()).hasSize(2)
                    .first().extracting(StackFrame::methodName).isEqualTo("depthLimitAndSamplingKeepTheCostDown");
            assertThat(provenanceOf(a, small).timeMicros()).isPositive(); // the event is recorded all the same

            a.recordHistory(HistoryOptions.builder().stackEveryNth(3).build());
            long[] p = new long[9];
            for (int i = 0; i < p.length; i++) {
                p[i] = a.allocateRaw(64, 512);
            }
            for (int i = 0; i < p.length; i++) {
                assertThat(provenanceOf(a, p[i]).stack().isEmpty()).as("call %d", i + 1).isEqualTo((i + 1) % 3 != 0);
            }

            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long none = a.allocateRaw(64, 512);
            assertThat(provenanceOf(a, none).stack()).isEmpty();
            assertThat(provenanceOf(a, none).thread()).isEqualTo(Thread.currentThread().getName());
        }
    }

    /**
     * stackMinBytes compares the request as asked, for an allocation and for the region it
     * obtains alike: a request just below it gets neither stack, one of exactly it gets both.
     */
    @Test
    void aRegionObtainedForARequestBelowStackMinBytesGetsNoStack() {
        for (long request : new long[] {1000, 1024}) {
            try (BfcAllocator a = allocator()) {
                a.recordHistory(HistoryOptions.builder().stackMinBytes(1024).build());
                long p = a.allocateRaw(64, request); // rounded to 1024 either way
                List<MemoryEvent> events = a.snapshot().history().events();
                assertThat(events).extracting(MemoryEvent::kind)
                        .containsExactly(MemoryEvent.Kind.REGION_ALLOC, MemoryEvent.Kind.ALLOC);
                boolean wanted = request >= 1024;
                assertThat(events).as("request %d: whether each event has a stack", request)
                        .extracting(e -> !e.provenance().stack().isEmpty()).containsOnly(wanted);
                a.deallocateRaw(p);
            }
        }
    }

    /**
     * stackEveryNth counts every successful allocation, one whose annotation gives its stack
     * too: with every 2nd sampled, the 2nd and 4th allocations get a walked stack, whatever
     * the 1st was given.
     */
    @Test
    void everyNthCountsTheAllocationsWhoseAnnotationGivesAStack() {
        try (BfcAllocator a = allocator()) {
            a.recordHistory(HistoryOptions.builder().stackEveryNth(2).build());
            List<StackFrame> given = List.of(new StackFrame("model.py", "forward", "model.py", 12));
            long[] p = new long[4];
            try (MemoryAnnotation x = MemoryAnnotation.push("py", -1, given)) {
                p[0] = a.allocateRaw(64, 512);
            }
            for (int i = 1; i < p.length; i++) {
                p[i] = a.allocateRaw(64, 512);
            }
            assertThat(provenanceOf(a, p[0]).stack()).isEqualTo(given);
            assertThat(provenanceOf(a, p[1]).stack()).as("2nd").isNotEmpty();
            assertThat(provenanceOf(a, p[2]).stack()).as("3rd").isEmpty();
            assertThat(provenanceOf(a, p[3]).stack()).as("4th").isNotEmpty();
            for (long x : p) {
                a.deallocateRaw(x);
            }
        }
    }
}
