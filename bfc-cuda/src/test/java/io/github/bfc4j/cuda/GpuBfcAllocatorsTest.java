/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.MemoryType;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** How {@link GpuBfcAllocators} resolves options, environment and memory limit, as GPUBFCAllocator. */
class GpuBfcAllocatorsTest {

    private static final long G = 64 << 10;

    private static Function<String, String> env(Map<String, String> vars) {
        return vars::get;
    }

    @Test
    void allowGrowthIsOverriddenOnlyByExactlyTrueOrFalse() {
        Function<String, String> unset = env(Map.of());
        assertThat(GpuBfcAllocators.getAllowGrowthValue(true, unset)).isTrue();
        assertThat(GpuBfcAllocators.getAllowGrowthValue(false, unset)).isFalse();
        Function<String, String> f = env(Map.of("TF_FORCE_GPU_ALLOW_GROWTH", "false"));
        assertThat(GpuBfcAllocators.getAllowGrowthValue(true, f)).isFalse();
        Function<String, String> t = env(Map.of("TF_FORCE_GPU_ALLOW_GROWTH", "true"));
        assertThat(GpuBfcAllocators.getAllowGrowthValue(false, t)).isTrue();
        // Upstream compares with strcmp: "TRUE", "1" and "" are not parsed, the original stays.
        for (String bad : new String[] {"TRUE", "1", "", " true"}) {
            Function<String, String> b = env(Map.of("TF_FORCE_GPU_ALLOW_GROWTH", bad));
            assertThat(GpuBfcAllocators.getAllowGrowthValue(false, b)).as(bad).isFalse();
            assertThat(GpuBfcAllocators.getAllowGrowthValue(true, b)).as(bad).isTrue();
        }
    }

    @Test
    void garbageCollectionDefaultsToTrueAndOnlyExactlyFalseDisablesIt() {
        assertThat(GpuBfcAllocators.getGarbageCollectionValue(env(Map.of()))).isTrue();
        assertThat(GpuBfcAllocators.getGarbageCollectionValue(
                env(Map.of("TF_ENABLE_GPU_GARBAGE_COLLECTION", "false")))).isFalse();
        assertThat(GpuBfcAllocators.getGarbageCollectionValue(
                env(Map.of("TF_ENABLE_GPU_GARBAGE_COLLECTION", "true")))).isTrue();
        assertThat(GpuBfcAllocators.getGarbageCollectionValue(
                env(Map.of("TF_ENABLE_GPU_GARBAGE_COLLECTION", "no")))).isTrue();
    }

    @Test
    void bfcOptionsFollowGpuBfcAllocator() {
        Map<String, String> vars = Map.of("TF_FORCE_GPU_ALLOW_GROWTH", "false",
                "TF_ENABLE_GPU_GARBAGE_COLLECTION", "false");
        BfcOptions fromEnv = GpuBfcAllocators.bfcOptions(GpuBfcOptions.builder()
                .allowGrowth(true).allowRetryOnFailure(false).fragmentationFraction(0.25)
                .environment(env(vars)).build());
        assertThat(fromEnv.allowGrowth()).isFalse();
        assertThat(fromEnv.garbageCollection()).isFalse();
        assertThat(fromEnv.allowRetryOnFailure()).isFalse();
        assertThat(fromEnv.fragmentationFraction()).isEqualTo(0.25);
        // An explicit garbage_collection wins over the environment, as upstream's optional.
        BfcOptions explicit = GpuBfcAllocators.bfcOptions(GpuBfcOptions.builder()
                .garbageCollection(true).environment(env(vars)).build());
        assertThat(explicit.garbageCollection()).isTrue();
        BfcOptions defaults = GpuBfcAllocators.bfcOptions(GpuBfcOptions.builder()
                .environment(env(Map.of())).build());
        assertThat(defaults.allowGrowth()).isTrue();
        assertThat(defaults.garbageCollection()).isTrue();
        assertThat(defaults.allowRetryOnFailure()).isTrue();
    }

