/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.util.List;

/**
 * What {@link CudaProbe#availability()} found.
 *
 * @param presetsVersion the version of JavaCPP's CUDA presets on the class path (e.g.
 *     {@code 12.9-9.10-1.5.12}), or {@code null} if they are not there
 * @param driverVersion the driver's version (e.g. 12040 for CUDA 12.4), or 0 if no driver
 *     answered
 * @param devices the visible devices, empty if none
 * @param unavailableReason {@code null} if CUDA is usable, otherwise one sentence saying what is
 *     missing
 */
public record CudaAvailability(String presetsVersion, int driverVersion, List<CudaDeviceInfo> devices,
        String unavailableReason) {

    /**
     * Copies the device list.
     *
     * @throws IllegalArgumentException if {@code devices} is null or holds a null
     */
    public CudaAvailability {
        if (devices == null) {
            throw new IllegalArgumentException("devices=null (expected: the visible devices, List.of() if none)");
        }
        for (int i = 0; i < devices.size(); i++) {
            if (devices.get(i) == null) {
                throw new IllegalArgumentException("devices[" + i + "]=null (expected: a CudaDeviceInfo for each"
                        + " visible device, no nulls)");
            }
        }
        devices = List.copyOf(devices);
    }

    /**
     * Whether at least one device can be used.
     *
     * @return true if {@link #unavailableReason()} is {@code null}
     */
    public boolean isUsable() {
        return unavailableReason == null;
    }
}
