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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A child process for the tests that must run code in a JVM of its own (a crash, natives left
 * out, a JVM-wide setting): its standard input empty, its standard output and error together in
 * a file, not a pipe, so that a child that never ends cannot block the reading of its output (a
 * test reading a pipe to its end before waiting would wait for ever, its time limit never
 * reached), and one that writes much cannot block on a full pipe; ended at a time limit, with
 * the processes it started. {@link #runApart} keeps its
 * standard output and error apart, for a test that checks each.
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

    /**
     * What a child did, its two outputs apart.
     *
     * @param status its exit status
     * @param output its standard output
     * @param error its standard error
     */
    public record Apart(int status, String output, String error) {
    }

    private ChildProcess() {
    }

    /**
     * Runs {@code command} and waits for it up to {@code limit}.
     *
     * @param command the program and its arguments
     * @param limit how long it may run
     * @return its exit status and output
     * @throws AssertionError if it ran for longer than {@code limit}: it is ended first, with the
     *     processes it started, and the error gives what it wrote
     * @throws IOException if it cannot be started or its output read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Result run(List<String> command, Duration limit) throws IOException, InterruptedException {
        Path output = Files.createTempFile("bfc4j-child-", ".txt");
        try {
            int status = runTo(command, limit, output, null);
            return new Result(status, Files.readString(output, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(output);
        }
    }

    /**
     * Runs {@code command} as {@link #run} does, its standard output and error in two files:
     * neither is a pipe, so a child that writes much to one while the test would be reading the
     * other cannot block.
     *
     * @param command the program and its arguments
     * @param limit how long it may run
     * @return its exit status and its two outputs
     * @throws AssertionError if it ran for longer than {@code limit}: it is ended first, with the
     *     processes it started, and the error gives what it wrote to each
     * @throws IOException if it cannot be started or its outputs read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Apart runApart(List<String> command, Duration limit) throws IOException, InterruptedException {
        Path output = Files.createTempFile("bfc4j-child-", ".out.txt");
        Path error = Files.createTempFile("bfc4j-child-", ".err.txt");
        try {
            int status = runTo(command, limit, output, error);
            return new Apart(status, Files.readString(output, StandardCharsets.UTF_8),
                    Files.readString(error, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(output);
            Files.deleteIfExists(error);
        }
    }

    /** Runs it, its standard output to {@code output} and its error there too, or to {@code error}. */
    private static int runTo(List<String> command, Duration limit, Path output, Path error) throws IOException,
            InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(output.toFile());
        if (error == null) {
            pb.redirectErrorStream(true);
        } else {
            pb.redirectError(error.toFile());
        }
        Process p = pb.start();
        p.getOutputStream().close();
        if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            end(p);
            throw new AssertionError("the child ran for longer than " + limit + " and was ended: " + command
                    + "\n" + Files.readString(output, StandardCharsets.UTF_8) + (error == null ? ""
                            : "\nits standard error:\n" + Files.readString(error, StandardCharsets.UTF_8)));
        }
        return p.exitValue();
    }

    /**
     * Ends {@code p} and every process it started, and their own: a child that runs another
     * program (a shell, a launcher, a JVM starting a tool) would otherwise leave it running
     * after the test, the grandchild given to the system's first process when its parent ends.
     * Those below the child are found before it is ended, while they are still its descendants.
     *
     * @param p a child process
     * @throws AssertionError if one of them has not ended 30 s after it was ended
     * @throws InterruptedException if this thread is interrupted while waiting for them to end
     */
    public static void end(Process p) throws InterruptedException {
        List<ProcessHandle> below = p.descendants().toList();
        p.destroyForcibly();
        for (ProcessHandle h : below) {
            h.destroyForcibly();
        }
        p.waitFor();
        for (ProcessHandle h : below) {
            try {
                h.onExit().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                throw new AssertionError("process " + h.pid() + ", started by the ended child " + p.pid()
                        + ", has not ended 30 s after it was ended", e);
            }
        }
    }
}
