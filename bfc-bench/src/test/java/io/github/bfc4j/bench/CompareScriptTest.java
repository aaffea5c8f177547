/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.SourceTree;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code src/cpp/compare.sh} says what it needs before its first round: run without TensorFlow's
 * {@code bench} built, or without {@code benchmarks.jar}, it printed a round of empty figures per
 * trace ({@code bench: not found}, or no figure from a missing jar) and a ratio of nothing, exit 0.
 * It runs here from a copy of the repository's layout holding the script and one trace, so that
 * neither a {@code bench} nor a jar built in this checkout is found.
 */
class CompareScriptTest {

    private static final String TRACE = "tiny-single";

    @Test
    void withoutBenchItSaysHowToBuildItAndRunsNothing(@TempDir Path root) throws Exception {
        Path script = layout(root);
        ChildProcess.Result r = run(script, "1", "1", TRACE);
        assertThat(r.status()).as("exit status; it printed:%n%s", r.output()).isEqualTo(2);
        assertThat(r.output().lines().toList()).containsExactly("compare.sh: needs " + script.resolveSibling("bench")
                + ", TensorFlow's allocator built as a benchmark: build it with 'make -C bfc-bench/src/cpp"
                + " TF_SRC=/path/to/tensorflow bench' (" + script.resolveSibling("README.md") + " says what TF_SRC is)");
    }

    @Test
    void withoutTheJarItSaysHowToBuildItAndRunsNothing(@TempDir Path root) throws Exception {
        Path script = layout(root);
        Path bench = script.resolveSibling("bench");
        // Never run: a bench that answered would print a figure.
        Files.writeString(bench, "#!/bin/sh\necho 'bench ran' >&2\nexit 1\n");
        Files.setPosixFilePermissions(bench, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path repository = script.getParent().getParent().getParent().getParent();
        ChildProcess.Result r = run(script, "1", "1", TRACE);
        assertThat(r.status()).as("exit status; it printed:%n%s", r.output()).isEqualTo(2);
        assertThat(r.output().lines().toList()).containsExactly("compare.sh: needs "
                + repository.resolve("bfc-bench/target/benchmarks.jar") + ": build it with 'mvn -B -q -pl bfc-bench -am"
                + " package -DskipTests' in " + repository);
    }

    @Test
    void countsThatAreNoWholeNumberFromOneAreAUsageError(@TempDir Path root) throws Exception {
        Path script = layout(root);
        for (String rounds : new String[] {"0", "x", "-1", "1.5"}) {
            ChildProcess.Result r = run(script, rounds, "1", TRACE);
            assertThat(r.status()).as("ROUNDS=%s; it printed:%n%s", rounds, r.output()).isEqualTo(2);
            assertThat(r.output()).as("ROUNDS=%s", rounds).startsWith("usage: " + script + " [ROUNDS [PASSES [TRACE...]]]");
        }
    }

    /** The script in {@code root}'s {@code bfc-bench/src/cpp}, and the trace it is given. */
    private static Path layout(Path root) throws IOException {
        Path real = SourceTree.root();
        Path cpp = Files.createDirectories(root.resolve("bfc-bench/src/cpp"));
        Path script = cpp.resolve("compare.sh");
        Files.copy(real.resolve("bfc-bench/src/cpp/compare.sh"), script);
        String trace = "conformance-tests/src/test/resources/traces/" + TRACE + ".bfctrace";
        Files.createDirectories(root.resolve(trace).getParent());
        Files.copy(real.resolve(trace), root.resolve(trace));
        return script.toRealPath();
    }

    private static ChildProcess.Result run(Path script, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("sh", script.toString()));
        command.addAll(List.of(args));
        return ChildProcess.run(command, Duration.ofMinutes(1));
    }
}
