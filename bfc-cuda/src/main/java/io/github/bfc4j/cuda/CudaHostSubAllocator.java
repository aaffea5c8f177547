/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's HostMemoryAllocator (Copyright 2019 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.MemoryType;

/**
 * Pinned (page-locked), portable host memory from {@code cuMemHostAlloc}, freed with
 * {@code cuMemFreeHost}: what TensorFlow's GPU host allocator ({@code HostMemoryAllocator} over
 * {@code GpuDriver::HostAllocate}) hands to its BFC allocator for fast host-device copies.
 * Regions are not contiguous, so {@link #supportsCoalescing()} is false. The device's primary
 * context is retained from construction to {@link #close()}.
 *
 * <p>Thread-safe: its calls are serialised on the object.
 */
public final class CudaHostSubAllocator extends CudaBlockSubAllocator {

    /**
     * Pinned host memory, allocated through one GPU's context.
     *
     * @param deviceId the ordinal of the device whose context makes the calls
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if no device has that ordinal
     * @throws CudaException if the device's primary context cannot be retained
     */
    public CudaHostSubAllocator(int deviceId) {
        this(CudaProbe.driver(), deviceId);
    }

    CudaHostSubAllocator(CudaDriver driver, int deviceId) {
        super(driver, deviceId);
    }

    /**
     * {@code cuMemHostAlloc} (portable). Its addresses are aligned to 256 bytes but not always to
     * a page: the driver packs small blocks.
     */
    @Override
    long driverAlloc(long numBytes) {
        return driver.hostAlloc(deviceId, numBytes);
    }

    /** {@code cuMemFreeHost}. */
    @Override
    void driverFree(long ptr) {
        driver.hostFree(deviceId, ptr);
    }

    @Override
    String owner() {
        return "the pinned host sub-allocator (via device " + deviceId + ")";
    }

    @Override
    public MemoryType memoryType() {
        return MemoryType.HOST_PINNED;
    }
}
