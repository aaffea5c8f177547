/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** A recording keeps one copy of each stack and frame, within its bounds. */
class StackInternerTest {

    private static StackFrame frame(String method, int line) {
        return new StackFrame("com.example.Model", method, "Model.java", line);
    }

    @Test
    void equalStacksBecomeOneListAndEqualFramesOneFrame() {
        StackInterner interner = new StackInterner();
        List<StackFrame> a = interner.intern(List.of(frame("forward", 10), frame("run", 20)));
        List<StackFrame> again = interner.intern(List.of(frame("forward", 10), frame("run", 20)));
        List<StackFrame> other = interner.intern(List.of(frame("backward", 30), frame("run", 20)));

        assertThat(again).isSameAs(a).containsExactly(frame("forward", 10), frame("run", 20));
        assertThat(other).isNotSameAs(a).containsExactly(frame("backward", 30), frame("run", 20));
        assertThat(other.get(1)).as("the frame the two stacks share").isSameAs(a.get(1));
        assertThat(interner.stackCount()).isEqualTo(2);
        assertThat(interner.frameCount()).isEqualTo(3);
    }

    @Test
    void theTablesStayWithinTheirBoundsAndTheAnswersStayEqual() {
        StackInterner interner = new StackInterner();
        List<StackFrame> first = interner.intern(List.of(frame("first", 1)));
        for (int i = 0; i < StackInterner.MAX_FRAMES + 10; i++) {
            List<StackFrame> stack = List.of(frame("m", i));
            assertThat(interner.intern(stack)).isEqualTo(stack);
            assertThat(interner.stackCount()).isLessThanOrEqualTo(StackInterner.MAX_STACKS);
        }
        assertThat(interner.frameCount()).isEqualTo(StackInterner.MAX_FRAMES);
        // A frame past the bound is kept as given, not shared; one within it still is.
        StackFrame late = frame("m", StackInterner.MAX_FRAMES + 5);
        assertThat(interner.intern(List.of(late, frame("first", 1))).get(0)).isSameAs(late);
        assertThat(interner.intern(List.of(frame("m", 1), frame("first", 1))).get(1)).isSameAs(first.get(0));
    }
}
