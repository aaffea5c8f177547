/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * No usable CUDA GPU: thrown when a CUDA sub-allocator or GPU allocator is created on a machine
 * where {@link CudaProbe#availability()} found none. The message is the probe's sentence, which
 * says what is missing (the presets on the class path, the JNI library or the CUDA libraries it
 * links against, the driver, a device).
 */
public class CudaUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param sentence what is missing, as {@link CudaAvailability#unavailableReason()} says it
     */
    public CudaUnavailableException(String sentence) {
        super(sentence);
    }
}
