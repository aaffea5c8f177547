/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
        // Surefire runs in the module's directory.
        Path tiny = Path.of("../conformance-tests/src/test/resources/traces/tiny-single.bfctrace");
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
        assertThat(cli.run("verify", missing.toString(), malformed.toString(), bad.toString(), good.toString()))
                .isEqualTo(2);
        assertThat(cli.out.lines()).containsExactly(
                "FAIL " + bad + " line 8: expected 0x7f0000000400, got 0x7f0000000100",
                "PASS " + good + " 4 calls",
                "1 passed, 3 failed");
        assertThat(cli.err.lines()).containsExactly(
                "ERROR " + missing + ": no such file",
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
        assertThat(cli.err).startsWith("ERROR " + cut + ": ");
        assertThat(cli.out.lines()).containsExactly("0 passed, 1 failed");
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
}
