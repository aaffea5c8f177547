/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's GPUBFCAllocator (tensorflow/core/common_runtime/gpu/
 * gpu_bfc_allocator.{h,cc}; Copyright 2015 The TensorFlow Authors), licensed under the Apache
 * License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import io.github.bfc4j.core.BfcOptions;
import java.lang.System.Logger.Level;
import java.util.concurrent.ThreadFactory;
import java.util.function.Function;

/**
 * Creates BFC allocators over GPU memory, as TensorFlow's {@code GPUBFCAllocator} (and the part
 * of its GPU device factory that sizes the memory limit) does.
 */
public final class GpuBfcAllocators {

    private static final System.Logger LOG = System.getLogger(GpuBfcAllocators.class.getName());

    /** Overrides {@code allow_growth} when set to {@code true} or {@code false}. */
    public static final String TF_FORCE_GPU_ALLOW_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH";
    /**
     * TensorFlow's choice of GPU allocator ({@code cuda_malloc_async}, or {@code bfc}, the
     * default): anything but {@code bfc} is logged as ignored.
     */
    public static final String TF_GPU_ALLOCATOR = "TF_GPU_ALLOCATOR";
    /** Gives {@code garbage_collection} when the options leave it unset; true when unset. */
    public static final String TF_ENABLE_GPU_GARBAGE_COLLECTION = "TF_ENABLE_GPU_GARBAGE_COLLECTION";

    private GpuBfcAllocators() {
    }

    /**
     * A BFC allocator named {@code GPU_<deviceId>_bfc} over one GPU's memory: regions from
     * {@code cuMemAlloc} or, with {@link GpuBfcOptions#virtualMemory()}, from one reserved
     * virtual range; the memory limit from the options and {@code cuMemGetInfo}; options as
     * {@code GPUBFCAllocator} resolves them (environment overrides included); stream-ordered
     * frees through {@link GpuBfcAllocator#deallocateRaw(long, long)}.
     *
     * @param deviceId the device's ordinal
     * @param options the options
     * @return the allocator; close it to give the memory back
     * @throws CudaUnavailableException if no usable GPU is here (the probe's sentence)
     * @throws IllegalArgumentException if {@code options} is null, or no device has that ordinal
     * @throws IllegalStateException if virtual memory is asked for on a device without it
     * @throws CudaException if a CUDA call fails
     */
    public static GpuBfcAllocator create(int deviceId, GpuBfcOptions options) {
        if (options == null) {
            throw new IllegalArgumentException("options=null (expected: GpuBfcOptions, e.g. GpuBfcOptions.defaults()"
                    + " or GpuBfcOptions.builder()...build())");
        }
        return create(CudaProbe.driver(), deviceId, options);
    }

    /**
     * {@link #create(int, GpuBfcOptions)} with a given driver (the tests' simulated one). Holds a
     * retain of the device's primary context while it queries the device and makes the
     * sub-allocator (which takes its own), so that the context is created once.
     */
    static GpuBfcAllocator create(CudaDriver driver, int deviceId, GpuBfcOptions options) {
        return create(driver, deviceId, options, Thread::new);
    }

