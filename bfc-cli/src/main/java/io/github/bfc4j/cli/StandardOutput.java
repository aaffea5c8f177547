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
import java.nio.charset.Charset;

/**
 * The process's standard output, remembering why its first write failed. Java's
 * {@code System.out} keeps only that one did ({@link PrintStream#checkError()}), so that a full
 * disk and a reader that stopped reading ({@code bfc verify ... | head -1}) looked alike.
 */
final class StandardOutput extends FilterOutputStream {

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
        return stdout;
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
