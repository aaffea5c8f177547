package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the example's main as a user would and checks what it prints. */
class OnnxRuntimeExampleTest {

    private static String runMain(String... args) throws Exception {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            OnnxRuntimeExample.main(args);
        } finally {
            System.setOut(saved);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        saved.println(out);
        return out;
    }

    @Test
    void printsEachSentencesParaphraseAsItsNearestNeighbourAndTheMemorySummary() throws Exception {
        String out = runMain();
        assertThat(out).startsWith("ONNX Runtime 1.22.0, CPU memory from bfc4j allocator 'ort_cpu' (limit 1.00GiB)");
        assertThat(out).containsPattern("Session created: [1-9]\\d* allocations live \\(the weights\\), [\\d.]+MiB in use");
        assertThat(out).contains("bfc4j memory summary: ort_cpu (HOST_PAGEABLE)");
        assertThat(out).containsPattern("ORT called the allocator: Alloc [1-9]\\d*, Reserve [1-9]\\d*, Free [1-9]\\d*");
        assertThat(out).contains("After closing the session: 0B in use, 0 allocations live");
        // The model's documented behaviour: each sentence's nearest neighbour is its paraphrase.
        int rows = 0;
        for (List<String> pair : Sentences.PARAPHRASES) {
            for (int side = 0; side < 2; side++) {
                Matcher m = Pattern.compile(Pattern.quote(pair.get(side)) + " +-> " + Pattern.quote(pair.get(1 - side))
                        + " \\(0\\.\\d\\d\\)").matcher(out);
                assertThat(m.find()).as(pair.get(side)).isTrue();
                rows++;
            }
        }
        assertThat(rows).isEqualTo(10);
    }

    @Test
    void compareRunsBothSidesInFreshJvmsAndPrintsTheTable() throws Exception {
        String out = runMain("--compare", "1", "3");
        // One round, not '1 rounds'.
        assertThat(out).containsPattern("ONNX Runtime 1\\.22\\.0, all-minilm-l6-v2-q\\.onnx, \\d+ CPUs; 1 round of two"
                + " fresh JVMs \\(bfc4j, ORT's arena\\), 3 timed runs per batch size");
        assertThat(out).containsPattern("round 1, p50/p99 ms by batch size:  1: bfc4j [\\d.]+/[\\d.]+, arena [\\d.]+/[\\d.]+"
                + "  8: .*  32: bfc4j [\\d.]+/[\\d.]+, arena [\\d.]+/[\\d.]+\n");
        for (int batch : OnnxRuntimeExample.BATCHES) {
            assertThat(out).containsPattern("\\| " + batch + " \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\|");
        }
        assertThat(out).containsPattern("peak resident memory: bfc4j [\\d.]+MiB, ORT's arena [\\d.]+MiB;"
                + " bfc4j's peak reserved [\\d.]+MiB");
    }

