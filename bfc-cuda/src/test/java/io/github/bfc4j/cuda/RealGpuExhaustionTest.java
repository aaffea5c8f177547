/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static io.github.bfc4j.cuda.RealGpuTest.requireGpu;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.AllocatorStats;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The device itself running out of memory (run with {@code mvn -Pgpu verify}; skipped, with the
 * probe's sentence, where no usable GPU is). The memory limit is set above the device's total
 * memory, so that only the driver can refuse: its {@code CUDA_ERROR_OUT_OF_MEMORY} must reach the
 * caller as an out-of-memory answer (0, and a report to the listeners), never as an exception,
 * after {@code Extend}'s 0.9 back-off has taken what the device could still give; the allocator
 * must go on serving from what it holds; and every byte must go back to the device on close.
 * Device 0 is used, whole: nothing else should run on it meanwhile.
 */
@Tag("gpu")
class RealGpuExhaustionTest {

    private static final long MIB = 1 << 20;
    private static final long GIB = 1L << 30;

    @ParameterizedTest(name = "virtualMemory={0}, allowGrowth={1}")
    @CsvSource({"false, true", "false, false", "true, true", "true, false"})
    void theDevicesOwnOutOfMemoryIsAnAnswerAndTheMemoryComesBack(boolean virtualMemory, boolean allowGrowth) {
        CudaDriver d = requireGpu();
        if (virtualMemory) {
            assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        }
        CudaMemInfo before = d.memGetInfo(0);
        long limit = before.totalBytes() + 8 * GIB; // more than the device has: only the driver refuses
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(limit).allowGrowth(allowGrowth)
                .virtualMemory(virtualMemory).allowRetryOnFailure(false)
                .environment(Map.<String, String>of()::get).build();
        List<Long> reported = new ArrayList<>();
        List<Long> live = new ArrayList<>();
        long request = GIB;
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            a.addOutOfMemoryListener(report -> reported.add(report.requestedBytes()));
            long p;
            int calls = 0;
            while ((p = a.allocateRaw(256, request)) != 0) {
                live.add(p);
                assertThat(++calls).as("allocations of 1 GiB before the device ran out (%s total)", before)
                        .isLessThanOrEqualTo((int) (before.totalBytes() / GIB) + 1);
            }
            AllocatorStats full = a.getStats();
            CudaMemInfo exhausted = d.memGetInfo(0);
            System.out.printf("virtualMemory=%s allowGrowth=%s: device %s before, %s when exhausted; %d GiB"
                    + " allocated, %d bytes reserved in %d regions%n", virtualMemory, allowGrowth, before,
                    exhausted, live.size(), full.poolBytes(), a.allocator().regionCount());
            assertThat(reported).as("the listener heard of the one refused request").containsExactly(request);
            assertThat(full.poolBytes()).as("reserved below the limit: the device refused, not the limit")
                    .isLessThan(limit);
            assertThat(exhausted.freeBytes())
                    .as("the back-off took what the device had left (reserved %d of %s free at the start)",
                            full.poolBytes(), before)
                    .isLessThan(2 * request + 512 * MIB);
            assertThat(full.poolBytes()).isGreaterThan(before.freeBytes() - 2 * request - 512 * MIB);

            // The allocator serves on from what it holds: a freed gigabyte is had again.
            a.deallocateRaw(live.remove(live.size() - 1));
            long again = a.allocateRaw(256, request);
            assertThat(again).as("a gigabyte freed after the device ran out is served again").isNotZero();
            live.add(again);
            assertThat(a.getStats().poolBytes()).as("served from held memory").isEqualTo(full.poolBytes());
            assertThat(reported).hasSize(1);

            for (long q : live) {
                a.deallocateRaw(q);
            }
            assertThat(a.getStats().bytesInUse()).isZero();
        }
        CudaMemInfo after = d.memGetInfo(0);
        assertThat(after.freeBytes()).as("every byte back to the device on close (%s before, %s after)", before,
                after).isGreaterThanOrEqualTo(before.freeBytes() - 64 * MIB);
    }
}
