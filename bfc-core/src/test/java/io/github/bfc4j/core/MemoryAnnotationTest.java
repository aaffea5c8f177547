/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MemoryAnnotationTest {

    @AfterEach
    void nothingLeftOpen() {
        assertThat(MemoryAnnotation.current()).isNull();
    }

    @Test
    void innermostNameWinsAndAStepIsKeptUntilReplaced() {
        assertThat(MemoryAnnotation.current()).isNull();
        try (MemoryAnnotation outer = MemoryAnnotation.push("train_step", 12)) {
            assertThat(MemoryAnnotation.current()).isSameAs(outer);
            try (MemoryAnnotation inner = MemoryAnnotation.push("encoder/layer3")) {
                assertThat(MemoryAnnotation.current()).isSameAs(inner);
                assertThat(inner.name()).isEqualTo("encoder/layer3");
                assertThat(inner.step()).isEqualTo(12);
                assertThat(inner.parent()).isSameAs(outer);
                try (MemoryAnnotation innermost = MemoryAnnotation.push("attention", 13)) {
                    assertThat(innermost.step()).isEqualTo(13);
                }
                assertThat(MemoryAnnotation.current()).isSameAs(inner);
            }
            assertThat(MemoryAnnotation.current()).isSameAs(outer);
        }
        assertThat(MemoryAnnotation.current()).isNull();
    }

    @Test
    void closingAnOuterAnnotationClosesTheInnerOnesAndClosingTwiceDoesNothing() {
        MemoryAnnotation outer = MemoryAnnotation.push("a", 1);
        MemoryAnnotation inner = MemoryAnnotation.push("b");
        outer.close();
        assertThat(MemoryAnnotation.current()).isNull();
        assertThat(inner.isClosed()).isTrue();
        assertThat(outer.isClosed()).isTrue();
        inner.close(); // off the chain already: nothing to restore
        outer.close();
        assertThat(MemoryAnnotation.current()).isNull();
    }

    @Test
    void annotationsNeverCrossThreads() throws Exception {
        AtomicReference<MemoryAnnotation> seenByOther = new AtomicReference<>();
        AtomicReference<Throwable> closeFromOther = new AtomicReference<>();
        CountDownLatch pushed = new CountDownLatch(1);
        CountDownLatch checked = new CountDownLatch(1);
        AtomicReference<MemoryAnnotation> mine = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                pushed.await();
                seenByOther.set(MemoryAnnotation.current());
                try {
                    mine.get().close();
                } catch (Throwable t) {
                    closeFromOther.set(t);
                }
                try (MemoryAnnotation own = MemoryAnnotation.push("other-thread", 99)) {
                    checked.countDown();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "other");
        other.setDaemon(true);
        other.start();
        try (MemoryAnnotation a = MemoryAnnotation.push("main-thread", 1)) {
            mine.set(a);
            pushed.countDown();
            assertThat(checked.await(5, TimeUnit.MINUTES)).as("the other thread pushed an annotation of its own")
                    .isTrue();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);
            // The other thread saw nothing of ours, could not close ours, and its own did not leak here.
            assertThat(seenByOther.get()).isNull();
            assertThat(closeFromOther.get()).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("pushed on thread 'main'").hasMessageContaining("'other'");
            assertThat(MemoryAnnotation.current()).isSameAs(a);
            assertThat(a.isClosed()).isFalse();
        }
    }

    @Test
    void aStackOnlyAnnotationKeepsTheEnclosingName() {
        List<StackFrame> stack = List.of(new StackFrame("", "tensorflow::MatMulOp::Compute", null, -1));
        try (MemoryAnnotation outer = MemoryAnnotation.push("dense", 3);
                MemoryAnnotation s = MemoryAnnotation.push(null, -1, stack)) {
            assertThat(s.name()).isEqualTo("dense");
            assertThat(s.step()).isEqualTo(3);
            assertThat(s.stack()).isEqualTo(stack);
        }
        try (MemoryAnnotation s = MemoryAnnotation.push(null, -1, stack)) {
            assertThat(s.name()).isNull();
            assertThat(s.step()).isEqualTo(-1);
        }
    }

    @Test
    void badArgumentsSayWhatWasExpected() {
        assertThatThrownBy(() -> MemoryAnnotation.push("")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name=''");
        assertThatThrownBy(() -> MemoryAnnotation.push(null, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name=null");
        assertThatThrownBy(() -> MemoryAnnotation.push("x", -2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("step=-2");
        assertThatThrownBy(() -> MemoryAnnotation.push(null, -1, null)).isInstanceOf(IllegalArgumentException.class);
        List<StackFrame> withNull = java.util.Arrays.asList(new StackFrame("", "f", null, -1), null);
        assertThatThrownBy(() -> MemoryAnnotation.push("x", 1, withNull)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("stack[1]=null (expected: a StackFrame, innermost first; null or an empty list for"
                        + " no stack)");
        assertThat(MemoryAnnotation.current()).as("nothing was pushed").isNull();
    }

    /**
     * The exception of a push that should be refused; an annotation it opens after all is closed
     * (the test then fails here, not in the ones after it).
     */
    private static IllegalArgumentException pushAndClose(java.util.function.Supplier<MemoryAnnotation> push) {
        try (MemoryAnnotation opened = push.get()) {
            throw new AssertionError("opened " + opened.name() + ", expected an IllegalArgumentException");
        } catch (IllegalArgumentException e) {
            return e;
        }
    }

    /**
     * A blank name is refused as an empty one is: it names no holder. It was taken, and the
     * summary's largest holder read {@code "    (step 3)"}, a name of spaces.
     */
    @Test
    void aBlankNameIsRefusedAsAnEmptyOneIs() {
        List<StackFrame> stack = List.of(new StackFrame("", "f", null, -1));
        for (String blank : new String[] {" ", "   ", "\t\n", "\u2003"}) {
            String message = "name='" + blank + "' (expected: a name that is not blank, such as"
                    + " \"encoder/layer3/attention\")";
            assertThat(pushAndClose(() -> MemoryAnnotation.push(blank))).hasMessage(message);
            assertThat(pushAndClose(() -> MemoryAnnotation.push(blank, 3))).hasMessage(message);
            assertThat(pushAndClose(() -> MemoryAnnotation.push(blank, 3, stack))).hasMessage(message);
            try (MemoryAnnotation outer = MemoryAnnotation.push("outer")) {
                assertThat(pushAndClose(() -> MemoryAnnotation.push(blank))).hasMessage(message);
                assertThat(MemoryAnnotation.current()).as("nothing pushed inside").isSameAs(outer);
            }
            assertThat(MemoryAnnotation.current()).as("nothing was pushed").isNull();
        }
        // A Provenance made by hand with such a name has none: it names no holder.
        Provenance p = new Provenance(-1, null, " \t", -1, List.of());
        assertThat(p.annotation()).isNull();
        assertThat(p).isEqualTo(Provenance.UNKNOWN);
        assertThat(p.isKnown()).isFalse();
        assertThat(new Provenance(-1, "main", "", 4, List.of()).holder()).isEqualTo("thread 'main'");
    }

    /** The stack in effect is the innermost one given, at any depth, and an allocation records it. */
    @Test
    void theInnermostGivenStackIsInEffectBelowIt() {
        List<StackFrame> outerStack = List.of(new StackFrame("", "outer", null, -1));
        List<StackFrame> innerStack = List.of(new StackFrame("", "inner", null, -1));
        try (BfcAllocator a = new BfcAllocator(new io.github.bfc4j.core.sim.SimSubAllocator(0x7f0000000000L,
                1L << 30, 0, false), 64L << 20, "stacks", BfcOptions.defaults())) {
            a.recordHistory(HistoryOptions.defaults());
            try (MemoryAnnotation o = MemoryAnnotation.push("o", 1, outerStack)) {
                for (int i = 0; i < 1000; i++) {
                    MemoryAnnotation.push("deep" + i);
                }
                assertThat(MemoryAnnotation.current().stackInEffect()).isEqualTo(outerStack);
                long p = a.allocateRaw(256, 256);
                try (MemoryAnnotation in = MemoryAnnotation.push(null, -1, innerStack);
                        MemoryAnnotation below = MemoryAnnotation.push("below")) {
                    assertThat(below.stackInEffect()).isEqualTo(innerStack);
                    long q = a.allocateRaw(256, 256);
                    assertThat(stackOf(a, q)).isEqualTo(innerStack);
                    a.deallocateRaw(q);
                }
                assertThat(stackOf(a, p)).isEqualTo(outerStack);
                a.deallocateRaw(p);
            }
            assertThat(MemoryAnnotation.current()).isNull();
        }
    }

    private static List<StackFrame> stackOf(BfcAllocator a, long ptr) {
        return a.memoryMap().chunks().stream().filter(c -> c.ptr() == ptr).findFirst().orElseThrow()
                .provenance().stack();
    }
}
