/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.io.IOException;
import java.util.Objects;

/**
 * A trace that does not follow format version 1 ({@code docs/trace-format.md}): a malformed
 * line, an unknown line kind or key, a bad number, or a line that contradicts the lines before
 * it (an id used on two {@code alloc} lines, a {@code free} of an unknown id, ...).
 *
 * <p>The message names the file, the 1-based line number, what was found and what was expected:
 * {@code tiny.bfctrace line 12: found unknown key 'algn=64', expected align=<n> or freed_before=<n>}.
 */
public final class TraceFormatException extends IOException {
    private static final long serialVersionUID = 1L;

    /** The trace's name. */
    private final String file;
    /** The 1-based line at fault. */
    private final long lineNumber;
    /** What the line holds. */
    private final String found;
    /** What the format requires. */
    private final String expected;

    /**
     * Creates the exception.
     *
     * @param file the name of the trace (a path or another name given to the reader)
     * @param lineNumber the 1-based number of the offending line (one past the last line when
     *     the trace ended too early)
     * @param found what the line holds (a quoted token, or a description such as
     *     {@code end of file})
     * @param expected what the format requires there
     * @throws NullPointerException if {@code file}, {@code found} or {@code expected} is null
     */
    public TraceFormatException(String file, long lineNumber, String found, String expected) {
        super(Objects.requireNonNull(file, "file=null (expected: the trace's name, e.g. reader.file())") + " line "
                + lineNumber + ": found " + Objects.requireNonNull(found, "found=null (expected: what the line holds,"
                + " e.g. a quoted token)") + ", expected " + Objects.requireNonNull(expected, "expected=null"
                + " (expected: what the format requires there)"));
        this.file = file;
        this.lineNumber = lineNumber;
        this.found = found;
        this.expected = expected;
    }

    /**
     * The name of the trace.
     *
     * @return the path or name the reader was given
     */
    public String file() {
        return file;
    }

    /**
     * The line at fault.
     *
     * @return the 1-based line number
     */
    public long lineNumber() {
        return lineNumber;
    }

    /**
     * What the line holds.
     *
     * @return a quoted token or a description
     */
    public String found() {
        return found;
    }

    /**
     * What the format requires.
     *
     * @return a description of the expected content
     */
    public String expected() {
        return expected;
    }

    /**
     * The message without the file name.
     *
     * @return {@code line <n>: found <x>, expected <y>}
     */
    public String detail() {
        return "line " + lineNumber + ": found " + found + ", expected " + expected;
    }
}
