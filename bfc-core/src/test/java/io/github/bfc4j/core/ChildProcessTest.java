/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

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

    @Test
    void theTwoOutputsApartAndTheStatus() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        ChildProcess.Apart r = ChildProcess.runApart(List.of(SH.toString(), "-c", "echo out; echo err >&2; exit 3"),
                Duration.ofSeconds(60));
        assertThat(r.status()).isEqualTo(3);
        assertThat(r.output()).isEqualTo("out\n");
        assertThat(r.error()).isEqualTo("err\n");
    }

    @Test
    @Timeout(60)
    void aChildThatWritesMuchToItsErrorBeforeItsOutputEndsIsNotBlocked() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        // 1 MB to standard error, more than a pipe holds, before the output is closed: a test that
        // read the output pipe to its end and then the error pipe would wait for ever here, the
        // child blocked on its full error pipe.
        ChildProcess.Apart r = ChildProcess.runApart(List.of(SH.toString(), "-c",
                "echo started; head -c 1000000 /dev/zero | tr '\\0' e >&2; echo done"), Duration.ofSeconds(30));
        assertThat(r.status()).isZero();
        assertThat(r.output()).isEqualTo("started\ndone\n");
        assertThat(r.error()).isEqualTo("e".repeat(1_000_000));
    }

    @Test
    @Timeout(60)
    void aChildThatDoesNotEndIsEndedAtTheLimitWithBothOutputs() {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        assertThatThrownBy(() -> ChildProcess.runApart(List.of(SH.toString(), "-c",
                "echo started; echo complained >&2; exec sleep 120"), Duration.ofSeconds(2)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran for longer than PT2S and was ended")
                .hasMessageContaining("started")
                .hasMessageContaining("its standard error:\ncomplained");
    }

    @Test
    @Timeout(60)
    void whatAChildStartedIsEndedWithItAtTheLimit() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        // The shell starts a sleep of its own and waits for it; ending only the shell left the
        // sleep running for its 120 s, after the test.
        AssertionError e = catchThrowableOfType(() -> ChildProcess.run(List.of(SH.toString(), "-c",
                "sleep 120 & echo \"grandchild $!\"; wait"), Duration.ofSeconds(2)), AssertionError.class);
        assertThat(e).hasMessageContaining("ran for longer than PT2S and was ended");
        Matcher m = Pattern.compile("grandchild (\\d+)").matcher(e.getMessage());
        assertThat(m.find()).as(e.getMessage()).isTrue();
        Optional<ProcessHandle> grandchild = ProcessHandle.of(Long.parseLong(m.group(1)));
        try {
            assertThat(grandchild.filter(ProcessHandle::isAlive)).as("the shell's sleep, once the shell was ended")
                    .isEmpty();
        } finally {
            grandchild.ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void aChildRunsInTheDirectoryGiven(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        ChildProcess.Result r = ChildProcess.runIn(dir, List.of(SH.toString(), "-c", "pwd"), Duration.ofSeconds(60));
        assertThat(r.status()).isZero();
        assertThat(Path.of(r.output().strip()).toRealPath()).isEqualTo(dir.toRealPath());
    }

    @Test
    void aChildsOutputCanGoToAFullDevice() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        File full = new File("/dev/full");
        assumeTrue(full.exists() && full.canWrite(), "no writable /dev/full here");
        ChildProcess.Apart r = ChildProcess.runApart(List.of(SH.toString(), "-c", "echo lost || echo not written >&2"),
                full, Duration.ofSeconds(60));
        assertThat(r.status()).isZero();
        assertThat(r.output()).isEmpty();
        assertThat(r.error()).endsWith("not written\n");
    }

    @Test
    @Timeout(60)
    void anOutputPipeIsReadAlongsideTheChildWhileItWritesMuchToItsError() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        // 1 MB to each: more than a pipe holds, so reading one pipe to its end before the other
        // would block.
        ChildProcess.Apart r = ChildProcess.runApart(List.of(SH.toString(), "-c",
                "head -c 1000000 /dev/zero | tr '\\0' e >&2; head -c 1000000 /dev/zero | tr '\\0' o"),
                ChildProcess.Pipe.READ, Duration.ofSeconds(30));
        assertThat(r.status()).isZero();
        assertThat(r.output()).isEqualTo("o".repeat(1_000_000));
        assertThat(r.error()).isEqualTo("e".repeat(1_000_000));
    }

    @Test
    @Timeout(60)
    void anOutputPipeClosedAtOnceEndsAChildThatWritesForEver() throws Exception {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        // yes writes until a write fails: here, killed by SIGPIPE (13) once the pipe is closed.
        ChildProcess.Apart r = ChildProcess.runApart(List.of(SH.toString(), "-c", "exec yes"),
                ChildProcess.Pipe.CLOSED, Duration.ofSeconds(30));
        assertThat(r.status()).isEqualTo(128 + 13);
        assertThat(r.output()).isEmpty();
    }

    @Test
    @Timeout(60)
    void aChildWhoseOutputIsAPipeIsEndedAtTheLimitWithWhatItWrote() {
        assumeTrue(Files.isExecutable(SH), "no /bin/sh");
        assertThatThrownBy(() -> ChildProcess.runApart(List.of(SH.toString(), "-c",
                "echo started; echo complained >&2; exec sleep 120"), ChildProcess.Pipe.READ, Duration.ofSeconds(2)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran for longer than PT2S and was ended")
                .hasMessageContaining("started\n\nits standard error:\ncomplained");
    }
}