    /**
     * A fresh JVM of {@code --compare} that does not end is ended at its limit, saying so with its
     * standard error: the comparison read the child's output pipe to its end and then waited
     * without a limit, so a child that hung kept the comparison (and this test) waiting for ever.
     * The child here sleeps 120 s, so that even without the limit it ends.
     */
    @Test
    void aCompareJvmThatDoesNotEndIsEndedAtItsLimitWithItsStandardError() {
        List<String> sleeps = javaRunning(ExampleJvmTest.Sleeps.class, "120");
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThatThrownBy(
                () -> OnnxRuntimeExample.runChild(sleeps, "the sleeping JVM", Duration.ofSeconds(3)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the sleeping JVM ran for longer than PT3S and was ended; its standard error: err"));
    }

    /**
     * What a fresh JVM of {@code --compare} started is ended with it at its limit: only the child
     * was ended, so a process it had started (here a {@code sleep 120}) ran on after the
     * comparison, handed to the system's first process.
     */
    @Test
    void whatACompareJvmStartedIsEndedWithItAtItsLimit() {
        assumeTrue(Files.isExecutable(Path.of("/bin/sleep")) || Files.isExecutable(Path.of("/usr/bin/sleep")),
                "no sleep program here");
        List<String> startsASleep = javaRunning(ExampleJvmTest.StartsASleep.class, "120");
        IllegalStateException e = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> catchThrowableOfType(
                () -> OnnxRuntimeExample.runChild(startsASleep, "the JVM starting a sleep", Duration.ofSeconds(10)),
                IllegalStateException.class));
        assertThat(e).hasMessageStartingWith("the JVM starting a sleep ran for longer than PT10S and was ended");
        ExampleJvmTest.assertTheGrandchildEnded(e.getMessage());
    }

    /**
     * A fresh JVM of {@code --compare} that fails is said with its status and standard error,
     * which the comparison discarded: the failure said only the status and an empty output.
     */
    @Test
    void aCompareJvmThatFailsIsSaidWithItsStandardError() {
        List<String> bad = javaRunning(OnnxRuntimeExample.class, "--measure", "nowhere", "1");
        assertThatThrownBy(() -> OnnxRuntimeExample.runChild(bad, "the nowhere JVM", Duration.ofMinutes(5)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the nowhere JVM exited with 2; its standard error: OnnxRuntimeExample: unexpected"
                        + " arguments: --measure nowhere 1\n" + OnnxRuntimeExample.USAGE + "; its output: []");
    }

    /** The command that runs {@code main} in a JVM of its own with this one's class path. */
    private static List<String> javaRunning(Class<?> main, String... args) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        return command;
    }

    @Test
    void interleavePrintsATableFromOneJvm() throws Exception {
        String out = runMain("--interleave", "2");
        assertThat(out).containsPattern("ONNX Runtime 1\\.22\\.0, all-minilm-l6-v2-q\\.onnx, \\d+ CPUs; one JVM, 2 runs"
                + " per batch size of 32-token texts on each session in turn");
        for (int batch : OnnxRuntimeExample.BATCHES) {
            assertThat(out).containsPattern("\\| " + batch + " \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\|");
        }
    }

    /**
     * Bad arguments print one line saying what was wrong, then the usage, and exit with 2: a
     * count below 1 or no number, or arguments of no form the example takes. A bad count printed
     * the stack trace of the IllegalArgumentException that named it (exit 1).
     */
    @Test
    void badArgumentsAreOneLineAndTheUsageAndExitTwo(@TempDir Path dir) throws Exception {
        String[][] cases = {
            {"ROUNDS=0 (expected: a whole number from 1 to 2147483647)", "--compare", "0"},
            {"ROUNDS=x (expected: a whole number from 1 to 2147483647)", "--compare", "x"},
            {"REQUESTS=99999999999 (expected: a whole number from 1 to 2147483647)", "--interleave", "99999999999"},
            {"unexpected arguments: --interleave", "--interleave"},
        };
        for (String[] c : cases) {
            ExampleJvm.Result r = ExampleJvm.run(OnnxRuntimeExample.class, dir, Arrays.copyOfRange(c, 1, c.length));
            assertThat(r.status()).as(r.err().toString()).isEqualTo(2);
            assertThat(r.err()).containsExactly("OnnxRuntimeExample: " + c[0], OnnxRuntimeExample.USAGE);
            assertThat(r.out()).isEmpty();
        }
    }

    @Test
    void percentilesAreNearestRank() {
        long[] sorted = new long[100];
        for (int i = 0; i < 100; i++) {
            sorted[i] = i + 1;
        }
        assertThat(OnnxRuntimeExample.percentile(sorted, 0.50)).isEqualTo(50);
        assertThat(OnnxRuntimeExample.percentile(sorted, 0.99)).isEqualTo(99);
        assertThat(OnnxRuntimeExample.percentile(new long[] {7, 9, 11}, 0.99)).isEqualTo(11);
        assertThat(OnnxRuntimeExample.median(List.of(3.0, 1.0, 2.0, 10.0))).isEqualTo(2.5);
    }
}
