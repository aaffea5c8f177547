/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * Thrown by {@link BfcAllocator#checkInvariants()} when the allocator's structure is corrupt:
 * the message says which invariant broke, where, and dumps the offending region chunk by chunk
 * (or the whole allocator's regions when the fault is not in one region).
 *
 * <p>An allocator that throws this is broken: its bookkeeping no longer matches the memory it
 * hands out. Report it with the dump (and, if the calls are known, a trace of them).
 */
public final class BfcInvariantViolation extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** The invariant that broke, without the dump. */
    private final String invariant;

    /**
     * Creates the exception.
     *
     * @param invariant which invariant broke and where, one line
     * @param dump the offending region(s), one chunk a line
     * @throws NullPointerException if {@code invariant} or {@code dump} is null
     */
    public BfcInvariantViolation(String invariant, String dump) {
        super("BFC allocator invariant violated: "
                + Objects.requireNonNull(invariant, "invariant=null (expected: which invariant broke and where)") + "\n"
                + Objects.requireNonNull(dump, "dump=null (expected: the offending region(s), \"\" for none)"));
        this.invariant = invariant;
    }

    /**
     * The invariant that broke and where, without the dump.
     *
     * @return one line, e.g. {@code allocator 'gpu_0_bfc': region [0x7f..., 0x7f...): chunk 3
     *     at 0x7f...100 follows a chunk ending at 0x7f...200}
     */
    public String invariant() {
        return invariant;
    }
}
