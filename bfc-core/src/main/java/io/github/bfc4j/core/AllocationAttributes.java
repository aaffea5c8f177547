/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::AllocationAttributes (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.function.LongSupplier;

/**
 * Per-call options of {@link BfcAllocator#allocateRaw(long, long, AllocationAttributes)}. Port
 * of {@code tsl::AllocationAttributes} (the fields a BFC allocator reads). Immutable: build one
 * per kind of call and reuse it, so that the allocation path creates nothing.
 */
public final class AllocationAttributes {

    /** Upstream's default attributes: retry on failure, no timestamp constraint. */
    public static final AllocationAttributes DEFAULT = new AllocationAttributes(true, null);

    /** No retry on failure, no timestamp constraint. */
    public static final AllocationAttributes NO_RETRY = new AllocationAttributes(false, null);

    private final boolean retryOnFailure;
    private final LongSupplier freedByFunc;

    /**
     * Creates attributes.
     *
     * @param retryOnFailure upstream's {@code retry_on_failure}: if the allocator's options allow
     *     retrying, a failed allocation waits for frees (up to 10 s) before giving up
     * @param freedByFunc upstream's {@code freed_by_func}, or {@code null}: called once per
     *     attempt; a result {@code n > 0} restricts the allocation to free chunks whose
     *     {@code freed_at_count <= n} (see {@link BfcAllocator#setTimingCounter})
     */
    public AllocationAttributes(boolean retryOnFailure, LongSupplier freedByFunc) {
        this.retryOnFailure = retryOnFailure;
        this.freedByFunc = freedByFunc;
    }

    /**
     * Whether a failed allocation may wait for frees and try again.
     *
     * @return upstream's {@code retry_on_failure}
     */
    public boolean retryOnFailure() {
        return retryOnFailure;
    }

    /**
     * The timestamp constraint's source.
     *
     * @return upstream's {@code freed_by_func}, or {@code null} for none
     */
    public LongSupplier freedByFunc() {
        return freedByFunc;
    }
}
