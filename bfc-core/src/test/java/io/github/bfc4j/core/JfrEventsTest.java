/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.nio.file.Path;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The JFR events appear in a real recording with the right fields. */
class JfrEventsTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static List<RecordedEvent> record(Path dir, Runnable work) throws Exception {
        Path file = dir.resolve("bfc.jfr");
        try (Recording r = new Recording()) {
            for (String name : List.of("io.github.bfc4j.RegionExtend", "io.github.bfc4j.RegionFree",
                    "io.github.bfc4j.OutOfMemory", "io.github.bfc4j.AllocationSample")) {
                r.enable(name);
            }
            r.start();
            work.run();
            r.stop();
            r.dump(file);
        }
        return RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("io.github.bfc4j."))
                .toList();
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }

    @Test
    void extendFreeAndOutOfMemoryEventsCarryTheirFields(@TempDir Path dir) throws Exception {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true)
                .dumpOnOomDirectory(dir.resolve("dumps")).build();
        long[] seen = new long[4];
        List<RecordedEvent> events = record(dir, () -> {
            try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false),
                    4 * MIB, "jfr_bfc", opts)) {
                long p = a.allocateRaw(256, MIB);
                seen[0] = p;
                a.deallocateRaw(p);
                long q = a.allocateRaw(256, 3 * MIB); // garbage-collects the 2 MiB region
                seen[1] = q;
                assertThat(a.allocateRaw(256, 3 * MIB)).isZero();
                seen[2] = a.getStats().poolBytes();
                seen[3] = a.largestFreeChunkBytes();
            }
        });
        List<RecordedEvent> extends_ = named(events, "io.github.bfc4j.RegionExtend");
        assertThat(extends_).hasSize(2);
        assertThat(extends_.get(0).getString("allocator")).isEqualTo("jfr_bfc");
        assertThat(extends_.get(0).getLong("ptr")).isEqualTo(seen[0]);
        assertThat(extends_.get(0).getLong("bytes")).isEqualTo(2 * MIB);
        assertThat(extends_.get(0).getLong("requestBytes")).isEqualTo(MIB);
        assertThat(extends_.get(0).getLong("poolBytes")).isEqualTo(2 * MIB);
        assertThat(extends_.get(1).getLong("ptr")).isEqualTo(seen[1]);
        assertThat(extends_.get(1).getLong("requestBytes")).isEqualTo(3 * MIB);
        assertThat(extends_.get(0).getStackTrace()).isNotNull();

        List<RecordedEvent> frees = named(events, "io.github.bfc4j.RegionFree");
        assertThat(frees).hasSize(1);
        assertThat(frees.get(0).getLong("ptr")).isEqualTo(seen[0]);
        assertThat(frees.get(0).getLong("bytes")).isEqualTo(2 * MIB);
        assertThat(frees.get(0).getLong("poolBytes")).isZero();

        List<RecordedEvent> ooms = named(events, "io.github.bfc4j.OutOfMemory");
        assertThat(ooms).hasSize(1);
        RecordedEvent oom = ooms.get(0);
        assertThat(oom.getString("allocator")).isEqualTo("jfr_bfc");
        assertThat(events).extracting(e -> e.getInt("shard")).as("an allocator of its own is no shard").containsOnly(-1);
        assertThat(oom.getLong("requestedBytes")).isEqualTo(3 * MIB);
        assertThat(oom.getLong("limitBytes")).isEqualTo(4 * MIB);
        assertThat(oom.getLong("bytesInUse")).isEqualTo(extends_.get(1).getLong("bytes"));
        assertThat(oom.getLong("poolBytes")).isEqualTo(seen[2]).isEqualTo(extends_.get(1).getLong("poolBytes"));
        assertThat(oom.getLong("largestFreeChunkBytes")).isEqualTo(seen[3]);
        assertThat(oom.getString("dumpFile")).startsWith(dir.resolve("dumps").toAbsolutePath().toString());

        assertThat(named(events, "io.github.bfc4j.AllocationSample")).as("samples are off by default").isEmpty();
    }

    @Test
    void outOfMemoryEventTellsThePoolAndTheLargestFreeChunk(@TempDir Path dir) throws Exception {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).build();
        List<RecordedEvent> events = record(dir, () -> {
            try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false),
                    8 * MIB, "jfr_oom", opts)) {
                long p = a.allocateRaw(256, MIB); // a 2 MiB region, split: 1 MiB left free
                assertThat(a.largestFreeChunkBytes()).isEqualTo(MIB);
                try (MemoryAnnotation step = MemoryAnnotation.push("decode")) {
                    assertThat(a.allocateRaw(256, 7 * MIB)).isZero(); // 6 MiB left under the limit
                }
                a.deallocateRaw(p);
            }
        });
        List<RecordedEvent> ooms = named(events, "io.github.bfc4j.OutOfMemory");
        assertThat(ooms).hasSize(1);
        assertThat(ooms.get(0).getLong("requestedBytes")).isEqualTo(7 * MIB);
        assertThat(ooms.get(0).getLong("bytesInUse")).isEqualTo(MIB);
        assertThat(ooms.get(0).getLong("poolBytes")).isEqualTo(2 * MIB);
        assertThat(ooms.get(0).getLong("largestFreeChunkBytes")).isEqualTo(MIB);
        assertThat(ooms.get(0).getLong("limitBytes")).isEqualTo(8 * MIB);
        assertThat(ooms.get(0).getString("annotation")).as("the failing thread's annotation").isEqualTo("decode");
    }

    @Test
    void emptyCacheReportsEachRegionItGivesBackButCloseDoesNot(@TempDir Path dir) throws Exception {
        long[] regions = new long[2];
        List<RecordedEvent> events = record(dir, () -> {
            try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false),
                    16 * MIB, "jfr_empty", BfcOptions.defaults())) {
                regions[0] = a.allocateRaw(256, 2 * MIB);
                regions[1] = a.allocateRaw(256, 4 * MIB); // a second region
                a.deallocateRaw(regions[0]);
                assertThat(a.emptyCache()).isEqualTo(2 * MIB);
                a.deallocateRaw(regions[1]); // its region goes back at close, unreported
            }
        });
        List<RecordedEvent> frees = named(events, "io.github.bfc4j.RegionFree");
        assertThat(frees).hasSize(1);
        assertThat(frees.get(0).getString("allocator")).isEqualTo("jfr_empty");
        assertThat(frees.get(0).getLong("ptr")).isEqualTo(regions[0]);
        // Each event's address is typed as one, so JDK Mission Control shows it in hex.
        for (String name : List.of("io.github.bfc4j.RegionFree", "io.github.bfc4j.RegionExtend")) {
            assertThat(named(events, name).get(0).getEventType().getField("ptr").getContentType())
                    .as(name).isEqualTo("jdk.jfr.MemoryAddress");
        }
        assertThat(frees.get(0).getLong("bytes")).isEqualTo(2 * MIB);
        assertThat(frees.get(0).getLong("poolBytes")).isEqualTo(4 * MIB);
    }

    @Test
    void allocationSamplesOneInPeriod(@TempDir Path dir) throws Exception {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).jfrAllocationSamplePeriod(3)
                .dumpOnOomDirectory(null).build();
        long[] ptrs = new long[7];
        List<RecordedEvent> events = record(dir, () -> {
            try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false),
                    16 * MIB, "sampled_bfc", opts)) {
                for (int i = 0; i < ptrs.length; i++) {
                    try (MemoryAnnotation step = i == 2 ? MemoryAnnotation.push("encoder", 4) : null) {
                        ptrs[i] = a.allocateRaw(256, 1000 + i);
                    }
                }
            }
        });
        List<RecordedEvent> samples = named(events, "io.github.bfc4j.AllocationSample");
        assertThat(samples).hasSize(2); // allocations 3 and 6
        assertThat(samples.get(0).getLong("ptr")).isEqualTo(ptrs[2]);
        assertThat(samples.get(0).getLong("requestedBytes")).isEqualTo(1002);
        assertThat(samples.get(0).getLong("chunkBytes")).isEqualTo(1024);
        assertThat(samples.get(0).getLong("allocationId")).isEqualTo(3);
        assertThat(samples.get(0).getLong("bytesInUse")).isEqualTo(3 * 1024);
        assertThat(samples.get(1).getLong("ptr")).isEqualTo(ptrs[5]);
        assertThat(samples.get(1).getString("allocator")).isEqualTo("sampled_bfc");
        assertThat(samples).extracting(e -> e.getInt("shard")).as("no shard").containsOnly(-1);
        assertThat(samples.get(0).getString("annotation")).as("the allocating thread's annotation")
                .isEqualTo("encoder (step 4)");
        assertThat(samples.get(1).getString("annotation")).as("none open").isNull();
        assertThat(samples.get(0).getEventType().getField("ptr").getContentType()).isEqualTo("jdk.jfr.MemoryAddress");
    }

    /**
     * An annotation that only gives a stack (a replayed trace's call, a Python caller's) names
     * nothing: the events' {@code annotation} is null, as with none open, or the enclosing
     * annotation's name when there is one; never the text "null". One that also gives a step is
     * named by it, {@code step 7}, as the holders name it (it was null, the step the allocator
     * knew left out).
     */
    @Test
    void aStackOnlyAnnotationGivesNoAnnotationName(@TempDir Path dir) throws Exception {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).jfrAllocationSamplePeriod(1)
                .dumpOnOomDirectory(null).build();
        List<StackFrame> stack = List.of(new StackFrame("model.Net", "forward", "net.py", 12));
        List<RecordedEvent> events = record(dir, () -> {
            try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false),
                    4 * MIB, "stack_only_bfc", opts)) {
                try (MemoryAnnotation s = MemoryAnnotation.push(null, -1, stack)) {
                    a.allocateRaw(256, 1000);
                    assertThat(a.allocateRaw(256, 8 * MIB)).isZero();
                }
                try (MemoryAnnotation s = MemoryAnnotation.push(null, 7, stack)) {
                    a.allocateRaw(256, 1000);
                }
                try (MemoryAnnotation outer = MemoryAnnotation.push("encoder", 4);
                        MemoryAnnotation s = MemoryAnnotation.push(null, -1, stack)) {
                    a.allocateRaw(256, 1000);
                }
            }
        });
        assertThat(named(events, "io.github.bfc4j.AllocationSample")).extracting(e -> e.getString("annotation"))
                .containsExactly(null, "step 7", "encoder (step 4)");
        assertThat(named(events, "io.github.bfc4j.OutOfMemory")).singleElement()
                .extracting(e -> e.getString("annotation")).isNull();
    }

    /**
     * The events of a {@link ShardedBfcAllocator}'s shards carry the name given to its builder,
     * so that a recording groups them by it, and the shard's index, which tells them apart.
     */
    @Test
    void aShardsEventsCarryTheNameGivenAndTheShard(@TempDir Path dir) throws Exception {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).jfrAllocationSamplePeriod(1)
                .dumpOnOomDirectory(null).build();
        long[] ptrs = new long[2];
        List<RecordedEvent> events = record(dir, () -> {
            try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("jfr_host").memoryLimit(8 * MIB)
                    .subAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, true)).shards(2).options(opts)
                    .closePolicy(ClosePolicy.FORCE).build()) {
                ptrs[0] = a.allocateRaw(256, MIB); // this thread's home: shard 0
                Thread other = new Thread(() -> ptrs[1] = a.allocateRaw(256, MIB), "other"); // shard 1
                other.setDaemon(true);
                other.start();
                try {
                    TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
                assertThat(a.allocateRaw(256, 16 * MIB)).isZero(); // above the limit: shard 0 reports it
                a.deallocateRaw(ptrs[0]);
                assertThat(a.emptyCache()).isEqualTo(2 * MIB);
            }
        });
        for (String name : List.of("io.github.bfc4j.RegionExtend", "io.github.bfc4j.AllocationSample",
                "io.github.bfc4j.OutOfMemory", "io.github.bfc4j.RegionFree")) {
            assertThat(named(events, name)).as(name).isNotEmpty()
                    .allSatisfy(e -> assertThat(e.getString("allocator")).isEqualTo("jfr_host"));
        }
        // Two threads' events: a recording gives each thread's buffer as it was flushed, not
        // the two threads' events in the order they happened.
        assertThat(named(events, "io.github.bfc4j.AllocationSample"))
                .extracting(e -> e.getLong("ptr"), e -> e.getInt("shard"))
                .containsExactlyInAnyOrder(tuple(ptrs[0], 0), tuple(ptrs[1], 1));
        assertThat(named(events, "io.github.bfc4j.RegionExtend")).extracting(e -> e.getInt("shard"))
                .containsExactlyInAnyOrder(0, 1);
        assertThat(named(events, "io.github.bfc4j.OutOfMemory")).extracting(e -> e.getInt("shard")).containsExactly(0);
        assertThat(named(events, "io.github.bfc4j.RegionFree")).extracting(e -> e.getInt("shard")).containsExactly(0);
    }
}
