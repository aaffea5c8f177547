/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;

/**
 * A progress bar on standard error, drawn only when the process has a terminal
 * ({@code System.console() != null}); otherwise (pipes, files, tests) it prints nothing.
 * Progress is measured in bytes of the trace file read (compressed bytes for a gzip trace); when
 * the size is not known in advance (standard input, a pipe) the bar shows the bytes read.
 */
final class Progress {
    private static final int WIDTH = 30;
    private static final long REDRAW_NANOS = 100_000_000L;

    private final PrintStream out;
    private final String label;
    private final long total;
    private long lastDraw;
    private boolean drawn;
    private int drawnLength;

    Progress(PrintStream out, String label, long total) {
        this.out = out;
        this.label = label;
        this.total = total;
    }

    /**
     * A bar for reading {@code total} bytes, or a silent one when there is no terminal.
     *
     * @param label what is being done
     * @param total the bytes to read, or -1 if not known
     * @return the bar
     */
    static Progress start(String label, long total) {
        return new Progress(System.console() != null ? System.err : null, label, total);
    }

    /** A bar that never draws. */
    static Progress silent() {
        return new Progress(null, "", 1);
    }

    /**
     * Wraps a stream so that reading it moves the bar, and closing it erases the bar.
     *
     * @param in the trace's bytes
     * @return a stream that counts what is read
     */
    InputStream track(InputStream in) {
        if (out == null) {
            return in;
        }
        return new FilterInputStream(in) {
            private long read;

            @Override
            public int read() throws IOException {
                int b = super.read();
                if (b >= 0) {
                    update(++read);
                }
                return b;
            }

            @Override
            public int read(byte[] buf, int off, int len) throws IOException {
                int n = super.read(buf, off, len);
                if (n > 0) {
                    read += n;
                    update(read);
                }
                return n;
            }

            @Override
            public void close() throws IOException {
                try {
                    super.close();
                } finally {
                    finish();
                }
            }
        };
    }

    private void update(long done) {
        long now = System.nanoTime();
        if (drawn && now - lastDraw < REDRAW_NANOS) {
            return;
        }
        lastDraw = now;
        drawn = true;
        String line;
        if (total <= 0) {
            line = "[" + Sizes.format(done) + " read] " + label;
        } else {
            int pct = (int) Math.min(100, done * 100 / total);
            int filled = pct * WIDTH / 100;
            line = "[" + "#".repeat(filled) + ".".repeat(WIDTH - filled) + "] " + pct + "% " + label;
        }
        drawnLength = Math.max(drawnLength, line.length());
        out.print("\r" + line);
        out.flush();
    }

    /** Erases the bar (if one was drawn). */
    void finish() {
        if (out != null && drawn) {
            out.print("\r" + " ".repeat(Math.max(WIDTH + 8 + label.length(), drawnLength)) + "\r");
            out.flush();
            drawn = false;
        }
    }
}
