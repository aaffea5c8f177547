/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

/**
 * The CUDA driver calls that bfc-cuda makes, and nothing else: device queries, plain and pinned
 * allocations, the virtual memory management (VMM) calls, events and copies. Addresses, handles,
 * events and streams are {@code long} values ({@code CUdeviceptr}, {@code
 * CUmemGenericAllocationHandle}, {@code CUevent}, {@code CUstream}; 0 is the default stream).
 *
 * <h2>Primary contexts</h2>
 * Whoever makes CUDA calls for a device holds a retain of its primary context: each sub-allocator
 * calls {@link #retainPrimaryContext} when it is made and {@link #releasePrimaryContext} when it
 * is closed (also when its construction fails half-way), so the context lives exactly as long as
 * something of bfc4j's (or the CUDA runtime, which retains it too) uses the device. Every call
 * below that takes a {@code device}, except {@link #deviceInfo}, makes that context current on
 * the calling thread first; the one-off queries {@link #memGetInfo} and
 * {@link #allocationGranularity} retain it for the call, every other call needs it retained
 * already and throws {@link IllegalStateException} (naming the call) if nothing retains it, for
 * instance after the sub-allocator that owned the memory was closed.
 *
 * <p>Every CUDA failure is a {@link CudaException} naming the call and its arguments.
 *
 * <p>There are two implementations: one over JavaCPP's CUDA presets (what
 * {@link CudaProbe#driver()} returns), and a simulated one in the tests, against which all of
 * bfc-cuda's own bookkeeping (range carving, granularity rounding, events and frontiers,
 * pause/resume) is tested without a GPU.
 */
public interface CudaDriver {

    /**
     * The version of the bindings, e.g. JavaCPP's CUDA presets {@code 12.9-9.10-1.5.12}.
     *
     * @return a version string
     */
    String bindingsVersion();

    /**
     * The driver's version ({@code cuDriverGetVersion}), e.g. 12040 for CUDA 12.4.
     *
     * @return the version as 1000 * major + 10 * minor
     */
    int driverVersion();

    /**
     * The number of visible devices ({@code cuDeviceGetCount}).
     *
     * @return the count, possibly 0
     */
    int deviceCount();

    /**
     * Retains the device's primary context ({@code cuDevicePrimaryCtxRetain}), creating it if
     * nothing retained it yet. Pair every call with one {@link #releasePrimaryContext}.
     *
     * @param device the ordinal
     * @throws IllegalArgumentException if no device has that ordinal
     * @throws CudaException if the driver cannot create or retain the context
     */
    void retainPrimaryContext(int device);

    /**
     * Releases one retain of the device's primary context ({@code cuDevicePrimaryCtxRelease});
     * the driver destroys the context when the last retain is released.
     *
     * @param device the ordinal
     * @throws IllegalArgumentException if no device has that ordinal
     * @throws IllegalStateException if no retain of this driver's is left to release (nothing is
     *     called then)
     * @throws CudaException if the driver's release fails (the retain counts as released)
     */
    void releasePrimaryContext(int device);

    /**
     * Name, memory, compute capability and VMM support of one device.
     *
     * @param device the ordinal
     * @return what the driver says about it
     */
    CudaDeviceInfo deviceInfo(int device);

    /**
     * Free and total memory of one device ({@code cuMemGetInfo}), retaining the device's primary
     * context for the call.
     *
     * @param device the ordinal
     * @return the memory figures
     */
    CudaMemInfo memGetInfo(int device);

    /**
     * Allocates device memory ({@code cuMemAlloc}).
     *
     * @param device the ordinal
     * @param bytes the size
     * @return the device address
     */
    long memAlloc(int device, long bytes);

    /**
     * Frees device memory from {@link #memAlloc} ({@code cuMemFree}).
     *
     * @param device the ordinal
     * @param ptr the device address
     */
    void memFree(int device, long ptr);

    /**
     * Allocates pinned, portable host memory ({@code cuMemHostAlloc} with
     * {@code CU_MEMHOSTALLOC_PORTABLE}, as TensorFlow's GPU host allocator).
     *
     * @param device the ordinal whose context makes the call
     * @param bytes the size
     * @return the host address
     */
    long hostAlloc(int device, long bytes);

