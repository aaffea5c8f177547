/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * How many times each device's primary context is retained through a {@link CudaDriver}: the
 * bookkeeping that lets a driver refuse a call that needs a context nobody holds, and a release
 * that no retain matches, with a message rather than a CUDA error or a crash. Thread-safe.
 */
final class PrimaryContexts {

    /** Retains per device ordinal. Guarded by this. */
    private final int[] retains;

    PrimaryContexts(int deviceCount) {
        this.retains = new int[deviceCount];
    }

    /** Counts one retain of the device's primary context (after it succeeded). */
    synchronized void retained(int device) {
        retains[device]++;
    }

    /**
     * Counts one release of the device's primary context, before the driver's release call.
     *
     * @throws IllegalStateException if the context is not retained
     */
    synchronized void releasing(int device) {
        if (retains[device] == 0) {
            throw new IllegalStateException("releasePrimaryContext(device=" + device + ") without a"
                    + " retain of that device's primary context (expected: one release per"
                    + " retainPrimaryContext)");
        }
        retains[device]--;
    }

    /**
     * Checks that a call can use the device's primary context.
     *
     * @param device the ordinal
     * @param call the driver call, for the message
     * @throws IllegalStateException if nothing retains the context
     */
    synchronized void require(int device, String call) {
        if (retains[device] == 0) {
            throw new IllegalStateException(call + " on device " + device + " needs the device's primary"
                    + " context, but nothing retains it (expected: a call through a sub-allocator or"
                    + " allocator of that device that is still open; each retains the context when"
                    + " made and releases it when closed)");
        }
    }

    /**
     * The retains not yet released.
     *
     * @param device the ordinal
     * @return the count
     */
    synchronized int count(int device) {
        return retains[device];
    }
}
