/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's tsl::AllocatorMemoryType (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

/** The kind of memory a sub-allocator hands out. Port of {@code tsl::AllocatorMemoryType}. */
public enum MemoryType {
    /** Not known ({@code kUnknown}); also the simulated address space. */
    UNKNOWN,
    /** Device memory ({@code kDevice}), e.g. CUDA global memory. */
    DEVICE,
    /** Pageable host memory ({@code kHostPageable}). */
    HOST_PAGEABLE,
    /** Pinned (page-locked) host memory ({@code kHostPinned}). */
    HOST_PINNED;

    /**
     * Whether Java and the CPU may read and write this memory directly.
     *
     * @return true for {@link #HOST_PAGEABLE} and {@link #HOST_PINNED}
     */
    public boolean isHost() {
        return this == HOST_PAGEABLE || this == HOST_PINNED;
    }
}
