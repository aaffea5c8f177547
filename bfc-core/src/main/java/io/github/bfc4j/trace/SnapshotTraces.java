/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryHistory;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.core.internal.NullElements;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Writes the recorded history of a {@link MemorySnapshot} as a workload trace: the live
 * workload of a real Java program, replayable by {@code bfc replay}, {@code whatif} and
 * {@code report}. Every allocation call (failed ones too, which replay as calls that may fail
 * again) becomes an {@code alloc} line preceded by its provenance (provenance extension of
 * docs/trace-format.md), every free a {@code free} line, in the order the allocator's lock
 * serialised them, so that the calls of many threads replay as the one sequence the allocator
 * saw.
 *
 * <p>The simulated sub-allocator of the header starts at {@value #SIM_BASE} (hex) with
 * {@code gap=0}, twice the memory limit of space and the coalescing of the recorded
 * sub-allocator. A replay makes the same calls; where the recorded sub-allocator returned
 * regions at other relative addresses, decisions that depend on address order (ties between
 * free chunks of equal size) may differ. A history that would replay to other decisions for
 * another reason is refused: a sub-allocator that gave a region of another size than asked
 * (more, or less after failing), failed an allocation below the memory limit, threw in a call
 * whose garbage collection had given regions back, or failed below the memory limit in an
 * attempt that the retry repeated after the attempt had grown the size of the next region, and
 * {@code emptyCache()} with calls after it (the format has no such call).
 *
 * <p>Several allocators' snapshots can be written as one trace (the shards of a
 * {@code ShardedBfcAllocator}, {@code snapshots()}): their calls merged into one sequence by
 * the time each was made (each allocator's in its own order), to replay as one allocator
 * serving all of them: its decisions (addresses, regions, failures, peaks) are its own, not the
 * shards', so the checks above apply to the trace of one allocator only.
 */
public final class SnapshotTraces {

    /** The base address of the simulated address space in the header. */
    public static final long SIM_BASE = 0x7f0000000000L;

    private SnapshotTraces() {
    }

    /**
     * The header of the trace of a snapshot, named after the allocator
     * ({@code <allocator name>: recorded}; for a shard of a {@code ShardedBfcAllocator}, by the
     * name given to its builder and the shard: {@code host (shard 0 of 2): recorded}).
     *
     * @param snapshot the snapshot
     * @return a workload trace header with the allocator's options
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws NullPointerException if {@code snapshot} is null
     */
    public static TraceHeader header(MemorySnapshot snapshot) {
        return header(snapshot, defaultName(snapshot));
    }

    /**
     * The header of the trace of a snapshot, with a {@code name} line of the caller's choosing
     * (its first word, up to a colon or space, names the allocator when {@code bfc} replays the
     * trace). The {@code source} line says that bfc4j recorded it, from which allocator (a shard
     * of a {@code ShardedBfcAllocator} by the name given to its builder and the shard:
     * {@code allocator 'host', shard 0 of 2}), and how many events.
     *
     * @param snapshot the snapshot
     * @param name the trace's name, e.g. {@code "my-server: 200 requests from 4 threads"}
     * @return a workload trace header with the allocator's options
     * @throws IllegalArgumentException if {@code name} is null, empty or holds a line break
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws NullPointerException if {@code snapshot} is null
     */
    public static TraceHeader header(MemorySnapshot snapshot, String name) {
        return header(List.of(checkSnapshot(snapshot)), name);
    }

    /**
     * The header of the trace of several allocators' snapshots (see
     * {@link #write(List, Path, String)}). Its {@code source} line names the allocators; the
     * shards of one {@code ShardedBfcAllocator} by the name given to its builder
     * ({@code allocator 'host', shards 0, 1 of 2}), each shard at most once (shards of two
     * sharded allocators of one name, a shard index coming twice, are named each as its
     * messages name it).
     *
     * @param snapshots the snapshots, at least one
     * @param name the trace's name
     * @return a workload trace header with the allocators' options
     * @throws IllegalArgumentException if {@code snapshots} is empty, or its allocators differ in
     *     what the header says (memory limit, growth, garbage collection, fragmentation fraction,
     *     sub-allocator coalescing); if {@code name} is null, empty or holds a line break
     * @throws IllegalStateException if a history cannot be a trace (see {@link #write})
     * @throws NullPointerException if {@code snapshots} or one of them is null
     */
    public static TraceHeader header(List<MemorySnapshot> snapshots, String name) {
        snapshots = checked(snapshots);
        if (snapshots.isEmpty()) {
            throw new IllegalArgumentException("no snapshot: give the snapshots of the allocators whose calls make the trace");
        }
        MemorySnapshot first = snapshots.get(0);
        BfcOptions o = first.options();
        long limit = first.memoryMap().stats().bytesLimit();
        long events = 0;
        StringBuilder names = new StringBuilder();
        StringBuilder shardIndexes = new StringBuilder();
        boolean shardsOfOne = first.shardedAllocatorName() != null;
        // One sharded allocator has each shard once: a shard index seen twice is a shard of
        // another allocator of the same name, which "allocator 'host', shards 0, 0 of 2" would
        // merge into one.
        Set<Integer> shardsSeen = new HashSet<>();
        for (MemorySnapshot s : snapshots) {
            check(s);
            BfcOptions so = s.options();
            if (s.memoryMap().stats().bytesLimit() != limit
                    || so.allowGrowth() != o.allowGrowth() || so.garbageCollection() != o.garbageCollection()
                    || Double.compare(so.fragmentationFraction(), o.fragmentationFraction()) != 0
                    || s.coalescingRegions() != first.coalescingRegions()) {
                throw new IllegalArgumentException("allocators " + oneLine(first.describedAllocator())
                        + " and " + oneLine(s.describedAllocator()) + " differ in memory limit, options or"
                        + " sub-allocator: one trace replays the calls of allocators alike (the shards of one"
                        + " ShardedBfcAllocator)");
            }
            events += s.history().events().size();
            names.append(names.length() == 0 ? "" : ", ").append(oneLine(s.describedAllocator()));
            shardIndexes.append(shardIndexes.length() == 0 ? "" : ", ").append(s.shardIndex());
            shardsOfOne = shardsOfOne && first.shardedAllocatorName().equals(s.shardedAllocatorName())
                    && s.shardCount() == first.shardCount() && shardsSeen.add(s.shardIndex());
        }
        long capacity = limit > (Long.MAX_VALUE - SIM_BASE) / 2 ? Long.MAX_VALUE - SIM_BASE : 2 * limit;
        // The shards of one sharded allocator by the name its user gave, not each shard's own (NAME/I).
        String allocators = shardsOfOne
                ? "allocator '" + oneLine(first.shardedAllocatorName()) + "', shard" + (snapshots.size() == 1 ? " " : "s ")
                        + shardIndexes + " of " + first.shardCount()
                : (snapshots.size() == 1 ? "allocator " : "allocators ") + names;
        String from = snapshots.size() == 1
                ? allocators + " (" + events + " events of its history)"
                : allocators + " (" + events + " events of their histories, merged by time)";
        return new TraceHeader(name, TraceHeader.WORKLOAD_SOURCE_PREFIX + " recorded by bfc4j from " + from,
                limit, o.allowGrowth(), o.garbageCollection(), o.fragmentationFraction(), false, SIM_BASE,
                capacity, 0, first.coalescingRegions());
    }

    /** A copy of the caller's list of snapshots, refusing a null list or snapshot by name. */
    private static List<MemorySnapshot> checked(List<MemorySnapshot> snapshots) {
        Objects.requireNonNull(snapshots, "snapshots=null (expected: the allocators' snapshots, e.g. List.of(allocator.snapshot()))");
        return NullElements.copyOf(snapshots, "snapshots", "a MemorySnapshot, e.g. allocator.snapshot()");
    }

    /**
     * Writes the trace to a file ({@code .gz}: gzip-compressed), created or replaced (written
     * beside it and moved over it once complete: a write that fails leaves the file as it was),
     * as {@link TraceWriter#write(Path, TraceWriter.Content)} writes it.
     *
     * @param snapshot the snapshot
     * @param file the trace file
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws IOException if the file cannot be written (it is left as it was), among them a
     *     {@link java.nio.file.AccessDeniedException} if it exists and may not be written
     * @throws NullPointerException if {@code snapshot} or {@code file} is null
     */
    public static void write(MemorySnapshot snapshot, Path file) throws IOException {
        write(snapshot, file, defaultName(snapshot));
    }

    /**
     * Writes the trace to a file ({@code .gz}: gzip-compressed), created or replaced as
     * {@link #write(MemorySnapshot, Path)} does, with a {@code name} line of the caller's
     * choosing (see {@link #header(MemorySnapshot, String)}).
     *
     * @param snapshot the snapshot
     * @param file the trace file
     * @param name the trace's name
     * @throws IllegalArgumentException if {@code name} is null, empty or holds a line break; if
     *     a call's provenance would make a line too long for a trace (see
     *     {@link TraceWriter#provenance})
     * @throws IllegalStateException if the history cannot be a trace (see {@link #write})
     * @throws IOException if the file cannot be written (it is left as it was)
     * @throws NullPointerException if {@code snapshot} or {@code file} is null
     */
    public static void write(MemorySnapshot snapshot, Path file, String name) throws IOException {
        write(List.of(checkSnapshot(snapshot)), file, name);
    }

    /**
     * Writes the calls of several allocators as one trace to a file ({@code .gz}:
     * gzip-compressed), created or replaced as {@link #write(MemorySnapshot, Path)} does: the
     * shards of a {@code ShardedBfcAllocator} ({@code snapshots()}), whose calls then replay as one allocator serving all of them (each
     * shard's in its order, the shards' merged by the time each call was made; the times of all
     * recordings of a process are on one clock). Every history must be complete, as for one
     * snapshot, and the allocators alike (memory limit, growth, garbage collection,
     * fragmentation fraction, sub-allocator coalescing).
     *
     * @param snapshots the snapshots, at least one
     * @param file the trace file
     * @param name the trace's name
     * @throws IllegalArgumentException if {@code snapshots} is empty or its allocators differ
     *     (see {@link #header(List, String)}); if {@code name} is null, empty or holds a line
     *     break; if a call's provenance would make a line too long for a trace (see
     *     {@link TraceWriter#provenance})
     * @throws IllegalStateException if a history cannot be a trace (see {@link #write})
     * @throws IOException if the file cannot be written (it is left as it was)
     * @throws NullPointerException if {@code snapshots}, one of them or {@code file} is null
     */
    public static void write(List<MemorySnapshot> snapshots, Path file, String name) throws IOException {
        Objects.requireNonNull(file, "file=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        List<MemorySnapshot> all = checked(snapshots);   // the list the header is made of is the one written
        TraceHeader header = header(all, name);
        // Whole or not at all: a write that fails part way (a history found inconsistent, a full
        // disk) leaves the file as it was, never a trace cut short that reads as a whole one.
        TraceWriter.write(file, w -> write(all, header, w));
    }

    /**
     * Writes the trace: the header, then one line per allocation call and free.
     *
     * @param snapshot the snapshot
     * @param w a writer whose header is not written yet
     * @throws IllegalArgumentException if a call's provenance would make a line too long for a
     *     trace (see {@link TraceWriter#provenance})
     * @throws IllegalStateException if the history is not complete ({@link MemoryHistory#isComplete()}:
     *     recorded from before the allocator's first region, with nothing dropped), the
     *     allocator had a timing counter (frontier calls are not recorded), its events' times
     *     go back (a history joined or edited: an allocator records its events in time order),
     *     or its calls would
     *     replay to other decisions (its sub-allocator gave a region of another size than asked
     *     or failed below the memory limit, in the last attempt of a call or in one that grew the
     *     size of the next region; {@code emptyCache()} gave regions back before later calls; an
     *     allocation's garbage collection gave regions back, and the call then threw)
     * @throws IOException if writing fails
     * @throws NullPointerException if {@code snapshot} or {@code w} is null
     */
    public static void write(MemorySnapshot snapshot, TraceWriter w) throws IOException {
        Objects.requireNonNull(w, "w=null (expected: a TraceWriter whose header is not written yet)");
        write(List.of(checkSnapshot(snapshot)), header(snapshot), w);
    }

    private static void write(List<MemorySnapshot> snapshots, TraceHeader header, TraceWriter w) throws IOException {
        if (snapshots.size() == 1) {
            checkReplaysAlike(snapshots.get(0));
        }
        w.header(header);
        List<List<MemoryEvent>> histories = new ArrayList<>(snapshots.size());
        List<Map<Long, Long>> traceIdOf = new ArrayList<>(snapshots.size());
        for (MemorySnapshot s : snapshots) {
            histories.add(s.history().events());
            traceIdOf.add(new HashMap<>());
        }
        long nextId = 1;
        long latest = -1;
        MemoryEvent latestEvent = null;
        int latestFrom = -1;
        for (Map.Entry<Integer, MemoryEvent> pe : MemoryHistory.mergeByTime(histories)) {
            final int from = pe.getKey();
            final MemoryEvent e = pe.getValue();
            final long time = e.provenance().timeMicros();
            if (time >= 0 && time < latest) {
                throw new IllegalStateException("the history of allocator "
                        + snapshots.get(from).describedAllocator() + " goes back in time: its " + e.kind()
                        + (e.allocationId() >= 0 ? " of allocation " + e.allocationId() : "") + " at time "
                        + time + " comes after the " + latestEvent.kind()
                        + (latestEvent.allocationId() >= 0 ? " of allocation " + latestEvent.allocationId() : "")
                        + (latestFrom == from ? "" : " of allocator "
                                + snapshots.get(latestFrom).describedAllocator())
                        + " at time " + latest + " (epoch microseconds), and a trace's times never go back."
                        + " An allocator records its events in time order: write the snapshot() of the allocator as"
                        + " taken, not a history joined or edited");
            }
            if (time >= 0) {
                latest = time;
                latestEvent = e;
                latestFrom = from;
            }
            switch (e.kind()) {
                case ALLOC, OUT_OF_MEMORY -> {
                    long id = nextId++;
                    if (e.kind() == MemoryEvent.Kind.ALLOC) {
                        traceIdOf.get(from).put(e.allocationId(), id);
                    }
                    w.provenance(id, e.provenance());
                    w.workloadAlloc(id, e.requestedBytes(), Math.max(1, e.alignment()), 0);
                }
                case FREE -> {
                    Long id = traceIdOf.get(from).remove(e.allocationId());
                    if (id == null) {
                        throw new IllegalStateException("the history of allocator "
                                + snapshots.get(from).describedAllocator() + " frees allocation "
                                + e.allocationId() + ", which it never allocated");
                    }
                    w.free(id);
                }
                default -> {
                    // Region events, and the completions of stamped frees, follow from the calls: a
                    // replay makes them again.
                }
            }
        }
    }

    /**
     * Refuses a history whose calls the trace's simulated sub-allocator would serve otherwise
     * than the live one: a region of another size than the allocator asked for (the
     * sub-allocator gave more, or failed so that the allocator asked for less), an allocation
     * that failed because the sub-allocator did (below the memory limit), regions given back by
     * {@code emptyCache()} before later calls (a trace has no such call), or regions given back
     * by the garbage collection of a call that then threw or failed only to be retried (the
     * trace would hold no call that gives them back), or a region asked for at another size than
     * the replay would ask (the allocator's region size had grown in an attempt that left no
     * event: the sub-allocator failed below the memory limit in an attempt that the retry
     * repeated). A replay of such a history would make other decisions.
     */
    private static void checkReplaysAlike(MemorySnapshot snapshot) {
        String name = snapshot.describedAllocator();
        String why = " a replay on the trace's simulated sub-allocator, which gives exactly what is asked"
                + " up to the memory limit, would make other decisions than the live allocator did";
        List<MemoryEvent> events = snapshot.history().events();
        RegionTarget target = new RegionTarget(snapshot.memoryMap().stats().bytesLimit(),
                snapshot.options().allowGrowth());
        MemoryEvent emptied = null;
        MemoryEvent collected = null;
        boolean extended = false;
        for (int i = 0; i < events.size(); i++) {
            MemoryEvent e = events.get(i);
            MemoryEvent next = i + 1 < events.size() ? events.get(i + 1) : null;
            target.check(name, e, next, why);
            if (collected != null && e.kind() != MemoryEvent.Kind.REGION_FREE) {
                // The call whose garbage collection gave regions back goes on, under the same
                // lock, to fail, or to obtain a region and allocate from it (its events come
                // next); where it did neither, the trace would hold no call that collects them.
                long r = collected.requestedBytes();
                if (!extended && e.kind() == MemoryEvent.Kind.REGION_ALLOC) {
                    extended = true;
                } else if (extended
                        ? e.kind() == MemoryEvent.Kind.ALLOC && BfcAllocator.roundedBytes(e.requestedBytes()) == r
                        : e.kind() == MemoryEvent.Kind.OUT_OF_MEMORY && e.bytes() == r) {
                    collected = null;
                    extended = false;
                } else {
                    throw uncollected(name, collected, why);
                }
            }
            switch (e.kind()) {
                case REGION_ALLOC -> {
                    if (e.bytes() != e.requestedBytes()) {
                        throw new IllegalStateException("the sub-allocator of allocator " + name + " gave a region of "
                                + e.bytes() + " bytes where the allocator asked for " + e.requestedBytes()
                                + (e.bytes() > e.requestedBytes() ? " (it gives more than asked)"
                                        : " (it failed, and the allocator asked for less)")
                                + ":" + why + "; record on a sub-allocator that gives what is asked and does not"
                                + " fail below the memory limit (a SimSubAllocator at " + hex(SIM_BASE)
                                + " replays exactly)");
                    }
                }
                case OUT_OF_MEMORY -> {
                    long available = Math.max(0, e.availableBytes()) & ~255L;
                    if (e.bytes() <= available) {
                        throw new IllegalStateException("allocator " + name + " failed an allocation of "
                                + e.requestedBytes() + " bytes with " + e.availableBytes() + " bytes left under its"
                                + " memory limit: its sub-allocator failed;" + why + "; record on a sub-allocator"
                                + " that does not fail below the memory limit");
                    }
                }
                case REGION_FREE -> {
                    if (e.requestedBytes() == 0 && emptied == null) {
                        emptied = e;
                    } else if (e.requestedBytes() != 0 && collected == null) {
                        collected = e;
                    }
                }
                default -> {
                }
            }
            if (emptied != null && e.kind() != MemoryEvent.Kind.REGION_FREE) {
                throw new IllegalStateException("allocator " + name + " gave regions back by emptyCache() (on "
                        + thread(emptied) + ", " + emptied.bytes() + " bytes at "
                        + hex(emptied.address()) + " first), and calls followed: a trace has no such call, so a"
                        + " replay would keep the regions"
                        + " and make other decisions than the live allocator did; write the snapshot taken"
                        + " before emptyCache(), or record without calling it");
            }
        }
        if (collected != null) {
            throw uncollected(name, collected, why);
        }
    }

    /**
     * The refusal of a history in which an allocation call gave regions back by garbage
     * collection (the first of them: {@code collected}) and then recorded neither a region
     * obtained nor its failure: the call threw (its sub-allocator's {@code free} or
     * {@code alloc} did), or its sub-allocator failed below the memory limit in an attempt
     * that the retry repeated. The trace has no call that gives the regions back.
     */
    private static IllegalStateException uncollected(String name, MemoryEvent collected, String why) {
        return new IllegalStateException("allocator " + name + " gave regions back by garbage collection for a"
                + " request of " + collected.requestedBytes() + " bytes (on " + thread(collected)
                + ", " + collected.bytes() + " bytes at " + hex(collected.address()) + " first), and that call"
                + " then obtained no region and did not fail: it threw (its sub-allocator's free or alloc did), or"
                + " its sub-allocator failed below the memory limit in an attempt that the retry repeated; the trace"
                + " would not hold the regions given back, so" + why + "; record on a sub-allocator that neither"
                + " throws nor fails below the memory limit");
    }

    /** The thread an event names, for a message: a replayed call's may be unknown. */
    private static String thread(MemoryEvent e) {
        return e.provenance().thread() == null ? "a thread not known" : "thread '" + e.provenance().thread() + "'";
    }

    /**
     * The size of the next region as a replay's allocator sets it ({@code Extend}'s
     * {@code curr_region_allocation_bytes_}), followed through the regions of a history: the
     * start, then for each region obtained, the doubling to fit the request that obtained it
     * and the doubling after it. Only an {@code Extend} that obtains a region changes it in a
     * history that the other checks accept: one that fails for the memory limit fails before
     * doubling, and one whose sub-allocator fails is refused where it is the call's last attempt
     * (its out-of-memory event). A region asked for at another size than this one grew in an
     * earlier attempt that left no event (a sub-allocator that failed below the memory limit in
     * an attempt that the retry repeated): the replay, whose first attempt obtains the region,
     * asks for other sizes from then on.
     */
    private static final class RegionTarget {
        private final long limit;
        private long target;
        private long poolBytes;
        private boolean known = true;

        RegionTarget(long limit, boolean allowGrowth) {
            this.limit = limit;
            // As BFCAllocator's constructor: 2 MiB first with growth (unless the limit is less).
            this.target = rounded(allowGrowth ? Math.min(limit, 2L << 20) : limit);
        }

        /**
         * Follows event {@code e} ({@code next} the event after it, or null).
         *
         * @throws IllegalStateException if a region was asked for at another size than a replay
         *     would ask
         */
        void check(String name, MemoryEvent e, MemoryEvent next, String why) {
            if (e.kind() == MemoryEvent.Kind.REGION_FREE) {
                poolBytes -= e.bytes();
                return;
            }
            if (e.kind() != MemoryEvent.Kind.REGION_ALLOC) {
                return;
            }
            // The call that obtained the region allocates from it next, under the same lock (a
            // chunk that may begin in the free end of the region it extended, where the
            // sub-allocator coalesces).
            if (known && (next == null || next.kind() != MemoryEvent.Kind.ALLOC
                    || next.address() >= e.address() + e.bytes() || next.address() + next.bytes() <= e.address())) {
                known = false; // its request is not known: stop following the target
            }
            if (known) {
                long request = rounded(next.requestedBytes());
                boolean increased = false;
                while (Long.compareUnsigned(request, target) > 0) {
                    target = doubled(target);
                    increased = true;
                }
                long available = (Math.max(0, limit - poolBytes) >>> 8) << 8;
                long expected = Long.compareUnsigned(target, available) < 0 ? target : available;
                if (e.requestedBytes() != expected) {
                    throw new IllegalStateException("allocator " + name + " asked its sub-allocator for a region"
                            + " of " + e.requestedBytes() + " bytes for a request of " + next.requestedBytes()
                            + " bytes (on " + thread(e) + ", at " + hex(e.address()) + "),"
                            + " where a replay would ask for " + expected + ": its region size grew in an attempt"
                            + " that left no event (its sub-allocator failed below the memory limit in an"
                            + " attempt that the retry repeated, or threw after such an attempt);" + why
                            + "; record on a sub-allocator that neither throws nor fails below the memory limit");
                }
                if (!increased) {
                    target = doubled(target);
                }
            }
            poolBytes += e.bytes();
        }

        /** {@code RoundedBytes}, unsigned as upstream's {@code size_t}. */
        private static long rounded(long bytes) {
            return ((bytes + 255) >>> 8) << 8;
        }

        /** Doubled modulo 2^64, staying at 2^63 where that gives 0 (deviations.md #6). */
        private static long doubled(long bytes) {
            long twice = bytes << 1;
            return twice == 0 ? Long.MIN_VALUE : twice;
        }
    }

    private static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }

    private static String defaultName(MemorySnapshot snapshot) {
        MemorySnapshot s = checkSnapshot(snapshot);
        // A shard's by the name its user gave ("host (shard 0 of 2)"): its first word names the
        // allocator of a replay.
        return oneLine(s.shardedAllocatorName() == null ? s.memoryMap().allocatorName()
                : s.shardedAllocatorName() + " (shard " + s.shardIndex() + " of " + s.shardCount() + ")") + ": recorded";
    }

    private static MemorySnapshot checkSnapshot(MemorySnapshot snapshot) {
        return Objects.requireNonNull(snapshot, "snapshot=null (expected: an allocator's snapshot(), taken with"
                + " its history recorded from the start)");
    }

    private static String oneLine(String text) {
        return text.replace('\n', ' ').replace('\r', ' ');
    }

    private static void check(MemorySnapshot snapshot) {
        MemoryHistory h = snapshot.history();
        if (h.options() == null) {
            throw new IllegalStateException("allocator " + snapshot.describedAllocator() + " recorded no"
                    + " history: call recordHistory(...) before its first allocation to write its workload as a trace");
        }
        if (!h.startedEmpty()) {
            throw new IllegalStateException("the history of allocator " + snapshot.describedAllocator()
                    + " starts after it had obtained memory: call recordHistory(...) before its first allocation"
                    + " to write its workload as a trace");
        }
        if (h.droppedEvents() > 0) {
            throw new IllegalStateException("the history of allocator " + snapshot.describedAllocator()
                    + " dropped its " + h.droppedEvents() + " oldest events: record with"
                    + " HistoryOptions.builder().maxEntries(n) large enough for the whole workload (it holds "
                    + h.options().maxEntries() + ")");
        }
        if (snapshot.timingCounterUsed()) {
            throw new IllegalStateException("allocator " + snapshot.describedAllocator() + " had a timing"
                    + " counter: its frontier calls are not in the history, so it cannot be written as a trace");
        }
    }
}
