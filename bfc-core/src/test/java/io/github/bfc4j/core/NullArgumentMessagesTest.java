/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A null where the public API takes an object gets a {@link NullPointerException} that names the
 * argument and says what it takes, not the JDK's "Cannot invoke ... because ... is null" from
 * somewhere inside.
 */
class NullArgumentMessagesTest {

    private static SubAllocator sim() {
        return new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false);
    }

    @Test
    void aSnapshotWrittenToNullSaysWhatItTakes() {
        try (BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(64L << 20).subAllocator(sim()).build()) {
            MemorySnapshot s = a.snapshot();
            assertThatThrownBy(() -> s.writePyTorchPickle((OutputStream) null)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("out=null (expected: ");
            assertThatThrownBy(() -> s.writePyTorchPickle((OutputStream) null, 1))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("out=null (expected: ");
            assertThatThrownBy(() -> s.writePyTorchPickle((Path) null)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("file=null (expected: ");
            assertThatThrownBy(() -> s.writePyTorchPickle((Path) null, 1)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("file=null (expected: ");
        }
    }

    @Test
    void aShardedSnapshotWrittenToNullSaysWhatItTakes() {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("s").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).build()) {
            assertThatThrownBy(() -> a.writePyTorchPickle((OutputStream) null)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("out=null (expected: ");
            assertThatThrownBy(() -> a.writePyTorchPickle((Path) null)).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("file=null (expected: ");
        }
    }

    /**
     * The allocators' methods that take a listener, visitor or options, and the public value
     * types' constructors, said only the argument's name ("listener").
     */
    @Test
    void allocatorArgumentsAndValueTypesSayWhatTheyTake() {
        try (BfcAllocator a = BfcAllocator.builder().name("t").memoryLimit(64L << 20).subAllocator(sim()).build();
             ShardedBfcAllocator s = ShardedBfcAllocator.builder().name("s").shards(2).memoryLimit(64L << 20)
                     .subAllocator(sim()).build()) {
            MemorySnapshot snap = a.snapshot();
            MemoryMap map = a.memoryMap();
            List<Object[]> calls = List.of(
                    new Object[] {(Runnable) () -> a.recordHistory(null), "options"},
                    new Object[] {(Runnable) () -> s.recordHistory(null), "options"},
                    new Object[] {(Runnable) () -> a.addOutOfMemoryListener(null), "listener"},
                    new Object[] {(Runnable) () -> s.addOutOfMemoryListener(null), "listener"},
                    new Object[] {(Runnable) () -> a.forEachChunk(null), "visitor"},
                    new Object[] {(Runnable) () -> BfcAllocatorView.of(a).forEachChunk(null), "visitor"},
                    new Object[] {(Runnable) () -> BfcAllocatorView.of(null), "allocator"},
                    new Object[] {(Runnable) () -> new ForwardingSubAllocator(null) { }, "upstream"},
                    new Object[] {(Runnable) () -> new StackFrame(null, "m", null, -1), "className"},
                    new Object[] {(Runnable) () -> new StackFrame("C", null, null, -1), "methodName"},
                    new Object[] {(Runnable) () -> new MemorySnapshot(0, null, snap.options(), false, false,
                            snap.history()), "memoryMap"},
                    new Object[] {(Runnable) () -> new MemorySnapshot(0, map, null, false, false, snap.history()),
                            "options"},
                    new Object[] {(Runnable) () -> new MemorySnapshot(0, map, snap.options(), false, false, null),
                            "history"},
                    new Object[] {(Runnable) () -> new OutOfMemoryReport(null, 1, 256, Provenance.UNKNOWN, snap, ""),
                            "allocatorName"},
                    new Object[] {(Runnable) () -> new OutOfMemoryReport("t", 1, 256, null, snap, ""), "provenance"},
                    new Object[] {(Runnable) () -> new OutOfMemoryReport("t", 1, 256, Provenance.UNKNOWN, null, ""),
                            "snapshot"},
                    new Object[] {(Runnable) () -> new OutOfMemoryReport("t", 1, 256, Provenance.UNKNOWN, snap, null),
                            "summary"},
                    new Object[] {(Runnable) () -> new MemoryMap(null, map.memoryType(), map.stats(),
                            map.memoryStats(), map.bins(), map.regions()), "allocatorName"},
                    new Object[] {(Runnable) () -> new MemoryMap("t", map.memoryType(), map.stats(),
                            map.memoryStats(), null, map.regions()), "bins"},
                    new Object[] {(Runnable) () -> new MemoryMap("t", map.memoryType(), map.stats(),
                            map.memoryStats(), map.bins(), null), "regions"},
                    new Object[] {(Runnable) () -> new MemoryEvent(null, 0, 0, 0, 0, 0, 0, Provenance.UNKNOWN),
                            "kind"},
                    new Object[] {(Runnable) () -> new MemoryEvent(MemoryEvent.Kind.ALLOC, 0, 0, 0, 0, 0, 0, null),
                            "provenance"},
                    new Object[] {(Runnable) () -> new io.github.bfc4j.trace.WorkloadRunner(1 << 20, null, sim()),
                            "options"},
                    new Object[] {(Runnable) () -> new io.github.bfc4j.trace.WorkloadRunner(1 << 20,
                            BfcOptions.defaults(), null), "subAllocator"},
                    new Object[] {(Runnable) () -> new io.github.bfc4j.trace.WorkloadRunner(1 << 20,
                            BfcOptions.defaults(), sim()).name(null), "name"},
                    new Object[] {(Runnable) () -> io.github.bfc4j.trace.SnapshotTraces.header((List<MemorySnapshot>) null, "t"),
                            "snapshots"});
            for (Object[] call : calls) {
                assertThatThrownBy(((Runnable) call[0])::run).as("%s", call[1])
                        .isInstanceOf(NullPointerException.class).hasMessageStartingWith(call[1] + "=null (expected: ");
            }
        }
    }

    /** A null stream was reported as a checked IOException, "Stream closed": the caller's stream was not. */
    @Test
    void aTraceReadFromANullStreamSaysWhatItTakes() {
        assertThatThrownBy(() -> io.github.bfc4j.trace.TraceReader.open((java.io.InputStream) null, "t.bfctrace"))
                .isInstanceOf(NullPointerException.class).hasMessageStartingWith("in=null (expected: ");
        assertThatThrownBy(() -> io.github.bfc4j.trace.TraceReplayer.replay((java.io.InputStream) null, "t.bfctrace"))
                .isInstanceOf(NullPointerException.class).hasMessageStartingWith("in=null (expected: ");
    }

    @Test
    void nullHistoriesAndFramesSayWhatTheyTake() {
        assertThatThrownBy(() -> MemoryHistory.mergeByTime(null)).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("histories=null (expected: ");
        assertThatThrownBy(() -> new MemoryHistory(null, false, -1, false, 0, null))
                .isInstanceOf(NullPointerException.class).hasMessageStartingWith("events=null (expected: ");
        assertThatThrownBy(() -> StackFrame.of((StackTraceElement) null)).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("e=null (expected: ");
        assertThatThrownBy(() -> StackFrame.of((StackWalker.StackFrame) null)).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("f=null (expected: ");
        MemoryHistory.mergeByTime(List.of()); // still fine
    }

    /**
     * A null event inside one of the histories is refused by both indexes before anything is
     * merged; a history of one was merged with its null in it (the null came out as an event).
     */
    @Test
    void aNullEventInAHistoryToMergeIsNamedByItsIndexes() {
        MemoryEvent e = new MemoryEvent(MemoryEvent.Kind.ALLOC, 0x1000, 256, 256, 256, 1, 0, Provenance.UNKNOWN);
        List<MemoryEvent> withNull = java.util.Arrays.asList(e, null);
        assertThatThrownBy(() -> MemoryHistory.mergeByTime(List.of(withNull)))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("histories[0][1]=null (expected: a MemoryEvent, oldest first)");
        assertThatThrownBy(() -> MemoryHistory.mergeByTime(List.of(List.of(e), withNull)))
                .isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("histories[1][1]=null (expected: ");
        assertThatThrownBy(() -> MemoryHistory.mergeByTime(java.util.Arrays.asList(List.of(e), null)))
                .isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("histories[1]=null (expected: ");
        assertThat(MemoryHistory.mergeByTime(List.of(List.of(e), List.of()))).hasSize(1);
    }
}
