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

    /** What the message adds for a {@linkplain #isSticky() sticky} error. */
    private static final String STICKY = "; a kernel failed on the device, and CUDA fails every later call of this"
            + " process with the same error: the GPU can be used again only from a new process";

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
        super(call + " failed: " + errorName + " (" + code + ")" + (isSticky(code) ? STICKY : ""));
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

    /**
     * Whether the error is one of a kernel that failed, after which every later CUDA call of the
     * process fails with it and only a new process can use the GPU again. CUDA documents this
     * for {@code CUDA_ERROR_CONTAINED}, {@code CUDA_ERROR_ILLEGAL_ADDRESS},
     * {@code CUDA_ERROR_LAUNCH_TIMEOUT}, {@code CUDA_ERROR_HARDWARE_STACK_ERROR},
     * {@code CUDA_ERROR_ILLEGAL_INSTRUCTION}, {@code CUDA_ERROR_MISALIGNED_ADDRESS},
     * {@code CUDA_ERROR_INVALID_ADDRESS_SPACE}, {@code CUDA_ERROR_INVALID_PC},
     * {@code CUDA_ERROR_LAUNCH_FAILED}, {@code CUDA_ERROR_TENSOR_MEMORY_LEAK},
     * {@code CUDA_ERROR_MPS_CLIENT_TERMINATED} and {@code CUDA_ERROR_EXTERNAL_DEVICE}.
     * {@code CUDA_ERROR_ASSERT} is documented as needing only the context destroyed, but on a
     * 580 driver a new retain of the device's primary context, once every retain was released,
     * failed with it too: it counts as one. The message says so.
     *
     * @return true for those codes
     */
    public boolean isSticky() {
        return isSticky(code);
    }

    private static boolean isSticky(int code) {
        switch (code) {
            case 226: // CUDA_ERROR_CONTAINED
            case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
            case 702: // CUDA_ERROR_LAUNCH_TIMEOUT
            case 710: // CUDA_ERROR_ASSERT
            case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
            case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
            case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
            case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
            case 718: // CUDA_ERROR_INVALID_PC
            case 719: // CUDA_ERROR_LAUNCH_FAILED
            case 721: // CUDA_ERROR_TENSOR_MEMORY_LEAK
            case 810: // CUDA_ERROR_MPS_CLIENT_TERMINATED
            case 911: // CUDA_ERROR_EXTERNAL_DEVICE
                return true;
            default:
                return false;
        }
    }
}
