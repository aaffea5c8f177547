/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.Objects;

/**
 * A failed allocation and the allocator's state at the moment it failed, as given to an
 * {@link OutOfMemoryListener}. The snapshot and the summary were taken under the allocator's
 * lock before it was released, so they describe exactly the state the request failed against.
 *
 * @param allocatorName the allocator's name
 * @param requestedBytes the bytes the failing call asked the allocator for: for
 *     {@link BfcAllocator#allocate(long, long)} with an alignment above 256 bytes, the size with
 *     the padding the alignment needs ({@code bytes + alignment - 256} where regions are 256-byte
 *     aligned, see there)
 * @param roundedBytes the request rounded up to 256 bytes
 * @param provenance the failing call's thread, annotation and (when recording stacks) stack
 * @param snapshot the regions, chunks (with provenance, when recorded) and, when recording, the
 *     recent history
 * @param summary {@link BfcAllocator#memorySummary()} at that moment
 */
public record OutOfMemoryReport(String allocatorName, long requestedBytes, long roundedBytes, Provenance provenance,
        MemorySnapshot snapshot, String summary) {

    /**
     * Checks the report.
     *
     * @throws NullPointerException if an object is null
     */
    public OutOfMemoryReport {
        Objects.requireNonNull(allocatorName, "allocatorName=null (expected: the failing allocator's name)");
        Objects.requireNonNull(provenance, "provenance=null (expected: a Provenance, Provenance.UNKNOWN for none)");
        Objects.requireNonNull(snapshot, "snapshot=null (expected: a MemorySnapshot, e.g. allocator.snapshot())");
        Objects.requireNonNull(summary, "summary=null (expected: a summary, e.g. allocator.memorySummary())");
    }
}
