/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.SubAllocator.Block;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every retain of a device's primary context is released: by each sub-allocator and allocator on
 * close, by construction that fails half-way, by the one-off queries; and a call that needs a
 * context nobody retains fails with a message. Against the simulated driver, which counts retains
 * as the real one does and refuses what it refuses.
 */
class PrimaryContextTest {

    private static final long G = 64 << 10;
    private static final long MIB = 1 << 20;

    private final SimulatedCudaDriver driver = new SimulatedCudaDriver(256 * G, G);

    private static GpuBfcOptions.Builder options() {
        return GpuBfcOptions.builder().environment(Map.<String, String>of()::get).eventPollIntervalMicros(0);
    }

    @Test
    void eachSubAllocatorHoldsOneRetainFromConstructionToClose() {
        CudaDeviceSubAllocator device = new CudaDeviceSubAllocator(driver, 0);
        CudaHostSubAllocator host = new CudaHostSubAllocator(driver, 0);
        CudaVirtualMemorySubAllocator vmm = new CudaVirtualMemorySubAllocator(driver, 0, 16 * G);
        assertThat(driver.retainedContexts()).isEqualTo(3);
        device.alloc(256, 4096);
        host.alloc(256, 4096);
        vmm.alloc(256, G);
        device.close();
        host.close();
        vmm.close();
        assertThat(driver.retainedContexts()).isZero();
        assertThat(driver.contextRetains()).isEqualTo(3);
        // Idempotent: no second release.
        device.close();
        host.close();
        vmm.close();
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("releasePrimaryContext")).hasSize(3);
        assertThatThrownBy(() -> device.alloc(256, 4096)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("alloc after close: CudaDeviceSubAllocator[device 0's sub-allocator, 0 blocks, closed]");
        assertThatThrownBy(() -> host.free(0x1234, 4096)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("free after close");
    }

    @Test
    void aGpuAllocatorHoldsOneRetainAndGivesItBackOnClose() {
        for (boolean virtualMemory : new boolean[] {false, true}) {
            GpuBfcAllocator a = GpuBfcAllocators.create(driver, 0,
                    options().memoryLimitBytes(4 * MIB).virtualMemory(virtualMemory).build());
            assertThat(driver.retainedContexts()).as("create's own retain is released").isEqualTo(1);
            long p = a.allocateRaw(256, 4096);
            a.deallocateRaw(p, SimulatedCudaDriver.STREAM); // an event pending at close: destroyed while the context is held
            long q = a.allocateRaw(256, 4096);
            a.deallocateRaw(q, SimulatedCudaDriver.STREAM);
            driver.completeAllEvents();
            a.pollEvents(); // its event goes back to the pool, destroyed on close
            a.close();
            assertThat(driver.retainedContexts()).as("virtualMemory=%s", virtualMemory).isZero();
            assertThat(driver.liveEvents()).isZero();
            a.close();
            assertThat(driver.retainedContexts()).isZero();
        }
    }

    @Test
    void anErrorFromTheEnvironmentFunctionLeavesNoRetain() {
        GpuBfcOptions o = options().memoryLimitBytes(4 * MIB).environment(name -> {
            throw new StackOverflowError("reading " + name);
        }).build();
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, o)).isInstanceOf(StackOverflowError.class)
                .hasMessageStartingWith("reading TF_");
        assertThat(driver.retainedContexts()).as("create's own retain").isZero();
        // The device is as before: an allocator can be made and closed.
        GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(4 * MIB).build()).close();
        assertThat(driver.retainedContexts()).isZero();
    }

    @Test
    void theQueriesRetainOnlyForTheCall() {
        assertThat(driver.memGetInfo(0).totalBytes()).isEqualTo(256 * G);
        assertThat(driver.allocationGranularity(0)).isEqualTo(G);
        assertThat(driver.retainedContexts()).isZero();
    }

    @Test
    void aCallWithoutARetainedContextFailsWithAMessage() {
        assertThatThrownBy(() -> driver.memAlloc(0, 4096)).isInstanceOf(IllegalStateException.class)
                .hasMessage("memAlloc on device 0 needs the device's primary context, but nothing retains"
                        + " it (expected: a call through a sub-allocator or allocator of that device that is"
                        + " still open; each retains the context when made and releases it when closed)");
        assertThat(driver.liveDeviceBlocks()).isZero();
        assertThatThrownBy(() -> driver.releasePrimaryContext(0)).isInstanceOf(IllegalStateException.class)
                .hasMessage("releasePrimaryContext(device=0) without a retain of that device's primary"
                        + " context (expected: one release per retainPrimaryContext)");
        // After close, the memory's owner no longer holds the context: the event is refused too.
        GpuBfcAllocator a = GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(MIB).build());
        a.close();
        assertThatThrownBy(() -> driver.eventCreate(0)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("eventCreate on device 0 needs the device's primary context");
    }

    @Test
    void aFailedRetainLeavesNothingBehind() {
        driver.failNext("retainPrimaryContext", 999);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, 16 * G))
                .isInstanceOf(CudaException.class).hasMessageContaining("retainPrimaryContext(");
        driver.failNext("retainPrimaryContext", 999);
        assertThatThrownBy(() -> new CudaDeviceSubAllocator(driver, 0)).isInstanceOf(CudaException.class);
        driver.failNext("retainPrimaryContext", 999);
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(MIB).build()))
                .isInstanceOf(CudaException.class);
        assertThat(driver.retainedContexts()).isZero();
        assertThat(driver.liveReservations()).isZero();
    }

    @Test
    void aVirtualMemoryConstructionThatFailsHalfWayReleasesItsRetain() {
        driver.failNext("addressReserve", SimulatedCudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, 16 * G))
                .isInstanceOf(CudaException.class).hasMessageContaining("addressReserve(");
        driver.failNext("allocationGranularity", 999);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, 16 * G))
                .isInstanceOf(CudaException.class).hasMessageContaining("allocationGranularity(");
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, Long.MAX_VALUE))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot be reserved: it rounds up past 2^63");
        SimulatedCudaDriver noVmm = new SimulatedCudaDriver(
                List.of(new CudaDeviceInfo(0, "Old GPU", 64 * G, 5, 2, false)), G);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(noVmm, 0, 16 * G))
                .isInstanceOf(IllegalStateException.class);
        assertThat(driver.retainedContexts()).isZero();
        assertThat(noVmm.retainedContexts()).isZero();
        assertThat(driver.liveReservations()).isZero();
    }

    @Test
    void aGpuAllocatorWhoseConstructionFailsReleasesEveryRetain() {
        // The BFC allocator refuses a fraction whose threshold is 0 bytes, after the sub-allocator is made.
        for (boolean virtualMemory : new boolean[] {false, true}) {
            assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(16 * G)
                    .virtualMemory(virtualMemory).fragmentationFraction(1e-12).build()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("fragmentationFraction=");
            assertThat(driver.retainedContexts()).as("virtualMemory=%s", virtualMemory).isZero();
        }
        driver.failNext("memGetInfo", 999);
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().build()))
                .isInstanceOf(CudaException.class).hasMessageContaining("memGetInfo(");
        driver.failNext("addressReserve", 999);
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(MIB)
                .virtualMemory(true).build())).isInstanceOf(CudaException.class);
        assertThat(driver.retainedContexts()).isZero();
        assertThat(driver.liveReservations()).isZero();
    }

    @Test
    void anAllocatorWhoseCreateCannotReleaseItsOwnRetainIsClosedNotReturned() {
        // The first release during a successful create is create's own (the simulated queries
        // take no retain): it fails after the allocator was made.
        driver.failNext("releasePrimaryContext", 999);
        assertThatThrownBy(() -> GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(MIB).build()))
                .isInstanceOf(CudaException.class).hasMessageContaining("releasePrimaryContext(");
        assertThat(driver.retainedContexts()).as("create's retain counts as released, the allocator's by its close")
                .isZero();
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("releasePrimaryContext")).hasSize(2);
    }

    @Test
    void aCloseThatFailsStillReleasesTheRetain() {
        CudaDeviceSubAllocator device = new CudaDeviceSubAllocator(driver, 0);
        Block a = device.alloc(256, 4096);
        Block b = device.alloc(256, 4096);
        driver.failNext("memFree", 999);
        assertThatThrownBy(device::close).isInstanceOf(CudaException.class).hasMessageContaining("memFree(");
        assertThat(driver.liveDeviceBlocks()).as("the other block is freed").isEqualTo(1);
        assertThat(driver.retainedContexts()).isZero();
        assertThat(a.ptr()).isNotEqualTo(b.ptr());

        GpuBfcAllocator gpu = GpuBfcAllocators.create(driver, 0, options().memoryLimitBytes(MIB).build());
        gpu.allocateRaw(256, 4096);
        driver.failNext("memFree", 999);
        assertThatThrownBy(gpu::close).isInstanceOf(CudaException.class).hasMessageContaining("memFree(");
        assertThat(driver.retainedContexts()).isZero();
        assertThat(driver.liveEvents()).isZero();
    }
}
