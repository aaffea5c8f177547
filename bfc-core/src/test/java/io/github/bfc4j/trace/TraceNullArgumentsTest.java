/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.MemorySnapshot;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A null where the trace API takes an object gets a {@link NullPointerException} that names the
 * argument and says what it takes, not the JDK's "Cannot invoke ... because ... is null" (or no
 * message at all) from somewhere inside.
 */
class TraceNullArgumentsTest {

    @TempDir
    Path dir;

    private static void saysWhatItTakes(ThrowingCallable call, String argument) {
        assertThatThrownBy(call).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith(argument + "=null (expected: ");
    }

    @Test
    void theTraceFunctionsSayWhichArgumentIsNullAndWhatItTakes() {
        Path file = dir.resolve("t.bfctrace");
        saysWhatItTakes(() -> TraceWriter.write(null, w -> { }), "file");
        saysWhatItTakes(() -> TraceWriter.write(file, null), "content");
        saysWhatItTakes(() -> TraceWriter.create(null), "path");
        saysWhatItTakes(() -> TraceWriter.create(null, true), "path");
        saysWhatItTakes(() -> TraceWriter.of((OutputStream) null, false), "out");
        saysWhatItTakes(() -> TraceReplayer.replay((Path) null), "path");
        saysWhatItTakes(() -> TraceReplayer.replay((TraceReader) null), "reader");
        saysWhatItTakes(() -> TraceReader.open((Path) null), "path");
        saysWhatItTakes(() -> TraceReader.newInputStream(null), "path");
        saysWhatItTakes(() -> SnapshotTraces.header((MemorySnapshot) null), "snapshot");
        saysWhatItTakes(() -> SnapshotTraces.header((MemorySnapshot) null, "name"), "snapshot");
        saysWhatItTakes(() -> SnapshotTraces.write((MemorySnapshot) null, file), "snapshot");
        saysWhatItTakes(() -> SnapshotTraces.write((MemorySnapshot) null, file, "name"), "snapshot");
        saysWhatItTakes(() -> SnapshotTraces.write((MemorySnapshot) null,
                TraceWriter.of(new ByteArrayOutputStream(), false)), "snapshot");
        saysWhatItTakes(() -> WorkloadRunner.forHeader(null), "header");
        saysWhatItTakes(() -> WorkloadRunner.simFor(null, 1L << 30), "header");
    }
}
