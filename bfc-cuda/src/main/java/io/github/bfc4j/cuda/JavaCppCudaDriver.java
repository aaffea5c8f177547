/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.bytedeco.cuda.global.cudart.CUDA_ERROR_NOT_READY;
import static org.bytedeco.cuda.global.cudart.CUDA_SUCCESS;
import static org.bytedeco.cuda.global.cudart.CUDA_VERSION;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
import static org.bytedeco.cuda.global.cudart.CU_EVENT_DISABLE_TIMING;
import static org.bytedeco.cuda.global.cudart.CU_MEMHOSTALLOC_PORTABLE;
import static org.bytedeco.cuda.global.cudart.CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
import static org.bytedeco.cuda.global.cudart.CU_MEM_ALLOCATION_TYPE_PINNED;
import static org.bytedeco.cuda.global.cudart.CU_MEM_ALLOC_GRANULARITY_MINIMUM;
import static org.bytedeco.cuda.global.cudart.CU_MEM_HANDLE_TYPE_NONE;
import static org.bytedeco.cuda.global.cudart.CU_MEM_LOCATION_TYPE_DEVICE;

import java.nio.charset.StandardCharsets;
import org.bytedeco.cuda.cudart.CUctx_st;
import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUmemAccessDesc_v1;
import org.bytedeco.cuda.cudart.CUmemAllocationProp_v1;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;

/**
 * {@link CudaDriver} over JavaCPP's CUDA presets ({@code org.bytedeco.cuda.global.cudart}, the
 * driver API half). The only class in bfc-cuda that touches the presets; loading it loads the
 * JNI library {@code libjnicudart}, which needs {@code libcuda.so.1} and
 * {@code libcudart.so.12} (or the presets' redist jar).
 *
 * <p>Each device call makes the device's primary context current on the calling thread
 * ({@code cuCtxSetCurrent}); the context is retained and released as {@link CudaDriver} says,
 * every {@link #retainPrimaryContext} one {@code cuDevicePrimaryCtxRetain}, every
 * {@link #releasePrimaryContext} one {@code cuDevicePrimaryCtxRelease}.
 *
 * <p>Written against the presets' API and the CUDA driver API documentation; exercised on a
 * device by the {@code @Tag("gpu")} tests (docs/cuda.md says on which).
 */
final class JavaCppCudaDriver implements CudaDriver {

    private final String bindingsVersion;
    private final int driverVersion;
    private final int deviceCount;
    /**
     * Primary contexts by ordinal, set by the first retain (a device's primary context is one
     * context, whatever the retain that returned it); guarded by this.
     */
    private final CUctx_st[] contexts;
    private final PrimaryContexts retains;
    private final int[] deviceHandles;

    private JavaCppCudaDriver(String bindingsVersion) {
        this.bindingsVersion = bindingsVersion;
        check(cudart.cuInit(0), "cuInit(flags=0)");
        int[] out = new int[1];
        check(cudart.cuDriverGetVersion(out), "cuDriverGetVersion()");
        this.driverVersion = out[0];
        check(cudart.cuDeviceGetCount(out), "cuDeviceGetCount()");
        this.deviceCount = out[0];
        this.contexts = new CUctx_st[deviceCount];
        this.retains = new PrimaryContexts(deviceCount);
        this.deviceHandles = new int[deviceCount];
        for (int i = 0; i < deviceCount; i++) {
            check(cudart.cuDeviceGet(out, i), "cuDeviceGet(ordinal=" + i + ")");
            deviceHandles[i] = out[0];
        }
    }

    /**
     * Loads the JNI library and initialises the driver ({@code cuInit}).
     *
     * @param bindingsVersion the presets' version, for {@link #bindingsVersion()}
     * @return the driver
     * @throws UnsatisfiedLinkError if the JNI library or a library it links against is missing
     * @throws CudaException if {@code cuInit} or the device queries fail
     */
    static JavaCppCudaDriver load(String bindingsVersion) {
        return new JavaCppCudaDriver(bindingsVersion);
    }

    /**
     * JavaCPP's name of this platform, the classifier of the natives jars it loads from.
     *
     * @return e.g. {@code linux-x86_64}
     */
    static String platform() {
        return Loader.getPlatform();
    }

