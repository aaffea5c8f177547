/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 * The layout written here follows the dictionary documented by PyTorch's
 * torch.cuda.memory._snapshot() and read by torch/utils/viz/MemoryViz.js (pytorch/pytorch,
 * BSD-3-Clause); no PyTorch code is copied.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ReplacingFile;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Writes a {@link MemorySnapshot} as PyTorch's memory snapshot: the pickled dictionary of
 * {@code torch.cuda.memory._snapshot()}, which pytorch.org/memory_viz and
 * {@code torch.cuda._memory_viz} read. The mapping (docs/observability.md):
 * <ul>
 *   <li>each region is a segment ({@code device} the snapshot's {@link MemorySnapshot#deviceId()}
 *       unless written for another device,
 *       {@code stream} 0 (for the shards of a
 *       {@link ShardedBfcAllocator}: the shard's index, on its events too), {@code segment_pool_id}
 *       (0, 0), {@code segment_type} {@code "large"} above 1 MiB, {@code is_expandable} when
 *       the sub-allocator merges regions); its chunks are its blocks, in address order, so that
 *       they tile it ({@code active_allocated} in use, {@code active_pending_free} freed but
 *       not yet safe and still naming the allocation freed into it ({@link #pendingFree}),
 *       {@code inactive} free);</li>
 *   <li>the history, if still recording, is {@code device_traces[device]} (the lists before
 *       it empty; a stopped recording's list empty too, as PyTorch's): an
 *       allocation is {@code alloc}, a free is
 *       {@code free_requested}, then {@code free_completed} at the same time, or, for a free
 *       stamped by a timing counter, where its {@code FREE_COMPLETED} event is (when the
 *       allocator learnt that the safe frontier passed it), only
 *       {@code free_requested} for the free of a block written {@code active_pending_free}, a region
 *       obtained or given back is {@code segment_alloc}/{@code segment_free} (with a
 *       coalescing sub-allocator {@code segment_map}/{@code segment_unmap}, which the viewer
 *       merges with a neighbouring segment as PyTorch's expandable segments), a failure is
 *       {@code oom} with {@code device_free} = limit - reserved;</li>
 *   <li>sizes of allocation events are the requested bytes, as PyTorch's; {@code time_us} is
 *       epoch microseconds;</li>
 *   <li>frames are {@code {filename, line, name}}, innermost first; an annotation is the first
 *       frame ({@code name} the annotation, {@code filename} {@code "<annotation>"} or
 *       {@code "<annotation step N>"}, {@code line} 0) and also {@code user_metadata}; a step
 *       given without a name is {@code user_metadata} {@code "step N"} alone.</li>
 * </ul>
 * Every list of frames is made once for each distinct (annotation, step, stack), and every
 * frame once, and {@link PickleWriter} writes each of them once: the stacks that many events
 * share are written once, however many allocations made them.
 */
final class PyTorchSnapshotWriter {

    private static final long LARGE_SEGMENT_BYTES = 1L << 20;
    /** PyTorch's {@code compile_context} of an event outside torch.compile. */
    private static final String NO_COMPILE_CONTEXT = "N/A";

    /** The frames of each distinct (annotation, step, stack), built once and shared. */
    private final Map<FramesKey, List<Map<String, Object>>> framesOf = new HashMap<>();
    /** The dictionary of each distinct frame, built once and shared. */
    private final Map<StackFrame, Map<String, Object>> frameDicts = new HashMap<>();
    private final List<Map<String, Object>> noFrames = new ArrayList<>();
    /** The CUDA ordinal the segments carry, and the index of the history in device_traces. */
    private final int device;

    /** The largest device ordinal written: the lists before a device's history are written too. */
    static final int MAX_DEVICE = 1023;

    private PyTorchSnapshotWriter(int device) {
        this.device = checkDevice(device);
    }

    /** @return {@code device}, if a device ordinal this writer takes */
    static int checkDevice(int device) {
        if (device < 0 || device > MAX_DEVICE) {
            throw new IllegalArgumentException("device=" + device + " (expected: a CUDA device ordinal, 0 to "
                    + MAX_DEVICE + ")");
        }
        return device;
    }

    /** Writes a pickle to a stream. */
    @FunctionalInterface
    interface Body {
        void writeTo(OutputStream out) throws IOException;
    }

    /**
     * Writes {@code body} to {@code file}: to a temporary file beside it, moved over it once
     * complete, so that a failure leaves the file as it was and no partial pickle behind.
     */
    static void toFile(Path file, Body body) throws IOException {
        Objects.requireNonNull(file, "file=null (expected: the file to write, e.g. Path.of(\"snapshot.pickle\"))");
        ReplacingFile.write(file, tmp -> {
            try (OutputStream out = Files.newOutputStream(tmp)) {
                body.writeTo(out);
            }
        });
    }

    static void write(MemorySnapshot snapshot, int device, OutputStream out) throws IOException {
        write(snapshot.coalescingRegions(), List.of(Part.of(0, snapshot)), device, out);
    }

    /**
     * The events of a history that the pickle carries: those of a recording still on when the
     * snapshot was taken, else none. As PyTorch clears its trace when recording stops: a stopped
     * ring says nothing of what the allocator did since, and the viewer, replaying it backwards
     * from the segments of now, would find blocks in no segment. The segments' frames come from
     * these events too, so a stopped ring gives none.
     */
    private static List<MemoryEvent> traced(MemoryHistory history) {
        return history.recording() ? history.events() : List.of();
    }

    /**
     * The regions and history of one allocator, written as one stream.
     *
     * @param stream the {@code stream} of its segments, blocks and events
     * @param regions its regions, in address order
     * @param events its history, oldest first
     * @param dropped whether its ring dropped older events
     * @param startMicros when its recording started ({@link MemoryHistory#startMicros()})
     */
    record Part(long stream, List<MemoryMap.Region> regions, List<MemoryEvent> events, boolean dropped,
            long startMicros) {
        /** An allocator's snapshot as a part: its regions, and its history if still recording. */
        static Part of(long stream, MemorySnapshot s) {
            return new Part(stream, s.memoryMap().regions(), traced(s.history()), s.history().droppedEvents() > 0,
                    s.history().startMicros());
        }

        /** The same part without its events. */
        Part withoutEvents() {
            return new Part(stream, regions, List.of(), false, startMicros);
        }
    }

    /**
     * Writes the snapshots of the shards of a {@link ShardedBfcAllocator}, in shard order, as one
     * snapshot of their device (the first shard's {@link MemorySnapshot#deviceId()}: they share
     * one sub-allocator) whose stream {@code i} is shard {@code i}. While a shard records no
     * history (stopped, or not started yet: {@code recordHistory} and {@code stopHistory} reach
     * the shards one after another, and a shard's own calls reach it alone), the other shards'
     * events would meet ranges it obtained or gave back unrecorded: then no shard's events are
     * written, as for one allocator whose recording stopped ({@link #traced}).
     */
    static void writeShards(List<MemorySnapshot> shards, OutputStream out) throws IOException {
        boolean allRecording = true;
        for (MemorySnapshot s : shards) {
            allRecording &= s.history().recording();
        }
        List<Part> parts = new ArrayList<>(shards.size());
        for (int i = 0; i < shards.size(); i++) {
            Part p = Part.of(i, shards.get(i));
            parts.add(allRecording ? p : p.withoutEvents());
        }
        write(shards.get(0).coalescingRegions(), parts, shards.get(0).deviceId(), out);
    }

    /**
     * Writes several allocators (the shards of a {@link ShardedBfcAllocator}) as one snapshot:
     * all their regions as segments in address order, and their histories as one timeline
     * ({@link MemoryHistory#mergeByTime}, from the first event of the latest window that a ring
     * dropping events kept: {@link #windowStart}); each part's segments and events carry its stream, so
     * that the viewer never merges segments of two parts.
     */
    static void write(boolean coalescing, List<Part> parts, int device, OutputStream out) throws IOException {
        Objects.requireNonNull(out, "out=null (expected: the stream to write the pickle to)");
        PyTorchSnapshotWriter w = new PyTorchSnapshotWriter(device);
        Map<String, Object> root = w.dictionary(coalescing, parts);
        PickleWriter.write(root, w.shared(), out);
        out.flush();
    }

    private Map<String, Object> dictionary(boolean coalescing, List<Part> parts) {
        List<Object> segments = new ArrayList<>();
        List<List<MemoryEvent>> histories = new ArrayList<>();
        List<Segment> regions = new ArrayList<>();
        Set<MemoryEvent> stillPending = Collections.newSetFromMap(new IdentityHashMap<>());
        Set<MemoryEvent> completedLater = Collections.newSetFromMap(new IdentityHashMap<>());
        final MemoryEvent cut = windowStart(parts);
        final long startCut = latestStart(parts);
        for (Part part : parts) {
            histories.add(part.events());
            stillPending.addAll(freesStillPending(part));
            completedLater.addAll(completions(part.events(), cut, startCut));
            Map<Long, Provenance> obtained = regionsObtained(part.events());
            for (MemoryMap.Region r : part.regions()) {
                regions.add(new Segment(part.stream(), r, obtained.getOrDefault(r.ptr(), Provenance.UNKNOWN)));
            }
        }
        regions.sort(Comparator.comparingLong(sr -> sr.region().ptr()));
        for (Segment sr : regions) {
            MemoryMap.Region r = sr.region();
            long allocated = 0;
            long active = 0;
            long requested = 0;
            List<Object> blocks = new ArrayList<>(r.chunks().size());
            for (MemoryMap.Chunk c : r.chunks()) {
                // PyTorch's active block: allocated, or freed with its free pending on a stream
                // (its requested size and frames are still the allocation's).
                final boolean pending = pendingFree(c);
                final boolean isActive = c.inUse() || pending;
                Map<String, Object> b = new LinkedHashMap<>();
                b.put("address", c.ptr());
                b.put("size", c.size());
                // An inactive block's too, as PyTorch's snapshot() writes every block's: that of
                // the chunk's last allocation (0 for a chunk split off and never allocated).
                b.put("requested_size", c.requestedSize());
                b.put("state", c.inUse() ? "active_allocated" : pending ? "active_pending_free" : "inactive");
                b.put("frames", isActive ? frames(c.provenance()) : noFrames);
                blocks.add(b);
                if (c.inUse()) {
                    allocated += c.size();
                }
                if (isActive) {
                    active += c.size();
                    requested += c.requestedSize();
                }
            }
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("device", (long) device);
            s.put("address", r.ptr());
            s.put("total_size", r.size());
            s.put("allocated_size", allocated);
            s.put("active_size", active);
            s.put("requested_size", requested);
            s.put("stream", sr.stream());
            s.put("segment_type", r.size() > LARGE_SEGMENT_BYTES ? "large" : "small");
            s.put("segment_pool_id", new Object[] {0L, 0L});
            s.put("is_expandable", coalescing);
            s.put("frames", frames(sr.obtained()));
            s.put("blocks", blocks);
            segments.add(s);
        }
        List<Object> trace = new ArrayList<>();
        for (Map.Entry<Integer, MemoryEvent> pe : MemoryHistory.mergeByTime(histories)) {
            long stream = parts.get(pe.getKey()).stream();
            MemoryEvent e = pe.getValue();
            if (beforeTimeline(e, cut, startCut)) {
                continue;
            }
            switch (e.kind()) {
                case ALLOC -> trace.add(entry("alloc", e.address(), e.requestedBytes(), stream, e.provenance()));
                case FREE -> {
                    trace.add(entry("free_requested", e.address(), e.requestedBytes(), stream, e.provenance()));
                    // A free still pending when the snapshot was taken has not completed; one
                    // whose FREE_COMPLETED is in the history completes there. Any other completes
                    // when it was requested: it never waited (no timing counter, or stamped below
                    // the frontier), or its chunk was allocated again or merged while it waited
                    // (PyTorch never hands out or merges a pending block).
                    if (!stillPending.contains(e) && !completedLater.contains(e)) {
                        trace.add(entry("free_completed", e.address(), e.requestedBytes(), stream, e.provenance()));
                    }
                }
                case FREE_COMPLETED -> {
                    // Written where its free is in the history written (else its block is simply
                    // free from the start of the trace).
                    if (completedLater.contains(e)) {
                        trace.add(entry("free_completed", e.address(), e.requestedBytes(), stream, e.provenance()));
                    }
                }
                case REGION_ALLOC -> trace.add(entry(coalescing ? "segment_map" : "segment_alloc", e.address(),
                        e.bytes(), stream, e.provenance()));
                case REGION_FREE -> trace.add(entry(coalescing ? "segment_unmap" : "segment_free", e.address(),
                        e.bytes(), stream, e.provenance()));
                case OUT_OF_MEMORY -> {
                    Map<String, Object> t = new LinkedHashMap<>();
                    t.put("action", "oom");
                    t.put("device_free", Math.max(0, e.availableBytes()));
                    t.put("size", e.requestedBytes());
                    t.put("stream", stream);
                    t.put("time_us", Math.max(0, e.provenance().timeMicros()));
                    metadata(t, e.provenance());
                    t.put("frames", frames(e.provenance()));
                    trace.add(t);
                }
                default -> throw new IllegalStateException("unknown event kind " + e.kind());
            }
        }
        List<Object> deviceTraces = new ArrayList<>();
        for (int d = 0; d < device; d++) {
            deviceTraces.add(List.of());
        }
        deviceTraces.add(trace);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("segments", segments);
        root.put("device_traces", deviceTraces);
        root.put("external_annotations", List.of()); // PyTorch's annotations of its own; none here
        return root;
    }

    /**
     * Where the merged timeline of several parts starts for their recordings' starts
     * ({@link Long#MIN_VALUE}, no cut, for one part, whose times may be a replayed trace's): the
     * timeline keeps no event from before the latest microsecond in which a part's
     * recording started, since the other parts' events from before it would meet a state that
     * the later part's events from before its start made (a range given back by one shard, and
     * obtained by another before its recording restarted). A part's events in that microsecond
     * are kept from its first one on ({@link #windowStart}), the others' events in it are not. A
     * recording's start takes a stamp of the clock every event's stamp comes from, so every
     * event before it has a time of at most that microsecond. (The parts' times are the clock's:
     * only one allocator replays a trace's times.)
     */
    private static long latestStart(List<Part> parts) {
        long start = Long.MIN_VALUE;
        if (parts.size() > 1) {
            for (Part part : parts) {
                if (part.events().isEmpty() || part.events().get(0).provenance().timeMicros() != part.startMicros()) {
                    start = Math.max(start, part.startMicros());
                }
            }
        }
        return start;
    }

    /**
     * Where the merged timeline of several parts starts: each ring that dropped events keeps a
     * window of its own, and before the latest of those windows' first events another part's
     * events would meet a part's state that its dropped events made (a range given back by one
     * shard, and obtained by another in an event dropped), so the viewer would draw one range in
     * two segments. So does, among several parts, the first event of a part recorded in the
     * microsecond its recording started ({@link #latestStart}). Null if there is no such event.
     */
    private static MemoryEvent windowStart(List<Part> parts) {
        MemoryEvent start = null;
        for (Part part : parts) {
            if (!part.events().isEmpty() && (part.dropped()
                    || parts.size() > 1 && part.events().get(0).provenance().timeMicros() == part.startMicros())) {
                MemoryEvent first = part.events().get(0);
                if (start == null || MemoryHistory.before(start, first)) {
                    start = first;
                }
            }
        }
        return start;
    }

    /**
     * Whether a chunk is written as PyTorch's {@code active_pending_free} block: free, its free
     * not yet safe (a timing counter's stamp at or after the safe frontier), and still the chunk
     * that free left, which the memory map says by naming the allocation freed into it. A chunk
     * not yet safe that names none (merged with another waiting chunk, or split since; or freed
     * while nothing was recorded) is no one allocation's block: PyTorch never merges or splits a
     * block whose free is pending, and has no state for it; it is written {@code inactive}.
     */
    private static boolean pendingFree(MemoryMap.Chunk c) {
        return !c.inUse() && c.notYetSafe() && c.provenance().isKnown();
    }

    /**
     * The {@code FREE} events of one part whose free was still pending when its snapshot was
     * taken: for each chunk written {@code active_pending_free}, the last allocation or free
     * event at its address, if that is a free of its size and requested size (the chunk has not
     * changed since that free). Its trace gets {@code free_requested} and no
     * {@code free_completed}, as PyTorch's trace of a free whose stream use has not completed.
     */
    private static Set<MemoryEvent> freesStillPending(Part part) {
        Map<Long, MemoryMap.Chunk> pendingAt = new HashMap<>();
        for (MemoryMap.Region r : part.regions()) {
            for (MemoryMap.Chunk c : r.chunks()) {
                if (pendingFree(c)) {
                    pendingAt.put(c.ptr(), c);
                }
            }
        }
        Set<MemoryEvent> pending = Collections.newSetFromMap(new IdentityHashMap<>());
        if (pendingAt.isEmpty()) {
            return pending;
        }
        Map<Long, MemoryEvent> lastAt = new HashMap<>();
        for (MemoryEvent e : part.events()) {
            if ((e.kind() == MemoryEvent.Kind.ALLOC || e.kind() == MemoryEvent.Kind.FREE)
                    && pendingAt.containsKey(e.address())) {
                lastAt.put(e.address(), e);
            }
        }
        for (MemoryEvent e : lastAt.values()) {
            MemoryMap.Chunk c = pendingAt.get(e.address());
            if (e.kind() == MemoryEvent.Kind.FREE && e.bytes() == c.size() && e.requestedBytes() == c.requestedSize()) {
                pending.add(e);
            }
        }
        return pending;
    }

    /**
     * The events of one part that pair a free with its later completion: each
     * {@code FREE_COMPLETED} whose {@code FREE} (the same allocation's, at the same address) is
     * in the events written (none {@link #beforeTimeline}), and that {@code FREE}.
     */
    private static Set<MemoryEvent> completions(List<MemoryEvent> events, MemoryEvent cut, long startCut) {
        Set<MemoryEvent> paired = Collections.newSetFromMap(new IdentityHashMap<>());
        Map<Long, MemoryEvent> freeOf = new HashMap<>();
        for (MemoryEvent e : events) {
            if (beforeTimeline(e, cut, startCut)) {
                continue;
            }
            if (e.kind() == MemoryEvent.Kind.FREE) {
                freeOf.put(e.allocationId(), e);
            } else if (e.kind() == MemoryEvent.Kind.FREE_COMPLETED) {
                MemoryEvent free = freeOf.remove(e.allocationId());
                if (free != null && free.address() == e.address()) {
                    paired.add(free);
                    paired.add(e);
                }
            }
        }
        return paired;
    }

    /** Whether an event comes before the merged timeline ({@link #windowStart}, {@link #latestStart}). */
    private static boolean beforeTimeline(MemoryEvent e, MemoryEvent cut, long startCut) {
        return cut != null && MemoryHistory.before(e, cut) || e.provenance().timeMicros() <= startCut;
    }

    /** A region of one part, with the provenance of the event that obtained it (if known). */
    private record Segment(long stream, MemoryMap.Region region, Provenance obtained) {
    }

    /**
     * The provenance of each region that one allocator's events leave obtained: the last
     * {@code REGION_ALLOC} at an address with no {@code REGION_FREE} there after it. Only the
     * allocator's own events, so that a region at an address another allocator (shard) held
     * before shows its own owner; a region obtained before the events kept is not in it.
     */
    private static Map<Long, Provenance> regionsObtained(List<MemoryEvent> events) {
        Map<Long, Provenance> obtained = new HashMap<>();
        for (MemoryEvent e : events) {
            if (e.kind() == MemoryEvent.Kind.REGION_ALLOC) {
                obtained.put(e.address(), e.provenance());
            } else if (e.kind() == MemoryEvent.Kind.REGION_FREE) {
                obtained.remove(e.address());
            }
        }
        return obtained;
    }

    private Map<String, Object> entry(String action, long addr, long size, long stream, Provenance p) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("action", action);
        t.put("addr", addr);
        t.put("size", size);
        t.put("stream", stream);
        t.put("time_us", Math.max(0, p.timeMicros()));
        metadata(t, p);
        t.put("frames", frames(p));
        return t;
    }

    /**
     * What PyTorch puts on every event besides the frames: {@code compile_context} (torch.compile's;
     * {@code "N/A"} outside it, as PyTorch writes it) and {@code user_metadata} (the annotation
     * as the holders name it, a step given without a name included, or {@code ""}).
     */
    private static void metadata(Map<String, Object> t, Provenance p) {
        t.put("compile_context", NO_COMPILE_CONTEXT);
        String label = Provenance.annotationLabel(p.annotation(), p.step());
        t.put("user_metadata", label == null ? "" : label);
    }

    /** The objects that the dictionary holds in more than one place: the frames and their lists. */
    private Set<Object> shared() {
        Set<Object> shared = Collections.newSetFromMap(new IdentityHashMap<>());
        shared.add(noFrames);
        shared.addAll(framesOf.values());
        shared.addAll(frameDicts.values());
        return shared;
    }

    /** What makes two provenances' frames the same list. */
    private record FramesKey(String annotation, long step, List<StackFrame> stack) {
    }

    /**
     * The frames of a provenance: the annotation first (if any), then the stack; one list for
     * all provenances with the same annotation, step and stack.
     */
    private List<Map<String, Object>> frames(Provenance p) {
        if (p.annotation() == null && p.stack().isEmpty()) {
            return noFrames;
        }
        long step = p.annotation() == null ? -1 : p.step();
        return framesOf.computeIfAbsent(new FramesKey(p.annotation(), step, p.stack()), k -> {
            if (k.annotation() == null) {
                return stackFrames(k.stack(), null);
            }
            Map<String, Object> annotation = new LinkedHashMap<>();
            annotation.put("filename", k.step() >= 0 ? "<annotation step " + k.step() + ">" : "<annotation>");
            annotation.put("line", 0L);
            annotation.put("name", k.annotation());
            return stackFrames(k.stack(), annotation);
        });
    }

    private List<Map<String, Object>> stackFrames(List<StackFrame> stack, Map<String, Object> first) {
        List<Map<String, Object>> list = new ArrayList<>(stack.size() + 1);
        if (first != null) {
            list.add(first);
        }
        for (StackFrame f : stack) {
            list.add(frameDicts.computeIfAbsent(f, k -> {
                Map<String, Object> d = new LinkedHashMap<>();
                d.put("filename", f.fileName() == null ? "<unknown>" : f.fileName());
                d.put("line", (long) Math.max(0, f.lineNumber()));
                d.put("name", f.function());
                return d;
            }));
        }
        return list;
    }
}
