/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.SourceTree;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VerifyCommandTest {

    private static final String HEADER = "bfctrace 1\n"
            + "name cli-test: a small trace\n"
            + "source test\n"
            + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
            + " timing_counter=false\n"
            + "suballocator sim base=0x7f0000000000 capacity=69206016 gap=0 coalescing=true\n";

    /** Passes: 4 calls. Line 8 is the second alloc. */
    private static final String GOOD = HEADER
            + "alloc 1 1 => 0x7f0000000000\n"                   // 6
            + "sub alloc 1048576 => 0x7f0000000000\n"           // 7
            + "alloc 2 1000 => 0x7f0000000100\n"                // 8
            + "chunk 2 size=1024 requested=1000 allocation_id=2\n"
            + "stats num_allocs=2 bytes_in_use=1280\n"
            + "free 1\n"
            + "free 2\n";

    private static final String WRONG_ADDRESS = GOOD.replace("alloc 2 1000 => 0x7f0000000100",
            "alloc 2 1000 => 0x7f0000000400");

    private static final String MALFORMED = HEADER + "alloc 1 1 algn=64 => 0x7f0000000000\n";

    @TempDir
    Path dir;

    private final Cli cli = new Cli();

    private Path write(String name, String text) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, text);
        return p;
    }

    @Test
    void passingTrace() throws IOException {
        Path good = write("good.bfctrace", GOOD);
        assertThat(cli.run("verify", good.toString())).isEqualTo(0);
        assertThat(cli.out.lines()).containsExactly("PASS " + good + " 4 calls", "1 passed, 0 failed");
        assertThat(cli.err).isEmpty();
    }

    @Test
    void gzipTrace() throws IOException {
        Path gz = dir.resolve("good.bfctrace.gz");
        try (GZIPOutputStream z = new GZIPOutputStream(Files.newOutputStream(gz))) {
            z.write(GOOD.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        assertThat(cli.run("verify", gz.toString())).isEqualTo(0);
        assertThat(cli.out.lines()).containsExactly("PASS " + gz + " 4 calls", "1 passed, 0 failed");
    }

    @Test
    void bundledTrace() {
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        assertThat(tiny).exists();
        assertThat(cli.run("verify", tiny.toString())).isEqualTo(0);
        assertThat(cli.out.lines()).containsExactly("PASS " + tiny + " 13 calls", "1 passed, 0 failed");
    }

    @Test
    void failingTrace() throws IOException {
        Path good = write("good.bfctrace", GOOD);
        Path bad = write("bad.bfctrace", WRONG_ADDRESS);
        assertThat(cli.run("verify", good.toString(), bad.toString())).isEqualTo(1);
        assertThat(cli.out.lines()).containsExactly(
                "PASS " + good + " 4 calls",
                "FAIL " + bad + " line 8: expected 0x7f0000000400, got 0x7f0000000100",
                "1 passed, 1 failed");
        assertThat(cli.err).isEmpty();
    }

    @Test
    void unreadableInputWinsOverFailureAndTheOtherFilesAreStillVerified() throws IOException {
        Path missing = dir.resolve("missing.bfctrace");
        Path malformed = write("malformed.bfctrace", MALFORMED);
        Path bad = write("bad.bfctrace", WRONG_ADDRESS);
        Path good = write("good.bfctrace", GOOD);
        assertThat(cli.run("verify", missing.toString(), dir.toString(), malformed.toString(), bad.toString(),
                good.toString())).isEqualTo(2);
        assertThat(cli.out.lines()).containsExactly(
                "FAIL " + bad + " line 8: expected 0x7f0000000400, got 0x7f0000000100",
                "PASS " + good + " 4 calls",
                "1 passed, 4 failed");
        assertThat(cli.err.lines()).containsExactly(
                "ERROR " + missing + ": no such file",
                "ERROR " + dir + ": is a directory (expected: a file)",
                "ERROR " + malformed + " line 6: found unknown key 'algn=64', expected align=<n> or freed_before=<n>");
    }

    @Test
    void truncatedGzipIsUnreadable() throws IOException {
        StringBuilder text = new StringBuilder(HEADER);
        for (int i = 1; i <= 20000; i++) {
            text.append("alloc ").append(i).append(" 0 => null\n");
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(bytes)) {
            z.write(text.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        Path cut = dir.resolve("cut.bfctrace.gz");
        Files.write(cut, java.util.Arrays.copyOf(bytes.toByteArray(), bytes.size() / 2));
        assertThat(cli.run("verify", cut.toString())).isEqualTo(2);
        // The file named once, the line, and what to do (it was Java's "Unexpected end of ZLIB input stream").
        assertThat(cli.err.lines()).singleElement().asString().matches("ERROR \\Q" + cut + "\\E line \\d+: the gzip"
                + " data ends early: the file is truncated \\(or still being written\\); check it with 'gzip -t'");
        assertThat(cli.out.lines()).containsExactly("0 passed, 1 failed");
        assertThat(cli.run("replay", cut.toString())).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc replay: " + cut + " line ").contains(": the gzip data ends early");
    }

    @Test
    void aGzipFileTooShortForItsHeaderIsNamed() throws IOException {
        // Under 10 bytes: the gzip header itself is cut (it printed "null").
        Path small = dir.resolve("small.bfctrace.gz");
        Files.write(small, new byte[] {0x1f, (byte) 0x8b, 8});
        assertThat(cli.run("verify", small.toString())).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR " + small + ": the gzip header is cut short (the file is"
                + " truncated or empty); check it with 'gzip -t'");
        assertThat(cli.run("replay", small.toString())).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + small + ": the gzip header is cut short (the file"
                + " is truncated or empty); check it with 'gzip -t'");
    }

    @Test
    void aTraceCutInsideItsLastLineIsUnreadable() throws IOException {
        // "free 648" cut to "free 6": every line valid, every answer right; only the line break is missing.
        String whole = HEADER + "alloc 6 1 => 0x7f0000000000\nsub alloc 1048576 => 0x7f0000000000\n"
                + "alloc 648 1 => 0x7f0000000100\nfree 648\n";
        Path good = write("whole.bfctrace", whole);
        Path cut = write("cut.bfctrace", whole.substring(0, whole.length() - "48\n".length()));
        assertThat(cli.run("verify", good.toString(), cut.toString())).isEqualTo(2);
        assertThat(cli.out.lines()).containsExactly("PASS " + good + " 3 calls", "1 passed, 1 failed");
        assertThat(cli.err.lines()).containsExactly("ERROR " + cut + " line 9: the last line has no line break after"
                + " it: the file may be truncated (a whole trace ends with one: add it if nothing is missing)");
    }

    @Test
    void aHeaderWhoseSplitThresholdIsZeroIsUnreadable() throws IOException {
        // 1e-10 of 1 MiB: the allocator cannot be created with it (the format says traces never use one).
        Path t = write("fraction.bfctrace", GOOD.replace("fragmentation_fraction=0 ",
                "fragmentation_fraction=0.0000000001 "));
        assertThat(cli.run("verify", t.toString())).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR " + t + " line 4: found fragmentation_fraction=0.0000000001"
                + " with memory_limit=1048576, a split threshold of 0 bytes, expected a split threshold"
                + " fragmentation_fraction * memory_limit of at least 1 byte: a fraction of at least 0.00000096 at this"
                + " limit, or 0 for upstream's 128 MiB threshold");
        assertThat(cli.out.lines()).containsExactly("0 passed, 1 failed");
    }

    @Test
    void standardInput() throws IOException {
        assertThat(cli.runWithStdin(GOOD.getBytes(java.nio.charset.StandardCharsets.UTF_8), "verify", "-"))
                .isEqualTo(0);
        assertThat(cli.out.lines()).containsExactly("PASS <stdin> 4 calls", "1 passed, 0 failed");
        assertThat(cli.run("verify", "-", "-")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc verify: - given more than once");
    }

    @Test
    void usageErrors() {
        assertThat(cli.run("verify")).isEqualTo(2);
        assertThat(cli.err).contains("Missing required parameter");
        assertThat(cli.run()).isEqualTo(2);
        assertThat(cli.err).contains("Missing required subcommand");
        assertThat(cli.run("frobnicate")).isEqualTo(2);
    }

    @Test
    void help() {
        assertThat(cli.run("--help")).isEqualTo(0);
        assertThat(cli.out).contains("verify");
        assertThat(cli.run("verify", "--help")).isEqualTo(0);
        assertThat(cli.out).contains("FILE").contains("Exit status");
    }

    /**
     * Out of Java heap: one line per file, as the other commands say it, and the other files
     * still verified (it was picocli's stack trace). In a child JVM with a 16 MiB heap.
     */
    @Test
    void aHeapTooSmallIsOneLineAndTheOtherFilesAreVerified() throws Exception {
        Path big = Cli.TRACES.resolve("big-random-1m-s71.bfctrace.gz");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        ChildProcess.Result r = ChildProcess.run(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx16m", "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand",
                "verify", big.toString(), tiny.toString()), Duration.ofSeconds(120));
        String output = r.output();
        assertThat(r.status()).as(output).isEqualTo(1);
        assertThat(output.lines()).contains("ERROR " + big + ": the Java heap is too small for this input; give"
                + " more with BFC_JAVA_OPTS=-Xmx4g", "PASS " + tiny + " 13 calls", "1 passed, 1 failed");
        assertThat(output).doesNotContain("Exception in thread").doesNotContain("\tat ");
    }

    /** A workload trace has no answers: its PASS says that nothing was compared. */
    @Test
    void aWorkloadTracesPassSaysNothingWasCompared() throws IOException {
        Path whole = Cli.wholeAndCutTraces(dir)[0];
        assertThat(cli.run("verify", whole.toString())).isZero();
        assertThat(cli.out.lines()).containsExactly("PASS " + whole + " 3 calls (a workload trace: no answers to"
                + " compare, the calls ran)", "1 passed, 0 failed");
    }
}
