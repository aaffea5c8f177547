/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.List;

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

    /** Copies the list. */
    public MemoryHistory {
        events = List.copyOf(events);
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
}
