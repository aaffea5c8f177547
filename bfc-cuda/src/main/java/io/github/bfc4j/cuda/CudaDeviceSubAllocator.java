/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's DeviceMemAllocator (Copyright 2019 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.MemoryType;

/**
 * Device memory from {@code cuMemAlloc}, freed with {@code cuMemFree}: TensorFlow's
 * {@code DeviceMemAllocator}. Regions are not contiguous, so {@link #supportsCoalescing()} is
 * false. The device's primary context is retained from construction to {@link #close()} and made
 * current on the calling thread for each call.
 *
 * <p>Thread-safe: its calls are serialised on the object.
 */
public final class CudaDeviceSubAllocator extends CudaBlockSubAllocator {

    /**
     * Device memory on one GPU.
     *
     * @param deviceId the device's ordinal
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if no device has that ordinal
     * @throws CudaException if the device's primary context cannot be retained
     */
    public CudaDeviceSubAllocator(int deviceId) {
        this(CudaProbe.driver(), deviceId);
    }

    CudaDeviceSubAllocator(CudaDriver driver, int deviceId) {
        super(driver, deviceId);
    }

    /** {@code cuMemAlloc}: addresses aligned to at least 256 bytes. */
    @Override
    long driverAlloc(long numBytes) {
        return driver.memAlloc(deviceId, numBytes);
    }

    /** {@code cuMemFree}. */
    @Override
    void driverFree(long ptr) {
        driver.memFree(deviceId, ptr);
    }

    @Override
    String owner() {
        return "device " + deviceId + "'s sub-allocator";
    }

    @Override
    public MemoryType memoryType() {
        return MemoryType.DEVICE;
    }
}
