/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.NullElements;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The recorded history of an allocator, as {@link BfcAllocator#snapshot()} copies it: the
 * events still in the ring, oldest first.
 *
 * @param options the options of the recording, or {@code null} if history was never recorded
 * @param recording whether the recording was still on when the snapshot was taken
 * @param startMicros when the recording started (epoch microseconds), -1 if never
 * @param startedEmpty whether the allocator held no region when the recording started (then
 *     the history, if nothing was dropped, tells the whole life of every region and chunk)
 * @param droppedEvents how many of the oldest events the ring dropped
 * @param events the events kept, oldest first
 */
public record MemoryHistory(HistoryOptions options, boolean recording, long startMicros, boolean startedEmpty,
        long droppedEvents, List<MemoryEvent> events) {

    /** No history: never recorded. */
    public static final MemoryHistory NONE = new MemoryHistory(null, false, -1, false, 0, List.of());

    /**
     * Copies the list.
     *
     * @throws NullPointerException if {@code events} is null, or an event in it
     */
    public MemoryHistory {
        Objects.requireNonNull(events, "events=null (expected: the events kept, oldest first; List.of() for none)");
        events = NullElements.copyOf(events, "events", "a MemoryEvent, oldest first");
    }

    /**
     * Whether the events tell everything from the allocator's first region on: the recording
     * started before any region was obtained and nothing was dropped. Only then can the history
     * be replayed as a trace.
     *
     * @return true if complete
     */
    public boolean isComplete() {
        return options != null && startedEmpty && droppedEvents == 0;
    }

    /**
     * The allocations live at the peak of this history: its {@code ALLOC} and {@code FREE}
     * events replayed in order, counting chunk bytes as {@link BfcAllocator#bytesInUse()} does
     * (a stamped free counts at its {@code FREE}), the {@code ALLOC} events of the allocations
     * still live right after the first event at which the most bytes were in use. That is the
     * moment of {@link BfcAllocator#peakBytesInUse()} when the history {@link #isComplete()},
     * was still {@link #recording()} when taken (a stopped history holds nothing after its stop:
     * its peak is the one before it) and the peak was not reset since ({@code resetPeakStats()},
     * {@code clearStats()}); a history that started later, or dropped its oldest events, counts
     * only the allocations it holds (the free of an older one is passed over).
     *
     * @return the {@code ALLOC} events, oldest first (their {@link MemoryEvent#bytes()} add up
     *     to the peak; {@link MemoryEvent#provenance()} says who made each); empty if the history
     *     holds no allocation
     */
    public List<MemoryEvent> liveAtPeak() {
        List<MemoryEvent> out = new ArrayList<>();
        for (Map.Entry<Integer, MemoryEvent> e : liveAtPeakOfAll(List.of(this))) {
            out.add(e.getValue());
        }
        return List.copyOf(out);
    }

    /**
     * The allocations live at the peak of several histories taken together: the shards of a
     * {@link ShardedBfcAllocator}, one history per shard as {@link ShardedBfcAllocator#snapshots()}
     * takes them at one instant. Their {@code ALLOC} and {@code FREE} events are replayed as one
     * timeline ({@link #mergeByTime}: in the order the calls were made), counting the chunk bytes
     * of all histories together as {@link #liveAtPeak()} counts those of one; the answer is the
     * {@code ALLOC} events of the allocations still live right after the first event at which the
     * most bytes were in use in all of them. Allocation ids are told apart per history (each shard
     * numbers its own). That peak is the peak of the sum, which no shard's
     * {@code peakBytesInUse()} nor their sum gives, when every history {@link #isComplete()}, was
     * still {@link #recording()} when taken, and no peak was reset since; histories that started later, or dropped their oldest events,
     * count only the allocations they hold (each shard's ring drops on its own).
     *
     * @param histories the histories, e.g. {@code history()} of each of {@code snapshots()}
     * @return for each allocation, oldest first, the index of its history in {@code histories}
     *     and its {@code ALLOC} event (their {@link MemoryEvent#bytes()} add up to the peak);
     *     empty if the histories hold no allocation
     * @throws NullPointerException if {@code histories} is null, or a history in it
     */
    public static List<Map.Entry<Integer, MemoryEvent>> liveAtPeakOfAll(List<MemoryHistory> histories) {
        Objects.requireNonNull(histories, "histories=null (expected: the histories to take together, e.g."
                + " each snapshot's history() of a ShardedBfcAllocator's snapshots())");
        List<List<MemoryEvent>> events = new ArrayList<>(histories.size());
        for (MemoryHistory h : NullElements.copyOf(histories, "histories",
                "a MemoryHistory; MemoryHistory.NONE for an allocator that recorded none")) {
            events.add(h.events());
        }
        List<Map.Entry<Integer, MemoryEvent>> timeline = mergeByTime(events);
        // By history and allocation id, in allocation order: ids are unique within a history only.
        Map<Map.Entry<Integer, Long>, Map.Entry<Integer, MemoryEvent>> live = new LinkedHashMap<>();
        long inUse = 0;
        long peak = 0;
        int peakAt = -1;
        for (int i = 0; i < timeline.size(); i++) {
            Map.Entry<Integer, MemoryEvent> pe = timeline.get(i);
            MemoryEvent e = pe.getValue();
            Map.Entry<Integer, Long> key = Map.entry(pe.getKey(), e.allocationId());
            if (e.kind() == MemoryEvent.Kind.ALLOC) {
                live.put(key, pe);
                inUse += e.bytes();
            } else if (e.kind() == MemoryEvent.Kind.FREE && live.remove(key) != null) {
                inUse -= e.bytes();
            }
            if (inUse > peak) {
                peak = inUse;
                peakAt = i;
            }
        }
        live.clear();
        for (int i = 0; i <= peakAt; i++) {
            Map.Entry<Integer, MemoryEvent> pe = timeline.get(i);
            MemoryEvent e = pe.getValue();
            Map.Entry<Integer, Long> key = Map.entry(pe.getKey(), e.allocationId());
            if (e.kind() == MemoryEvent.Kind.ALLOC) {
                live.put(key, pe);
            } else if (e.kind() == MemoryEvent.Kind.FREE) {
                live.remove(key);
            }
        }
        return List.copyOf(live.values());
    }

    /**
     * The events of several histories as one timeline: by time, each history's in its own order;
     * on equal times by {@link MemoryEvent#sequence()} where both are known, else the earlier
     * history first. Every recording of a process reads one clock and numbers its events with one
     * counter, so the histories of several allocators (the shards of a
     * {@link ShardedBfcAllocator}) merge in the order their calls were made, even within one
     * microsecond (a range one shard gave back before another obtained it: the one, then the
     * other).
     *
     * @param histories the histories' events ({@link #events()} of each)
     * @return for each event in order, the index of its history and the event
     * @throws NullPointerException if {@code histories} is null, or a history or event in it
     */
    public static List<Map.Entry<Integer, MemoryEvent>> mergeByTime(List<List<MemoryEvent>> histories) {
        Objects.requireNonNull(histories, "histories=null (expected: the events of each history, e.g."
                + " one snapshot's history().events() per shard)");
        // Checked (and copied) before any is merged: a null would otherwise fail inside the merge
        // or, in a history merged with no other, come out as an event.
        List<List<MemoryEvent>> hs = new ArrayList<>(NullElements.copyOf(histories, "histories",
                "the events of a history, List.of() for none"));
        for (int i = 0; i < hs.size(); i++) {
            hs.set(i, NullElements.copyOf(hs.get(i), "histories[" + i + "]", "a MemoryEvent, oldest first"));
        }
        histories = hs;
        List<Map.Entry<Integer, MemoryEvent>> merged = new ArrayList<>();
        int[] next = new int[histories.size()];
        while (true) {
            int pick = -1;
            for (int i = 0; i < histories.size(); i++) {
                if (next[i] < histories.get(i).size()
                        && (pick < 0 || before(histories.get(i).get(next[i]), histories.get(pick).get(next[pick])))) {
                    pick = i;
                }
            }
            if (pick < 0) {
                return merged;
            }
            merged.add(Map.entry(pick, histories.get(pick).get(next[pick]++)));
        }
    }

    /** Whether {@code a} comes strictly before {@code b}: by time, then by sequence where both are known. */
    static boolean before(MemoryEvent a, MemoryEvent b) {
        long ta = a.provenance().timeMicros();
        long tb = b.provenance().timeMicros();
        if (ta != tb) {
            return ta < tb;
        }
        return a.sequence() >= 0 && b.sequence() >= 0 && a.sequence() < b.sequence();
    }
}
