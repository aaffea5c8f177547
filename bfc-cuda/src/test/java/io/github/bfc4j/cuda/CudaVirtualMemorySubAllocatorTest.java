/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.github.bfc4j.core.SubAllocator.Block;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The bookkeeping of {@link CudaVirtualMemorySubAllocator}, against the simulated driver. */
class CudaVirtualMemorySubAllocatorTest {

    private static final long G = 64 << 10;

    private final SimulatedCudaDriver driver = new SimulatedCudaDriver(64 * G, G);

    private CudaVirtualMemorySubAllocator vmm(long space) {
        return new CudaVirtualMemorySubAllocator(driver, 0, space);
    }

    @Test
    void reservesOnceRoundedUpToTheGranularity() {
        CudaVirtualMemorySubAllocator v = vmm(10 * G + 1);
        assertThat(v.reservedBytes()).isEqualTo(11 * G);
        assertThat(v.granularity()).isEqualTo(G);
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("addressReserve")).hasSize(1);
        v.close();
        assertThat(driver.liveReservations()).isZero();
    }

    @Test
    void blocksAreRoundedToTheGranularityAndAdjacent() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, 1);
        Block b = v.alloc(256, G + 256);
        Block c = v.alloc(256, 2 * G);
        assertThat(a.bytes()).isEqualTo(G);
        assertThat(b.bytes()).isEqualTo(2 * G);
        assertThat(c.bytes()).isEqualTo(2 * G);
        assertThat(a.ptr()).isEqualTo(v.baseAddress());
        assertThat(b.ptr()).isEqualTo(a.ptr() + a.bytes());
        assertThat(c.ptr()).isEqualTo(b.ptr() + b.bytes());
        assertThat(v.supportsCoalescing()).isTrue();
        assertThat(driver.calls()).containsSubsequence(
                "memCreate(bytes=" + G + ")",
                "memMap(ptr=0x" + Long.toHexString(a.ptr()) + ", bytes=" + G + ", handle=1)",
                "memSetAccess(ptr=0x" + Long.toHexString(a.ptr()) + ", bytes=" + G + ")");
        // Adjacent blocks free as one run (the BFC allocator merges them into one region).
        v.free(a.ptr(), a.bytes() + b.bytes() + c.bytes());
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.deviceBytesUsed()).isZero();
        v.close();
    }

    @Test
    void exhaustedReservationAnswersNullAndCreatesNothing() {
        CudaVirtualMemorySubAllocator v = vmm(4 * G);
        assertThat(v.alloc(256, 3 * G)).isNotNull();
        int creates = driver.physicalCreates();
        assertThat(v.alloc(256, 2 * G)).isNull();
        assertThat(driver.physicalCreates()).isEqualTo(creates);
        assertThat(v.alloc(256, G)).isNotNull();
    }

    /**
     * A range larger than a GPU's virtual address space (2^47 bytes and more: what an H200
     * refuses) cannot be reserved: the constructor throws the driver's out-of-memory error, named
     * after the setting that asked for it, and keeps nothing retained or reserved; a range the
     * space has room for is reserved, and one more than the others leave is refused too.
     */
    @Test
    void aRangeLargerThanTheGpusAddressSpaceIsRefusedNamingTheSetting() {
        for (long space : new long[] {1L << 47, 1L << 62, Long.MAX_VALUE - G + 1}) {
            assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, space))
                    .as("%d bytes", space)
                    .isInstanceOfSatisfying(CudaException.class, e -> assertThat(e.isOutOfMemory()).isTrue())
                    .hasMessageContaining("for virtualAddressSpaceBytes=" + space + " on GPU 0 (expected: a range")
                    .hasMessageContaining("GpuBfcOptions.virtualAddressSpaceBytes, or the memory limit if that is 0")
                    .hasMessageEndingWith("failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
            assertThat(driver.retainedContexts()).isZero();
            assertThat(driver.liveReservations()).isZero();
        }
        CudaVirtualMemorySubAllocator half = vmm(1L << 46);
        assertThat(half.reservedBytes()).isEqualTo(1L << 46);
        assertThat(half.baseAddress() + half.reservedBytes()).as("the range ends below 2^63").isPositive();
        // An H200 had room for 7 x 2^44 bytes in all (SimulatedCudaDriver.ADDRESS_SPACE_BYTES).
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 0, (3L << 44) + G))
                .as("more than the first reservation left").isInstanceOf(CudaException.class)
                .hasMessageContaining("virtualAddressSpaceBytes=");
        CudaVirtualMemorySubAllocator rest = vmm(3L << 44);
        Block b = rest.alloc(256, 4 * G);
        assertThat(b.ptr()).isEqualTo(rest.baseAddress());
        rest.free(b.ptr(), b.bytes());
        rest.close();
        half.close();
        assertThat(driver.liveReservations()).isZero();
    }

    /** A request no reservation could hold, however large, is an out-of-memory answer too. */
    @Test
    void aRequestTooLargeToRoundUpAnswersNull() {
        CudaVirtualMemorySubAllocator v = vmm(4 * G);
        assertThat(v.alloc(256, Long.MAX_VALUE)).isNull();
        assertThat(v.alloc(256, Long.MAX_VALUE - G + 2)).isNull();
        assertThat(driver.physicalCreates()).isZero();
        assertThat(v.alloc(256, 4 * G)).as("the whole reservation is still there").isNotNull();
        v.close();
    }

    @Test
    void outOfMemoryAnswersNullAndLeaksNothing() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        driver.failNext("memCreate", SimulatedCudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
        assertThat(v.alloc(256, G)).isNull();
        // The failed attempt took no address: the next block starts at the base.
        assertThat(v.alloc(256, G).ptr()).isEqualTo(v.baseAddress());
    }

    @Test
    void failedMapReleasesThePhysicalMemoryAndThrows() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        driver.failNext("memMap", SimulatedCudaDriver.CUDA_ERROR_INVALID_VALUE);
        assertThatThrownBy(() -> v.alloc(256, G))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("memMap(")
                .hasMessageContaining("CUDA_ERROR_INVALID_VALUE (1)");
        assertThat(driver.livePhysicalAllocations()).isZero();
        assertThat(driver.deviceBytesUsed()).isZero();
        assertThat(v.alloc(256, G).ptr()).isEqualTo(v.baseAddress());
    }

    @Test
    void failedSetAccessUnmapsAndReleases() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        driver.failNext("memSetAccess", SimulatedCudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
        assertThat(v.alloc(256, G)).isNull();
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.livePhysicalAllocations()).isZero();
    }

    @Test
    void freeOfAWrongSizeIsRejectedAndChangesNothing() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, 2 * G);
        assertThatThrownBy(() -> v.free(a.ptr(), 2 * G))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("add up to " + 3 * G);
        assertThatThrownBy(() -> v.free(a.ptr() + G / 2, G)).isInstanceOf(IllegalArgumentException.class);
        assertThat(driver.liveMappings()).isEqualTo(2);
        v.free(a.ptr(), a.bytes());
        v.free(b.ptr(), b.bytes());
        assertThat(driver.liveMappings()).isZero();
    }

    @Test
    void freeAtTheEndGivesTheTailBackButAHoleStaysUnused() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, G);
        Block c = v.alloc(256, G);
        v.free(b.ptr(), b.bytes());
        // A hole in the middle is not reused (as upstream): the next block goes after c.
        Block d = v.alloc(256, G);
        assertThat(d.ptr()).isEqualTo(c.ptr() + c.bytes());
        v.free(d.ptr(), d.bytes());
        v.free(c.ptr(), c.bytes());
        // c and d freed at the end: the tail goes back to the end of a, the highest live block.
        Block e = v.alloc(256, G);
        assertThat(e.ptr()).isEqualTo(a.ptr() + a.bytes());
    }

    @Test
    void pauseReleasesPhysicalMemoryAndResumeMapsTheSameAddresses() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, 2 * G);
        driver.writeDevice(a.ptr(), new byte[] {1, 2, 3});
        v.pause(false);
        assertThat(v.isPaused()).isTrue();
        List<String> calls = driver.calls();
        assertThat(calls.indexOf("contextSynchronize(device=0)"))
                .as("the GPU has finished with the memory before it is unmapped")
                .isGreaterThanOrEqualTo(0)
                .isLessThan(calls.indexOf("memUnmap(ptr=0x" + Long.toHexString(a.ptr()) + ", bytes=" + G + ")"));
        assertThat(driver.deviceBytesUsed()).isZero();
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.liveReservations()).isEqualTo(1);
        assertThat(v.physicalBytes()).isZero();
        assertThat(v.allocatedBytes()).isEqualTo(3 * G);
        assertThatThrownBy(() -> driver.readDevice(a.ptr(), 3)).isInstanceOf(CudaException.class)
                .hasMessageContaining("CUDA_ERROR_ILLEGAL_ADDRESS");
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("resume()");
        v.resume();
        assertThat(v.isPaused()).isFalse();
        assertThat(driver.deviceBytesUsed()).isEqualTo(3 * G);
        assertThat(v.physicalBytes()).isEqualTo(3 * G);
        // Same addresses, fresh memory: without a backup the contents are gone.
        assertThat(driver.readDevice(a.ptr(), 3)).containsExactly(0, 0, 0);
        driver.writeDevice(b.ptr() + 2 * G - 1, new byte[] {9});
        assertThat(v.alloc(256, G).ptr()).isEqualTo(b.ptr() + b.bytes());
        assertThat(driver.liveHostBlocks()).isZero();
    }

    @Test
    void pauseWithBackupRestoresTheContents() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, 2 * G);
        driver.writeDevice(a.ptr() + 17, new byte[] {1, 2, 3});
        driver.writeDevice(b.ptr() + 2 * G - 2, new byte[] {4, 5});
        v.pause(true);
        assertThat(driver.deviceBytesUsed()).isZero();
        assertThat(driver.liveHostBlocks()).isEqualTo(2);
        v.resume();
        assertThat(driver.readDevice(a.ptr() + 17, 3)).containsExactly(1, 2, 3);
        assertThat(driver.readDevice(b.ptr() + 2 * G - 2, 2)).containsExactly(4, 5);
        assertThat(driver.liveHostBlocks()).isZero();
    }

    @Test
    void aPauseThatFailsHalfWayCanBeCalledAgain() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, G);
        driver.writeDevice(b.ptr(), new byte[] {7});
        // The second mapping's copy fails: the first is released, the second is untouched.
        driver.failNextAfter("memcpyDtoH", 1, SimulatedCudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS);
        assertThatThrownBy(() -> v.pause(true)).isInstanceOf(CudaException.class);
        assertThat(v.isPaused()).isTrue();
        assertThat(v.physicalBytes()).isEqualTo(G);
        assertThat(driver.liveHostBlocks()).isEqualTo(1);
        v.pause(true);
        assertThat(v.physicalBytes()).isZero();
        v.resume();
        assertThat(driver.readDevice(b.ptr(), 1)).containsExactly(7);
        assertThat(driver.liveHostBlocks()).isZero();
        v.free(a.ptr(), 2 * G);
    }

    @Test
    void aResumeThatRunsOutOfMemoryStaysPausedAndCanBeCalledAgain() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        Block b = v.alloc(256, G);
        driver.writeDevice(a.ptr(), new byte[] {5});
        driver.writeDevice(b.ptr(), new byte[] {6});
        v.pause(true);
        driver.failNextAfter("memCreate", 1, SimulatedCudaDriver.CUDA_ERROR_OUT_OF_MEMORY);
        assertThatThrownBy(v::resume).isInstanceOf(CudaException.class)
                .hasMessageContaining("CUDA_ERROR_OUT_OF_MEMORY");
        assertThat(v.isPaused()).isTrue();
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(IllegalStateException.class);
        v.resume();
        assertThat(v.isPaused()).isFalse();
        assertThat(driver.readDevice(a.ptr(), 1)).containsExactly(5);
        assertThat(driver.readDevice(b.ptr(), 1)).containsExactly(6);
    }

    @Test
    void freeWhilePausedDropsTheBackupAndCloseReleasesEverything() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        v.alloc(256, G);
        v.pause(true);
        v.free(a.ptr(), a.bytes());
        assertThat(driver.liveHostBlocks()).isEqualTo(1);
        v.close();
        assertThat(driver.liveHostBlocks()).isZero();
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.livePhysicalAllocations()).isZero();
        assertThat(driver.liveReservations()).isZero();
        v.close();
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aCallThatFailsInCloseDoesNotStopTheOthers() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        v.alloc(256, G);
        v.alloc(256, G);
        v.alloc(256, G);
        // The second mapping's release fails: the third is still unmapped and released, the
        // reservation freed, the context released; only the one handle leaks.
        driver.failNextAfter("memRelease", 1, SimulatedCudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS);
        assertThatThrownBy(v::close).isInstanceOf(CudaException.class)
                .hasMessageContaining("memRelease(handle=2)")
                .satisfies(e -> assertThat(e.getSuppressed()).isEmpty());
        assertThat(driver.liveMappings()).isZero();
        assertThat(driver.livePhysicalAllocations()).isEqualTo(1);
        assertThat(driver.liveReservations()).isZero();
        assertThat(driver.retainedContexts()).isZero();
        v.close(); // idempotent: nothing is tried twice
        assertThat(driver.calls()).filteredOn(c -> c.startsWith("addressFree")).hasSize(1);
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void severalFailuresInCloseThrowTheFirstWithTheOthersSuppressed() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        Block a = v.alloc(256, G);
        v.alloc(256, G);
        v.alloc(256, G);
        v.pause(true);
        v.resume();
        v.pause(true); // every mapping released, with a host backup each
        // The first backup's free fails, and so does the release of the context.
        driver.failNext("hostFree", SimulatedCudaDriver.CUDA_ERROR_INVALID_VALUE);
        driver.failNext("releasePrimaryContext", 999);
        Throwable thrown = catchThrowable(v::close);
        assertThat(thrown).isInstanceOf(CudaException.class).hasMessageContaining("hostFree(");
        assertThat(thrown.getSuppressed()).hasSize(1);
        assertThat(thrown.getSuppressed()[0]).isInstanceOf(CudaException.class)
                .hasMessageContaining("releasePrimaryContext(");
        assertThat(driver.liveHostBlocks()).as("the other two backups are freed").isEqualTo(1);
        assertThat(driver.liveReservations()).isZero();
        assertThat(driver.retainedContexts()).as("a failed release counts as released").isZero();
        assertThat(a.ptr()).isEqualTo(v.baseAddress());
    }

    @Test
    void aFailedUnmapInCloseIsReportedWithWhatItBlocked() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        v.alloc(256, G);
        v.alloc(256, G);
        driver.failNext("memUnmap", SimulatedCudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS);
        Throwable thrown = catchThrowable(v::close);
        // First the unmap; then the release of its still-mapped handle and the free of the
        // reservation it still lies in, both refused by the driver and suppressed.
        assertThat(thrown).isInstanceOf(CudaException.class).hasMessageContaining("memUnmap(");
        assertThat(thrown.getSuppressed()).extracting(Throwable::getMessage)
                .anySatisfy(m -> assertThat(m).contains("memRelease (still mapped)"))
                .anySatisfy(m -> assertThat(m).contains("addressFree (still mapped)"))
                .hasSize(2);
        assertThat(driver.liveMappings()).as("the second mapping is unmapped").isEqualTo(1);
        assertThat(driver.livePhysicalAllocations()).isEqualTo(1);
        assertThat(driver.retainedContexts()).isZero();
    }

    @Test
    void aDeviceWithoutVirtualMemoryManagementIsRefused() {
        SimulatedCudaDriver noVmm = new SimulatedCudaDriver(
                List.of(new CudaDeviceInfo(0, "Old GPU", 64 * G, 5, 2, false)), G);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(noVmm, 0, 16 * G))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("GPU 0 does not support virtual memory");
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(driver, 1, 16 * G))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("deviceId=1 (expected: 0..0");
    }

    /**
     * When a clean-up call fails after the call that failed first, the first failure is the
     * one reported, the clean-up's suppressed by it: a failed map whose memory cannot be
     * released, a failed grant whose mapping cannot be unmapped, a failed backup copy whose host
     * memory cannot be freed. The clean-up's failure was thrown in its place.
     */
    @Test
    void aFailedCleanUpNeverHidesTheFailureItCleansUpAfter() {
        CudaVirtualMemorySubAllocator v = vmm(16 * G);
        driver.failNext("memMap", 999);
        driver.failNext("memRelease", 700);
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(CudaException.class)
                .hasMessageStartingWith("memMap(")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().asString().contains("memRelease("));
        Block b = v.alloc(256, G);
        driver.failNext("memcpyDtoH", 999);
        driver.failNext("hostFree", 700);
        assertThatThrownBy(() -> v.pause(true)).isInstanceOf(CudaException.class)
                .hasMessageStartingWith("memcpyDtoH(")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().asString().contains("hostFree("));
        v.resume();
        v.free(b.ptr(), b.bytes());
        // Last: the mapping that cannot be unmapped stays in the simulated driver.
        driver.failNext("memSetAccess", 999);
        driver.failNext("memUnmap", 700);
        assertThatThrownBy(() -> v.alloc(256, G)).isInstanceOf(CudaException.class)
                .hasMessageStartingWith("memSetAccess(")
                .satisfies(e -> assertThat(e.getSuppressed()).anySatisfy(s -> assertThat(s).asString()
                        .contains("memUnmap(")));
        // The reservation cannot go while that range is still mapped: said, not hidden.
        assertThatThrownBy(v::close).isInstanceOf(CudaException.class).hasMessageContaining("addressFree");
    }
}
