/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * {@code bfc demo}'s sub-allocator: host memory up to what the machine had available when the
 * demo started, less a margin. The demo writes every byte it allocates, so a trace whose regions
 * outgrow the machine's memory would bring the operating system's out-of-memory killer (or
 * swapping), not an answer: a region past the cap is answered with null, as a device out of
 * memory is (the allocator backs off), and {@link #refusedSinceReset()} says so, for the demo to
 * stop with a sentence instead of counting it as the trace's own out-of-memory answer.
 */
final class AvailableMemoryGuard extends ForwardingSubAllocator {

    /** Kept free for the JVM and the rest of the machine. */
    static final long MARGIN_BYTES = 512L << 20;

    /**
     * The host memory available now, in bytes ({@code MemAvailable} of {@code /proc/meminfo});
     * -1 where unknown (not Linux). Tests replace it.
     */
    static volatile LongSupplier availableBytes = () -> memAvailable(Path.of("/proc/meminfo"));

    private final AlignedHostSubAllocator host;
    private final long capBytes;
    private boolean refused;

    /**
     * @param host the host memory, whose {@link AlignedHostSubAllocator#liveBytes()} the cap is
     *     kept to
     * @param capBytes the most bytes of regions held at once
     */
    AvailableMemoryGuard(AlignedHostSubAllocator host, long capBytes) {
        super(host);
        this.host = host;
        this.capBytes = capBytes;
    }

    /** @return the cap this guard keeps to */
    long capBytes() {
        return capBytes;
    }

    @Override
    public synchronized Block alloc(long alignment, long numBytes) {
        if (numBytes > capBytes - host.liveBytes()) {
            refused = true;
            return null;
        }
        return super.alloc(alignment, numBytes);
    }

    /** @return whether a region was refused for the cap since the last call; clears it */
    synchronized boolean refusedSinceReset() {
        boolean r = refused;
        refused = false;
        return r;
    }

    /**
     * @return {@code MemAvailable} of a {@code /proc/meminfo} file in bytes, or -1 if the file
     *     cannot be read or has no such line
     */
    static long memAvailable(Path meminfo) {
        try {
            for (String line : Files.readAllLines(meminfo)) {
                if (line.startsWith("MemAvailable:")) {
                    String[] f = line.substring("MemAvailable:".length()).trim().split("\\s+");
                    long kib = Long.parseLong(f[0]);
                    return f.length > 1 && f[1].equals("kB") ? Math.multiplyExact(kib, 1024L) : -1;
                }
            }
        } catch (IOException | RuntimeException e) {
            // unknown
        }
        return -1;
    }
}
