/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The child processes of the tests that need a JVM of their own end, whatever the child does. */
class ChildProcessTest {

    private static final Path SH = Path.of("/bin/sh");

    @Test
    void aChildsStatusAndBothOutputsAreGiven() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        ChildProcess.Result r = ChildProcess.run(List.of(SH.toString(), "-c", "echo out; echo err >&2; exit 3"),
                Duration.ofSeconds(60));
        assertThat(r.status()).isEqualTo(3);
        assertThat(r.output().lines()).containsExactlyInAnyOrder("out", "err");
    }

    @Test
    @Timeout(60)
    void aChildThatDoesNotEndIsEndedAtTheLimitWithWhatItWrote() {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        // Reading a pipe to its end before waiting would wait here for the child's 120 s (and for
        // ever for a child that hangs), past the limit; the JUnit timeout fails that.
        assertThatThrownBy(() -> ChildProcess.run(List.of(SH.toString(), "-c", "echo started; exec sleep 120"),
                Duration.ofSeconds(2)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran for longer than PT2S and was ended")
                .hasMessageContaining("started");
    }

    @Test
    void aChildThatReadsItsInputGetsItsEnd() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        ChildProcess.Result r = ChildProcess.run(List.of(SH.toString(), "-c", "cat; echo read"), Duration.ofSeconds(60));
        assertThat(r.status()).isZero();
        assertThat(r.output()).isEqualTo("read\n");
    }
}