    /**
     * Frees host memory from {@link #hostAlloc} ({@code cuMemFreeHost}).
     *
     * @param device the ordinal whose context makes the call
     * @param ptr the host address
     */
    void hostFree(int device, long ptr);

    /**
     * The minimum granularity of physical allocations on the device
     * ({@code cuMemGetAllocationGranularity} with {@code CU_MEM_ALLOC_GRANULARITY_MINIMUM}, as
     * TensorFlow's {@code GetMinAllocationGranularity}); typically 2 MiB. Retains the device's
     * primary context for the call.
     *
     * @param device the ordinal
     * @return the granularity, a power of two
     */
    long allocationGranularity(int device);

    /**
     * Reserves a range of virtual addresses ({@code cuMemAddressReserve}).
     *
     * @param device the ordinal
     * @param bytes the size, a multiple of the granularity
     * @param alignment the alignment, 0 for the default
     * @return the start of the range
     */
    long addressReserve(int device, long bytes, long alignment);

    /**
     * Returns a reserved range ({@code cuMemAddressFree}).
     *
     * @param device the ordinal
     * @param ptr the start of the range
     * @param bytes its size
     */
    void addressFree(int device, long ptr, long bytes);

    /**
     * Creates physical memory on the device ({@code cuMemCreate}, pinned, located on the
     * device).
     *
     * @param device the ordinal
     * @param bytes the size, a multiple of the granularity
     * @return the allocation handle
     */
    long memCreate(int device, long bytes);

    /**
     * Maps physical memory at a reserved address ({@code cuMemMap}, offset 0).
     *
     * @param device the ordinal
     * @param ptr the virtual address
     * @param bytes the size of the handle's memory
     * @param handle the allocation handle
     */
    void memMap(int device, long ptr, long bytes, long handle);

    /**
     * Grants the device read-write access to a mapped range ({@code cuMemSetAccess}).
     *
     * @param device the ordinal
     * @param ptr the virtual address
     * @param bytes the size
     */
    void memSetAccess(int device, long ptr, long bytes);

    /**
     * Unmaps a range ({@code cuMemUnmap}).
     *
     * @param device the ordinal
     * @param ptr the virtual address
     * @param bytes the size
     */
    void memUnmap(int device, long ptr, long bytes);

    /**
     * Releases physical memory ({@code cuMemRelease}).
     *
     * @param device the ordinal
     * @param handle the allocation handle
     */
    void memRelease(int device, long handle);

    /**
     * Creates an event without timing ({@code cuEventCreate} with
     * {@code CU_EVENT_DISABLE_TIMING}).
     *
     * @param device the ordinal
     * @return the event
     */
    long eventCreate(int device);

    /**
     * Records an event on a stream ({@code cuEventRecord}).
     *
     * @param device the ordinal
     * @param event the event
     * @param stream the stream, 0 for the default stream
     * @throws IllegalArgumentException if {@code stream} cannot be a stream (no memory of the
     *     process there), before the driver reads it
     */
    void eventRecord(int device, long event, long stream);

    /**
     * Whether the work before an event's record has completed ({@code cuEventQuery}).
     *
     * @param device the ordinal
     * @param event the event
     * @return true on {@code CUDA_SUCCESS}, false on {@code CUDA_ERROR_NOT_READY}
     */
    boolean eventQuery(int device, long event);

    /**
     * Waits for an event ({@code cuEventSynchronize}).
     *
     * @param device the ordinal
     * @param event the event
     */
    void eventSynchronize(int device, long event);

    /**
     * Destroys an event ({@code cuEventDestroy}).
     *
     * @param device the ordinal
     * @param event the event
     */
    void eventDestroy(int device, long event);

    /**
     * Waits for all work queued on the device's context ({@code cuCtxSynchronize}).
     *
     * @param device the ordinal
     */
    void contextSynchronize(int device);

    /**
     * Copies device memory to host memory ({@code cuMemcpyDtoH}).
     *
     * @param device the ordinal
     * @param hostPtr the destination
     * @param devicePtr the source
     * @param bytes the size
     */
    void memcpyDtoH(int device, long hostPtr, long devicePtr, long bytes);

    /**
     * Copies host memory to device memory ({@code cuMemcpyHtoD}).
     *
     * @param device the ordinal
     * @param devicePtr the destination
     * @param hostPtr the source
     * @param bytes the size
     */
    void memcpyHtoD(int device, long devicePtr, long hostPtr, long bytes);
}
