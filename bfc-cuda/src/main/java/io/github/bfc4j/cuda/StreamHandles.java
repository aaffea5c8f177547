/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLongArray;
import org.bytedeco.javacpp.BytePointer;

/**
 * Checks a {@code CUstream} handle before the driver gets it. The driver reads the memory a
 * handle points at without checking that anything is there, so a number that is not a stream
 * (an address where nothing is mapped) kills the process with SIGSEGV inside {@code libcuda}.
 * So a handle is refused here unless it is one of the special streams or its first bytes can be
 * read, which is asked of the kernel rather than by touching them: a read of
 * {@code /proc/self/mem} fails where nothing is mapped (it is used only if it reads memory known
 * to be there). Once per handle: the handles found readable are remembered (64 of them, by
 * hash), so a stream used again costs a table read, not a system call. Where the kernel cannot
 * be asked (no {@code /proc}), only handles in the first page are refused.
 *
 * <p>What this cannot tell: readable memory that holds no stream, and a destroyed stream. The
 * driver answers some of those with {@code CUDA_ERROR_INVALID_HANDLE} (memory of zeros, a stream
 * just destroyed, on driver 580) and dies on others (memory of {@code 0xff} bytes): passing them
 * is undefined behaviour in CUDA, as it is in C.
 */
final class StreamHandles {

    private static final System.Logger LOG = System.getLogger(StreamHandles.class.getName());

    /** {@code CU_STREAM_LEGACY} and {@code CU_STREAM_PER_THREAD}: special handles, not addresses. */
    private static final long LEGACY = 1;
    private static final long PER_THREAD = 2;
    /** Never mapped: the first page (Linux's {@code mmap_min_addr} keeps at least it free). */
    private static final long FIRST_PAGE = 4096;
    /** The bytes of the handle the driver reads first. */
    private static final int PROBE_BYTES = 8;
    private static final FileChannel MEMORY = openOwnMemory();
    /** Handles found readable, each in slot {@link #slot}; 0 is empty. Opaque access: no tearing. */
    private static final AtomicLongArray READABLE = new AtomicLongArray(64);

    private StreamHandles() {
    }

    /**
     * {@code /proc/self/mem}, if it opens and reads memory known to be there (a kernel that
     * refuses such reads must not make every stream look unreadable); else null.
     */
    private static FileChannel openOwnMemory() {
        FileChannel mem = null;
        try (BytePointer known = new BytePointer(PROBE_BYTES)) {
            mem = FileChannel.open(Path.of("/proc/self/mem"), StandardOpenOption.READ);
            if (mem.read(ByteBuffer.allocate(PROBE_BYTES), known.address()) == PROBE_BYTES) {
                return mem;
            }
            LOG.log(Level.DEBUG, "stream handles are checked against the first page only: /proc/self/mem"
                    + " reads short");
        } catch (IOException | RuntimeException | LinkageError e) { // LinkageError: no JavaCPP natives
            LOG.log(Level.DEBUG, "stream handles are checked against the first page only: {0}", e.toString());
        }
        if (mem != null) {
            try {
                mem.close();
            } catch (IOException e) {
                LOG.log(Level.DEBUG, "{0}", e.toString());
            }
        }
        return null;
    }

    /**
     * Refuses a handle that cannot be a stream.
     *
     * @param stream the handle, as passed to the driver
     * @throws IllegalArgumentException if it is not 0, {@code CU_STREAM_LEGACY},
     *     {@code CU_STREAM_PER_THREAD} or an address whose first bytes the process can read
     */
    static void check(long stream) {
        if (stream == 0 || stream == LEGACY || stream == PER_THREAD) {
            return;
        }
        int slot = slot(stream);
        if (READABLE.getOpaque(slot) == stream) {
            return;
        }
        if (stream < FIRST_PAGE || !readable(stream)) { // negative numbers too
            throw new IllegalArgumentException("stream=0x" + Long.toHexString(stream) + " is not a CUDA stream:"
                    + " no memory of this process is there, and the driver would crash the JVM reading it"
                    + " (expected: 0 for the default stream, CU_STREAM_LEGACY (1), CU_STREAM_PER_THREAD (2), or a"
                    + " CUstream from cuStreamCreate or cudaStreamCreate, not yet destroyed)");
        }
        READABLE.setOpaque(slot, stream);
    }

    private static int slot(long stream) {
        long h = stream * 0x9E3779B97F4A7C15L; // Fibonacci hashing: the top bits mix every bit
        return (int) (h >>> 58);
    }

    private static boolean readable(long address) {
        if (MEMORY == null) {
            return true;
        }
        try {
            return MEMORY.read(ByteBuffer.allocate(PROBE_BYTES), address) == PROBE_BYTES;
        } catch (IOException e) { // EIO: nothing mapped there
            return false;
        }
    }
}
