/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.SourceTree;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bfc-bench/measure.sh} prints its usage for {@code -h} and {@code --help}, and refuses a
 * bad argument with exit status 2 before anything runs: it took {@code --help} for the directory
 * to write into (mkdir then failed on it as an option, exit 1, no usage), and two directories
 * as one, ignoring the second. It runs here from a copy in a directory of its own, with
 * {@code mvn} and {@code java} on the PATH stand-ins that fail, so that nothing is built or
 * measured whatever it does.
 */
class MeasureScriptTest {

    private static final String USAGE = "[OUT_DIR]   (OUT_DIR: default bfc-bench-results; environment: ROUNDS, a whole"
            + " number from 1, the rounds of compare.sh, default 15; TF_SRC, a TensorFlow source tree, to time its"
            + " release build too)";

    @Test
    void helpPrintsTheUsage(@TempDir Path root) throws Exception {
        Path script = layout(root);
        for (String help : new String[] {"-h", "--help"}) {
            ChildProcess.Result r = run(root, script, "15", help);
            assertThat(r.status()).as("%s; it printed:%n%s", help, r.output()).isZero();
            assertThat(r.output().lines().toList()).as(help).containsExactly("usage: " + script + " " + USAGE);
        }
    }

    @Test
    void aBadArgumentIsExitTwoWithTheUsage(@TempDir Path root) throws Exception {
        Path script = layout(root);
        String[][] cases = {
            {"15", "--bogus", "measure.sh: unknown option '--bogus'"},
            {"15", "-x", "measure.sh: unknown option '-x'"},
            {"15", root.resolve("a") + " " + root.resolve("b"), "measure.sh: one OUT_DIR at most, not 2 arguments"},
            {"0", root.resolve("a").toString(), "measure.sh: ROUNDS=0 is below 1"},
            {"1.5", root.resolve("a").toString(), "measure.sh: ROUNDS=1.5 is no whole number"}};
        for (String[] c : cases) {
            ChildProcess.Result r = run(root, script, c[0], c[1].split(" "));
            assertThat(r.status()).as("ROUNDS=%s %s; it printed:%n%s", c[0], c[1], r.output()).isEqualTo(2);
            assertThat(r.output().lines().toList()).as("ROUNDS=%s %s", c[0], c[1])
                    .containsExactly(c[2], "usage: " + script + " " + USAGE);
        }
        assertThat(root.resolve("a")).as("a directory made before the refusal").doesNotExist();
    }

    /** measure.sh in {@code root}'s {@code bfc-bench}, and failing {@code mvn} and {@code java} in {@code root/bin}. */
    private static Path layout(Path root) throws Exception {
        Path bench = Files.createDirectories(root.resolve("bfc-bench"));
        Path script = bench.resolve("measure.sh");
        Files.copy(SourceTree.root().resolve("bfc-bench/measure.sh"), script);
        Path bin = Files.createDirectories(root.resolve("bin"));
        for (String tool : new String[] {"mvn", "java"}) {
            Path stub = bin.resolve(tool);
            Files.writeString(stub, "#!/bin/sh\necho '" + tool + " ran' >&2\nexit 1\n");
            Files.setPosixFilePermissions(stub, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        return script.toRealPath();
    }

    private static ChildProcess.Result run(Path root, Path script, String rounds, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("env", "PATH=" + root.resolve("bin") + ":" + System.getenv("PATH"),
                "ROUNDS=" + rounds, "sh", script.toString()));
        command.addAll(List.of(args));
        return ChildProcess.run(command, Duration.ofMinutes(1));
    }
}
