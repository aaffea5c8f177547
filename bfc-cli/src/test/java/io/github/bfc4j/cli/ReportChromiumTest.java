/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SourceTree;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opens reports in headless Chromium (Debian's {@code chromium}, which {@code .ci/run}
 * installs): the page's script marks {@code <body data-rendered="timeline,maps"
 * data-errors="0">} once it has drawn its charts, and counts uncaught errors; the console log
 * must hold no error. A screenshot lands in {@code bfc-cli/target/report-screenshots/}. Skipped, saying
 * why, where no {@code chromium} can run.
 */
class ReportChromiumTest {
    private static String chromium;

    @TempDir
    Path dir;

    @BeforeAll
    static void findChromium() {
        for (String c : new String[] {"chromium", "chromium-browser", "google-chrome"}) {
            for (String p : System.getenv().getOrDefault("PATH", "/usr/bin").split(java.io.File.pathSeparator)) {
                if (Files.isExecutable(Path.of(p, c))) {
                    chromium = Path.of(p, c).toString();
                    return;
                }
            }
        }
    }

    /** Runs chromium headless with the given arguments; returns {stdout, stderr}. */
    private String[] chromium(Path page, String... args) throws IOException, InterruptedException {
        return chromium(page, false, args);
    }

    /** With {@code selfTest}, the page hovers its own charts and keeps the tooltips in attributes. */
    private String[] chromium(Path page, boolean selfTest, String... args) throws IOException, InterruptedException {
        Assumptions.assumeTrue(chromium != null, "no chromium on the PATH (.ci/run installs Debian's chromium)");
        List<String> cmd = new ArrayList<>(List.of(chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--user-data-dir=" + Files.createTempDirectory(dir, "profile"),
                "--enable-logging=stderr", "--v=0"));
        cmd.addAll(List.of(args));
        cmd.add(page.toUri() + (selfTest ? "#selftest" : ""));
        Path out = dir.resolve("chromium.out");
        Path err = dir.resolve("chromium.err");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("chromium did not finish in 120 s: " + cmd);
        }
        String stdout = Files.readString(out, StandardCharsets.UTF_8);
        String stderr = Files.readString(err, StandardCharsets.UTF_8);
        Assumptions.assumeTrue(p.exitValue() == 0 || !stdout.isEmpty(),
                "chromium cannot run here (exit " + p.exitValue() + "): " + stderr.lines().reduce((a, b) -> b).orElse(""));
        return new String[] {stdout, stderr};
    }

    private static List<String> consoleErrors(String stderr) {
        return stderr.lines().filter(l -> l.contains("CONSOLE") || l.contains("Uncaught")).toList();
    }

    private Path report(Path trace, String name, String... extra) {
        Cli cli = new Cli();
        Path html = dir.resolve(name);
        List<Object> args = new ArrayList<>(List.of("report", trace, "-o", html));
        args.addAll(List.of((Object[]) extra));
        assertThat(cli.run(args.toArray())).as(cli.err).isEqualTo(0);
        return html;
    }

    @Test
    void theReportDrawsItsChartsWithoutErrors() throws Exception {
        Path html = report(Cli.TRACES.resolve("oom-gc-random-256mib-s15.bfctrace"), "oom.html");
        String[] dom = chromium(html, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).contains("<body data-rendered=\"timeline,maps\" data-errors=\"0\">");
        // The first map drawn is the peak's, one canvas per region.
        assertThat(dom[0]).contains("data-map=\"peak in use\"");
        assertThat(consoleErrors(dom[1])).isEmpty();

        Path shots = SourceTree.root().resolve("bfc-cli/target/report-screenshots");
        Files.createDirectories(shots);
        Path png = shots.resolve("oom-gc-random-256mib-s15.png").toAbsolutePath();
        Files.deleteIfExists(png);
        chromium(html, "--screenshot=" + png, "--window-size=1280,1000", "--hide-scrollbars");
        assertThat(png).exists();
        assertThat(Files.size(png)).isGreaterThan(20_000); // a blank page is a few KiB
    }

    @Test
    void hoveringAChunkShowsItsSizeRequestAllocationIdAndTraceLine() throws Exception {
        Path trace = Cli.TRACES.resolve("oom-gc-random-256mib-s15.bfctrace");
        Path html = report(trace, "hover.html");
        String[] dom = chromium(html, true, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).contains("data-rendered=\"timeline,maps\"").contains("data-errors=\"0\"");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("data-selftest-map=\"in use  0x[0-9a-f]+\nsize \\S+"
                + " \\(([0-9,]+) bytes\\)\nrequested \\S+ \\(([0-9,]+) bytes\\)\nallocation id (\\d+)\ntrace line (\\d+)\"")
                .matcher(dom[0]);
        assertThat(m.find()).as(dom[0].lines().filter(l -> l.contains("selftest")).toList().toString()).isTrue();
        long size = Long.parseLong(m.group(1).replace(",", ""));
        long requested = Long.parseLong(m.group(2).replace(",", ""));
        assertThat(size % 256).isZero();
        assertThat(requested).isPositive().isLessThanOrEqualTo(size);
        // The line named is an alloc line of the trace, of the requested size.
        String line = Files.readAllLines(trace).get(Integer.parseInt(m.group(4)) - 1);
        assertThat(line).startsWith("alloc ").contains(" " + requested + " ");
        assertThat(dom[0]).containsPattern("data-selftest-timeline=\"calls [0-9,]+\u2013[0-9,]+\nin use ");
    }

    @Test
    void aTraceWithProvenanceShowsWhoAllocatedEachChunkAndTheLargestHolders() throws Exception {
        // The TensorFlow log's [mem-debug] stack traces, imported as the trace's provenance.
        Cli cli = new Cli();
        Path trace = dir.resolve("tf.bfctrace");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", trace))
                .as(cli.err).isEqualTo(0);
        Path html = report(trace, "provenance.html");
        String[] dom = chromium(html, true, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).contains("data-rendered=\"timeline,maps\"").contains("data-errors=\"0\"");
        // The first chunk in use at the peak: the 4-byte constant of the log's line 62.
        assertThat(dom[0]).contains("trace line 62\nallocated by:\n  at tensorflow::Tensor::FromProto(tsl::Allocator*,"
                + " tensorflow::TensorProto const&amp;)\n  at tensorflow::ThreadPoolDevice::MakeTensorFromProto(");
        assertThat(dom[0]).contains("Largest holders (peak in use)")
                .contains("<td>tensorflow::Tensor::Tensor(tsl::Allocator*, tensorflow::DataType,"
                        + " tensorflow::TensorShape const&amp;, tsl::AllocationAttributes const&amp;)</td>");
        assertThat(consoleErrors(dom[1])).isEmpty();
    }

    @Test
    void aReportWithoutFailuresAndARecordedTrace() throws Exception {
        Path html = report(Cli.RECORDED.resolve("tf-mlp-train-adam.bfctrace"), "mlp.html");
        String[] dom = chromium(html, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).contains("<body data-rendered=\"timeline,maps\" data-errors=\"0\">");
        assertThat(consoleErrors(dom[1])).isEmpty();
    }

    @Test
    void oneChunkInOneRegionIsNotPlural() throws Exception {
        Path html = report(SingularCountsTest.oneCall(dir, "one.bfctrace", 1 << 20), "one.html");
        String[] dom = chromium(html, true, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).contains("data-rendered=\"timeline,maps\"").contains("data-errors=\"0\"");
        assertThat(dom[0]).contains(", 1 chunk in 1 region<")
                .containsPattern("region 1: 0x[0-9a-f]+, 1\\.00MiB, 1 chunk,");
        assertThat(consoleErrors(dom[1])).isEmpty();
    }

    @Test
    void theCheckNoticesABrokenPage() throws Exception {
        // The same check fails on a page whose script throws: it is not vacuous.
        Path html = report(Cli.TRACES.resolve("tiny-single.bfctrace"), "tiny.html");
        String page = Files.readString(html).replace("drawTimeline();\n  setupMaps();", "drawTimeline(); null.x;");
        Path broken = dir.resolve("broken.html");
        Files.writeString(broken, page);
        String[] dom = chromium(broken, "--dump-dom", "--virtual-time-budget=5000");
        assertThat(dom[0]).doesNotContain("data-rendered=").contains("data-errors=\"1\"");
        assertThat(consoleErrors(dom[1])).isNotEmpty();
    }
}
