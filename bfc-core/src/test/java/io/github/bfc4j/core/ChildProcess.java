/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child process for the tests that must run code in a JVM of its own (a crash, natives left
 * out, a JVM-wide setting): its standard input empty, its standard output and error together in
 * a file, not a pipe, so that a child that never ends cannot block the reading of its output (a
 * test reading a pipe to its end before waiting would wait for ever, its time limit never
 * reached), and one that writes much cannot block on a full pipe.
 */
public final class ChildProcess {

    /**
     * What a child did.
     *
     * @param status its exit status (134: it crashed)
     * @param output its standard output and error, as they were written
     */
    public record Result(int status, String output) {
    }

    private ChildProcess() {
    }

    /**
     * Runs {@code command} and waits for it up to {@code limit}.
     *
     * @param command the program and its arguments
     * @param limit how long it may run
     * @return its exit status and output
     * @throws AssertionError if it ran for longer than {@code limit}: it is ended first, and the
     *     error gives what it wrote
     * @throws IOException if it cannot be started or its output read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Result run(List<String> command, Duration limit) throws IOException, InterruptedException {
        Path output = Files.createTempFile("bfc4j-child-", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            p.getOutputStream().close();
            boolean ended = p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS);
            if (!ended) {
                p.destroyForcibly().waitFor();
            }
            String out = Files.readString(output, StandardCharsets.UTF_8);
            if (!ended) {
                throw new AssertionError("the child ran for longer than " + limit + " and was ended: " + command
                        + "\n" + out);
            }
            return new Result(p.exitValue(), out);
        } finally {
            Files.deleteIfExists(output);
        }
    }
}