    /** TensorFlow's TF_GPU_ALLOCATOR=cuda_malloc_async is said to be ignored, not silently so. */
    @Test
    void anotherGpuAllocatorAskedOfTensorFlowIsLoggedAsIgnored() {
        try (LogCapture log = new LogCapture(GpuBfcAllocators.class, false)) {
            GpuBfcAllocators.bfcOptions(GpuBfcOptions.builder()
                    .environment(env(Map.of("TF_GPU_ALLOCATOR", "cuda_malloc_async"))).build());
            GpuBfcAllocators.bfcOptions(GpuBfcOptions.builder()
                    .environment(env(Map.of("TF_GPU_ALLOCATOR", "bfc"))).build());
            assertThat(log.messages()).containsExactly("TF_GPU_ALLOCATOR=cuda_malloc_async is set, but bfc4j's GPU"
                    + " allocator is always BFC: ignored");
        }
    }

    /** A virtual address space too large to round up names the option, not just a number. */
    @Test
    void aVirtualAddressSpaceTooLargeToReserveNamesTheOption() {
        SimulatedCudaDriver d = new SimulatedCudaDriver(1L << 30, 2L << 20);
        assertThatThrownBy(() -> GpuBfcAllocators.create(d, 0, GpuBfcOptions.builder()
                .memoryLimitBytes(Long.MAX_VALUE).virtualMemory(true).environment(env(Map.of())).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("virtualAddressSpaceBytes=")
                .hasMessageContaining("GpuBfcOptions.virtualAddressSpaceBytes, or the memory limit if that is 0");
        assertThat(d.retainedContexts()).isZero();
    }

    /**
     * A memory limit beyond what a GPU can reserve (2^62 bytes) with virtual memory and no
     * virtualAddressSpaceBytes: create throws the driver's out-of-memory error naming the option,
     * and keeps nothing; with a range the GPU can reserve, the same limit works.
     */
    @Test
    void aMemoryLimitTooLargeToReserveNamesTheOptionAndARangeThatFitsWorks() {
        SimulatedCudaDriver d = new SimulatedCudaDriver(1L << 30, 2L << 20);
        assertThatThrownBy(() -> GpuBfcAllocators.create(d, 0, GpuBfcOptions.builder()
                .memoryLimitBytes(1L << 62).virtualMemory(true).environment(env(Map.of())).build()))
                .isInstanceOfSatisfying(CudaException.class, e -> assertThat(e.isOutOfMemory()).isTrue())
                .hasMessageContaining("virtualAddressSpaceBytes=" + (1L << 62))
                .hasMessageContaining("GpuBfcOptions.virtualAddressSpaceBytes, or the memory limit if that is 0");
        assertThat(d.retainedContexts()).isZero();
        assertThat(d.liveReservations()).isZero();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(d, 0, GpuBfcOptions.builder().memoryLimitBytes(1L << 62)
                .virtualMemory(true).virtualAddressSpaceBytes(1L << 40).environment(env(Map.of())).build())) {
            assertThat(a.allocator().memoryLimit()).isEqualTo(1L << 62);
            long p = a.allocateRaw(256, 1 << 20);
            assertThat(p).isNotZero();
            assertThat(a.allocateRaw(256, 1L << 31)).as("more than the device has").isZero();
            a.deallocateRaw(p);
        }
        assertThat(d.liveReservations()).isZero();
    }

    @Test
    void memoryLimitIsAFractionOfFreeMemoryOrAbsolute() {
        CudaMemInfo info = new CudaMemInfo(1000_000, 4000_000);
        assertThat(GpuBfcAllocators.memoryLimit(info, GpuBfcOptions.defaults())).isEqualTo(1000_000 & ~255L);
        assertThat(GpuBfcAllocators.memoryLimit(info, GpuBfcOptions.builder().memoryFraction(0.5).build()))
                .isEqualTo(500_000 & ~255L);
        assertThat(GpuBfcAllocators.memoryLimit(info, GpuBfcOptions.builder().memoryLimitBytes(3 << 20).build()))
                .isEqualTo(3 << 20);
        // The last of the two settings wins.
        assertThat(GpuBfcAllocators.memoryLimit(info, GpuBfcOptions.builder().memoryLimitBytes(3 << 20)
                .memoryFraction(0.5).build())).isEqualTo(500_000 & ~255L);
        assertThatThrownBy(() -> GpuBfcAllocators.memoryLimit(new CudaMemInfo(100, 4000),
                GpuBfcOptions.defaults())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("leaves no memory");
    }

    @Test
    void badOptionsSayWhatWasExpected() {
        assertThatThrownBy(() -> GpuBfcOptions.builder().memoryFraction(0))
                .hasMessage("memoryFraction=0.0 (expected: a fraction in (0, 1] of the device's free memory)");
        assertThatThrownBy(() -> GpuBfcOptions.builder().memoryFraction(1.5))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GpuBfcOptions.builder().memoryLimitBytes(0))
                .hasMessageStartingWith("memoryLimitBytes=0 (expected: > 0");
        assertThatThrownBy(() -> GpuBfcOptions.builder().fragmentationFraction(-1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GpuBfcOptions.builder().eventPollIntervalMicros(-1))
                .isInstanceOf(IllegalArgumentException.class);
        // In nanoseconds it would wrap to a negative park: a poller spinning on a core.
        assertThatThrownBy(() -> GpuBfcOptions.builder().eventPollIntervalMicros(Long.MAX_VALUE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("eventPollIntervalMicros=9223372036854775807 (expected: 0 to 3600000000, an hour;"
                        + " 0 polls only on allocation)");
        assertThat(GpuBfcOptions.builder().eventPollIntervalMicros(GpuBfcOptions.MAX_EVENT_POLL_INTERVAL_MICROS)
                .build().eventPollIntervalMicros()).isEqualTo(3_600_000_000L);
        assertThatThrownBy(() -> GpuBfcOptions.builder().virtualAddressSpaceBytes(-1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * A null where the public API takes options or an environment is a bad argument, said as
     * such, on any machine: create() checks it before it looks for a GPU, so that a second call
     * fails the same way.
     */
    @Test
    void nullOptionsAndEnvironmentAreBadArgumentsNamedAsSuch() {
        for (int deviceId : new int[] {0, -1, Integer.MAX_VALUE}) {
            for (int call = 0; call < 2; call++) {
                assertThatThrownBy(() -> GpuBfcAllocators.create(deviceId, null))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("options=null (expected: GpuBfcOptions, e.g. GpuBfcOptions.defaults() or"
                                + " GpuBfcOptions.builder()...build())");
            }
        }
        GpuBfcOptions.Builder b = GpuBfcOptions.builder();
        assertThatThrownBy(() -> b.environment(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("environment=null (expected: a function from a variable's name");
        assertThat(b.build().environment().apply("PATH")).as("the builder still reads the process's environment")
                .isEqualTo(System.getenv("PATH"));
    }

    @Test
    void createUsesFreeMemoryNameAndTheChosenSubAllocator() {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(64 * G, G);
        GpuBfcOptions base = GpuBfcOptions.builder().environment(env(Map.of()))
                .memoryFraction(0.5).eventPollIntervalMicros(0).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(driver, 0, base)) {
            assertThat(a.allocator().name()).isEqualTo("GPU_0_bfc");
            assertThat(a.memoryLimit()).isEqualTo(32 * G);
            assertThat(a.virtualMemory()).isFalse();
            assertThat(a.reservedAddressSpaceBytes()).isZero();
            assertThat(a.allocator().getMemoryType()).isEqualTo(MemoryType.DEVICE);
            assertThat(a.allocator().options().garbageCollection()).isTrue();
        }
        GpuBfcOptions vm = GpuBfcOptions.builder().environment(env(Map.of())).memoryLimitBytes(16 * G)
                .virtualMemory(true).eventPollIntervalMicros(0).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(driver, 0, vm)) {
            assertThat(a.virtualMemory()).isTrue();
            assertThat(a.reservedAddressSpaceBytes()).isEqualTo(16 * G);
        }
        assertThat(driver.liveReservations()).isZero();
        // The BFC allocator refuses a fraction whose threshold is 0 bytes: nothing stays reserved.
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, GpuBfcOptions.builder()
                .environment(env(Map.of())).memoryLimitBytes(16 * G).virtualMemory(true)
                .fragmentationFraction(1e-12).eventPollIntervalMicros(0).build()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("fragmentationFraction=");
        assertThat(driver.liveReservations()).isZero();
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 2, base))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("deviceId=2 (expected: 0..0, one of the 1 visible CUDA devices; see bfc cuda-info)");
    }
}
