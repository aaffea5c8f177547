/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * End to end with a real Prometheus server (Debian's {@code prometheus} package, which
 * {@code .ci/run} installs): Prometheus scrapes {@code bfc serve} every second, and its query API
 * answers {@code bfc_allocator_memory_used_bytes} with the allocator's bytes in use.
 */
class ServePrometheusTest {

    private static Path prometheusBinary() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "prometheus");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Test
    void prometheusScrapesServeAndAnswersTheBytesInUse(@TempDir Path dir) throws Exception {
        Path prometheus = prometheusBinary();
        Assumptions.assumeTrue(prometheus != null,
                "no 'prometheus' binary on PATH: install Debian's prometheus package (.ci/run does:"
                        + " apt-get install -y prometheus)");
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace",
                ServeCommandTest.workloadTrace().toString())) {
            int servePort = serve.awaitPort();
            long[] replayed = serve.awaitReplayed();
            long bytesInUse = replayed[2];
            assertThat(bytesInUse).isPositive();

            int promPort = freePort();
            Path config = dir.resolve("prometheus.yml");
            Files.writeString(config, String.join("\n",
                    "global:",
                    "  scrape_interval: 1s",
                    "  evaluation_interval: 1s",
                    "scrape_configs:",
                    "  - job_name: bfc",
                    "    scrape_interval: 1s",
                    "    static_configs:",
                    "      - targets: ['127.0.0.1:" + servePort + "']",
                    ""));
            Path log = dir.resolve("prometheus.log");
            Process prom = new ProcessBuilder(prometheus.toString(),
                    "--config.file=" + config,
                    "--storage.tsdb.path=" + dir.resolve("data"),
                    "--web.listen-address=127.0.0.1:" + promPort)
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
                String query = "http://127.0.0.1:" + promPort + "/api/v1/query?query="
                        + URLEncoder.encode("bfc_allocator_memory_used_bytes{job=\"bfc\"}", StandardCharsets.UTF_8);
                Pattern value = Pattern.compile("\"value\":\\[[0-9.]+,\"([^\"]+)\"\\]");
                String body = null;
                Matcher m = null;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                while (System.nanoTime() < deadline) {
                    assertThat(prom.isAlive()).as("prometheus exited; its log:%n%s", readLog(log)).isTrue();
                    try {
                        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(query))
                                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
                        body = r.body();
                        m = value.matcher(body);
                        if (r.statusCode() == 200 && m.find()) {
                            break;
                        }
                    } catch (IOException notUpYet) {
                        // Prometheus is still starting
                    }
                    m = null;
                    Thread.sleep(500);
                }
                assertThat(m).as("Prometheus never answered the query; last answer %s; its log:%n%s",
                        body, readLog(log)).isNotNull();
                System.out.println("Prometheus answered: " + body);
                assertThat(body).contains("\"status\":\"success\"")
                        .contains("\"allocator_name\":\"serve_test\"")
                        .contains("\"instance\":\"127.0.0.1:" + servePort + "\"");
                assertThat(Double.parseDouble(m.group(1))).isEqualTo((double) bytesInUse);
                assertThat(m.find()).as("one series").isFalse();
            } finally {
                prom.destroy();
                if (!prom.waitFor(15, TimeUnit.SECONDS)) {
                    prom.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    private static String readLog(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
