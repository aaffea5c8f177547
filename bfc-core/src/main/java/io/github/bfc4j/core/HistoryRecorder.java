/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import io.github.bfc4j.core.internal.ReplayedCall;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The provenance an allocator records: the ring of recent events
 * ({@link BfcAllocator#recordHistory}) and, beside the chunk table, who holds each live chunk
 * ({@link BfcAllocator#recordAnnotations}, and with history the time, thread and stack).
 * A {@link PortListener}: the allocator installs it only while {@link #isOn()}, so that with
 * nothing recorded its event points are not called at all. Everything is guarded by the
 * allocator's lock.
 *
 * <p>Storage is struct-of-arrays, allocated when recording starts and grown (doubling, by chunk
 * handle) on the slow path only: with stacks off, recording an event stores primitives and
 * references that already exist (the thread's name, the annotation's name) and creates no
 * object. A stack is one immutable list per sampled allocation, shared by its event and its
 * chunk.
 */
final class HistoryRecorder extends PortListener {

    /**
     * Annotation names kept per allocator: when the table is full, the names no live chunk holds
     * are forgotten ({@link #compactNames}); only while most of this many (more than three
     * quarters) are held by live chunks at once are further chunks marked with
     * {@link #TOO_MANY_NAMES}.
     */
    private static final int MAX_NAMES = 1 << 16;
    private static final String TOO_MANY_NAMES = "(more than 65536 annotation names)";

    private static final byte ALLOC = 0;
    private static final byte FREE = 1;
    private static final byte REGION_ALLOC = 2;
    private static final byte REGION_FREE = 3;
    private static final byte OUT_OF_MEMORY = 4;
    private static final byte FREE_COMPLETED = 5;
    private static final MemoryEvent.Kind[] KINDS = {
        MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE, MemoryEvent.Kind.REGION_ALLOC,
        MemoryEvent.Kind.REGION_FREE, MemoryEvent.Kind.OUT_OF_MEMORY, MemoryEvent.Kind.FREE_COMPLETED};

    /**
     * bfc4j's own frames, left out of the top of a stack: the allocator's packages, and
     * ({@link #OWN_ADAPTERS}) the adapters of bfc4j's other modules that allocate on a caller's
     * behalf. Any other class stays, whatever its name: an application's, one in a package under
     * {@code io.github.bfc4j}, and bfc4j's own examples and tests.
     */
    private static final Set<String> OWN_PACKAGES = Set.of("io.github.bfc4j.core", "io.github.bfc4j.core.internal",
            "io.github.bfc4j.core.sim", "io.github.bfc4j.trace");

    /**
     * The adapters (top-level classes; their nested classes and lambdas go with them) that
     * allocate for the code that calls them, named here since core imports none of their modules.
     */
    private static final Set<String> OWN_ADAPTERS = Set.of("io.github.bfc4j.cuda.GpuBfcAllocator",
            "io.github.bfc4j.onnxruntime.BfcOrtAllocator", "io.github.bfc4j.onnxruntime.BfcCudaProvider",
            "io.github.bfc4j.tensorflow.BfcTensors");

    /** bfc4j's own frames above the application's, at most: added to the walker's first batch. */
    private static final int OWN_FRAMES = 16;

    private final PortView view;
    /** A look at one chunk at a time, reused (guarded by the lock). */
    private final ChunkWalk look;
    /**
     * The provenance of the latest failure, for the out-of-memory report of the same call; null
     * until then (no record object stays reachable from an allocator that records nothing:
     * Lincheck's model checker cannot look into records).
     */
    private Provenance lastFailure;

    HistoryRecorder(PortView view) {
        this.view = view;
        this.look = view.walk();
    }

    // ---- switches
    private boolean annotations;
    private HistoryOptions options;
    private boolean on;
    /**
     * Walks stacks; its depth estimate (the options' depth plus bfc4j's own frames) lets it
     * fetch the frames in one batch (measured: 40% less time per walk than the default).
     */
    private StackWalker walker;
    /** One copy of each stack captured while recording (made when recording starts). */
    private StackInterner stacks;

    // ---- the clock
    /**
     * One clock for every recording in the process, so that the times of two allocators'
     * events compare (the shards of a {@link ShardedBfcAllocator}, merged into one timeline):
     * epoch microseconds read once, then advanced by the monotonic clock (each recording
     * anchoring its own wall-clock reading, to the millisecond, could put two shards' events up
     * to a millisecond out of order).
     */
    private static final long ORIGIN_NANOS = System.nanoTime();
    private static final long ORIGIN_MICROS = System.currentTimeMillis() * 1000;
    /**
     * The stamps of every event recorded in the process ({@link MemoryEvent#sequence()}): epoch
     * microseconds shifted left by {@link #STAMP_SHIFT}, the low bits a count within the
     * microsecond, each stamp strictly above the last. Two events of two allocators, one taken
     * after the other (a range given back by one and obtained by the other), get stamps in that
     * order even within one microsecond, so the shards of a {@link ShardedBfcAllocator} merge
     * causally. Only recording touches it (one atomic update per event, not on the path of an
     * allocator that records no history); a stamp runs ahead of the clock only past 1,024
     * events in one microsecond.
     */
    private static final AtomicLong LAST_STAMP = new AtomicLong();
    private static final int STAMP_SHIFT = 10;

    // ---- the ring (history)
    private long startMicros = -1;
    /**
     * Whether this recording has met a replayed trace's time ({@link ReplayedCall}): until then
     * its events carry the recording's own clock, which the first such time then bounds
     * ({@link #firstRecordedTime}); from then on every event carries {@link #latestRecordedTime}.
     */
    private boolean recordedTimeSeen;
    /**
     * The latest time a replayed trace gave in this recording, once {@link #recordedTimeSeen}:
     * the time of every event recorded since, a live call's too, so that the recording's times
     * never go back.
     */
    private long latestRecordedTime;
    private boolean startedEmpty;
    private HistoryOptions lastOptions;
    private int head; // next slot to write
    private int count;
    private long dropped;
    private long allocCalls;
    private byte[] kind;
    private long[] time; // the events' stamps (stamp())
    private long[] when; // the events' times: a replayed trace's (ReplayedCall), else micros(stamp)
    private long[] addr;
    private long[] bytes;
    private long[] requested;
    private long[] alignment;
    private long[] allocationId;
    private long[] available;
    private String[] thread;
    private String[] annotation;
    private long[] step;
    private Object[] stack;

    // ---- per chunk, indexed by handle; valid only while chunkAllocationId[h] is the chunk's id,
    // or, negated, the id of the allocation freed into a timestamped chunk (that free is not safe
    // until the timing counter's frontier passes it), while the chunk is still that chunk: its
    // address, size and stamp those of chunkFreedPtr[h], chunkFreedSize[h], chunkFreedStamp[h]
    private long[] chunkAllocationId = new long[0];
    private long[] chunkFreedPtr = new long[0];
    private long[] chunkFreedSize = new long[0];
    private long[] chunkFreedStamp = new long[0];
    private int[] chunkName = new int[0]; // 1 + index into names; 0: none
    private long[] chunkStep = new long[0];
    private long[] chunkTime = new long[0];
    private String[] chunkThread = new String[0];
    private Object[] chunkStack = new Object[0];
    // ---- the stamped frees recorded while the history is on, waiting for the safe frontier, in
    // the order they were stamped (a ring, grown on the slow path): handle, allocation id, stamp
    private int[] waitingHandle = new int[0];
    private long[] waitingId = new long[0];
    private long[] waitingStamp = new long[0];
    private int waitingHead;
    private int waitingCount;
    /**
     * Whether a free waits for the frontier ({@link #awaitsFrontier()}): read by
     * {@code setSafeFrontier} without the lock, written under it.
     */
    private volatile boolean awaitingFrontier;

    private final List<String> names = new ArrayList<>();
    private final Map<String, Integer> nameIds = new HashMap<>();
    /** New names asked for since the table was last compacted. */
    private int namesSinceCompaction;
    /** By name id: how many chunks hold the name ({@link #holdName}, {@link #releaseName}). */
    private int[] nameRefs = new int[1];
    /** How many names at least one chunk holds: the ids whose {@link #nameRefs} is above 0. */
    private int liveNames;

    /** Whether anything is recorded: the allocator calls the event points only then. */
    boolean isOn() {
        return on;
    }

    /** Whether provenance was ever recorded (annotations on, or a history started). */
    boolean recorded() {
        return annotations || lastOptions != null;
    }

    boolean annotationsOn() {
        return annotations;
    }

    HistoryOptions options() {
        return options;
    }

    void recordAnnotations(boolean enabled) {
        boolean wasOn = on;
        annotations = enabled;
        on = annotations || options != null;
        if (on && !wasOn) {
            forgetWaitingChunks();
        }
    }

    /**
     * Forgets the provenance kept for chunks whose free waits for the frontier: called when
     * recording resumes after nothing was recorded (the allocator called no event point). A
     * waiting chunk is told apart from a later one by its address, size and stamp, but in
     * between such a chunk may have been allocated again and freed unheard, keeping its stamp
     * (no timing counter set then: a free without one leaves the stamp as it was), so that the
     * memory was last another allocation's. The chunks in use keep theirs: allocation ids are
     * never reused. Slow path: a walk over the chunk arrays, when recording is switched on.
     */
    private void forgetWaitingChunks() {
        for (int h = 0; h < chunkAllocationId.length; h++) {
            if (chunkAllocationId[h] < 0) {
                chunkAllocationId[h] = 0;
                releaseName(h);
                chunkThread[h] = null;
                chunkStack[h] = null;
            }
        }
    }

    /** Starts (or restarts, clearing the ring) recording history. */
    void start(HistoryOptions o, boolean allocatorEmpty) {
        if (!on) {
            forgetWaitingChunks();
        }
        int n = o.maxEntries();
        if (kind == null || kind.length != n) {
            // All allocated before any is kept: an OutOfMemoryError part way leaves the ring as
            // it was, not arrays of two lengths.
            byte[] newKind = new byte[n];
            long[] newTime = new long[n];
            long[] newWhen = new long[n];
            long[] newAddr = new long[n];
            long[] newBytes = new long[n];
            long[] newRequested = new long[n];
            long[] newAlignment = new long[n];
            long[] newAllocationId = new long[n];
            long[] newAvailable = new long[n];
            String[] newThread = new String[n];
            String[] newAnnotation = new String[n];
            long[] newStep = new long[n];
            Object[] newStack = new Object[n];
            kind = newKind;
            time = newTime;
            when = newWhen;
            addr = newAddr;
            bytes = newBytes;
            requested = newRequested;
            alignment = newAlignment;
            allocationId = newAllocationId;
            available = newAvailable;
            thread = newThread;
            annotation = newAnnotation;
            step = newStep;
            stack = newStack;
        } else {
            Arrays.fill(thread, null);
            Arrays.fill(annotation, null);
            Arrays.fill(stack, null);
        }
        head = 0;
        count = 0;
        dropped = 0;
        allocCalls = 0;
        // A stamp, so that every event recorded before, by any allocator, has a time of at most
        // this (PyTorchSnapshotWriter cuts a sharded timeline at the latest start).
        startMicros = micros(stamp());
        recordedTimeSeen = false;
        startedEmpty = allocatorEmpty;
        clearWaiting(); // their frees are in the ring cleared
        walker = StackWalker.getInstance(Set.of(), o.stackDepth() + OWN_FRAMES);
        stacks = new StackInterner();
        options = o;
        lastOptions = o;
        on = true;
    }

    /** Stops recording; the ring is kept for {@link #history()} until the next start. */
    void stop() {
        options = null;
        on = annotations;
    }

    private static long nowMicros() {
        return ORIGIN_MICROS + (System.nanoTime() - ORIGIN_NANOS) / 1000;
    }

    /** The stamp of an event happening now: above every stamp taken before (see {@link #LAST_STAMP}). */
    private static long stamp() {
        final long now = nowMicros() << STAMP_SHIFT;
        long last;
        long next;
        do {
            last = LAST_STAMP.get();
            next = Math.max(now, last + 1);
        } while (!LAST_STAMP.compareAndSet(last, next));
        return next;
    }

    /** The time of a stamp, in epoch microseconds. */
    private static long micros(long stamp) {
        return stamp >> STAMP_SHIFT;
    }

    /**
     * The time an event stamped {@code stamp} carries: the stamp's until this recording meets a
     * replayed trace's time ({@link ReplayedCall}); from then on the latest time the trace gave,
     * for every event, a live call's too (made on another thread, or between the replayed calls
     * by a {@code WorkloadListener}). A live call's own clock is not on the trace's: where the
     * trace was recorded earlier, the replayed calls after it would show times before it, and
     * the history (and the trace {@code SnapshotTraces} writes of it) would go back in time. It
     * happened after the replayed calls before it and before those after it, which is what the
     * latest time given says, as it says for a replayed {@code free}.
     */
    private long shownMicros(long stamp) {
        long recorded = ReplayedCall.micros();
        if (!recordedTimeSeen) {
            if (recorded < 0) {
                return micros(stamp);
            }
            firstRecordedTime(recorded);
        } else if (recorded > latestRecordedTime) {
            latestRecordedTime = recorded;
        }
        return latestRecordedTime;
    }

    /**
     * The first time a replayed trace gives in this recording: the calls replayed before it (a
     * trace whose first calls give no time) were recorded on the replay's own clock, later than
     * the trace's times, so that the history would go back in time here. They happened no later
     * than this call: every event and live chunk that shows a later time takes this one. Once per
     * recording, on the slow path (a walk over the ring and the chunk arrays).
     */
    private void firstRecordedTime(long recorded) {
        recordedTimeSeen = true;
        latestRecordedTime = recorded;
        if (kind != null) {
            int n = kind.length;
            int first = count < n ? 0 : head;
            for (int j = 0; j < count; j++) {
                int i = (first + j) % n;
                if (when[i] > recorded) {
                    when[i] = recorded;
                }
            }
        }
        for (int h = 0; h < chunkTime.length; h++) {
            if (chunkAllocationId[h] != 0 && chunkTime[h] > recorded) {
                chunkTime[h] = recorded;
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // The port's event points (allocator lock held)

    @Override
    boolean listensToCalls() {
        return true;
    }

    @Override
    void allocatedLocked(int h) {
        final ChunkWalk c = look.at(h);
        onAlloc(h, c.ptr(), c.size(), c.requestedSize(), view.callAlignment(), c.allocationId());
    }

    @Override
    void freedLocked(int h) {
        final ChunkWalk c = look.at(h);
        onFree(h, c.ptr(), c.size(), c.requestedSize(), c.allocationId());
    }

    @Override
    void stampedLocked(int h) {
        if (h < chunkName.length && chunkAllocationId[h] < 0) {
            chunkFreedStamp[h] = look.at(h).freedAtCount();
            if (options != null) {
                waitForFrontier(h, -chunkAllocationId[h], chunkFreedStamp[h]);
                // Written before the frontier is read: a setSafeFrontier racing with this free
                // either moved the frontier before the read here, or sees the flag and comes.
                awaitingFrontier = true;
                frontierAdvancedLocked(view.safeFrontier());
            }
        }
    }

    @Override
    boolean awaitsFrontier() {
        return awaitingFrontier;
    }

    /**
     * Records the completion of each waiting free that the frontier has passed (its stamp below
     * it, as {@code MergeTimestampedChunks} reads a free as safe), oldest first, if its chunk is
     * still the one that free left (not allocated again, merged or split since: then PyTorch's
     * pending block it was is gone, and the free is left as it is). Stamps grow with the
     * counter, so the frees the frontier passed are at the front; behind a later counter
     * ({@code setTimingCounter}) whose stamps run lower, a free completes once the frontier
     * passed the frees stamped before it too, never before it is safe.
     */
    @Override
    void frontierAdvancedLocked(long frontier) {
        if (options == null) {
            clearWaiting();
            return;
        }
        while (waitingCount > 0 && Long.compareUnsigned(waitingStamp[waitingHead], frontier) < 0) {
            final int h = waitingHandle[waitingHead];
            final long id = waitingId[waitingHead];
            final long st = waitingStamp[waitingHead];
            waitingHead = waitingHead + 1 == waitingHandle.length ? 0 : waitingHead + 1;
            waitingCount--;
            if (stillWaiting(h, id, st)) {
                final ChunkWalk c = look.at(h);
                MemoryAnnotation a = MemoryAnnotation.current();
                put(FREE_COMPLETED, stamp(), c.ptr(), c.size(), c.requestedSize(), 0, id, -1,
                        ReplayedCall.threadName(), a == null ? null : a.name(), a == null ? -1 : a.step(), null);
            }
        }
        if (waitingCount == 0) {
            awaitingFrontier = false;
        }
    }

    /**
     * Whether chunk {@code h} is still the one the free of allocation {@code id}, stamped
     * {@code st}, left: free, in a bin (a handle merged away is in none, its fields stale), at
     * the same address, of the same size, with the same stamp.
     */
    private boolean stillWaiting(int h, long id, long st) {
        final ChunkWalk c = look.at(h);
        return chunkAllocationId[h] == -id && chunkFreedStamp[h] == st && !c.inUse()
                && c.binNum() != ChunkTable.INVALID_BIN_NUM
                && c.freedAtCount() == st && c.ptr() == chunkFreedPtr[h] && c.size() == chunkFreedSize[h];
    }

    /** Queues a stamped free (history on) until the frontier passes its stamp. */
    private void waitForFrontier(int h, long id, long st) {
        if (waitingCount == waitingHandle.length) {
            // Slow path: full. Drop the frees taken over; if half or more still wait, grow by
            // doubling, in order from the head.
            dropTakenOver();
            if (waitingCount * 2 >= waitingHandle.length) {
                int n = Math.max(64, waitingHandle.length * 2);
                int[] hs = new int[n];
                long[] ids = new long[n];
                long[] sts = new long[n];
                for (int j = 0; j < waitingCount; j++) {
                    int k = (waitingHead + j) % waitingHandle.length;
                    hs[j] = waitingHandle[k];
                    ids[j] = waitingId[k];
                    sts[j] = waitingStamp[k];
                }
                waitingHandle = hs;
                waitingId = ids;
                waitingStamp = sts;
                waitingHead = 0;
            }
        }
        int tail = (waitingHead + waitingCount) % waitingHandle.length;
        waitingHandle[tail] = h;
        waitingId[tail] = id;
        waitingStamp[tail] = st;
        waitingCount++;
    }

    /**
     * Drops the waiting frees whose chunks were taken over (allocated again, merged) while the
     * frontier stood still, keeping the others in order: so that the queue holds at most the
     * free chunks there are, as upstream's {@code timestamped_chunks_}, even when no
     * {@code setSafeFrontier} comes. On the slow path, when the queue is full.
     */
    private void dropTakenOver() {
        final int n = waitingHandle.length;
        int kept = 0;
        for (int j = 0; j < waitingCount; j++) {
            int i = (waitingHead + j) % n;
            if (stillWaiting(waitingHandle[i], waitingId[i], waitingStamp[i])) {
                int k = (waitingHead + kept) % n;
                waitingHandle[k] = waitingHandle[i];
                waitingId[k] = waitingId[i];
                waitingStamp[k] = waitingStamp[i];
                kept++;
            }
        }
        waitingCount = kept;
    }

    private void clearWaiting() {
        waitingHead = 0;
        waitingCount = 0;
        awaitingFrontier = false;
    }

    @Override
    void regionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
        onRegionAlloc(ptr, bytes, requestBytes, askedBytes);
    }

    @Override
    void regionReturnedLocked(long ptr, long bytes, long requestBytes) {
        onRegionFree(ptr, bytes, requestBytes);
    }

    @Override
    void closingLocked() {
        if (options != null) {
            final ChunkWalk w = view.walk();
            for (int r = 0; r < view.regionCount(); r++) {
                w.region(r);
                onRegionFree(w.regionPtr(), w.regionBytes(), 0);
            }
        }
        clearChunks();
    }

    @Override
    void outOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
        lastFailure = onOutOfMemory(numBytes, roundedBytes, view.callAlignment(),
                Math.max(0, view.memoryLimit() - view.poolBytes()));
    }

    /** The failing call's provenance, read by the out-of-memory report in the same locked section. */
    Provenance lastFailure() {
        return lastFailure == null ? Provenance.UNKNOWN : lastFailure;
    }

    // ---------------------------------------------------------------------------------------
    // Recording (allocator lock held)

    /**
     * Whether this allocation call's stack is to be captured: stacks on, the request at least
     * {@code stackMinBytes}, and every n-th call. Counts the call.
     */
    private boolean sampleStack(long numBytes) {
        HistoryOptions o = options;
        if (o == null || !o.stacks()) {
            return false;
        }
        long n = ++allocCalls;
        return numBytes >= o.stackMinBytes() && (o.stackEveryNth() == 1 || n % o.stackEveryNth() == 0)
                && !ReplayedCall.replaying();
    }

    /** A successful allocation of chunk {@code h}. */
    void onAlloc(int h, long ptr, long size, long requestedBytes, long align, long id) {
        MemoryAnnotation a = MemoryAnnotation.current();
        String name = a == null ? null : a.name();
        long s = a == null ? -1 : a.step();
        ensureChunk(h);
        releaseName(h); // a handle reused while its last chunk's free went unheard (recording off)
        chunkAllocationId[h] = id;
        int n = name == null ? 0 : nameId(name);
        chunkName[h] = n;
        holdName(n);
        chunkStep[h] = s;
        if (options == null) {
            chunkTime[h] = -1;
            chunkThread[h] = null;
            chunkStack[h] = null;
            return;
        }
        List<StackFrame> st = explicitStack(a);
        boolean sampled = sampleStack(requestedBytes); // counts this allocation, given a stack or not
        if (st == null && sampled) {
            // Written out here and in stackOf, not in a helper: a helper is one more frame for
            // the walk to read and drop (64 more bytes per stack, HistoryBenchmark "stacks").
            st = stacks.intern(capture(walker, options.stackDepth()));
        }
        long t = stamp();
        String th = ReplayedCall.threadName();
        chunkTime[h] = shownMicros(t);
        chunkThread[h] = th;
        chunkStack[h] = st;
        put(ALLOC, t, ptr, size, requestedBytes, align, id, -1, th, name, s, st);
    }

    /**
     * Chunk {@code h} (in use until now) is freed. With a timing counter the chunk is stamped
     * and waits, not merged, until its free is safe: its provenance is kept for it
     * ({@link #freedChunkProvenance}).
     */
    void onFree(int h, long ptr, long size, long requestedBytes, long id) {
        if (h < chunkName.length) {
            if (chunkAllocationId[h] == id && id > 0 && view.timingCounterSet()) {
                chunkAllocationId[h] = -id;
                chunkFreedPtr[h] = ptr;
                chunkFreedSize[h] = size;
                chunkFreedStamp[h] = 0; // until stampedLocked
            } else {
                chunkAllocationId[h] = 0;
                releaseName(h);
                chunkThread[h] = null;
                chunkStack[h] = null;
            }
        }
        if (options == null) {
            return;
        }
        MemoryAnnotation a = MemoryAnnotation.current();
        put(FREE, stamp(), ptr, size, requestedBytes, 0, id, -1, ReplayedCall.threadName(),
                a == null ? null : a.name(), a == null ? -1 : a.step(), null);
    }

    /**
     * A region was obtained from the sub-allocator while serving a request of
     * {@code requestBytes} (rounded), which first asked it for {@code askedBytes}. Its stack is
     * wanted as the allocation's is: for a request (as asked, unrounded) of at least
     * {@code stackMinBytes}.
     */
    void onRegionAlloc(long ptr, long regionBytes, long requestBytes, long askedBytes) {
        if (options != null) {
            onRegion(REGION_ALLOC, ptr, regionBytes, askedBytes, view.callNumBytes() >= options.stackMinBytes());
        }
    }

    /**
     * A region was given back to the sub-allocator, by the caller of {@code emptyCache()} or
     * {@code close()}, or by an allocation's garbage collection: its annotation and stack, as
     * PyTorch's {@code segment_free} carries them. {@code requestBytes}: the rounded request
     * whose garbage collection gave it back, 0 for {@code emptyCache()} and {@code close()}.
     */
    void onRegionFree(long ptr, long regionBytes, long requestBytes) {
        if (options != null) {
            onRegion(REGION_FREE, ptr, regionBytes, requestBytes, true);
        }
    }

    /** A region event, with the calling thread's annotation and (if wanted and on) stack. */
    private void onRegion(byte kind, long ptr, long regionBytes, long requestBytes, boolean stackWanted) {
        MemoryAnnotation a = MemoryAnnotation.current();
        put(kind, stamp(), ptr, regionBytes, requestBytes, 0, -1, -1, ReplayedCall.threadName(),
                a == null ? null : a.name(), a == null ? -1 : a.step(), stackOf(a, stackWanted));
    }

    /** An allocation failed; returns the failing call's provenance (for listeners and messages). */
    Provenance onOutOfMemory(long requestedBytes, long roundedBytes, long align, long availableBytes) {
        MemoryAnnotation a = MemoryAnnotation.current();
        String name = a == null ? null : a.name();
        long s = a == null ? -1 : a.step();
        if (options == null) {
            return name == null ? Provenance.UNKNOWN : new Provenance(-1, null, name, s, null);
        }
        List<StackFrame> st = stackOf(a, true);
        long t = stamp();
        String th = ReplayedCall.threadName();
        put(OUT_OF_MEMORY, t, 0, roundedBytes, requestedBytes, align, -1, availableBytes, th, name, s, st);
        return new Provenance(shownMicros(t), th, name, s, st);
    }

    /** Records an event in the ring; {@code t} is its {@link #stamp()}. */
    private void put(byte k, long t, long p, long b, long req, long align, long id, long avail, String th,
            String name, long s, List<StackFrame> st) {
        final int i = head;
        kind[i] = k;
        time[i] = t;
        when[i] = shownMicros(t);
        addr[i] = p;
        bytes[i] = b;
        requested[i] = req;
        alignment[i] = align;
        allocationId[i] = id;
        available[i] = avail;
        thread[i] = th;
        annotation[i] = name;
        step[i] = s;
        stack[i] = st;
        head = i + 1 == kind.length ? 0 : i + 1;
        if (count < kind.length) {
            count++;
        } else {
            dropped++;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Stacks

    /**
     * The stack an event records: the one an annotation gives, else, if {@code wanted} and
     * stacks are on, the calling thread's, unless it is replaying a trace's call (the replayer's
     * stack says nothing of the recorded run: the trace's stack comes as an annotation's); else
     * null.
     */
    private List<StackFrame> stackOf(MemoryAnnotation a, boolean wanted) {
        List<StackFrame> st = explicitStack(a);
        if (st == null && wanted && options.stacks() && !ReplayedCall.replaying()) {
            st = stacks.intern(capture(walker, options.stackDepth()));
        }
        return st;
    }

    /**
     * The stack an annotation gives (the innermost that gives one), or null: recorded without
     * walking. Worked out when the annotation was pushed, so that it costs the same at any depth.
     */
    private static List<StackFrame> explicitStack(MemoryAnnotation a) {
        return a == null ? null : a.stackInEffect();
    }

    /** The calling thread's stack, bfc4j's own leading frames left out, at most {@code depth} frames. */
    static List<StackFrame> capture(StackWalker walker, int depth) {
        StackFrame[] frames = walker.walk(s -> frames(s, depth));
        return List.of(frames);
    }

    private static StackFrame[] frames(Stream<StackWalker.StackFrame> s, int depth) {
        return s.dropWhile(HistoryRecorder::isOwn).limit(depth).map(StackFrame::of).toArray(StackFrame[]::new);
    }

    static boolean isOwn(StackWalker.StackFrame f) {
        return isOwn(f.getClassName());
    }

    static boolean isOwn(String className) {
        if (!className.startsWith("io.github.bfc4j.")) {
            return false;
        }
        int nested = className.indexOf('$');
        String topLevel = nested < 0 ? className : className.substring(0, nested);
        return OWN_PACKAGES.contains(topLevel.substring(0, topLevel.lastIndexOf('.'))) || OWN_ADAPTERS.contains(topLevel);
    }

    // ---------------------------------------------------------------------------------------
    // Per chunk

    private void ensureChunk(int h) {
        if (h < chunkName.length) {
            return;
        }
        int n = Math.max(1024, Integer.highestOneBit(h) << 1);
        chunkAllocationId = Arrays.copyOf(chunkAllocationId, n);
        chunkFreedPtr = Arrays.copyOf(chunkFreedPtr, n);
        chunkFreedSize = Arrays.copyOf(chunkFreedSize, n);
        chunkFreedStamp = Arrays.copyOf(chunkFreedStamp, n);
        chunkName = Arrays.copyOf(chunkName, n);
        chunkStep = Arrays.copyOf(chunkStep, n);
        chunkTime = Arrays.copyOf(chunkTime, n);
        chunkThread = Arrays.copyOf(chunkThread, n);
        chunkStack = Arrays.copyOf(chunkStack, n);
    }

    private int nameId(String name) {
        Integer id = nameIds.get(name);
        if (id != null) {
            return id;
        }
        if (names.size() >= MAX_NAMES && !name.equals(TOO_MANY_NAMES)) {
            // A pass frees a quarter of the table or more when no more than three quarters of
            // its names are held; else it runs once per quarter's worth of new names, at most.
            if (liveNames <= MAX_NAMES - MAX_NAMES / 4 || namesSinceCompaction >= MAX_NAMES / 4) {
                compactNames();
            }
            if (names.size() >= MAX_NAMES) {
                namesSinceCompaction++;
                return nameId(TOO_MANY_NAMES); // which is added past the limit, once
            }
        }
        namesSinceCompaction++;
        names.add(name);
        int v = names.size();
        nameIds.put(name, v);
        if (v >= nameRefs.length) {
            nameRefs = Arrays.copyOf(nameRefs, Math.max(v + 1, nameRefs.length * 2));
        }
        return v;
    }

    /** A chunk now holds name {@code n} (0: none). */
    private void holdName(int n) {
        if (n != 0 && nameRefs[n]++ == 0) {
            liveNames++;
        }
    }

    /** Chunk {@code h} holds its name no longer. */
    private void releaseName(int h) {
        int n = chunkName[h];
        if (n != 0) {
            chunkName[h] = 0;
            if (--nameRefs[n] == 0) {
                liveNames--;
            }
        }
    }

    /**
     * Keeps only the names that live chunks hold, renumbered: the slots of names no chunk holds
     * any more are free again. A walk over the chunk arrays, on the slow path of a new name when
     * the table is full: it frees a quarter of the table or more, or runs at most once per
     * {@code MAX_NAMES / 4} new names.
     */
    private void compactNames() {
        namesSinceCompaction = 0;
        List<String> old = new ArrayList<>(names);
        names.clear();
        nameIds.clear();
        int[] refs = new int[nameRefs.length];
        for (int h = 0; h < chunkName.length; h++) {
            int n = chunkName[h];
            if (n == 0) {
                continue;
            }
            if (!holdsName(h)) { // freed, perhaps unheard (recording was off): not read again
                chunkName[h] = 0;
                continue;
            }
            String name = old.get(n - 1);
            Integer id = nameIds.get(name);
            if (id == null) {
                names.add(name);
                id = names.size();
                nameIds.put(name, id);
            }
            chunkName[h] = id;
            refs[id]++;
        }
        nameRefs = refs;
        liveNames = names.size();
    }

    /**
     * Whether chunk {@code h}'s name may still be read: the chunk is in use by the allocation
     * recorded for it, or is still the free chunk that allocation's stamped free left.
     */
    private boolean holdsName(int h) {
        long id = chunkAllocationId[h];
        if (id > 0) {
            final ChunkWalk c = look.at(h);
            return c.inUse() && c.allocationId() == id;
        }
        return id < 0 && stillWaiting(h, -id, chunkFreedStamp[h]);
    }

    /**
     * The provenance recorded for chunk {@code h}, in use by allocation {@code id};
     * {@link Provenance#UNKNOWN} if nothing was recorded for that allocation (it was made while
     * recording was off).
     */
    Provenance chunkProvenance(int h, long id) {
        if (h >= chunkName.length || chunkAllocationId[h] != id || id <= 0) {
            return Provenance.UNKNOWN;
        }
        return recordedFor(h);
    }

    /**
     * The provenance recorded for the allocation freed into chunk {@code h} while a timing
     * counter was set, if the chunk is still the one that free left (at {@code ptr}, of
     * {@code size} bytes, stamped {@code freedAtCount}: not merged or split since);
     * {@link Provenance#UNKNOWN} otherwise.
     */
    Provenance freedChunkProvenance(int h, long ptr, long size, long freedAtCount) {
        if (h >= chunkName.length || chunkAllocationId[h] >= 0 || chunkFreedPtr[h] != ptr
                || chunkFreedSize[h] != size || chunkFreedStamp[h] != freedAtCount || freedAtCount == 0) {
            return Provenance.UNKNOWN;
        }
        return recordedFor(h);
    }

    /** What the per-chunk arrays hold for chunk {@code h}; the callers check that it is the chunk's. */
    @SuppressWarnings("unchecked")
    private Provenance recordedFor(int h) {
        int n = chunkName[h];
        Provenance p = new Provenance(chunkTime[h], chunkThread[h], n == 0 ? null : names.get(n - 1), chunkStep[h],
                (List<StackFrame>) chunkStack[h]);
        return p.isKnown() ? p : Provenance.UNKNOWN;
    }

    /** Forgets every chunk's provenance (the allocator was closed). */
    void clearChunks() {
        clearWaiting();
        Arrays.fill(chunkAllocationId, 0);
        Arrays.fill(chunkName, 0);
        Arrays.fill(nameRefs, 0);
        liveNames = 0;
        Arrays.fill(chunkThread, null);
        Arrays.fill(chunkStack, null);
    }

    // ---------------------------------------------------------------------------------------
    // Copies

    /** The history: the events in the ring, oldest first. */
    @SuppressWarnings("unchecked")
    MemoryHistory history() {
        if (lastOptions == null) {
            return MemoryHistory.NONE;
        }
        List<MemoryEvent> events = new ArrayList<>(count);
        int n = kind.length;
        int first = count < n ? 0 : head;
        for (int j = 0; j < count; j++) {
            int i = (first + j) % n;
            events.add(new MemoryEvent(KINDS[kind[i]], addr[i], bytes[i], requested[i], alignment[i],
                    allocationId[i], available[i],
                    new Provenance(when[i], thread[i], annotation[i], step[i], (List<StackFrame>) stack[i]),
                    time[i]));
        }
        return new MemoryHistory(lastOptions, options != null, startMicros, startedEmpty, dropped, events);
    }

    /** Epoch microseconds now, on the clock of every recording. */
    long now() {
        return nowMicros();
    }
}
