/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bundled recording of ONNX Runtime serving a real model (docs/cli.md) is a well-formed
 * workload trace that replay, whatif and report read.
 */
class OrtServingTraceTest {
    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void everyAllocationIsFreedOnceAndSaysWhichRequestMadeIt() throws IOException {
        Set<Long> live = new HashSet<>();
        Set<Long> steps = new HashSet<>();
        long calls = 0;
        try (TraceReader reader = TraceReader.open(Cli.ORT_SERVING)) {
            assertThat(reader.header().isWorkload()).isTrue();
            assertThat(reader.header().memoryLimit()).isEqualTo(1L << 30);
            // Written from the allocator's history by SnapshotTraces, named by the recorder.
            assertThat(reader.header().source()).startsWith("workload: recorded by bfc4j from allocator 'ort_cpu'");
            assertThat(reader.header().name()).startsWith("ort-minilm-serving: ")
                    .endsWith("60 requests from 2 threads");
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                calls++;
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    assertThat(live.add(e.id())).as("alloc %d once", e.id()).isTrue();
                    // The session's creation on the recorder's thread, or a request on a server thread.
                    assertThat(e.provenance()).as("line %d has its provenance", e.lineNumber()).isNotNull();
                    String annotation = e.provenance().annotation();
                    if (!"session/load".equals(annotation)) {
                        assertThat(annotation).as("line %d", e.lineNumber()).matches("minilm/run batch=\\d+ len=\\d+");
                        assertThat(e.provenance().thread()).startsWith("server-");
                        steps.add(e.provenance().step());
                    }
                } else {
                    assertThat(e.kind()).isEqualTo(TraceEvent.Kind.FREE);
                    assertThat(live.remove(e.id())).as("free %d of a live allocation", e.id()).isTrue();
                }
            }
        }
        assertThat(live).as("the session was closed: nothing left").isEmpty();
        assertThat(calls).isGreaterThan(10_000);
        assertThat(steps).as("every request allocated, annotated with its number").hasSize(60)
                .allMatch(step -> step >= 0 && step < 60);

        assertThat(cli.run("replay", Cli.ORT_SERVING)).isEqualTo(0);
        // The figures docs/cli.md shows (the live run's own peaks, as the recorder printed them).
        assertThat(cli.out).contains("(" + calls + " calls)")
                .contains("options        memory_limit=1GiB allow_growth=true")
                .contains("peak in use    117.06MiB (122748928 bytes) at line 9383")
                .contains("peak reserved  254MiB (266338304 bytes)")
                .contains("out of memory  0");
    }

    @Test
    void whatifFindsTheSmallestLimitAndReportDrawsIt() throws IOException {
        // The figures docs/cli.md states for this recording. One region of the whole limit:
        // 120 MiB is too little, 128 MiB is enough.
        String[] rows = whatif("120MiB,128MiB", "false");
        assertThat(ooms(rows[0])).as("120 MiB is too little: out-of-memory failures").isNotEqualTo("0");
        assertThat(ooms(rows[1])).isEqualTo("0");
        assertThat(cli.out).contains("smallest memory limit without running out of memory: 128MiB (allow_growth=false");
        // Growing regions (2 to 64 MiB: 126 MiB) leave too little under 144 MiB for the seventh
        // region a 24 MiB request needs; 150 MiB leaves just enough.
        rows = whatif("144MiB,150MiB", "true");
        assertThat(ooms(rows[0])).isNotEqualTo("0");
        assertThat(rows[0].split(" +")[5]).as("peak reserved: the six regions").isEqualTo("126MiB");
        assertThat(ooms(rows[1])).isEqualTo("0");

        Path html = dir.resolve("ort.html");
        assertThat(cli.run("report", Cli.ORT_SERVING, "-o", html)).isEqualTo(0);
        assertThat(cli.out).startsWith("wrote " + html);
        // The map at the peak names its holders from the trace's provenance: requests and weights.
        assertThat(Files.readString(html)).contains("\"holders\":[[\"minilm/run batch=")
                .contains("[\"session/load\",");
    }

    /** The rows of {@code bfc whatif} on the trace for these limits and growth. */
    private String[] whatif(String limits, String allowGrowth) {
        assertThat(cli.run("whatif", Cli.ORT_SERVING, "--memory-limit", limits, "--allow-growth", allowGrowth))
                .isEqualTo(0);
        String[] rows = cli.out.lines().filter(l -> l.matches("\\d+\\S*iB .*")).toArray(String[]::new);
        assertThat(rows).hasSize(2);
        return rows;
    }

    private static String ooms(String row) {
        return row.split(" +")[6];
    }
}
