/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A child process for the tests that must run code in a JVM of its own (a crash, natives left
 * out, a JVM-wide setting): its standard input empty, its standard output and error together in
 * a file, not a pipe, so that a child that never ends cannot block the reading of its output (a
 * test reading a pipe to its end before waiting would wait for ever, its time limit never
 * reached), and one that writes much cannot block on a full pipe; ended at a time limit, with
 * the processes it started. {@link #runIn} runs it in another directory; {@link #runApart} keeps
 * its standard output and error apart, for a test that checks each, and sends its standard output
 * to a device or a pipe for a test of a command's output there.
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

    /** What a test does with a child's standard output when it must be a pipe. */
    public enum Pipe {
        /** Reads it to its end, alongside the child. */
        READ,
        /** Closes it at once, as a reader that has gone does ({@code bfc verify ... | head -1}). */
        CLOSED
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
        return runIn(null, command, limit);
    }

    /**
     * Runs {@code command} as {@link #run} does, in {@code directory}.
     *
     * @param directory its working directory; {@code null} for this process's
     * @param command the program and its arguments
     * @param limit how long it may run
     * @return its exit status and output
     * @throws AssertionError if it ran for longer than {@code limit}, as for {@link #run}
     * @throws IOException if it cannot be started or its output read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Result runIn(Path directory, List<String> command, Duration limit) throws IOException,
            InterruptedException {
        Path output = Files.createTempFile("bfc4j-child-", ".txt");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).directory(directory == null ? null : directory.toFile())
                    .redirectOutput(output.toFile()).redirectErrorStream(true);
            Process p = started(pb);
            waitUpTo(p, limit, command, () -> Files.readString(output, StandardCharsets.UTF_8));
            return new Result(p.exitValue(), Files.readString(output, StandardCharsets.UTF_8));
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
        try {
            return runApart(new ProcessBuilder(command).redirectOutput(output.toFile()), null, limit,
                    () -> Files.readString(output, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(output);
        }
    }

    /**
     * Runs {@code command} as {@link #runApart(List, Duration)} does, its standard output sent to
     * {@code output} rather than kept: a device such as {@code /dev/full}, for a test of what a
     * command does when its output cannot be written.
     *
     * @param command the program and its arguments
     * @param output where its standard output goes
     * @param limit how long it may run
     * @return its exit status, an empty output, and its standard error
     * @throws AssertionError if it ran for longer than {@code limit}, as for {@link #runApart}
     * @throws IOException if it cannot be started or its error read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Apart runApart(List<String> command, File output, Duration limit) throws IOException,
            InterruptedException {
        return runApart(new ProcessBuilder(command).redirectOutput(output), null, limit, () -> "");
    }

    /**
     * Runs {@code command} as {@link #runApart(List, Duration)} does, its standard output a pipe,
     * for a test of what a command does when that is a pipe: read to its end alongside the child
     * (its standard error a file, so that neither can block the other), or closed at once.
     *
     * @param command the program and its arguments
     * @param output what is done with the pipe
     * @param limit how long it may run, and then how long the pipe may stay open after it ended
     * @return its exit status, what the pipe carried (empty if it was closed), and its standard
     *     error
     * @throws AssertionError if it ran for longer than {@code limit}, as for {@link #runApart};
     *     or if the pipe was not at its end {@code limit} after the child ended (a process it
     *     started still holds it)
     * @throws IOException if it cannot be started or its outputs read
     * @throws InterruptedException if this thread is interrupted while waiting
     */
    public static Apart runApart(List<String> command, Pipe output, Duration limit) throws IOException,
            InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.PIPE);
        return runApart(pb, output, limit, () -> "");
    }

    /** What a child wrote, read when it is wanted. */
    @FunctionalInterface
    private interface Written {
        String get() throws IOException, InterruptedException;
    }

    /**
     * Runs {@code pb}, whose standard output is set (to a file that {@code written} reads, or to
     * a pipe that is handled as {@code pipe} says), its standard error in a file.
     */
    private static Apart runApart(ProcessBuilder pb, Pipe pipe, Duration limit, Written written)
            throws IOException, InterruptedException {
        Path error = Files.createTempFile("bfc4j-child-", ".err.txt");
        try {
            Process p = started(pb.redirectError(error.toFile()));
            FutureTask<byte[]> piped = null;
            if (pipe == Pipe.CLOSED) {
                p.getInputStream().close();
            } else if (pipe == Pipe.READ) {
                piped = new FutureTask<>(p.getInputStream()::readAllBytes);
                Thread reader = new Thread(piped, "bfc4j-child-output");
                reader.setDaemon(true);
                reader.start();
            }
            FutureTask<byte[]> fromPipe = piped;
            Written output = fromPipe == null ? written : () -> pipeRead(fromPipe, limit, pb.command());
            waitUpTo(p, limit, pb.command(), () -> output.get() + "\nits standard error:\n"
                    + Files.readString(error, StandardCharsets.UTF_8));
            return new Apart(p.exitValue(), output.get(), Files.readString(error, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(error);
        }
    }

    /** Starts it, its standard input closed at once: a child that reads it gets its end. */
    private static Process started(ProcessBuilder pb) throws IOException {
        Process p = pb.start();
        p.getOutputStream().close();
        return p;
    }

    /** Waits for {@code p} up to {@code limit}; past it, ends it and fails with what it wrote. */
    private static void waitUpTo(Process p, Duration limit, List<String> command, Written written)
            throws IOException, InterruptedException {
        if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            end(p);
            throw new AssertionError("the child ran for longer than " + limit + " and was ended: " + command
                    + "\n" + written.get());
        }
    }

    /** What the child's output pipe carried, once it is at its end: at most {@code limit} away. */
    private static String pipeRead(FutureTask<byte[]> piped, Duration limit, List<String> command)
            throws IOException, InterruptedException {
        try {
            return new String(piped.get(limit.toMillis(), TimeUnit.MILLISECONDS), StandardCharsets.UTF_8);
        } catch (TimeoutException e) {
            throw new AssertionError("the child's standard output was still open " + limit + " after the child"
                    + " ended (a process it started holds it): " + command, e);
        } catch (ExecutionException e) {
            throw new IOException("the child's standard output could not be read: " + command, e.getCause());
        }
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
