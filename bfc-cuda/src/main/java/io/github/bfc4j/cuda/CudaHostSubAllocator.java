/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's HostMemoryAllocator (Copyright 2019 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import java.lang.System.Logger.Level;
import java.util.HashMap;
import java.util.Map;

/**
 * Pinned (page-locked), portable host memory from {@code cuMemHostAlloc}, freed with
 * {@code cuMemFreeHost}: what TensorFlow's GPU host allocator ({@code HostMemoryAllocator} over
 * {@code GpuDriver::HostAllocate}) hands to its BFC allocator for fast host-device copies.
 * Regions are not contiguous, so {@link #supportsCoalescing()} is false.
 *
 * <p>Not thread-safe on its own: the {@code BfcAllocator} calls it under its lock.
 */
public final class CudaHostSubAllocator implements SubAllocator, AutoCloseable {

    private static final System.Logger LOG = System.getLogger(CudaHostSubAllocator.class.getName());

    private final CudaDriver driver;
    private final int deviceId;
    /** Live blocks: address to size. */
    private final Map<Long, Long> live = new HashMap<>();

    /**
     * Pinned host memory, allocated through one GPU's context.
     *
     * @param deviceId the ordinal of the device whose context makes the calls
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if no device has that ordinal
     */
    public CudaHostSubAllocator(int deviceId) {
        this(CudaProbe.driver(), deviceId);
    }

    CudaHostSubAllocator(CudaDriver driver, int deviceId) {
        this.driver = driver;
        this.deviceId = GpuBfcAllocators.checkDeviceId(driver, deviceId);
    }

    /**
     * Allocates with {@code cuMemHostAlloc}, whose addresses are page-aligned; {@code alignment}
     * is not passed on (as upstream).
     *
     * @return the block, or {@code null} if the memory cannot be had
     * @throws CudaException for any other CUDA error
     */
    @Override
    public Block alloc(long alignment, long numBytes) {
        if (numBytes <= 0) {
            return null;
        }
        long ptr;
        try {
            ptr = driver.hostAlloc(deviceId, numBytes);
        } catch (CudaException e) {
            if (e.isOutOfMemory()) {
                LOG.log(Level.DEBUG, "{0}", e.getMessage());
                return null;
            }
            throw e;
        }
        live.put(ptr, numBytes);
        return new Block(ptr, numBytes);
    }

    /**
     * Frees with {@code cuMemFreeHost}.
     *
     * @throws IllegalArgumentException if {@code ptr} is not a live block of exactly
     *     {@code numBytes} bytes; nothing changes
     * @throws CudaException if {@code cuMemFreeHost} fails
     */
    @Override
    public void free(long ptr, long numBytes) {
        Long bytes = live.get(ptr);
        if (bytes == null || bytes != numBytes) {
            throw new IllegalArgumentException("free(0x" + Long.toHexString(ptr) + ", " + numBytes
                    + "): " + (bytes == null ? "not a live block" : "the block has " + bytes + " bytes")
                    + " of the pinned host sub-allocator (expected: an address and size"
                    + " returned by alloc, freed once)");
        }
        driver.hostFree(deviceId, ptr);
        live.remove(ptr);
    }

    /** Pinned host blocks are not adjacent: false, as upstream. */
    @Override
    public boolean supportsCoalescing() {
        return false;
    }

    @Override
    public MemoryType memoryType() {
        return MemoryType.HOST_PINNED;
    }

    /**
     * The device whose context makes the calls.
     *
     * @return the ordinal
     */
    public int deviceId() {
        return deviceId;
    }

    /**
     * Frees every block still live (their addresses become invalid). Idempotent.
     *
     * @throws CudaException if a {@code cuMemFreeHost} fails
     */
    @Override
    public void close() {
        for (var it = live.entrySet().iterator(); it.hasNext();) {
            long ptr = it.next().getKey();
            driver.hostFree(deviceId, ptr);
            it.remove();
        }
    }

    @Override
    public String toString() {
        return "CudaHostSubAllocator[via device " + deviceId + ", " + live.size() + " blocks]";
    }
}
