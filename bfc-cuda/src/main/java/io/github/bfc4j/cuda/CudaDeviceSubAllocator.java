/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's DeviceMemAllocator (Copyright 2019 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.SubAllocator;
import java.lang.System.Logger.Level;
import java.util.HashMap;
import java.util.Map;

/**
 * Device memory from {@code cuMemAlloc}, freed with {@code cuMemFree}: TensorFlow's
 * {@code DeviceMemAllocator}. Regions are not contiguous, so {@link #supportsCoalescing()} is
 * false. The device's primary context is made current on the calling thread for each call.
 *
 * <p>Not thread-safe on its own: the {@code BfcAllocator} calls it under its lock.
 */
public final class CudaDeviceSubAllocator implements SubAllocator, AutoCloseable {

    private static final System.Logger LOG = System.getLogger(CudaDeviceSubAllocator.class.getName());

    private final CudaDriver driver;
    private final int deviceId;
    /** Live blocks: address to size. */
    private final Map<Long, Long> live = new HashMap<>();

    /**
     * Device memory on one GPU.
     *
     * @param deviceId the device's ordinal
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if no device has that ordinal
     */
    public CudaDeviceSubAllocator(int deviceId) {
        this(CudaProbe.driver(), deviceId);
    }

    CudaDeviceSubAllocator(CudaDriver driver, int deviceId) {
        this.driver = driver;
        this.deviceId = GpuBfcAllocators.checkDeviceId(driver, deviceId);
    }

    /**
     * Allocates with {@code cuMemAlloc}, whose addresses are aligned to at least 256 bytes;
     * {@code alignment} is not passed on (as upstream).
     *
     * @return the block, or {@code null} if the device is out of memory
     * @throws CudaException for any other CUDA error
     */
    @Override
    public Block alloc(long alignment, long numBytes) {
        if (numBytes <= 0) {
            return null;
        }
        long ptr;
        try {
            ptr = driver.memAlloc(deviceId, numBytes);
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
     * Frees with {@code cuMemFree}.
     *
     * @throws IllegalArgumentException if {@code ptr} is not a live block of exactly
     *     {@code numBytes} bytes; nothing changes
     * @throws CudaException if {@code cuMemFree} fails
     */
    @Override
    public void free(long ptr, long numBytes) {
        Long bytes = live.get(ptr);
        if (bytes == null || bytes != numBytes) {
            throw new IllegalArgumentException("free(0x" + Long.toHexString(ptr) + ", " + numBytes
                    + "): " + (bytes == null ? "not a live block" : "the block has " + bytes + " bytes")
                    + " of device " + deviceId + "'s sub-allocator (expected: an address and size"
                    + " returned by alloc, freed once)");
        }
        driver.memFree(deviceId, ptr);
        live.remove(ptr);
    }

    /** {@code cuMemAlloc} blocks are not adjacent: false, as upstream. */
    @Override
    public boolean supportsCoalescing() {
        return false;
    }

    @Override
    public MemoryType memoryType() {
        return MemoryType.DEVICE;
    }

    /**
     * The device this sub-allocator allocates on.
     *
     * @return the ordinal
     */
    public int deviceId() {
        return deviceId;
    }

    /**
     * Frees every block still live (their addresses become invalid). Idempotent.
     *
     * @throws CudaException if a {@code cuMemFree} fails
     */
    @Override
    public void close() {
        for (var it = live.entrySet().iterator(); it.hasNext();) {
            long ptr = it.next().getKey();
            driver.memFree(deviceId, ptr);
            it.remove();
        }
    }

    @Override
    public String toString() {
        return "CudaDeviceSubAllocator[device " + deviceId + ", " + live.size() + " blocks]";
    }
}
