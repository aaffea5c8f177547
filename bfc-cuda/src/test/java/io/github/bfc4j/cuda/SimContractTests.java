/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.SubAllocatorContractTest;
import org.junit.jupiter.api.Nested;

/** bfc-core's sub-allocator contract, run against each CUDA sub-allocator over the simulated driver. */
class SimContractTests {

    @Nested
    class DeviceSubAllocator extends SubAllocatorContractTest {
        private SimulatedCudaDriver driver;

        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            driver = new SimulatedCudaDriver(4 * capacityHintBytes, 1 << 16);
            return new CudaDeviceSubAllocator(driver, 0);
        }

        @Override
        protected long maxHonouredAlignment() {
            return 256;
        }

        @Override
        protected void close(SubAllocator subAllocator) {
            ((CudaDeviceSubAllocator) subAllocator).close();
            assertThat(driver.liveDeviceBlocks()).isZero();
            assertThat(driver.deviceBytesUsed()).isZero();
        }
    }

    @Nested
    class HostSubAllocator extends SubAllocatorContractTest {
        private SimulatedCudaDriver driver;

        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            driver = new SimulatedCudaDriver(4 * capacityHintBytes, 1 << 16);
            return new CudaHostSubAllocator(driver, 0);
        }

        @Override
        protected long maxHonouredAlignment() {
            return 256;
        }

        @Override
        protected void close(SubAllocator subAllocator) {
            ((CudaHostSubAllocator) subAllocator).close();
            assertThat(driver.liveHostBlocks()).isZero();
        }
    }

    @Nested
    class VirtualMemorySubAllocator extends SubAllocatorContractTest {
        private static final long GRANULARITY = 1 << 16;
        private SimulatedCudaDriver driver;

        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            // Every block is rounded up to the granularity: room for MAX_LIVE_BLOCKS of them.
            long space = capacityHintBytes + MAX_LIVE_BLOCKS * GRANULARITY;
            driver = new SimulatedCudaDriver(2 * space, GRANULARITY);
            return new CudaVirtualMemorySubAllocator(driver, 0, space);
        }

        @Override
        protected void close(SubAllocator subAllocator) {
            ((CudaVirtualMemorySubAllocator) subAllocator).close();
            assertThat(driver.liveMappings()).isZero();
            assertThat(driver.livePhysicalAllocations()).isZero();
            assertThat(driver.liveReservations()).isZero();
            assertThat(driver.deviceBytesUsed()).isZero();
        }
    }
}
