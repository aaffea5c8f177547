/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link GpuHostileCalls} on the simulated driver: only documented exceptions, nothing left behind. */
class GpuHostileCallsTest {

    @Test
    void hostileCallsGetDocumentedExceptions(@TempDir Path dir) {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, 2L << 20);
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        assertThat(GpuHostileCalls.run(vmm -> GpuBfcAllocators.create(driver, 0, GpuBfcOptions.builder()
                .memoryLimitBytes(64L << 20).virtualMemory(vmm).allowRetryOnFailure(false).eventPollIntervalMicros(0)
                .environment(Map.<String, String>of()::get).build()), () -> true, seed, 10, dir))
                .as("seed %d", seed).isEmpty();
        assertThat(driver.liveDeviceBlocks()).isZero();
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.liveReservations()).isZero();
        assertThat(driver.liveHostBlocks()).isZero();
        assertThat(driver.retainedContexts()).isZero();
    }
}
