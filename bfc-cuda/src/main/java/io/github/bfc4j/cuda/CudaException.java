/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * A CUDA call that failed: carries the driver's error code, its name, and the call with its
 * arguments, e.g. {@code cuMemCreate(size=2097152, device=0) failed: CUDA_ERROR_OUT_OF_MEMORY (2)}.
 */
public class CudaException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** {@code CUDA_ERROR_INVALID_VALUE}. */
    public static final int CUDA_ERROR_INVALID_VALUE = 1;
    /** {@code CUDA_ERROR_OUT_OF_MEMORY}: the sub-allocators turn it into a {@code null} block. */
    public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    /** {@code CUDA_ERROR_NO_DEVICE}. */
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    /** {@code CUDA_ERROR_NOT_READY}: not an error for {@code cuEventQuery}. */
    public static final int CUDA_ERROR_NOT_READY = 600;

    private final int code;
    private final String errorName;
    private final String call;

    /**
     * Creates the exception.
     *
     * @param code the {@code CUresult}, never {@code CUDA_SUCCESS} (0)
     * @param errorName the code's name from {@code cuGetErrorName}, e.g.
     *     {@code CUDA_ERROR_OUT_OF_MEMORY}
     * @param call the call with its arguments, e.g. {@code cuMemAlloc(bytesize=1048576)}
     */
    public CudaException(int code, String errorName, String call) {
        super(call + " failed: " + errorName + " (" + code + ")");
        this.code = code;
        this.errorName = errorName;
        this.call = call;
    }

    /**
     * The driver's error code.
     *
     * @return the {@code CUresult} value
     */
    public int code() {
        return code;
    }

    /**
     * The error code's name.
     *
     * @return e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public String errorName() {
        return errorName;
    }

    /**
     * The call that failed, with its arguments.
     *
     * @return e.g. {@code cuMemAlloc(bytesize=1048576)}
     */
    public String call() {
        return call;
    }

    /**
     * Whether the device ran out of memory (the sub-allocators then answer {@code null}, so that
     * the BFC allocator can back off and ask for less).
     *
     * @return true for {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public boolean isOutOfMemory() {
        return code == CUDA_ERROR_OUT_OF_MEMORY;
    }
}
