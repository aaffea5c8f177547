/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bfc serve} in a child JVM (the test's class path), so that it can be killed like the
 * real command; reads its standard output for the port and the end of the replay.
 */
final class ServeProcess implements AutoCloseable {

    private static final Pattern SERVING = Pattern.compile("Serving http://127\\.0\\.0\\.1:(\\d+)/metrics.*");
    private static final Pattern REPLAYED = Pattern.compile(
            "replayed (\\d+) calls?: live=(\\d+) bytes_in_use=(\\d+) pool_bytes=(\\d+)(?: \\(pass \\d+\\))?");

    private final Process process;
    private final List<String> lines = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    ServeProcess(String... args) throws IOException {
        this(null, args);
    }

    /** Starts {@code bfc serve} with these bytes on its standard input (a pipe), if not null. */
    ServeProcess(byte[] stdin, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"),
                "io.github.bfc4j.cli.BfcCommand", "serve"));
        cmd.addAll(List.of(args));
        process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (java.io.OutputStream in = process.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin);
            }
        }
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    synchronized (lines) {
                        lines.add(line);
                        lines.notifyAll();
                    }
                }
            } catch (IOException e) {
                // the process was killed
            }
        }, "bfc-serve-output");
        reader.setDaemon(true);
        reader.start();
    }

    /** Waits for a line matching {@code p}; fails with the output so far. */
    Matcher await(Pattern p, long timeoutSeconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        synchronized (lines) {
            int seen = 0;
            while (true) {
                for (; seen < lines.size(); seen++) {
                    Matcher m = p.matcher(lines.get(seen));
                    if (m.matches()) {
                        return m;
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || !process.isAlive() && seen == lines.size()) {
                    throw new AssertionError("bfc serve printed no line matching " + p + " (alive="
                            + process.isAlive() + "); output:\n" + String.join("\n", lines));
                }
                lines.wait(Math.max(1, Math.min(200, TimeUnit.NANOSECONDS.toMillis(left))));
            }
        }
    }

    int awaitPort() throws InterruptedException {
        return Integer.parseInt(await(SERVING, 60).group(1));
    }

    /** Waits for the end of a replay pass; returns {@code {calls, live, bytesInUse, poolBytes}}. */
    long[] awaitReplayed() throws InterruptedException {
        Matcher m = await(REPLAYED, 60);
        return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)),
            Long.parseLong(m.group(3)), Long.parseLong(m.group(4))};
    }

    HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    String output() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    /** Waits for it to exit by itself; fails with its output if it has not within the time. */
    int awaitExit(long timeoutSeconds) throws InterruptedException {
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            throw new AssertionError("bfc serve still runs after " + timeoutSeconds + " s; output:\n" + output());
        }
        return process.exitValue();
    }

    /**
     * Stops it as {@code kill} does (SIGTERM) and waits for it to exit.
     *
     * @return its exit status
     */
    int terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError("bfc serve did not stop within 30 s of SIGTERM; output:\n" + output());
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
