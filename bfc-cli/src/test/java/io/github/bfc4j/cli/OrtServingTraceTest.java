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
    void everyAllocationIsFreedOnce() throws IOException {
        Set<Long> live = new HashSet<>();
        long calls = 0;
        try (TraceReader reader = TraceReader.open(Cli.ORT_SERVING)) {
            assertThat(reader.header().isWorkload()).isTrue();
            assertThat(reader.header().memoryLimit()).isEqualTo(1L << 30);
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                calls++;
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    assertThat(live.add(e.id())).as("alloc %d once", e.id()).isTrue();
                } else {
                    assertThat(e.kind()).isEqualTo(TraceEvent.Kind.FREE);
                    assertThat(live.remove(e.id())).as("free %d of a live allocation", e.id()).isTrue();
                }
            }
        }
        assertThat(live).as("the session was closed: nothing left").isEmpty();
        assertThat(calls).isGreaterThan(10_000);

        assertThat(cli.run("replay", Cli.ORT_SERVING)).isEqualTo(0);
        assertThat(cli.out).contains("(" + calls + " calls)")
                .contains("options        memory_limit=1GiB allow_growth=true")
                .contains("out of memory  0");
    }

    @Test
    void whatifFindsTheSmallestLimitAndReportDrawsIt() throws IOException {
        assertThat(cli.run("whatif", Cli.ORT_SERVING, "--memory-limit", "96MiB,1GiB")).isEqualTo(0);
        String[] rows = cli.out.lines().filter(l -> l.matches("\\d+\\S*iB .*")).toArray(String[]::new);
        assertThat(rows).hasSize(2);
        assertThat(rows[0].split(" +")[6]).as("96 MiB is too little: out-of-memory failures").isNotEqualTo("0");
        assertThat(rows[1].split(" +")[6]).isEqualTo("0");
        assertThat(cli.out).contains("smallest memory limit without running out of memory: 1GiB");

        Path html = dir.resolve("ort.html");
        assertThat(cli.run("report", Cli.ORT_SERVING, "-o", html)).isEqualTo(0);
        assertThat(cli.out).startsWith("wrote " + html);
        assertThat(Files.readString(html)).contains("ort-minilm-serving");
    }
}
