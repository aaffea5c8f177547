/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
    void aTraceFromStandardInputIsReplayedPassAfterPass() throws Exception {
        byte[] trace = java.nio.file.Files.readAllBytes(workloadTrace());
        try (ServeProcess serve = new ServeProcess(trace, "--port", "0", "--trace", "-", "--loop",
                "--memory-limit", "16GiB")) {
            int port = serve.awaitPort();
            assertThat(serve.awaitReplayed()[0]).isEqualTo(12);
            assertThat(serve.output()).contains("for allocator 'serve_test' (limit 17179869184 bytes)");
            assertThat(sample(serve.get(port, "/metrics").body(), "bfc_allocator_memory_limit_bytes"))
                    .isEqualTo(16L << 30);
            // Pass after pass from one read of the pipe: the allocations keep counting up.
            double first = sample(serve.get(port, "/metrics").body(), "bfc_allocator_allocations_total");
            scrapeUntilAllocationsPass(serve, port, first, System.nanoTime(), 0);
        }
    }

    @Test
    void loopKeepsReplayingAtTheGivenRate() throws Exception {
        long started = System.nanoTime(); // before the server, so before its replay's first call
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", workloadTrace().toString(),
                "--loop", "--rate", "300")) {
            int port = serve.awaitPort();
            serve.awaitReplayed();
            double before = sample(serve.get(port, "/metrics").body(), "bfc_allocator_allocations_total");
            String text = scrapeUntilAllocationsPass(serve, port, before, System.nanoTime(),
                    TimeUnit.MILLISECONDS.toNanos(1500));
            double seconds = (System.nanoTime() - started) / 1e9;
            // --rate paces the calls from the replay's start, catching up after a stall: by now at
            // most 300 a second since the server was started, plus the first, and 8 of each pass of
            // the trace's 12 calls are successful allocations (about 200 a second).
            double calls = 300 * seconds + 1;
            assertThat(sample(text, "bfc_allocator_allocations_total")).as("allocations %.2f s after the start", seconds)
                    .isLessThanOrEqualTo(Math.ceil(calls / 12) * 8);
            assertThat(sample(text, "bfc_allocator_frees_total"))
                    .isLessThanOrEqualTo(sample(text, "bfc_allocator_allocations_total"));
        }
    }

    /**
     * Scrapes {@code /metrics} until {@code bfc_allocator_allocations_total} is above
     * {@code floor} and at least {@code minNanos} have passed since {@code fromNanos}
     * ({@link System#nanoTime}); up to a minute, not once after a fixed time: the server's replay
     * thread may not run for a while on a loaded machine.
     *
     * @return the last scrape
     * @throws AssertionError if the count is not above {@code floor} within the minute
     */
    private static String scrapeUntilAllocationsPass(ServeProcess serve, int port, double floor, long fromNanos,
            long minNanos) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            String text = serve.get(port, "/metrics").body();
            double allocations = sample(text, "bfc_allocator_allocations_total");
            boolean longEnough = System.nanoTime() - fromNanos >= minNanos;
            if (allocations > floor && longEnough) {
                return text;
            }
            assertThat(System.nanoTime() - deadline).as("bfc_allocator_allocations_total still %s a minute after %s",
                    allocations, floor).isNegative();
            Thread.sleep(50);
        }
    }

    /**
     * SIGTERM while the replay loops: the shutdown closes the allocator under the replay, which
     * must end quietly, not as an internal error (three times: the stop lands at a random call).
     */
    @Test
    void sigtermDuringALoopingReplayStopsQuietly() throws Exception {
        for (int i = 0; i < 3; i++) {
            try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", workloadTrace().toString(),
                    "--loop")) {
                int port = serve.awaitPort();
                serve.awaitReplayed();
                // A later pass has begun (the first makes 8 allocations): the stop lands in the loop.
                scrapeUntilAllocationsPass(serve, port, 8, System.nanoTime(), 0);
                serve.terminate();
                assertThat(serve.output()).as("run %d", i).doesNotContain("internal error").doesNotContain("Exception");
            }
        }
    }

    /** --loop over a trace with no calls would spin a core on empty passes: refused. */
    @Test
    void loopingATraceWithoutCallsIsRefused() throws Exception {
        Path headerOnly = Files.createTempFile("header-only", ".bfctrace");
        try {
            List<String> lines = Files.readAllLines(workloadTrace());
            Files.write(headerOnly, lines.subList(0, 5));
            try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", headerOnly.toString(), "--loop")) {
                assertThat(serve.awaitExit(60)).isEqualTo(2);
                assertThat(serve.output()).contains("bfc serve: --loop with " + headerOnly + ", which has no calls"
                        + " (expected: a trace with alloc or free lines)");
            }
        } finally {
            Files.deleteIfExists(headerOnly);
        }
    }

    @Test
    void theDefaultNameStopsAtAControlCharacterOfTheTracesName(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        // A name line may hold an escape sequence: it must not become the allocator's name.
        Path t = Files.writeString(dir.resolve("esc.bfctrace"), "bfctrace 1\nname gpu\u001b[31mred: a trace\n"
                + "source workload: a test\noptions memory_limit=1048576 allow_growth=true garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\nsuballocator sim base=0x7f0000000000"
                + " capacity=69206016 gap=0 coalescing=true\nalloc 1 1\n");
        try (ServeProcess serve = new ServeProcess("--port", "0", "--trace", t.toString())) {
            int port = serve.awaitPort();
            serve.awaitReplayed();
            assertThat(serve.output()).contains("/metrics for allocator 'gpu' (limit 1048576 bytes)");
            assertThat(serve.get(port, "/summary").body()).contains("bfc4j memory summary: gpu (HOST_PAGEABLE)")
                    .doesNotContain("\u001b");
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

    /** A client that sends the start of a request and then nothing: the stalled scraper. */
    static Socket stalledClient(int port) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
        s.getOutputStream().write("GET /metrics HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        return s;
    }

    @Test
    void aStalledClientDoesNotStopTheOthersScrapes() throws Exception {
        try (ServeProcess serve = new ServeProcess("--port", "0")) {
            int port = serve.awaitPort();
            try (Socket stalled = stalledClient(port)) {
                // With the stalled client still connected, scrapes are answered (they waited for it to leave).
                for (int i = 0; i < 3; i++) {
                    assertThat(serve.get(port, "/metrics").statusCode()).isEqualTo(200);
                }
                assertThat(serve.get(port, "/summary").statusCode()).isEqualTo(200);
                assertThat(stalled.isClosed()).isFalse();
            }
        }
    }

    @Test
    void slowClientsAreTimedOutAndTheServerStaysBounded() throws Exception {
        try (ServeProcess serve = new ServeProcess("--port", "0", "--client-timeout", "2")) {
            int port = serve.awaitPort();
            // Four times as many stalled clients as the server has workers, all in the queue.
            List<Socket> stalled = new ArrayList<>();
            try {
                for (int i = 0; i < 4 * LocalHttpServer.WORKERS + 2; i++) {
                    stalled.add(stalledClient(port));
                }
                long t0 = System.nanoTime();
                assertThat(serve.get(port, "/metrics").statusCode()).isEqualTo(200);
                double seconds = (System.nanoTime() - t0) / 1e9;
                // Answered once the stalled ones timed out: their 2 s run from their connection,
                // so those waiting in the queue time out together, in about 3 s with each 408's
                // linger (two seconds each, four at a time, would be nine seconds and more; the
                // bound leaves a loaded machine room).
                assertThat(seconds).as("seconds to answer behind %d stalled clients", stalled.size()).isLessThan(6);
                for (Socket s : stalled) {
                    s.setSoTimeout(10_000);
                    String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
                    assertThat(reply).startsWith("HTTP/1.1 408 Request Timeout\r\n").contains("Connection: close");
                }
            } finally {
                for (Socket s : stalled) {
                    s.close();
                }
            }
            // Other methods and an oversized request head get their own answers.
            HttpResponse<String> post = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/metrics")).POST(HttpRequest.BodyPublishers.noBody())
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(post.statusCode()).isEqualTo(405);
            assertThat(post.headers().firstValue("Allow")).hasValue("GET, HEAD");
            try (Socket big = new Socket(InetAddress.getLoopbackAddress(), port)) {
                big.setSoTimeout(10_000);
                big.getOutputStream().write(("GET /metrics HTTP/1.1\r\nX: " + "x".repeat(LocalHttpServer.MAX_HEAD_BYTES)
                        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                String reply = new String(big.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
                assertThat(reply).startsWith("HTTP/1.1 431 ");
            }
            assertThat(serve.get(port, "/metrics").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void errorsAreOneLineWithTheCommandsName() throws IOException {
        // In-process: a command that wrongly accepted its options would serve for ever.
        assertTimeoutPreemptively(Duration.ofSeconds(60), this::errors);
    }

    private void errors() throws IOException {
        Cli cli = new Cli();
        assertThat(cli.run("serve", "--port", "0", "--memory-limit", "0")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc serve: --memory-limit=0 (expected: a size of at least 1 byte, like 16GiB)");
        assertThat(cli.run("serve", "--port", "0", "--memory-limit", "lots")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc serve: --memory-limit=lots (expected: a size like 16GiB, 512MiB or 1048576)");
        assertThat(cli.run("serve", "--port", "0", "--trace", "no-such.bfctrace")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc serve: no-such.bfctrace: no such file");
        assertThat(cli.run("serve", "--port", "0", "--client-timeout", "0")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc serve: --client-timeout=0 (expected: seconds from 0.1 to 3600, a decimal like 10 or 2.5)");
        // Only a decimal: not what else Java's parser takes.
        for (String notDecimal : new String[] {"10f", "10d", "0x1p3", "1e1", "+10", ".5", "10.", "Infinity"}) {
            assertThat(cli.run("serve", "--port", "0", "--client-timeout", notDecimal)).as(notDecimal).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc serve: --client-timeout=" + notDecimal
                    + " (expected: seconds from 0.1 to 3600, a decimal like 10 or 2.5)");
        }
        for (String blank : new String[] {"", "   "}) {
            assertThat(cli.run("serve", "--port", "0", "--name", blank)).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc serve: --name='" + blank + "' (expected: a name that is"
                    + " not blank, the allocator.name tag, e.g. host_bfc)");
        }
        // A name is one line: a line break would split the summary's box and the printed line.
        String[][] controls = {{"gpu\nname", "gpu\\x0aname"}, {"a\r\nb", "a\\x0d\\x0ab"}, {"a\tb", "a\\x09b"},
            {"\u001b[31mred", "\\x1b[31mred"}, {"x\u007f", "x\\x7f"}};
        for (String[] c : controls) {
            assertThat(cli.run("serve", "--port", "0", "--name", c[0])).as(c[1]).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc serve: --name='" + c[1] + "' (expected: a name without line"
                    + " breaks, tabs or other control characters, the allocator.name tag, e.g. host_bfc)");
            assertThat(cli.out).isEmpty();
        }
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertThat(cli.run("serve", "--port", taken.getLocalPort())).isEqualTo(2);
            assertThat(cli.err).startsWith("bfc serve: --port=" + taken.getLocalPort() + ": ")
                    .endsWith(" (expected: a free port, or 0 for any)\n");
        }
    }

    /**
     * A command that fails after it opened its trace closes it (and stops the server it
     * started): a port in use, a malformed header or {@code --loop} over a trace without calls
     * left the trace's file open in the process, and the last left the server serving. In-process:
     * the file's descriptors under /proc/self/fd, the server's port.
     */
    @Test
    void aFailureAfterTheTraceIsOpenedClosesIt(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path fds = Path.of("/proc/self/fd");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(fds), "no /proc/self/fd here to see open files");
        Path headerOnly = dir.resolve("header-only.bfctrace");
        Files.write(headerOnly, Files.readAllLines(workloadTrace()).subList(0, 5));
        Path malformed = Files.writeString(dir.resolve("malformed.bfctrace"), "bfctrace 1\nname x: y\nnot a header line\n");
        Cli cli = new Cli();
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThat(cli.run("serve", "--port",
                    taken.getLocalPort(), "--trace", workloadTrace())).as(cli.err).isEqualTo(2));
            assertThat(cli.err).contains("--port=" + taken.getLocalPort());
            assertThat(openLinksTo(fds, workloadTrace())).as("descriptors of the trace after a port in use").isEmpty();
        }
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThat(cli.run("serve", "--port", "0", "--trace",
                malformed)).as(cli.err).isEqualTo(2));
        assertThat(openLinksTo(fds, malformed)).as("descriptors of a malformed trace").isEmpty();
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThat(cli.run("serve", "--port", "0", "--trace",
                headerOnly, "--loop")).as(cli.err).isEqualTo(2));
        assertThat(cli.err).contains("which has no calls");
        assertThat(openLinksTo(fds, headerOnly)).as("descriptors of a trace without calls").isEmpty();
        Matcher served = Pattern.compile("127\\.0\\.0\\.1:(\\d+)/metrics").matcher(cli.out);
        assertThat(served.find()).as(cli.out).isTrue();
        // No socket of this process listens on the ended command's port any more. (A connect
        // would not do: to a port nobody listens on, the kernel can pick that same port as the
        // connection's own and connect the socket to itself; nor would binding the port, which
        // another process's connection may have taken as its own meanwhile.)
        assertThat(listeningHere(fds, Integer.parseInt(served.group(1))))
                .as("this process's listening sockets on the port of a command that ended").isEmpty();
    }

    /**
     * The sockets of this process that listen on TCP {@code port}: those in /proc/net/tcp and
     * tcp6 in state LISTEN (0A) on that port whose inode is one of the sockets under {@code fds}.
     */
    private static List<String> listeningHere(Path fds, int port) throws IOException {
        java.util.Set<String> inodes = new java.util.HashSet<>();
        try (java.util.stream.Stream<Path> all = Files.list(fds)) {
            for (Path link : (Iterable<Path>) all::iterator) {
                try {
                    Matcher m = Pattern.compile("socket:\\[(\\d+)]").matcher(Files.readSymbolicLink(link).toString());
                    if (m.matches()) {
                        inodes.add(m.group(1));
                    }
                } catch (IOException e) {
                    // closed meanwhile (the listing's own descriptor)
                }
            }
        }
        List<String> listening = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path t = Path.of(table);
            if (!Files.isReadable(t)) {
                continue;
            }
            List<String> lines = Files.readAllLines(t);
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                String local = f[1];
                int localPort = Integer.parseInt(local.substring(local.indexOf(':') + 1), 16);
                if (localPort == port && f[3].equals("0A") && inodes.contains(f[9])) {
                    listening.add(table + ": " + line.trim());
                }
            }
        }
        return listening;
    }

    /** The links under {@code fds} to {@code file}. */
    private static List<Path> openLinksTo(Path fds, Path file) throws IOException {
        Path real = file.toRealPath();
        List<Path> links = new ArrayList<>();
        try (java.util.stream.Stream<Path> all = Files.list(fds)) {
            for (Path link : (Iterable<Path>) all::iterator) {
                try {
                    if (Files.readSymbolicLink(link).equals(real)) {
                        links.add(link);
                    }
                } catch (IOException e) {
                    // closed meanwhile (the listing's own descriptor)
                }
            }
        }
        return links;
    }

    @Test
    void usageErrorsExitWith2() {
        StringWriter err = new StringWriter();
        CommandLine cl = BfcCommand.commandLine();
        cl.setErr(new PrintWriter(err));
        assertThat(cl.execute("serve", "--port", "0", "--loop")).isEqualTo(2);
        assertThat(err.toString()).contains("--loop needs --trace FILE");
        // --rate paces a replay, as --loop repeats one: without a trace it was taken and did nothing.
        // Bounded: taken, it would serve until killed.
        StringWriter rateErr = new StringWriter();
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(30), () -> BfcCommand.commandLine()
                .setErr(new PrintWriter(rateErr)).execute("serve", "--port", "0", "--rate", "100"))).isEqualTo(2);
        assertThat(rateErr.toString()).isEqualTo("bfc serve: --rate needs --trace FILE (it paces the trace's replay;"
                + " without a trace the allocator is idle)\n");
        assertThat(BfcCommand.commandLine().setErr(new PrintWriter(new StringWriter()))
                .execute("serve")).isEqualTo(2);
        StringWriter err2 = new StringWriter();
        assertThat(BfcCommand.commandLine().setErr(new PrintWriter(err2))
                .execute("serve", "--port", "70000")).isEqualTo(2);
        assertThat(err2.toString()).contains("--port=70000 (expected: 0 to 65535)");
    }
}
