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
import org.junit.jupiter.api.Test;

/**
 * A mapping that an allocator obtained from a virtual memory sub-allocator is released by that
 * allocator only, and stays mapped across the sub-allocator's close until the allocator gives it
 * back (on the simulated driver).
 */
class CudaVirtualMemoryOwnershipTest {

    private static final long G = 2L << 20;

    private final SimulatedCudaDriver driver = new SimulatedCudaDriver(1L << 30, G);

    /** The one live allocation of {@link #allocatorOfTwoMappings}. */
    private long held;

    /**
     * An allocator over {@code sub} holding one region made of two adjacent mappings, with one
     * allocation ({@link #held}) live and 2 G free in it.
     */
    private BfcAllocator allocatorOfTwoMappings(CudaVirtualMemorySubAllocator sub) {
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * G).subAllocator(sub).build();
        held = a.allocateRaw(256, G);
        a.deallocateRaw(a.allocateRaw(256, 2 * G)); // a second mapping, right after the first: the regions merge
        assertThat(a.memoryMap().regions()).hasSize(1);
        return a;
    }

    @Test
    void aMappingAnAllocatorHoldsIsReleasedByTheAllocatorOnly() {
        try (CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(driver, 0, 64 * G)) {
            BfcAllocator a = allocatorOfTwoMappings(sub);
            MemoryMap.Region region = a.memoryMap().regions().get(0);
            int mappings = driver.liveMappings();
            assertThat(mappings).isGreaterThanOrEqualTo(2);

            assertThatThrownBy(() -> sub.free(region.ptr(), region.size()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("belongs to allocator 'gpu_0', which still hands out its memory")
                    .hasMessageContaining("Nothing was freed");
            assertThat(driver.liveMappings()).isEqualTo(mappings);
            assertThat(sub.allocatedBytes()).isEqualTo(region.size());

            SubAllocator.Block own = sub.alloc(256, G); // the caller's own mapping is the caller's to free
            sub.free(own.ptr(), own.bytes());
            assertThat(driver.liveMappings()).isEqualTo(mappings);

            a.deallocateRaw(held);
            a.close(); // the allocator gives its mappings back
            assertThat(driver.liveMappings()).isZero();
            assertThat(sub.allocatedBytes()).isZero();
        }
    }

    @Test
    void aCloseUnderAnAllocatorLeavesItsMappingsUntilItGivesThemBack() {
        CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(driver, 0, 64 * G);
        BfcAllocator a = allocatorOfTwoMappings(sub);
        int allocatorsMappings = driver.liveMappings();
        SubAllocator.Block own = sub.alloc(256, G);
        sub.close();
        assertThat(driver.liveMappings()).as("the caller's mapping released, the allocator's kept")
                .isEqualTo(allocatorsMappings);
        assertThat(driver.liveReservations()).isEqualTo(1);
        assertThat(driver.retainedContexts()).isEqualTo(1);
        assertThatThrownBy(() -> sub.free(own.ptr(), own.bytes())).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("free after close");

        long p = a.allocateRaw(256, 1000); // served from the region the allocator still holds
        long host = driver.hostAlloc(0, 1000);
        driver.memcpyHtoD(0, p, host, 1000); // the simulated driver refuses an unmapped address
        driver.hostFree(0, host);

        a.deallocateRaw(p);
        a.deallocateRaw(held);
        a.close(); // gives the mappings back: released now, then the reservation and the context
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.livePhysicalAllocations()).isZero();
        assertThat(driver.liveReservations()).isZero();
        assertThat(driver.retainedContexts()).isZero();
        sub.close(); // nothing more
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("addressFree")).hasSize(1);
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("releasePrimaryContext")).hasSize(1);
    }

    @Test
    void aMappingWhoseReleaseFailedUnderTheAllocatorIsReleasedByTheClose() {
        CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(driver, 0, 64 * G);
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * G).subAllocator(sub).build();
        a.deallocateRaw(a.allocateRaw(256, 1000));
        driver.failNext("memUnmap", 700); // CUDA_ERROR_ILLEGAL_ADDRESS
        assertThatThrownBy(a::emptyCache).isInstanceOf(CudaException.class);
        assertThat(driver.liveMappings()).isEqualTo(1);
        a.close();
        sub.close(); // the allocator gave the mapping up: the close releases it
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.livePhysicalAllocations()).isZero();
        assertThat(driver.liveReservations()).isZero();
        assertThat(driver.retainedContexts()).isZero();
    }

    /**
     * The sub-allocator closed first, then the allocator's release of its mapping fails: every
     * call is still attempted, the mapping forgotten, and the reservation's free and the
     * context's release attempted after it, as close() does. Before, the mapping stayed and a
     * second close() did nothing: the context's retain was kept for the process's life.
     */
    @Test
    void aFailedReleaseAfterTheSubAllocatorsCloseStillReleasesTheRest() {
        CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(driver, 0, 64 * G);
        BfcAllocator a = BfcAllocator.builder().name("gpu_0").memoryLimit(64 * G).subAllocator(sub).build();
        a.deallocateRaw(a.allocateRaw(256, 1000));
        sub.close();
        driver.failNext("memUnmap", 700);
        assertThatThrownBy(a::close).isInstanceOf(CudaException.class).hasMessageContaining("memUnmap(");
        assertThat(sub.toString()).contains(" 0 mappings");
        // The reservation's free is attempted too (the simulated driver refuses it while the
        // range is still mapped, as CUDA does), and the context is released all the same.
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("addressFree")).hasSize(1);
        assertThat(driver.retainedContexts()).isZero();
    }

    /** A free of 0 bytes at a mapping's address is refused, not a free of nothing. */
    @Test
    void aFreeOfNoBytesIsRefused() {
        try (CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(driver, 0, 64 * G)) {
            SubAllocator.Block b = sub.alloc(256, G);
            for (long bytes : new long[] {0, -G}) {
                assertThatThrownBy(() -> sub.free(b.ptr(), bytes)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining(bytes + " bytes (expected: the sizes of whole blocks from alloc)");
            }
            sub.free(b.ptr(), b.bytes());
            assertThat(driver.liveMappings()).isZero();
        }
    }
}
