/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.SubAllocator;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A block that an allocator obtained from a device or pinned host sub-allocator is freed by that
 * allocator only: a free from other code, while the allocator still hands out its memory, is
 * refused and changes nothing (on the simulated driver).
 */
class CudaBlockOwnershipTest {

    private static final long MIB = 1L << 20;

    @ParameterizedTest(name = "pinned host memory: {0}")
    @ValueSource(booleans = {false, true})
    void aBlockAnAllocatorHoldsIsFreedByTheAllocatorOnly(boolean host) {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, 1 << 16);
        IntSupplier liveBlocks = host ? driver::liveHostBlocks : driver::liveDeviceBlocks;
        try (CudaBlockSubAllocator sub = host ? new CudaHostSubAllocator(driver, 0) : new CudaDeviceSubAllocator(driver, 0)) {
            BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * MIB).subAllocator(sub).build();
            long p = a.allocateRaw(256, 1000);
            MemoryMap.Region region = a.memoryMap().regions().get(0);
            assertThatThrownBy(() -> sub.free(region.ptr(), region.size()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("belongs to allocator 'gpu_0', which still hands out its memory")
                    .hasMessageContaining("Nothing was freed");
            assertThat(liveBlocks.getAsInt()).isEqualTo(1);

            SubAllocator.Block own = sub.alloc(256, 4096); // the caller's own block is the caller's to free
            sub.free(own.ptr(), own.bytes());

            a.deallocateRaw(p);
            a.close(); // the allocator gives its block back
            assertThat(liveBlocks.getAsInt()).isZero();
        }
    }

    @ParameterizedTest(name = "pinned host memory: {0}")
    @ValueSource(booleans = {false, true})
    void aCloseUnderAnAllocatorLeavesItsBlocksUntilItGivesThemBack(boolean host) {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, 1 << 16);
        IntSupplier liveBlocks = host ? driver::liveHostBlocks : driver::liveDeviceBlocks;
        CudaBlockSubAllocator sub = host ? new CudaHostSubAllocator(driver, 0) : new CudaDeviceSubAllocator(driver, 0);
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * MIB).subAllocator(sub).build();
        long p = a.allocateRaw(256, 1000);
        SubAllocator.Block own = sub.alloc(256, 4096);
        sub.close();
        assertThat(liveBlocks.getAsInt()).as("the caller's block freed, the allocator's kept").isEqualTo(1);
        assertThat(driver.retainedContexts()).isEqualTo(1);
        assertThatThrownBy(() -> sub.free(own.ptr(), own.bytes())).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("free after close");
        assertThat(a.allocatedSize(p)).isEqualTo(1024);

        a.deallocateRaw(p);
        a.close(); // gives the block back: freed now, and the context released after it
        assertThat(liveBlocks.getAsInt()).isZero();
        assertThat(driver.retainedContexts()).isZero();
        sub.close(); // nothing more
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("releasePrimaryContext")).hasSize(1);
    }

    @Test
    void aBlockWhoseFreeFailedUnderTheAllocatorIsFreedByTheClose() {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, 1 << 16);
        CudaDeviceSubAllocator sub = new CudaDeviceSubAllocator(driver, 0);
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * MIB).subAllocator(sub).build();
        a.deallocateRaw(a.allocateRaw(256, 1000));
        driver.failNext("memFree", 700); // CUDA_ERROR_ILLEGAL_ADDRESS
        assertThatThrownBy(a::emptyCache).isInstanceOf(CudaException.class);
        assertThat(driver.liveDeviceBlocks()).isEqualTo(1);
        a.close();
        sub.close(); // the allocator gave the block up: the close frees it
        assertThat(driver.liveDeviceBlocks()).isZero();
        assertThat(driver.retainedContexts()).isZero();
    }

    /**
     * The sub-allocator closed first (as documented), then the allocator's free of its block
     * fails: the block is forgotten, as close() forgets one, and the context held for it is
     * released. Before, the entry stayed and a second close() did nothing: the context's retain
     * was kept for the process's life.
     */
    @Test
    void aFailedFreeAfterTheSubAllocatorsCloseStillReleasesTheContext() {
        SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, 1 << 16);
        CudaDeviceSubAllocator sub = new CudaDeviceSubAllocator(driver, 0);
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * MIB).subAllocator(sub).build();
        a.deallocateRaw(a.allocateRaw(256, 1000));
        sub.close();
        driver.failNext("memFree", 700);
        assertThatThrownBy(a::close).isInstanceOf(CudaException.class).hasMessageContaining("memFree(");
        assertThat(driver.retainedContexts()).isZero();
        assertThat(sub.toString()).contains(" 0 blocks");
    }
}