    /**
     * The CUDA version the presets were built for.
     *
     * @return e.g. 12090 for CUDA 12.9
     */
    static int presetsCudaVersion() {
        return CUDA_VERSION;
    }

    @Override
    public String bindingsVersion() {
        return bindingsVersion;
    }

    @Override
    public int driverVersion() {
        return driverVersion;
    }

    @Override
    public int deviceCount() {
        return deviceCount;
    }

    @Override
    public CudaDeviceInfo deviceInfo(int device) {
        checkOrdinal(device);
        int h = deviceHandles[device];
        byte[] name = new byte[256];
        check(cudart.cuDeviceGetName(name, name.length, h), "cuDeviceGetName(dev=" + device + ")");
        int len = 0;
        while (len < name.length && name[len] != 0) {
            len++;
        }
        long total;
        try (SizeTPointer bytes = new SizeTPointer(1)) {
            check(cudart.cuDeviceTotalMem(bytes, h), "cuDeviceTotalMem(dev=" + device + ")");
            total = bytes.get();
        }
        return new CudaDeviceInfo(device, new String(name, 0, len, StandardCharsets.UTF_8), total,
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
                attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
                attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) != 0);
    }

    private int attribute(int attribute, int device) {
        int[] out = new int[1];
        check(cudart.cuDeviceGetAttribute(out, attribute, deviceHandles[device]),
                "cuDeviceGetAttribute(attrib=" + attribute + ", dev=" + device + ")");
        return out[0];
    }

    @Override
    public void retainPrimaryContext(int device) {
        checkOrdinal(device);
        synchronized (this) {
            CUctx_st ctx = new CUctx_st();
            check(cudart.cuDevicePrimaryCtxRetain(ctx, deviceHandles[device]),
                    "cuDevicePrimaryCtxRetain(dev=" + device + ")");
            retains.retained(device);
            // The latest retain's handle: once every retain was released, the driver destroyed
            // the context, and this retain made a new one (after a sticky error, say).
            contexts[device] = ctx;
        }
    }

    @Override
    public void releasePrimaryContext(int device) {
        checkOrdinal(device);
        synchronized (this) {
            retains.releasing(device);
            check(cudart.cuDevicePrimaryCtxRelease(deviceHandles[device]),
                    "cuDevicePrimaryCtxRelease(dev=" + device + ")");
        }
    }

    /**
     * Makes the device's primary context current on this thread.
     *
     * @param call the driver call about to be made, for the message if nothing retains the context
     * @throws IllegalStateException if nothing retains the device's primary context
     */
    private void makeCurrent(int device, String call) {
        checkOrdinal(device);
        CUctx_st ctx;
        synchronized (this) {
            retains.require(device, call);
            ctx = contexts[device];
        }
        check(cudart.cuCtxSetCurrent(ctx), "cuCtxSetCurrent(primary context of device " + device + ")");
    }

    @Override
    public CudaMemInfo memGetInfo(int device) {
        retainPrimaryContext(device);
        RuntimeException failure = null;
        CudaMemInfo info = null;
        try {
            makeCurrent(device, "memGetInfo");
            try (SizeTPointer free = new SizeTPointer(1); SizeTPointer total = new SizeTPointer(1)) {
                check(cudart.cuMemGetInfo(free, total), "cuMemGetInfo() on device " + device);
                info = new CudaMemInfo(free.get(), total.get());
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        return releaseAfterQuery(device, info, failure);
    }

    /** Releases a query's retain; throws the query's failure, else the release's, else returns. */
    private <T> T releaseAfterQuery(int device, T result, RuntimeException failure) {
        Failures.throwIfAny(Failures.attempt(failure, () -> releasePrimaryContext(device)));
        return result;
    }

    @Override
    public long memAlloc(int device, long bytes) {
        makeCurrent(device, "memAlloc");
        long[] out = new long[1];
        check(cudart.cuMemAlloc(out, bytes), "cuMemAlloc(bytesize=" + bytes + ") on device " + device);
        return out[0];
    }

    @Override
    public void memFree(int device, long ptr) {
        makeCurrent(device, "memFree");
        check(cudart.cuMemFree(ptr), "cuMemFree(dptr=0x" + Long.toHexString(ptr) + ") on device " + device);
    }

    @Override
    public long hostAlloc(int device, long bytes) {
        makeCurrent(device, "hostAlloc");
        try (PointerPointer<Pointer> out = new PointerPointer<>(1)) {
            check(cudart.cuMemHostAlloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE),
                    "cuMemHostAlloc(bytesize=" + bytes + ", Flags=CU_MEMHOSTALLOC_PORTABLE)");
            Pointer p = out.get(0);
            return p == null ? 0L : p.address();
        }
    }

    @Override
    public void hostFree(int device, long ptr) {
        makeCurrent(device, "hostFree");
        check(cudart.cuMemFreeHost(new RawPointer(ptr)), "cuMemFreeHost(p=0x" + Long.toHexString(ptr) + ")");
    }

    /** Properties of a pinned physical allocation on the device, zeroed first. */
    private CUmemAllocationProp_v1 allocationProp(int device) {
        CUmemAllocationProp_v1 prop = new CUmemAllocationProp_v1();
        Pointer.memset(prop, 0, prop.sizeof());
        prop.type(CU_MEM_ALLOCATION_TYPE_PINNED);
        prop.requestedHandleTypes(CU_MEM_HANDLE_TYPE_NONE);
        prop.location().type(CU_MEM_LOCATION_TYPE_DEVICE).id(deviceHandles[device]);
        return prop;
    }

    @Override
    public long allocationGranularity(int device) {
        retainPrimaryContext(device);
        RuntimeException failure = null;
        Long granularity = null;
        try {
            makeCurrent(device, "allocationGranularity");
            try (CUmemAllocationProp_v1 prop = allocationProp(device); SizeTPointer out = new SizeTPointer(1)) {
                check(cudart.cuMemGetAllocationGranularity(out, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                        "cuMemGetAllocationGranularity(device=" + device + ", option=MINIMUM)");
                granularity = out.get();
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        return releaseAfterQuery(device, granularity, failure);
    }

    @Override
    public long addressReserve(int device, long bytes, long alignment) {
        makeCurrent(device, "addressReserve");
        long[] out = new long[1];
        check(cudart.cuMemAddressReserve(out, bytes, alignment, 0L, 0L),
                "cuMemAddressReserve(size=" + bytes + ", alignment=" + alignment + ", addr=0, flags=0)");
        return out[0];
    }

    @Override
    public void addressFree(int device, long ptr, long bytes) {
        makeCurrent(device, "addressFree");
        check(cudart.cuMemAddressFree(ptr, bytes),
                "cuMemAddressFree(ptr=0x" + Long.toHexString(ptr) + ", size=" + bytes + ")");
    }

    @Override
    public long memCreate(int device, long bytes) {
        makeCurrent(device, "memCreate");
        try (CUmemAllocationProp_v1 prop = allocationProp(device)) {
            long[] out = new long[1];
            check(cudart.cuMemCreate(out, bytes, prop, 0L),
                    "cuMemCreate(size=" + bytes + ", device=" + device + ", flags=0)");
            return out[0];
        }
    }

    @Override
    public void memMap(int device, long ptr, long bytes, long handle) {
        makeCurrent(device, "memMap");
        check(cudart.cuMemMap(ptr, bytes, 0L, handle, 0L), "cuMemMap(ptr=0x" + Long.toHexString(ptr)
                + ", size=" + bytes + ", offset=0, handle=0x" + Long.toHexString(handle) + ", flags=0)");
    }

    @Override
    public void memSetAccess(int device, long ptr, long bytes) {
        makeCurrent(device, "memSetAccess");
        try (CUmemAccessDesc_v1 desc = new CUmemAccessDesc_v1()) {
            Pointer.memset(desc, 0, desc.sizeof());
            desc.location().type(CU_MEM_LOCATION_TYPE_DEVICE).id(deviceHandles[device]);
            desc.flags(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
            check(cudart.cuMemSetAccess(ptr, bytes, desc, 1L), "cuMemSetAccess(ptr=0x"
                    + Long.toHexString(ptr) + ", size=" + bytes + ", device=" + device + ", READWRITE)");
        }
    }

    @Override
    public void memUnmap(int device, long ptr, long bytes) {
        makeCurrent(device, "memUnmap");
        check(cudart.cuMemUnmap(ptr, bytes),
                "cuMemUnmap(ptr=0x" + Long.toHexString(ptr) + ", size=" + bytes + ")");
    }

    @Override
    public void memRelease(int device, long handle) {
        makeCurrent(device, "memRelease");
        check(cudart.cuMemRelease(handle), "cuMemRelease(handle=0x" + Long.toHexString(handle) + ")");
    }

    @Override
    public long eventCreate(int device) {
        makeCurrent(device, "eventCreate");
        CUevent_st event = new CUevent_st();
        check(cudart.cuEventCreate(event, CU_EVENT_DISABLE_TIMING),
                "cuEventCreate(Flags=CU_EVENT_DISABLE_TIMING) on device " + device);
        return event.address();
    }

    @Override
    public void eventRecord(int device, long event, long stream) {
        StreamHandles.check(stream); // the driver would read it unchecked
        makeCurrent(device, "eventRecord");
        CUstream_st s = stream == 0 ? null : new CUstream_st(new RawPointer(stream));
        check(cudart.cuEventRecord(new CUevent_st(new RawPointer(event)), s),
                "cuEventRecord(hEvent=0x" + Long.toHexString(event) + ", hStream=0x" + Long.toHexString(stream) + ")");
    }

    @Override
    public boolean eventQuery(int device, long event) {
        makeCurrent(device, "eventQuery");
        int rc = cudart.cuEventQuery(new CUevent_st(new RawPointer(event)));
        if (rc == CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(rc, "cuEventQuery(hEvent=0x" + Long.toHexString(event) + ")");
        return true;
    }

    @Override
    public void eventSynchronize(int device, long event) {
        makeCurrent(device, "eventSynchronize");
        check(cudart.cuEventSynchronize(new CUevent_st(new RawPointer(event))),
                "cuEventSynchronize(hEvent=0x" + Long.toHexString(event) + ")");
    }

    @Override
    public void eventDestroy(int device, long event) {
        makeCurrent(device, "eventDestroy");
        check(cudart.cuEventDestroy(new CUevent_st(new RawPointer(event))),
                "cuEventDestroy(hEvent=0x" + Long.toHexString(event) + ")");
    }

    @Override
    public void contextSynchronize(int device) {
        makeCurrent(device, "contextSynchronize");
        check(cudart.cuCtxSynchronize(), "cuCtxSynchronize() on device " + device);
    }

    @Override
    public void memcpyDtoH(int device, long hostPtr, long devicePtr, long bytes) {
        makeCurrent(device, "memcpyDtoH");
        check(cudart.cuMemcpyDtoH(new RawPointer(hostPtr), devicePtr, bytes), "cuMemcpyDtoH(dstHost=0x"
                + Long.toHexString(hostPtr) + ", srcDevice=0x" + Long.toHexString(devicePtr) + ", ByteCount=" + bytes + ")");
    }

    @Override
    public void memcpyHtoD(int device, long devicePtr, long hostPtr, long bytes) {
        makeCurrent(device, "memcpyHtoD");
        check(cudart.cuMemcpyHtoD(devicePtr, new RawPointer(hostPtr), bytes), "cuMemcpyHtoD(dstDevice=0x"
                + Long.toHexString(devicePtr) + ", srcHost=0x" + Long.toHexString(hostPtr) + ", ByteCount=" + bytes + ")");
    }

    private void checkOrdinal(int device) {
        if (device < 0 || device >= deviceCount) {
            throw new IllegalArgumentException("device=" + device + " (expected: 0.."
                    + (deviceCount - 1) + ", one of the " + deviceCount + " visible CUDA devices)");
        }
    }

    private static void check(int rc, String call) {
        if (rc != CUDA_SUCCESS) {
            throw new CudaException(rc, errorName(rc), call);
        }
    }

    private static String errorName(int rc) {
        // Points at a static string of the driver's afterwards: never freed.
        BytePointer name = new BytePointer((Pointer) null);
        if (cudart.cuGetErrorName(rc, name) == CUDA_SUCCESS && !name.isNull()) {
            return name.getString();
        }
        return "CUresult " + rc;
    }

    /** A JavaCPP pointer to a native address that someone else owns. */
    private static final class RawPointer extends Pointer {
        RawPointer(long address) {
            this.address = address;
        }
    }
}
