/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

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
}
