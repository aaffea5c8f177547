/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;

/**
 * The process's standard output, remembering why its first write failed. Java's
 * {@code System.out} keeps only that one did ({@link PrintStream#checkError()}), so that a full
 * disk and a reader that stopped reading ({@code bfc verify ... | head -1}) looked alike. A
 * command that prints line after line asks {@link #failed(PrintWriter)} after each line, and
 * stops once its output can no longer be written.
 */
final class StandardOutput extends FilterOutputStream {

    /** The one {@link #install()} put under {@code System.out}; null where none was (a command run from code). */
    private static volatile StandardOutput installed;

    private volatile IOException failure;

    StandardOutput(OutputStream out) {
        super(out);
    }

    /**
     * Makes {@code System.out} write through a new {@code StandardOutput} on file descriptor 1,
     * in the charset {@code System.out} has (as the JDK chooses it).
     *
     * @return the stream, whose {@link #failure()} says why a write failed
     */
    static StandardOutput install() {
        StandardOutput stdout = new StandardOutput(new FileOutputStream(FileDescriptor.out));
        System.setOut(new PrintStream(new BufferedOutputStream(stdout, 8192), true, charset()));
        installed = stdout;
        return stdout;
    }

    /**
     * Whether what a command printed could not all be written, so that it stops rather than work
     * on for output that nobody reads: a pipe's reader that has gone ({@code bfc verify ... |
     * head -1}, as {@code SIGPIPE} stops a C program at its first write after that), a full
     * disk, a closed standard output. The command then ends with its status for the work done so
     * far, and {@code BfcCommand.main} says what failed, as for any output that could not be
     * written. Flushes {@code out}: ask it after each line or record, not after each byte.
     *
     * @param out the command's output (picocli's, which writes to {@code System.out}, or another)
     * @return true if a write to {@code out}, or to the standard output {@link #install()}
     *     installed, has failed
     */
    static boolean failed(PrintWriter out) {
        // picocli's writer over System.out never sees System.out fail (PrintStream swallows the
        // error): the installed stream is asked. A writer of another stream fails by itself.
        boolean failed = out.checkError();
        StandardOutput stdout = installed;
        if (stdout != null) {
            System.out.flush();
            failed |= stdout.failure != null;
        }
        return failed;
    }

    /** The charset of {@code System.out}: {@code stdout.encoding} (JDK 19 on), else JDK 17's choice. */
    private static Charset charset() {
        String name = System.getProperty("stdout.encoding", System.getProperty("sun.stdout.encoding"));
        try {
            return name == null ? Charset.defaultCharset() : Charset.forName(name);
        } catch (IllegalArgumentException e) {
            return Charset.defaultCharset(); // as the JDK does with a name it does not know
        }
    }

    /**
     * The first failure of a write or flush.
     *
     * @return its exception, or null if none failed
     */
    IOException failure() {
        return failure;
    }

    /**
     * Whether a failure means that the reader of a pipe (or named pipe) has gone, as {@code head}
     * goes once it has its lines: {@code EPIPE}, "Broken pipe" (Windows: "The pipe is being
     * closed", "The pipe has been ended").
     *
     * @param e a failure, or null
     * @return true if it says that the pipe's reader has gone
     */
    static boolean readerGone(IOException e) {
        String m = e == null ? null : e.getMessage();
        return m != null && (m.contains("Broken pipe") || m.contains("pipe is being closed")
                || m.contains("pipe has been ended"));
    }

    /**
     * Whether a failure means that the disk (or the user's quota on it) is full.
     *
     * @param e a failure, or null
     * @return true if it says there is no room
     */
    static boolean noRoom(IOException e) {
        String m = e == null ? null : e.getMessage();
        return m != null && (m.contains("No space left on device") || m.contains("Disk quota exceeded")
                || m.contains("not enough space on the disk"));
    }

    @Override
    public void write(int b) throws IOException {
        try {
            out.write(b);
        } catch (IOException e) {
            throw remembered(e);
        }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        try {
            out.write(b, off, len);
        } catch (IOException e) {
            throw remembered(e);
        }
    }

    @Override
    public void flush() throws IOException {
        try {
            out.flush();
        } catch (IOException e) {
            throw remembered(e);
        }
    }

    private IOException remembered(IOException e) {
        if (failure == null) {
            failure = e;
        }
        return e;
    }
}
