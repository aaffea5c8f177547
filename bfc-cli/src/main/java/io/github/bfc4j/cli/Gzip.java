/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.internal.GzipMembers;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.ZipException;

/**
 * Reading a file that may be gzip-compressed (a TensorFlow log), with errors that name the file
 * and the line and say what to do, as {@code TraceReader} does for traces, instead of Java's raw
 * "Unexpected end of ZLIB input stream" (or a null message for a header cut short).
 */
final class Gzip {
    private static final int BUFFER_BYTES = 1 << 16;
    private static final String HINT = "check it with 'gzip -t'";

    private Gzip() {
    }

    /**
     * The decompressed bytes if the stream starts with the gzip magic bytes, else the bytes.
     *
     * @param in the stream
     * @param name the file's name, for messages
     * @return the (decompressed) bytes
     * @throws IOException naming the file if its gzip header is cut short or invalid
     */
    static InputStream maybeGunzip(InputStream in, String name) throws IOException {
        BufferedInputStream b = new BufferedInputStream(in, BUFFER_BYTES);
        b.mark(2);
        int b0 = b.read();
        int b1 = b.read();
        b.reset();
        if (b0 != 0x1f || b1 != 0x8b) {
            return b;
        }
        try {
            // Member after member to the end of the stream (GZIPInputStream stops at a member
            // that has not arrived yet through a pipe, or one cut inside its header).
            return new NothingAvailable(new GzipMembers(b, BUFFER_BYTES));
        } catch (EOFException e) {
            throw new IOException(name + ": the gzip header is cut short (the file is truncated or empty); " + HINT, e);
        } catch (ZipException e) {
            throw new IOException(name + ": not a valid gzip file (" + e.getMessage() + "); " + HINT, e);
        }
    }

    /**
     * A stream that says no byte is available without blocking. An {@code InputStreamReader}
     * decodes on while the stream has bytes available (JDK's {@code GZIPInputStream} says 1 until
     * its end), so a damaged stream's error struck while the characters already decoded in that
     * call, up to a reader's whole buffer, were still undelivered: they were lost, and the error
     * named a line tens of kilobytes before the end of the data. Answering 0 makes the reader hand
     * over what it has decoded before it reads again, so the error comes at the line where the data
     * ends. ({@code GzipMembers} answers 0 already, as {@code InputStream} does; this keeps the
     * answer 0 whatever gzip stream is read here.)
     */
    private static final class NothingAvailable extends FilterInputStream {
        NothingAvailable(InputStream in) {
            super(in);
        }

        @Override
        public int available() {
            return 0;
        }
    }

    /**
     * An error while reading, named.
     *
     * @param e what reading threw
     * @param name the file's name
     * @param line the 1-based line being read
     * @return {@code <name> line <n>: the gzip data ends early ...} and the like
     */
    static IOException readError(IOException e, String name, long line) {
        String what;
        if (e instanceof EOFException) {
            what = "the gzip data ends early: the file is truncated (or still being written); " + HINT;
        } else if (e instanceof ZipException) {
            what = "corrupt gzip data (" + e.getMessage() + "); " + HINT;
        } else {
            what = String.valueOf(e.getMessage());
        }
        return new IOException(name + " line " + line + ": " + what, e);
    }
}
