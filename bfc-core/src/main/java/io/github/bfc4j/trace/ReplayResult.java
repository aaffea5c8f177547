/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.util.Objects;

/**
 * The outcome of replaying a trace ({@link TraceReplayer}).
 *
 * <p><b>Calls</b> are the trace's call lines: {@code alloc}, {@code free}, {@code frontier} and
 * {@code clear_stats}. Expectation lines ({@code sub}, {@code chunk}, {@code stats}) and comments
 * are not calls. {@link #calls()} counts the call lines whose call was made: all of them when
 * the replay passed; up to and including the failing call (or the last call before the failing
 * expectation) when it failed.
 *
 * @param passed whether every answer matched the trace
 * @param calls the number of call lines replayed
 * @param failureLine the 1-based line of the first difference, 0 if the replay passed
 * @param expected what the trace expected there (e.g. {@code 0x7f0000000400},
 *     {@code stats bytes_in_use=256}), {@code null} if the replay passed
 * @param actual what the allocator did instead (e.g. {@code 0x7f0000000000}, {@code 512}, or
 *     {@code IllegalArgumentException: ...}), {@code null} if the replay passed
 * @param message a human-readable one-line summary: for a failure the line, the trace line
 *     there, the expected and the actual answer
 * @param error the exception the allocator threw, if that is what failed the replay; else
 *     {@code null}
 */
public record ReplayResult(
        boolean passed,
        long calls,
        long failureLine,
        String expected,
        String actual,
        String message,
        Throwable error) {

    /**
     * Checks the message.
     *
     * @throws NullPointerException if {@code message} is null
     */
    public ReplayResult {
        Objects.requireNonNull(message, "message=null (expected: a one-line summary of the replay)");
    }

    /**
     * A replay that passed.
     *
     * @param calls the number of call lines replayed
     * @return the result
     */
    public static ReplayResult pass(long calls) {
        return new ReplayResult(true, calls, 0, null, null, calls + " calls replayed, all answers as expected", null);
    }

    /**
     * A replay that failed.
     *
     * @param calls the number of call lines replayed
     * @param failureLine the line of the first difference
     * @param expected what the trace expected
     * @param actual what the allocator did
     * @param message a one-line summary
     * @param error the allocator's exception, or {@code null}
     * @return the result
     * @throws NullPointerException if {@code expected}, {@code actual} or {@code message} is null
     */
    public static ReplayResult fail(long calls, long failureLine, String expected, String actual, String message,
            Throwable error) {
        Objects.requireNonNull(expected, "expected=null (expected: what the trace expected, e.g. \"0x7f0000000400\")");
        Objects.requireNonNull(actual, "actual=null (expected: what the allocator did, e.g. \"0x7f0000000000\")");
        return new ReplayResult(false, calls, failureLine, expected, actual, message, error);
    }
}
