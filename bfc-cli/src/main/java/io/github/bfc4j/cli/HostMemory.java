/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

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
     * @throws Unavailable if JavaCPP's native library cannot be loaded here
     */
    static AlignedHostSubAllocator subAllocator() {
        try {
            return new AlignedHostSubAllocator();
        } catch (IllegalStateException e) {
            // Its constructor's one IllegalStateException: the natives for this platform did not
            // load. That is the machine or the class path, not a bug of the command.
            throw new Unavailable(e.getMessage(), e);
        }
    }

    /**
     * Host memory cannot be had here: JavaCPP's native library for the platform did not load.
     * Said as it is, {@code bfc replay: JavaCPP's native library for ... could not be loaded
     * ...: add ...}, exit status 1, not as an internal error.
     */
    static final class Unavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Unavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
