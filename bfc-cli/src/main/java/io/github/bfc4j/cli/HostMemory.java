/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;

/**
 * {@code --sub host}: real host memory for a replay, through bfc-cpu's
 * {@link AlignedHostSubAllocator} (off-heap {@code malloc}, regions aligned to 256 bytes). The
 * regions are obtained and given back for real; their bytes are not touched, so the operating
 * system commits pages lazily. Addresses then differ from run to run (the sim's are
 * reproducible), and a region the host cannot give makes the allocator back off as upstream's
 * does on a device.
 */
final class HostMemory {
    private HostMemory() {
    }

    /**
     * A sub-allocator of real host memory.
     *
     * @return a fresh sub-allocator
     */
    static SubAllocator subAllocator() {
        return new AlignedHostSubAllocator();
    }
}
