/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.SubAllocator;

/** {@code --sub host}: real host memory for a replay. */
final class HostMemory {
    private HostMemory() {
    }

    /**
     * A sub-allocator of real host memory.
     *
     * @return the sub-allocator
     * @throws UsageException while bfc-cpu's host sub-allocator is not available
     */
    static SubAllocator subAllocator() {
        throw new UsageException("--sub=host (expected: sim; real host memory needs bfc-cpu's"
                + " AlignedHostSubAllocator, which this build does not have yet)");
    }
}
