/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * What the driver says about one device.
 *
 * @param ordinal the device's ordinal among the visible devices (as {@code CUDA_VISIBLE_DEVICES}
 *     leaves them)
 * @param name the device's name, e.g. {@code NVIDIA H100 80GB HBM3}
 * @param totalMemoryBytes the device's global memory ({@code cuDeviceTotalMem})
 * @param computeCapabilityMajor the compute capability's major number
 * @param computeCapabilityMinor the compute capability's minor number
 * @param virtualMemoryManagement whether the device supports virtual memory management
 *     ({@code CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED}), which
 *     {@link CudaVirtualMemorySubAllocator} needs
 */
public record CudaDeviceInfo(int ordinal, String name, long totalMemoryBytes,
        int computeCapabilityMajor, int computeCapabilityMinor, boolean virtualMemoryManagement) {
}
