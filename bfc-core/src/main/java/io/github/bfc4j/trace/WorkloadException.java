/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import java.util.Objects;

/**
 * The allocator (or its sub-allocator) threw while a {@link WorkloadRunner} replayed a trace,
 * e.g. a sub-allocator out of real memory. The message names the trace line and the call.
 */
public final class WorkloadException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final long lineNumber;

    /**
     * Creates the exception.
     *
     * @param message what failed, starting with the trace line
     * @param lineNumber the 1-based trace line of the call, 0 if none
     * @param cause what the allocator threw
     * @throws NullPointerException if {@code message} or {@code cause} is null
     */
    public WorkloadException(String message, long lineNumber, Throwable cause) {
        super(Objects.requireNonNull(message, "message=null (expected: what failed, starting with the trace line)"),
                Objects.requireNonNull(cause, "cause=null (expected: what the allocator threw)"));
        this.lineNumber = lineNumber;
    }

    /**
     * The call's line.
     *
     * @return the 1-based trace line, 0 if the failure was not during a call
     */
    public long lineNumber() {
        return lineNumber;
    }
}
