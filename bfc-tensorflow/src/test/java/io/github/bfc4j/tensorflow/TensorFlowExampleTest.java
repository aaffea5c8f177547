/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.ChildProcess;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Runs the example's main as a user would and checks what it prints. */
class TensorFlowExampleTest {

    @Test
    void mainPrintsTheResultTheMemorySummaryAndGivesEverythingBack() throws Exception {
        String out = runMain("--compare", "3");
        // The result, beside plain Java's, and their largest difference.
        assertThat(out).contains("softmax(x W + b), TensorFlow vs plain Java:");
        Matcher row = Pattern.compile("row (\\d): TensorFlow ([0-9. ]+) \\| Java ([0-9. ]+)").matcher(out);
        int rows = 0;
        while (row.find()) {
            rows++;
            String[] tfValues = row.group(2).trim().split(" ");
            String[] javaValues = row.group(3).trim().split(" ");
            assertThat(tfValues).hasSize(3);
            assertThat(tfValues).isEqualTo(javaValues);
            double sum = 0;
            for (String v : tfValues) {
                sum += Double.parseDouble(v);
            }
            assertThat(sum).as("a softmax row sums to 1").isCloseTo(1, org.assertj.core.api.Assertions.within(1e-5));
        }
        assertThat(rows).isEqualTo(3);
        Matcher diff = Pattern.compile("max \\|TensorFlow - Java\\| = (\\S+)").matcher(out);
        assertThat(diff.find()).isTrue();
        assertThat(Double.parseDouble(diff.group(1))).isLessThan(1e-6);
        // bfc4j's memory summary while the three inputs are live.
        assertThat(out).contains("bfc4j memory summary: tf_inputs (HOST_PAGEABLE)");
        assertThat(out).containsPattern("\\| Allocations\\s+\\|\\s+3 \\|");
        // The latency comparison ran (its figures are not checked: timing is no unit test's business).
        assertThat(out).containsPattern("create x \\+ run \\+ close:\\s+bfc4j-backed inputs: +median +[0-9.]+ us, p90"
                + " +[0-9.]+ us\\s+TFloat32.tensorOf inputs: +median +[0-9.]+ us");
        assertThat(out).containsPattern("create x \\+ close \\(not filled, not run\\):\\s+bfc4j-backed inputs:"
                + " +median +[0-9.]+ us");
        assertThat(out).containsPattern("run only \\(inputs made once\\):\\s+bfc4j-backed inputs: +median +[0-9.]+ us");
        // 3 inputs, then the comparison's W, b and x made once, and (10 warm-up + 3) x made per
        // run for each of the two timings that make x.
        assertThat(out).contains("bfc4j tensors made: 32, buffers given back by TensorFlow: 32, still held: 0");
        assertThat(out).contains("bytes in use after closing everything: 0");
    }

    @Test
    void badArgumentsAreRefused() {
        assertThatThrownBy(() -> TensorFlowExample.compareRuns("--compare", "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("arguments=[--compare, 0] (expected: none, or --compare N with N > 0, a whole number of"
                        + " runs such as 2000)");
        assertThatThrownBy(() -> TensorFlowExample.compareRuns("--fast"))
                .isInstanceOf(IllegalArgumentException.class);
        for (String notANumber : new String[] {"abc", "1e3", "2147483648", ""}) {
            assertThatThrownBy(() -> TensorFlowExample.compareRuns("--compare", notANumber))
                    .as("--compare %s", notANumber)
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessage("arguments=[--compare, " + notANumber + "] (expected: none, or --compare N with"
                            + " N > 0, a whole number of runs such as 2000)");
        }
        assertThat(TensorFlowExample.compareRuns()).isZero();
        assertThat(TensorFlowExample.compareRuns("--compare", "2000")).isEqualTo(2000);
        // From code: a null word is named by its index (it was a bare NullPointerException from
        // args[0].equals).
        assertThatThrownBy(() -> TensorFlowExample.main(new String[] {null, "2"}))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("args[0]=null (expected: none, or --compare N with N > 0)");
        assertThatThrownBy(() -> TensorFlowExample.main(null)).isInstanceOf(NullPointerException.class)
                .hasMessageStartingWith("args=null (expected: ");
    }

    /**
     * On the command line, bad arguments are one line saying what was wrong, then the usage, and
     * exit status 2, before TensorFlow is loaded: not the stack trace of an uncaught
     * IllegalArgumentException (exit 1).
     */
    @Test
    void badArgumentsOnTheCommandLineAreOneLineAndTheUsageWithExitStatus2() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        for (List<String> args : List.of(List.of("--compare", "0"), List.of("--compare", "abc"), List.of("--fast"))) {
            List<String> command = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
                    TensorFlowExample.class.getName()));
            command.addAll(args);
            ChildProcess.Result r = ChildProcess.run(command, Duration.ofMinutes(2));
            assertThat(r.status()).as("exit status of %s; it printed:%n%s", args, r.output()).isEqualTo(2);
            assertThat(r.output().lines().toList()).as("%s", args).containsExactly(
                    "TensorFlowExample: arguments=" + args.toString() + " (expected: none, or --compare N with N > 0,"
                            + " a whole number of runs such as 2000)",
                    TensorFlowExample.USAGE);
        }
    }

    private static String runMain(String... args) throws Exception {
        PrintStream original = System.out;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            TensorFlowExample.main(args);
        } finally {
            System.setOut(original);
        }
        String out = bytes.toString(StandardCharsets.UTF_8);
        original.print(out);
        return out;
    }
}
