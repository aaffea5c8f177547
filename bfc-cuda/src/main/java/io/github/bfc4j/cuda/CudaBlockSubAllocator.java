/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's DeviceMemAllocator and HostMemoryAllocator
 * (Copyright 2019 The TensorFlow Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.SubAllocator;
import java.lang.System.Logger.Level;
import java.util.HashMap;
import java.util.Map;

/**
 * A sub-allocator of separate CUDA blocks, one driver allocation per region, each freed with the
 * matching call: the bookkeeping shared by {@link CudaDeviceSubAllocator} and
 * {@link CudaHostSubAllocator}. Blocks are not contiguous, so {@link #supportsCoalescing()} is
 * false, as upstream. Holds a retain of the device's primary context from construction to
 * {@link #close()}, or, when an allocator still holds blocks then, until it has given the last of
 * them back. Its calls are serialised on this object.
 */
abstract sealed class CudaBlockSubAllocator implements SubAllocator, AutoCloseable
        permits CudaDeviceSubAllocator, CudaHostSubAllocator {

    private static final System.Logger LOG = System.getLogger(CudaBlockSubAllocator.class.getName());

    final CudaDriver driver;
    final int deviceId;
    /** Live blocks by address. */
    private final Map<Long, Live> live = new HashMap<>();

    /** @param allocator the allocator that obtained the block, null for a call of other code */
    private record Live(long bytes, String allocator) {
    }
    private boolean closed;

    /** Retains the device's primary context until {@link #close()}. */
    CudaBlockSubAllocator(CudaDriver driver, int deviceId) {
        this.driver = driver;
        this.deviceId = GpuBfcAllocators.checkDeviceId(driver, deviceId);
        driver.retainPrimaryContext(deviceId);
    }

    /** The driver's allocation call; throws {@link CudaException}. */
    abstract long driverAlloc(long numBytes);

    /** The matching free; throws {@link CudaException}. */
    abstract void driverFree(long ptr);

    /** Whose blocks these are, for messages: "device 0's sub-allocator". */
    abstract String owner();

    /**
     * Allocates one block; {@code alignment} is not passed on (as upstream: the driver's blocks
     * are aligned to at least 256 bytes).
     *
     * @return the block, or {@code null} if the memory cannot be had
     * @throws IllegalStateException if closed
     * @throws CudaException for any other CUDA error
     */
    @Override
    public final synchronized Block alloc(long alignment, long numBytes) {
        if (closed) {
            throw new IllegalStateException("alloc after close: " + this);
        }
        if (numBytes <= 0) {
            return null;
        }
        long ptr;
        try {
            ptr = driverAlloc(numBytes);
        } catch (CudaException e) {
            if (e.isOutOfMemory()) {
                LOG.log(Level.DEBUG, "{0}", e.getMessage());
                return null;
            }
            throw e;
        }
        live.put(ptr, new Live(numBytes, SubAllocator.callingAllocator()));
        return new Block(ptr, numBytes);
    }

    /**
     * Frees one block.
     *
     * @throws IllegalArgumentException if {@code ptr} is not a live block of exactly
     *     {@code numBytes} bytes, or if an allocator obtained the block and that allocator does
     *     not make this call ({@link SubAllocator#callingAllocator()}); nothing changes
     * @throws IllegalStateException if closed, unless an allocator gives back a block it still
     *     held at the close (every other block was freed then)
     * @throws CudaException if the driver's free fails (after {@link #close()}, the block is
     *     forgotten all the same, as {@code close()} forgets one)
     */
    @Override
    public final synchronized void free(long ptr, long numBytes) {
        boolean byAllocator = SubAllocator.callingAllocator() != null;
        if (closed && !byAllocator) {
            throw new IllegalStateException("free after close: " + this);
        }
        Live block = live.get(ptr);
        if (block == null || block.bytes() != numBytes) {
            throw new IllegalArgumentException("free(0x" + Long.toHexString(ptr) + ", " + numBytes
                    + "): " + (block == null ? "not a live block" : "the block has " + block.bytes() + " bytes")
                    + " of " + owner() + " (expected: an address and size returned by alloc, freed once)");
        }
        // DEVIATION(port): upstream frees it, and its allocator hands out memory that is gone
        // (docs/deviations.md #26).
        SubAllocator.refuseIfAllocatorHolds(block.allocator(), "the block of " + owner(), ptr, numBytes);
        if (block.allocator() != null) {
            // The allocator is done with it, even if the driver's free fails: close() may free it.
            live.put(ptr, new Live(numBytes, null));
        }
        if (closed) {
            // As close() does: a block whose free fails is forgotten, and the context held since
            // close() for this allocator's blocks is released after the last one all the same.
            live.remove(ptr);
            RuntimeException failure = Failures.attempt(null, () -> driverFree(ptr));
            if (live.isEmpty()) {
                failure = Failures.attempt(failure, () -> driver.releasePrimaryContext(deviceId));
            }
            Failures.throwIfAny(failure);
            return;
        }
        driverFree(ptr);
        live.remove(ptr);
    }

    /** Separate driver blocks are not adjacent: false, as upstream. */
    @Override
    public final boolean supportsCoalescing() {
        return false;
    }

    /**
     * The device whose context makes the calls: for device memory, the device whose memory it
     * is; the device that PyTorch snapshots of its allocator say.
     *
     * @return the ordinal
     */
    @Override
    public final int deviceId() {
        return deviceId;
    }

    /**
     * Frees every live block that no allocator holds (their addresses become invalid) and
     * releases the device's primary context. A block that an allocator obtained and has not
     * given back stays, since the allocator (and its views, for pinned host memory) may still
     * reach it: the allocator frees it when it gives it back (its {@code close()}, or once the
     * last view is collected), and the context is released after the last such block. Every
     * free and the release are attempted even when one fails; a block whose free failed is
     * forgotten. Idempotent: a second call does nothing.
     *
     * @throws CudaException the first call that failed, the later failures suppressed by it
     */
    @Override
    public final synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        for (var it = live.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Live> e = it.next();
            if (e.getValue().allocator() != null) {
                continue;
            }
            long ptr = e.getKey();
            failure = Failures.attempt(failure, () -> driverFree(ptr));
            it.remove();
        }
        if (live.isEmpty()) {
            failure = Failures.attempt(failure, () -> driver.releasePrimaryContext(deviceId));
        } else {
            LOG.log(Level.WARNING, "{0} closed while allocator ''{1}'' holds {2} of its blocks: they are freed,"
                    + " and the context released, when the allocator gives them back", this,
                    live.values().iterator().next().allocator(), live.size());
        }
        Failures.throwIfAny(failure);
    }

    @Override
    public final synchronized String toString() {
        return getClass().getSimpleName() + "[" + owner() + ", " + live.size() + " blocks"
                + (closed ? ", closed" : "") + "]";
    }
}