    /** With the event poller's thread made by {@code pollerThreads} (a test's, that fails). */
    static GpuBfcAllocator create(CudaDriver driver, int deviceId, GpuBfcOptions options,
            ThreadFactory pollerThreads) {
        checkDeviceId(driver, deviceId);
        driver.retainPrimaryContext(deviceId);
        GpuBfcAllocator made;
        try {
            made = createWithContext(driver, deviceId, options, pollerThreads);
        } catch (Throwable t) {
            // Also an Error (from the options' environment function, say): the retain goes back.
            try {
                driver.releasePrimaryContext(deviceId);
            } catch (RuntimeException e) {
                t.addSuppressed(e);
            }
            throw t;
        }
        try {
            driver.releasePrimaryContext(deviceId);
        } catch (RuntimeException e) {
            try {
                made.close(); // nothing half-made reaches the caller
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
        return made;
    }

    private static GpuBfcAllocator createWithContext(CudaDriver driver, int deviceId, GpuBfcOptions options,
            ThreadFactory pollerThreads) {
        long limit = memoryLimit(driver.memGetInfo(deviceId), options);
        BfcOptions bfcOptions = bfcOptions(options);
        String name = "GPU_" + deviceId + "_bfc";
        CudaVirtualMemorySubAllocator vmm = null;
        if (options.virtualMemory()) {
            long space = options.virtualAddressSpaceBytes() > 0 ? options.virtualAddressSpaceBytes() : limit;
            vmm = new CudaVirtualMemorySubAllocator(driver, deviceId, space);
        }
        CudaDeviceSubAllocator device = vmm == null ? new CudaDeviceSubAllocator(driver, deviceId) : null;
        try {
            return new GpuBfcAllocator(driver, deviceId, vmm != null ? vmm : device, vmm, limit, name,
                    bfcOptions, options.eventPollIntervalMicros(), pollerThreads);
        } catch (Throwable e) {
            // Give the reservation and the context back; also on an Error (the poller's thread
            // not started: "OutOfMemoryError: unable to create native thread").
            try {
                if (vmm != null) {
                    vmm.close();
                } else {
                    device.close();
                }
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
    }

    /**
     * Port of {@code GPUBFCAllocator}'s options lambda: {@code allow_growth} through
     * {@link #getAllowGrowthValue}, {@code garbage_collection} as given or through
     * {@link #getGarbageCollectionValue}, the rest as given.
     */
    static BfcOptions bfcOptions(GpuBfcOptions options) {
        Function<String, String> env = options.environment();
        String gpuAllocator = env.apply(TF_GPU_ALLOCATOR);
        if (gpuAllocator != null && !gpuAllocator.isEmpty() && !gpuAllocator.equals("bfc")) {
            // TensorFlow would use another allocator; this one is always BFC.
            LOG.log(Level.WARNING, TF_GPU_ALLOCATOR + "=" + gpuAllocator + " is set, but bfc4j's GPU allocator"
                    + " is always BFC: ignored");
        }
        return BfcOptions.builder()
                .allowGrowth(getAllowGrowthValue(options.allowGrowth(), env))
                .allowRetryOnFailure(options.allowRetryOnFailure())
                .garbageCollection(options.garbageCollection() != null
                        ? options.garbageCollection() : getGarbageCollectionValue(env))
                .fragmentationFraction(options.fragmentationFraction())
                .build();
    }

    /**
     * Port of {@code GetAllowGrowthValue}: {@code TF_FORCE_GPU_ALLOW_GROWTH} set to exactly
     * {@code true} or {@code false} overrides the configured value; anything else is logged and
     * ignored.
     */
    static boolean getAllowGrowthValue(boolean origValue, Function<String, String> env) {
        String forceAllowGrowthString = env.apply(TF_FORCE_GPU_ALLOW_GROWTH);
        if (forceAllowGrowthString == null) {
            return origValue;
        }
        if ("false".equals(forceAllowGrowthString)) {
            if (origValue) {
                LOG.log(Level.WARNING, "Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH"
                        + " environment variable is set. Original config value was {0}.", origValue);
            }
            return false;
        } else if ("true".equals(forceAllowGrowthString)) {
            if (!origValue) {
                LOG.log(Level.WARNING, "Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH"
                        + " environment variable is set. Original config value was {0}.", origValue);
            }
            return true;
        }
        LOG.log(Level.ERROR, "The TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be"
                + " parsed: \"{0}\". Valid values are \"true\" or \"false\". Using original config value of {1}.",
                forceAllowGrowthString, origValue);
        return origValue;
    }

    /**
     * Port of {@code GetGarbageCollectionValue}: {@code TF_ENABLE_GPU_GARBAGE_COLLECTION} set to
     * exactly {@code false} disables it; unset, {@code true} or anything else (logged) enables it.
     */
    static boolean getGarbageCollectionValue(Function<String, String> env) {
        String enableGpuGarbageCollection = env.apply(TF_ENABLE_GPU_GARBAGE_COLLECTION);
        if (enableGpuGarbageCollection == null) {
            // By default, turn on the memory garbage collection.
            return true;
        }
        if ("false".equals(enableGpuGarbageCollection)) {
            return false;
        } else if ("true".equals(enableGpuGarbageCollection)) {
            return true;
        }
        LOG.log(Level.ERROR, "The TF_ENABLE_GPU_GARBAGE_COLLECTION environment variable is set but could"
                + " not be parsed: \"{0}\". Valid values are \"true\" or \"false\". Using the default value"
                + " \"true\".", enableGpuGarbageCollection);
        return true;
    }

    /**
     * The memory limit: the absolute limit if set, else {@code memoryFraction * free} rounded down
     * to a multiple of 256 bytes.
     */
    static long memoryLimit(CudaMemInfo info, GpuBfcOptions options) {
        if (options.memoryLimitBytes() > 0) {
            return options.memoryLimitBytes();
        }
        long limit = (long) (options.memoryFraction() * info.freeBytes()) & ~255L;
        if (limit <= 0) {
            throw new IllegalStateException("memoryFraction=" + options.memoryFraction() + " of "
                    + info.freeBytes() + " free bytes leaves no memory for the allocator (expected: a"
                    + " device with free memory, or an absolute memoryLimitBytes)");
        }
        return limit;
    }

    /**
     * Checks a device ordinal against the driver's device count.
     *
     * @return the ordinal
     * @throws IllegalArgumentException if out of range
     */
    static int checkDeviceId(CudaDriver driver, int deviceId) {
        int count = driver.deviceCount();
        if (deviceId < 0 || deviceId >= count) {
            throw new IllegalArgumentException("deviceId=" + deviceId + " (expected: 0.." + (count - 1)
                    + ", one of the " + count + " visible CUDA devices; see bfc cuda-info)");
        }
        return deviceId;
    }
}
