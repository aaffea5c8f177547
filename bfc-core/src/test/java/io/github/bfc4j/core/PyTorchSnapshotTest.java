/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;

/**
 * The PyTorch memory snapshot, read back with the same pickle library and checked field by
 * field against the allocator's own snapshot: every segment against its region, every block
 * against its chunk, every trace entry against its history event.
 */
class PyTorchSnapshotTest {

    private static final long BASE = 0x7f0000000000L;

    @SuppressWarnings("unchecked")
    static Map<String, Object> roundTrip(MemorySnapshot s) throws IOException {
        byte[] bytes = pickle(s);
        MemoryVizOpcodes.check(bytes);
        return (Map<String, Object>) new Unpickler().loads(bytes);
    }

    /** The snapshot as {@code writePyTorchPickle} writes it: protocol 2. */
    static byte[] pickle(MemorySnapshot s) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        s.writePyTorchPickle(out);
        byte[] bytes = out.toByteArray();
        assertThat(bytes[0] & 0xff).isEqualTo(0x80); // PROTO
        assertThat(bytes[1]).isEqualTo((byte) 2); // protocol 2: MemoryViz.js reads 2 to 4
        return bytes;
    }

    @Test
    @SuppressWarnings("unchecked")
    void theBytesAreOnesThatMemoryVizsOwnUnpicklerReads() throws IOException {
        // pytorch.org/memory_viz reads the file with its own small unpickler, not Python's.
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 4096, false), 64L << 20, "pt",
                BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build());
        a.recordHistory(HistoryOptions.builder().stackDepth(4).build());
        String name = "\u00e9tape \u4e2d \ud83d\ude00"; // a 2-, a 3- and a 4-byte UTF-8 character
        List<Long> live = new ArrayList<>();
        try (MemoryAnnotation step = MemoryAnnotation.push(name, 7)) {
            for (int i = 0; i < 20; i++) {
                live.add(a.allocateRaw(64, 5000L + 150_000L * i));
            }
            assertThat(a.allocateRaw(64, 1L << 40)).isZero(); // an oom event
        }
        for (long p : live) {
            a.deallocateRaw(p);
        }
        a.emptyCache(); // segment_free events
        byte[] bytes = pickle(a.snapshot());
        Map<String, Integer> opcodes = MemoryVizOpcodes.check(bytes);
        assertThat(opcodes).containsKeys("LONG1", "BINUNICODE"); // addresses above 2^31; strings

        Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(bytes);
        List<Map<String, Object>> trace = ((List<List<Map<String, Object>>>) d.get("device_traces")).get(0);
        assertThat(trace).extracting(t -> t.get("action")).contains("segment_free", "oom");
        for (Map<String, Object> t : trace) {
            // An event with a category makes the page push 'unknown' onto a misspelled field
            // (snapshot.categores) and fail: the events carry none.
            assertThat(t).doesNotContainKey("category");
        }
        assertThat(trace.get(0).get("user_metadata")).isEqualTo(name + " (step 7)");
        a.close();
    }

    /**
     * An allocation inside an annotation that gives a step and a stack but no name
     * ({@code MemoryAnnotation.push(null, 5, stack)}) has {@code user_metadata} {@code "step 5"},
     * as its holder is named: it was {@code ""}, the step the allocator recorded left out.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aStepGivenWithoutANameIsTheEventsUserMetadata() throws IOException {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false), 64L << 20, "pt",
                BfcOptions.defaults())) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            StackFrame caller = new StackFrame("model.Net", "forward", "net.py", 12);
            try (MemoryAnnotation s = MemoryAnnotation.push(null, 5, List.of(caller))) {
                a.allocateRaw(64, 1000);
            }
            a.allocateRaw(64, 1000);
            Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(pickle(a.snapshot()));
            List<Map<String, Object>> trace = ((List<List<Map<String, Object>>>) d.get("device_traces")).get(0);
            assertThat(trace).filteredOn(t -> "alloc".equals(t.get("action"))).extracting(t -> t.get("user_metadata"))
                    .containsExactly("step 5", "");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void anotherDevicesSnapshotPutsItsHistoryAtItsIndex() throws IOException {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false), 64L << 20, "gpu2",
                BfcOptions.defaults())) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long p = a.allocateRaw(64, 1000);
            MemorySnapshot s = a.snapshot();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            s.writePyTorchPickle(out, 2);
            Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(out.toByteArray());
            List<List<Object>> traces = (List<List<Object>>) d.get("device_traces");
            assertThat(traces).hasSize(3);
            assertThat(traces.get(0)).isEmpty();
            assertThat(traces.get(1)).isEmpty();
            assertThat(traces.get(2)).hasSize(2); // segment_alloc, alloc
            assertThat((List<Map<String, Object>>) d.get("segments"))
                    .allSatisfy(seg -> assertThat(num(seg.get("device"))).isEqualTo(2));

            ByteArrayOutputStream none = new ByteArrayOutputStream();
            assertThatThrownBy(() -> s.writePyTorchPickle(none, -1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("device=-1");
            assertThat(none.size()).isZero();
            // Past 1023: the lists before the device's would fill the heap.
            assertThatThrownBy(() -> s.writePyTorchPickle(none, Integer.MAX_VALUE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("device=2147483647 (expected: a CUDA device ordinal, 0 to 1023)");

            // To a file: a refused device leaves an existing file as it was.
            Path dir = Files.createTempDirectory("pickle");
            Path file = dir.resolve("s.pickle");
            Files.writeString(file, "kept");
            assertThatThrownBy(() -> s.writePyTorchPickle(file, -5))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(Files.readString(file)).isEqualTo("kept");
            s.writePyTorchPickle(file, 1);
            assertThat(((List<?>) ((Map<String, Object>) new Unpickler().loads(Files.readAllBytes(file)))
                    .get("device_traces"))).hasSize(2);
            try (Stream<Path> files = Files.list(dir)) {
                assertThat(files).as("no temporary file left").containsExactly(file);
            }
            // A new file gets the permissions the umask gives, as one written directly.
            Path fresh = dir.resolve("new.pickle");
            s.writePyTorchPickle(fresh);
            Path plain = Files.createFile(dir.resolve("plain"));
            if (Files.getFileStore(dir).supportsFileAttributeView("posix")) {
                assertThat(Files.getPosixFilePermissions(fresh)).isEqualTo(Files.getPosixFilePermissions(plain));
            }
            a.deallocateRaw(p);
        }
    }

    /** A simulated space that says it is the memory of device {@code device}. */
    private static SubAllocator onDevice(int device) {
        return new ForwardingSubAllocator(new SimSubAllocator(BASE, 1L << 34, 0, false)) {
            @Override
            public int deviceId() {
                return device;
            }
        };
    }

    @SuppressWarnings("unchecked")
    private static void assertDevice(String what, byte[] pickle, int device) throws IOException {
        Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(pickle);
        assertThat((List<Map<String, Object>>) d.get("segments")).as(what + ": segments").isNotEmpty()
                .allSatisfy(seg -> assertThat(num(seg.get("device"))).as(what + ": a segment's device")
                        .isEqualTo(device));
        List<List<Object>> traces = (List<List<Object>>) d.get("device_traces");
        assertThat(traces).as(what + ": device_traces").hasSize(device + 1);
        assertThat(traces.get(device)).as(what + ": the device's history").isNotEmpty();
    }

    /**
     * The sub-allocator's device is every snapshot's, through adaptors (a limit, the shards of
     * a sharded allocator): the snapshot's own writers and the out-of-memory dump's pickle, of
     * an allocator and of a shard, say device 3. They said device 0, unless the caller named
     * the device.
     */
    @Test
    void theSubAllocatorsDeviceIsEverySnapshotsDevice(@org.junit.jupiter.api.io.TempDir Path dir)
            throws IOException {
        Path dumps = dir.resolve("dumps");
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(dumps).build();
        try (BfcAllocator a = BfcAllocator.builder().name("gpu3").memoryLimit(4L << 20)
                .subAllocator(new LimitingSubAllocator(onDevice(3), 1L << 30)).options(opts).build()) {
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long p = a.allocateRaw(64, 1000);
            assertThat(a.allocateRaw(64, 8L << 20)).isZero();
            MemorySnapshot s = a.snapshot();
            assertThat(s.deviceId()).isEqualTo(3);
            assertDevice("writePyTorchPickle(out)", pickle(s), 3);
            Path file = dir.resolve("a.pickle");
            s.writePyTorchPickle(file);
            assertDevice("writePyTorchPickle(file)", Files.readAllBytes(file), 3);
            a.deallocateRaw(p);
        }
        try (ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("sh3").memoryLimit(4L << 20)
                .subAllocator(onDevice(3)).shards(2).options(opts).build()) {
            sharded.recordHistory(HistoryOptions.builder().stacks(false).build());
            long p = sharded.allocateRaw(64, 1000);
            assertThat(sharded.allocateRaw(64, 8L << 20)).isZero();
            assertThat(sharded.snapshots()).extracting(MemorySnapshot::deviceId).containsOnly(3);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            sharded.writePyTorchPickle(out);
            assertDevice("the sharded allocator's writePyTorchPickle", out.toByteArray(), 3);
            sharded.deallocateRaw(p);
        }
        List<Path> pickles;
        try (Stream<Path> files = Files.list(dumps)) {
            pickles = files.filter(f -> f.toString().endsWith(".pickle")).sorted().toList();
        }
        assertThat(pickles).as("the dumps of both failures").hasSize(2);
        for (Path f : pickles) {
            assertDevice(f.getFileName().toString(), Files.readAllBytes(f), 3);
        }
    }

    /** A device the snapshot cannot be written as is refused when the allocator is built. */
    @Test
    void aSubAllocatorWithADeviceNoSnapshotCanSayIsRefused() {
        for (int device : new int[] {-1, 1024}) {
            String message = "subAllocator.deviceId()=" + device + " for ";
            assertThatThrownBy(() -> BfcAllocator.builder().subAllocator(onDevice(device)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(message)
                    .hasMessageEndingWith("(expected: a CUDA device ordinal, 0 to 1023; SubAllocator's default is 0)");
            assertThatThrownBy(() -> new BfcAllocator(onDevice(device), 1L << 20, "a", BfcOptions.defaults()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(message);
            assertThatThrownBy(() -> ShardedBfcAllocator.builder().subAllocator(onDevice(device)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(message);
        }
        try (BfcAllocator a = BfcAllocator.builder().memoryLimit(1L << 20).subAllocator(onDevice(1023)).build()) {
            assertThat(a.snapshot().deviceId()).isEqualTo(1023);
        }
        try (BfcAllocator a = BfcAllocator.builder().memoryLimit(1L << 20)
                .subAllocator(new SimSubAllocator(BASE, 1L << 30, 0, false)).build()) {
            assertThat(a.snapshot().deviceId()).as("SubAllocator's default").isZero();
        }
    }

    @Test
    void theOpcodeCheckRefusesWhatMemoryVizCannotRead() {
        byte[] ok = {(byte) 0x80, 2, 'K', 5, '.'};
        assertThat(MemoryVizOpcodes.check(ok)).containsEntry("BININT1", 1);
        byte[][] bad = {
            {(byte) 0x80, 5, 'N', '.'}, // protocol 5
            {(byte) 0x80, 2, 'C', 1, 'x', '.'}, // SHORT_BINBYTES: not in the page's list
            {(byte) 0x80, 2, (byte) 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'}, // a 9-byte LONG1
            {(byte) 0x80, 2, (byte) 0x8c, 2, (byte) 0xc3, 0x28, '.'}, // malformed UTF-8
            {(byte) 0x80, 2, 'N'}, // no STOP
        };
        for (byte[] b : bad) {
            assertThatThrownBy(() -> MemoryVizOpcodes.check(b))
                    .isInstanceOf(AssertionError.class);
        }
    }

    static long num(Object o) {
        return ((Number) o).longValue();
    }

    @Test
    @SuppressWarnings("unchecked")
    void everySegmentBlockAndEventMatchesTheAllocator() throws IOException {
        BfcOptions opts = BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true).build();
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 1L << 30, 4096, false), 64L << 20, "pt", opts);
        a.recordHistory(HistoryOptions.builder().stackDepth(8).build());
        List<Long> live = new ArrayList<>();
        try (MemoryAnnotation step = MemoryAnnotation.push("train_step", 3)) {
            for (int i = 0; i < 40; i++) {
                try (MemoryAnnotation layer = MemoryAnnotation.push("layer" + (i % 4))) {
                    live.add(a.allocateRaw(64, 1000L + 37_000L * i));
                }
            }
        }
        for (int i = 0; i < live.size(); i += 3) {
            a.deallocateRaw(live.get(i));
        }
        live.add(a.allocateRaw(64, 3 << 20)); // no annotation: only the stack
        assertThat(a.allocateRaw(64, 200L << 20)).isZero(); // above the limit: an oom event
        MemorySnapshot s = a.snapshot();
        Map<String, Object> d = roundTrip(s);

        List<Map<String, Object>> segments = (List<Map<String, Object>>) d.get("segments");
        List<MemoryMap.Region> regions = s.memoryMap().regions();
        assertThat(segments).hasSize(regions.size()).hasSizeGreaterThan(1);
        int staleRequests = 0;
        for (int i = 0; i < regions.size(); i++) {
            MemoryMap.Region r = regions.get(i);
            Map<String, Object> seg = segments.get(i);
            assertThat(num(seg.get("address"))).isEqualTo(r.ptr());
            assertThat(num(seg.get("total_size"))).isEqualTo(r.size());
            assertThat(num(seg.get("device"))).isZero();
            assertThat(num(seg.get("stream"))).isZero();
            assertThat((Object[]) seg.get("segment_pool_id")).containsExactly(0, 0);
            assertThat(seg.get("segment_type")).isEqualTo(r.size() > 1 << 20 ? "large" : "small");
            assertThat(seg.get("is_expandable")).isEqualTo(false);
            long allocated = 0;
            long requested = 0;
            List<Map<String, Object>> blocks = (List<Map<String, Object>>) seg.get("blocks");
            assertThat(blocks).hasSize(r.chunks().size());
            for (int j = 0; j < blocks.size(); j++) {
                MemoryMap.Chunk c = r.chunks().get(j);
                Map<String, Object> b = blocks.get(j);
                assertThat(num(b.get("address"))).isEqualTo(c.ptr());
                assertThat(num(b.get("size"))).isEqualTo(c.size());
                assertThat(b.get("state")).isEqualTo(c.inUse() ? "active_allocated" : "inactive");
                // As PyTorch's snapshot(): the block's own requested size, for an inactive block
                // that of its last allocation (a chunk split off and never allocated: 0).
                assertThat(num(b.get("requested_size"))).isEqualTo(c.requestedSize());
                if (!c.inUse() && c.requestedSize() > 0) {
                    staleRequests++;
                }
                assertFrames((List<Map<String, Object>>) b.get("frames"), c.inUse() ? c.provenance() : Provenance.UNKNOWN);
                if (c.inUse()) {
                    allocated += c.size();
                    requested += c.requestedSize();
                }
            }
            assertThat(num(seg.get("allocated_size"))).isEqualTo(allocated);
            assertThat(num(seg.get("active_size"))).isEqualTo(allocated);
            assertThat(num(seg.get("requested_size"))).isEqualTo(requested);
        }
        assertThat(staleRequests).as("inactive blocks freed between blocks in use").isPositive();

        List<List<Map<String, Object>>> traces = (List<List<Map<String, Object>>>) d.get("device_traces");
        assertThat(traces).hasSize(1);
        List<Map<String, Object>> trace = traces.get(0);
        int k = 0;
        int ooms = 0;
        for (MemoryEvent e : s.history().events()) {
            List<String> actions = switch (e.kind()) {
                case ALLOC -> List.of("alloc");
                case FREE -> List.of("free_requested", "free_completed");
                case REGION_ALLOC -> List.of("segment_alloc");
                case REGION_FREE -> List.of("segment_free");
                case OUT_OF_MEMORY -> List.of("oom");
                case FREE_COMPLETED -> throw new AssertionError("no timing counter, no free waits: " + e);
            };
            for (String action : actions) {
                Map<String, Object> t = trace.get(k++);
                assertThat(t.get("action")).isEqualTo(action);
                assertThat(num(t.get("stream"))).isZero();
                assertThat(num(t.get("time_us"))).isEqualTo(e.provenance().timeMicros());
                if (e.kind() == MemoryEvent.Kind.OUT_OF_MEMORY) {
                    ooms++;
                    assertThat(t).doesNotContainKey("addr");
                    assertThat(num(t.get("size"))).isEqualTo(200L << 20);
                    assertThat(num(t.get("device_free"))).isEqualTo(e.availableBytes()).isPositive();
                } else {
                    assertThat(num(t.get("addr"))).isEqualTo(e.address());
                    boolean region = e.kind() == MemoryEvent.Kind.REGION_ALLOC || e.kind() == MemoryEvent.Kind.REGION_FREE;
                    assertThat(num(t.get("size"))).isEqualTo(region ? e.bytes() : e.requestedBytes());
                }
                assertFrames((List<Map<String, Object>>) t.get("frames"), e.provenance());
                if (e.provenance().annotation() != null) {
                    assertThat(t.get("user_metadata")).isEqualTo(e.provenance().annotation()
                            + (e.provenance().step() >= 0 ? " (step " + e.provenance().step() + ")" : ""));
                } else {
                    assertThat(t.get("user_metadata")).isEqualTo(""); // as PyTorch writes an event without one
                }
                assertThat(t.get("compile_context")).isEqualTo("N/A");
            }
        }
        assertThat(k).isEqualTo(trace.size());
        assertThat(ooms).isEqualTo(1);
        a.close();
    }

    /** The frames of a block or event: the annotation (if any) first, then the stack. */
    private static void assertFrames(List<Map<String, Object>> frames, Provenance p) {
        List<String> expected = new ArrayList<>();
        if (p.annotation() != null) {
            expected.add((p.step() >= 0 ? "<annotation step " + p.step() + ">" : "<annotation>") + ":0:" + p.annotation());
        }
        for (StackFrame f : p.stack()) {
            expected.add((f.fileName() == null ? "<unknown>" : f.fileName()) + ":" + Math.max(0, f.lineNumber()) + ":"
                    + f.function());
        }
        List<String> got = new ArrayList<>();
        for (Map<String, Object> f : frames) {
            assertThat(f.keySet()).containsExactlyInAnyOrder("filename", "line", "name");
            got.add(f.get("filename") + ":" + num(f.get("line")) + ":" + f.get("name"));
        }
        assertThat(got).containsExactlyElementsOf(expected);
    }
}
