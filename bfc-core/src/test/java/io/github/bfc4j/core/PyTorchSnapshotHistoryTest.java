/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
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
}
