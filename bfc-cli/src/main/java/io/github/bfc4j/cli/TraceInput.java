/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceReader;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * A trace (or log) named on the command line: a file, or standard input for {@code -}. A named
 * pipe or standard input can be read only once, so each command opens it once and reads the
 * header and the calls from that one stream; a command that reads a trace several times
 * ({@code report}'s two passes, {@code whatif}'s combinations, {@code serve --loop}) first copies
 * such an input to a temporary file ({@link #rereadable()}), deleted by {@link #close()}, and
 * holds a regular file open from its first read to {@link #close()}, so that every pass reads
 * that file, and as many bytes (only its size is compared: bytes rewritten in place between two
 * passes, the size kept, are read as they are then).
 */
final class TraceInput implements AutoCloseable {

    /** The argument that names standard input. */
    static final String STDIN_ARG = "-";
    /** How messages name standard input. */
    static final String STDIN_NAME = "<stdin>";

    private final Path path;
    private final String name;
    private Path spool;
    /** A regular file read more than once: open from {@link #rereadable()} to {@link #close()}. */
    private FileChannel held;
    /** Its size when it was opened: what every pass reads. */
    private long heldBytes;

    private TraceInput(Path path, String name) {
        this.path = path;
        this.name = name;
    }

    /**
     * The input an argument names.
     *
     * @param arg a path, or {@code -} for standard input
     * @return the input (nothing is opened yet)
     */
    static TraceInput of(Path arg) {
        if (arg.toString().equals(STDIN_ARG)) {
            return new TraceInput(null, STDIN_NAME);
        }
        // Messages and summaries are lines on a terminal: a name's control characters (an
        // escape sequence, a line break) are shown escaped, as quoted words are.
        return new TraceInput(arg, CommandRunner.visible(arg.toString()));
    }

    /**
     * How messages and summaries name the input: the path as given (its control characters
     * escaped, {@code \x1b}), or {@code <stdin>}.
     */
    String name() {
        return name;
    }

    /** The file name alone (for titles), or {@code <stdin>}. */
    String shortName() {
        if (path == null || path.getFileName() == null) {
            return name;
        }
        return path.getFileName().toString();
    }

    /**
     * Makes the input readable more than once: standard input, a named pipe or another file that
     * is not a regular file is copied to a temporary file, which later opens read. It is read
     * as a trace while it is copied, so that an input that is none fails at once. A regular file
     * (that does not say it is empty) is opened now and held open: every later {@link #rawStream()} reads that file, as many bytes
     * as it had now, even after another file is moved over its name (as {@code SnapshotTraces.write} and
     * {@code bfc generate} replace theirs); a pass that finds it changed in place (appended to,
     * truncated) fails, rather than replay one file in one pass and another in the next.
     *
     * @return this input
     * @throws io.github.bfc4j.trace.TraceFormatException if the input is not a trace (the copy
     *     is deleted)
     * @throws IOException if the input cannot be read or the copy written
     */
    TraceInput rereadable() throws IOException {
        if (spool != null || held != null) {
            return this;
        }
        if (path != null && Files.isRegularFile(path)) {
            FileChannel file = FileChannel.open(path, StandardOpenOption.READ);
            long bytes;
            try {
                bytes = file.size();
            } catch (IOException | RuntimeException e) {
                file.close();
                throw e;
            }
            if (bytes > 0) {
                held = file;
                heldBytes = bytes;
                return this;
            }
            // Empty, or a file that says so and is not (/proc's): copied as it reads.
            file.close();
        }
        Path tmp = Files.createTempFile("bfc-trace-", ".tmp");
        tmp.toFile().deleteOnExit(); // also when a server (bfc serve) is killed
        try (OutputStream out = Files.newOutputStream(tmp);
                TraceReader reader = TraceReader.open(new Tee(rawStream(), out), name)) {
            // Read as a trace while it is copied: the reader's limits (the header, a line
            // of at most 1 MiB) stop an input that is no trace (/dev/zero) at once, where a
            // plain copy would fill the disk.
            while (reader.next() != null) {
                // the events themselves are read again from the copy
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        spool = tmp;
        return this;
    }

    /** Copies every byte read through it to {@code copy} (which it does not close). */
    private static final class Tee extends FilterInputStream {
        private final OutputStream copy;

        Tee(InputStream in, OutputStream copy) {
            super(in);
            this.copy = copy;
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                copy.write(b);
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) {
                copy.write(b, off, n);
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            // Read through, so that nothing skipped is missing from the copy.
            byte[] sink = new byte[(int) Math.min(n, 8192)];
            long left = n;
            while (left > 0) {
                int r = read(sink, 0, (int) Math.min(left, sink.length));
                if (r < 0) {
                    break;
                }
                left -= r;
            }
            return n - left;
        }

        @Override
        public boolean markSupported() {
            return false;
        }
    }

    /**
     * Opens the input's bytes: a fresh stream of the file (or its copy), or standard input.
     * Closing the stream never closes standard input.
     *
     * @return the bytes, as stored (gzip or not)
     * @throws IOException if the file cannot be opened
     */
    InputStream rawStream() throws IOException {
        if (held != null) {
            checkHeldSize(name + ": ");
            return new HeldPass();
        }
        if (spool != null) {
            return Files.newInputStream(spool);
        }
        if (path == null) {
            return new FilterInputStream(System.in) {
                @Override
                public void close() {
                    // Standard input belongs to the process, not to one reader.
                }
            };
        }
        return TraceReader.newInputStream(path);
    }

    /**
     * Opens the input as a trace and reads its header, drawing a progress bar while it is read
     * (on a terminal); closing the reader erases the bar.
     *
     * @param progressLabel what the bar says
     * @return a reader positioned after the header
     * @throws IOException if the input cannot be read, or its header is malformed
     */
    TraceReader open(String progressLabel) throws IOException {
        Progress progress = Progress.start(progressLabel, size());
        return TraceReader.open(progress.track(rawStream()), name);
    }

    /**
     * Throws if the held file's size is no longer {@link #heldBytes}: it changed in place since
     * the command opened it.
     *
     * @param prefix put before the message
     */
    private void checkHeldSize(String prefix) throws IOException {
        long now = held.size();
        if (now != heldBytes) {
            throw new IOException(prefix + "the file changed while it was read: " + heldBytes + " bytes when the"
                    + " command opened it, " + now + " now; it is read again for each pass (expected: a file that is"
                    + " not written while the command runs: copy it and read the copy)");
        }
    }

    /**
     * One pass over the held file, from its start: its first {@link #heldBytes} bytes (or fewer,
     * where the file ends before the size it gives), read at positions of its own (the channel's
     * position is shared). Closing it leaves the file open.
     */
    private final class HeldPass extends InputStream {
        private final byte[] one = new byte[1];
        private long position;

        @Override
        public int read() throws IOException {
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            int n = position == heldBytes ? -1
                    : held.read(ByteBuffer.wrap(b, off, (int) Math.min(len, heldBytes - position)), position);
            if (n < 0) {
                // At the size it gave, or before it: grown, shrunk or truncated since it was
                // opened, the bytes read are not the whole file now; else the end, as every pass
                // (a file that gives a size it does not hold, as /sys's give 4096, is read for
                // what it holds).
                checkHeldSize("");
                return -1;
            }
            position += n;
            return n;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, heldBytes - position);
        }
    }

    /** The bytes to read, or -1 when that is not known in advance (standard input, a pipe). */
    private long size() throws IOException {
        if (held != null) {
            return heldBytes;
        }
        Path p = spool != null ? spool : path;
        return p != null && Files.isRegularFile(p) ? Files.size(p) : -1;
    }

    /**
     * What to say when a trace read to its end had no line break after its last line.
     *
     * @param reader a reader that has read the whole trace
     * @param consequence what that means for the command's output, e.g. "the summary covers the
     *     lines read"
     * @return the warning, or null when the trace ended with a line break
     */
    static String cutWarning(TraceReader reader, String consequence) {
        if (!reader.lastLineUnterminated()) {
            return null;
        }
        return reader.file() + " line " + reader.lineNumber() + ": the last line has no line break after it: the"
                + " file may be truncated (" + consequence + ")";
    }

    /** Deletes the temporary copy, if one was made, and closes the held file. */
    @Override
    public void close() throws IOException {
        if (held != null) {
            held.close();
            held = null;
        }
        if (spool != null) {
            Files.deleteIfExists(spool);
            spool = null;
        }
    }
}
