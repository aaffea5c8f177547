/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code bfc serve} as a user runs it: a child JVM serving HTTP on 127.0.0.1. */
class ServeCommandTest {

    static Path workloadTrace() throws Exception {
        return Path.of(ServeCommandTest.class.getResource("/serve/serve-workload.bfctrace").toURI());
    }

    /** The value of the one sample of {@code name} in Prometheus text. */
    static double sample(String exposition, String name) {
        Matcher m = Pattern.compile("(?m)^" + name + "\\{([^}]*)\\} (\\S+)$").matcher(exposition);
        assertThat(m.find()).as("%s in:%n%s", name, exposition).isTrue();
        double v = Double.parseDouble(m.group(2));
        assertThat(m.find()).as("one sample of %s", name).isFalse();
        return v;
    }

    @Test
    void servesTheReplayedAllocatorsMetricsSummaryAndMemoryMap() throws Exception {
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", workloadTrace().toString())) {
            int port = serve.awaitPort();
            long[] replayed = serve.awaitReplayed();
            assertThat(replayed[0]).isEqualTo(12); // calls in the trace
            assertThat(replayed[1]).isEqualTo(5); // live at the end

            HttpResponse<String> metrics = serve.get(port, "/metrics");
            assertThat(metrics.statusCode()).isEqualTo(200);
            assertThat(metrics.headers().firstValue("Content-Type")).hasValueSatisfying(
                    ct -> assertThat(ct).startsWith("text/plain; version=0.0.4"));
            String text = metrics.body();
            assertThat(sample(text, "bfc_allocator_memory_used_bytes")).isEqualTo(replayed[2]);
            assertThat(sample(text, "bfc_allocator_pool_size_bytes")).isEqualTo(replayed[3]);
            assertThat(sample(text, "bfc_allocator_memory_limit_bytes")).isEqualTo(256 << 20);
            assertThat(sample(text, "bfc_allocator_allocations_total")).isEqualTo(8);
            assertThat(sample(text, "bfc_allocator_frees_total")).isEqualTo(3);
            assertThat(sample(text, "bfc_allocator_oom_total")).isEqualTo(1); // alloc 9 > limit
            assertThat(text).contains("allocator_name=\"serve_test\"").contains("memory_type=\"host\"");

            String summary = serve.get(port, "/summary").body();
            assertThat(summary).contains("bfc4j memory summary: serve_test (HOST_PAGEABLE)")
                    .contains("OOMs: 1");

            HttpResponse<String> map = serve.get(port, "/memory-map");
            assertThat(map.headers().firstValue("Content-Type")).hasValue("application/json");
            assertThat(map.body()).contains("\"schema\": \"bfc4j.memory-map/1\"");
            long inUse = 0;
            Matcher chunk = Pattern.compile("\"size\": (\\d+), \"requestedSize\": \\d+, \"inUse\": true")
                    .matcher(map.body());
            while (chunk.find()) {
                inUse += Long.parseLong(chunk.group(1));
            }
            assertThat(inUse).isEqualTo(replayed[2]);

            assertThat(serve.get(port, "/nothing").statusCode()).isEqualTo(404);
        }
    }

    @Test
    void loopKeepsReplayingAtTheGivenRate() throws Exception {
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", workloadTrace().toString(),
                "--loop", "--rate", "300")) {
            int port = serve.awaitPort();
            serve.awaitReplayed();
            double before = sample(serve.get(port, "/metrics").body(), "bfc_allocator_allocations_total");
            long t0 = System.nanoTime();
            Thread.sleep(1500);
            String text = serve.get(port, "/metrics").body();
            double seconds = (System.nanoTime() - t0) / 1e9;
            double after = sample(text, "bfc_allocator_allocations_total");
            // 8 of the trace's 12 calls are successful allocations: about 200 per second.
            assertThat(after - before).as("allocations in %.2f s", seconds)
                    .isPositive().isLessThan(300 * (seconds + 1));
            assertThat(sample(text, "bfc_allocator_frees_total"))
                    .isLessThanOrEqualTo(sample(text, "bfc_allocator_allocations_total"));
        }
    }

    @Test
    void withoutATraceServesAnIdleAllocator() throws Exception {
        try (ServeProcess serve = new ServeProcess("--port", "0", "--name", "idle_bfc")) {
            int port = serve.awaitPort();
            assertThat(serve.output()).contains("idle");
            String text = serve.get(port, "/metrics").body();
            assertThat(sample(text, "bfc_allocator_memory_used_bytes")).isZero();
            assertThat(sample(text, "bfc_allocator_memory_limit_bytes")).isEqualTo(1L << 30);
            assertThat(text).contains("allocator_name=\"idle_bfc\"");
        }
    }

    @Test
    void usageErrorsExitWith2() {
        StringWriter err = new StringWriter();
        CommandLine cl = BfcCommand.commandLine();
        cl.setErr(new PrintWriter(err));
        assertThat(cl.execute("serve", "--port", "0", "--loop")).isEqualTo(2);
        assertThat(err.toString()).contains("--loop needs --trace FILE");
        assertThat(BfcCommand.commandLine().setErr(new PrintWriter(new StringWriter()))
                .execute("serve")).isEqualTo(2);
        StringWriter err2 = new StringWriter();
        assertThat(BfcCommand.commandLine().setErr(new PrintWriter(err2))
                .execute("serve", "--port", "70000")).isEqualTo(2);
        assertThat(err2.toString()).contains("--port=70000 (expected: 0 to 65535)");
    }
}
