/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One copy of each stack a recording captures, and of each frame: the history's events and the
 * live chunks that were allocated from the same place share one list of frames, and different
 * stacks share their common frames. A program allocates from a bounded number of places, so
 * a ring of 100,000 events with stacks holds a few thousand lists instead of 100,000 (measured:
 * 55 MB of heap for such a ring of 20-frame stacks before, see docs/performance.md).
 *
 * <p>Bounded, whatever the program does: past {@value #MAX_STACKS} distinct stacks the table of
 * stacks starts again (stacks kept by events stay valid; only later ones stop sharing with
 * them), and past {@value #MAX_FRAMES} distinct frames new frames are kept as they are. Not
 * thread-safe: used under the allocator's lock.
 */
final class StackInterner {

    /** Distinct stacks remembered before the table starts again. */
    static final int MAX_STACKS = 1 << 14;

    /** Distinct frames remembered; beyond them frames are not shared. */
    static final int MAX_FRAMES = 1 << 18;

    private final Map<List<StackFrame>, List<StackFrame>> stacks = new HashMap<>();
    private final Map<StackFrame, StackFrame> frames = new HashMap<>();

    /**
     * The shared copy of {@code stack}: the one given before for an equal stack, else
     * {@code stack}'s frames replaced by the shared copies of equal frames.
     *
     * @param stack a captured stack (unmodifiable)
     * @return an equal, unmodifiable list
     */
    List<StackFrame> intern(List<StackFrame> stack) {
        List<StackFrame> known = stacks.get(stack);
        if (known != null) {
            return known;
        }
        StackFrame[] shared = new StackFrame[stack.size()];
        for (int i = 0; i < shared.length; i++) {
            StackFrame f = stack.get(i);
            StackFrame k = frames.get(f);
            if (k == null && frames.size() < MAX_FRAMES) {
                frames.put(f, f);
                k = f;
            }
            shared[i] = k == null ? f : k;
        }
        List<StackFrame> list = List.of(shared);
        if (stacks.size() >= MAX_STACKS) {
            stacks.clear();
        }
        stacks.put(list, list);
        return list;
    }

    /** @return the distinct stacks remembered now */
    int stackCount() {
        return stacks.size();
    }

    /** @return the distinct frames remembered now */
    int frameCount() {
        return frames.size();
    }
}
