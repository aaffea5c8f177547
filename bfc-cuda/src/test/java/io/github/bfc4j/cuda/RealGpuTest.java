/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.GarbageCollection;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.SubAllocatorContractTest;
import io.github.bfc4j.core.SubAllocator.Block;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerPointer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real calls on a real device (run with {@code mvn -Pgpu verify}; skipped, with the probe's
 * sentence, where no usable GPU is). Device 0 is used.
 */
@Tag("gpu")
class RealGpuTest {

    private static final long MIB = 1 << 20;

    /** Skips the calling test, naming what is missing, unless a usable GPU is here. */
    static CudaDriver requireGpu() {
        CudaAvailability a = CudaProbe.availability();
        assumeTrue(a.isUsable(), () -> "skipped: " + a.unavailableReason());
        return CudaProbe.driver();
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static void upload(CudaDriver d, long devicePtr, byte[] data) {
        try (BytePointer host = new BytePointer(data.length)) {
            host.put(data);
            d.memcpyHtoD(0, devicePtr, host.address(), data.length);
        }
    }

    private static byte[] download(CudaDriver d, long devicePtr, int n) {
        try (BytePointer host = new BytePointer(n)) {
            d.memcpyDtoH(0, host.address(), devicePtr, n);
            byte[] out = new byte[n];
            host.get(out);
            return out;
        }
    }

    @Test
    void probeListsTheDevices() {
        requireGpu();
        CudaAvailability a = CudaProbe.availability();
        assertThat(a.devices()).isNotEmpty();
        assertThat(a.devices().get(0).totalMemoryBytes()).isPositive();
        assertThat(a.driverVersion()).isGreaterThanOrEqualTo(12000);
    }

    @Test
    void deviceMemoryHoldsWhatIsCopiedIn() {
        CudaDriver d = requireGpu();
        CudaDeviceSubAllocator sub = new CudaDeviceSubAllocator(0);
        Block b = sub.alloc(256, 4 * MIB);
        byte[] data = pattern(4096, 1);
        upload(d, b.ptr() + MIB, data);
        assertThat(download(d, b.ptr() + MIB, data.length)).isEqualTo(data);
        sub.free(b.ptr(), b.bytes());
        sub.close();
    }

    @Test
    void virtualMemoryBlocksAreAdjacentAndSurvivePauseWithBackup() {
        CudaDriver d = requireGpu();
        assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        try (CudaVirtualMemorySubAllocator v = new CudaVirtualMemorySubAllocator(0, 256 * MIB)) {
            Block a = v.alloc(256, 1);
            Block b = v.alloc(256, v.granularity() + 1);
            assertThat(a.bytes()).isEqualTo(v.granularity());
            assertThat(b.ptr()).isEqualTo(a.ptr() + a.bytes());
            byte[] data = pattern(Math.toIntExact(2 * v.granularity()), 2);
            // One copy across the boundary between the two physical allocations.
            upload(d, a.ptr() + a.bytes() - v.granularity() / 2, data);
            long freeBefore = d.memGetInfo(0).freeBytes();
            v.pause(true);
            assertThat(d.memGetInfo(0).freeBytes()).isGreaterThan(freeBefore);
            v.resume();
            assertThat(download(d, a.ptr() + a.bytes() - v.granularity() / 2, data.length)).isEqualTo(data);
            v.free(a.ptr(), a.bytes() + b.bytes());
        }
    }

    @Test
    void streamOrderedFreeOnTheDefaultStreamBecomesReusable() throws InterruptedException {
        requireGpu();
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(64 * MIB)
                .environment(Map.<String, String>of()::get).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            long p = a.allocateRaw(256, MIB);
            a.deallocateRaw(p, 0);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (a.pendingFrees() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertThat(a.pendingFrees()).isZero();
            assertThat(a.allocateRaw(256, MIB)).isEqualTo(p);
        }
    }

    @Test
    void gpuAllocatorOverVirtualMemoryCoalescesPausesAndResumes() {
        CudaDriver d = requireGpu();
        assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(64 * MIB).virtualMemory(true)
                .environment(Map.<String, String>of()::get).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            long p = a.allocateRaw(256, MIB / 4);
            long q = a.allocateRaw(256, 3 * MIB);
            assertThat(q).isEqualTo(p + MIB / 4);
            byte[] data = pattern(Math.toIntExact(3 * MIB), 3);
            upload(d, q, data);
            a.pause(true);
            a.resume();
            assertThat(download(d, q, data.length)).isEqualTo(data);
            a.deallocateRaw(q);
            a.deallocateRaw(p);
        }
    }

    /**
     * Pinned host memory under a {@code BfcAllocator}, through an {@code Allocation}'s views: the
     * bytes written through the buffer reach the device and come back; the sub-allocator's own
     * {@code free} of the region is refused, and its {@code close()} leaves the region (the view
     * writes on) until the allocator gives it back, once the view is collected.
     */
    @Test
    void pinnedHostMemoryServesViewsAndStaysWhileItsAllocatorHoldsIt() throws InterruptedException {
        CudaDriver d = requireGpu();
        CudaHostSubAllocator sub = new CudaHostSubAllocator(0);
        BfcAllocator a = BfcAllocator.builder().name("pinned").memoryLimit(64 * MIB).subAllocator(sub)
                .closePolicy(ClosePolicy.FORCE).build();
        writeThroughAViewAcrossTheSubAllocatorsClose(d, a, sub);
        a.close();
        // The region goes back to the sub-allocator once the view is collected, and the
        // context's retain with it.
        GarbageCollection.gcUntil("the pinned region given back to its sub-allocator once the view is collected",
                () -> sub.toString().contains(" 0 blocks"));
        assertThat(sub.toString()).contains(" 0 blocks");
    }

    private static void writeThroughAViewAcrossTheSubAllocatorsClose(CudaDriver d, BfcAllocator a,
            CudaHostSubAllocator sub) {
        byte[] data = pattern(Math.toIntExact(MIB), 4);
        try (Allocation x = a.allocate(MIB)) {
            ByteBuffer view = x.asByteBuffer();
            view.put(0, data);
            long device = d.memAlloc(0, MIB);
            d.memcpyHtoD(0, device, x.address(), MIB); // pinned host to device, and back below
            assertThat(download(d, device, data.length)).isEqualTo(data);
            MemoryMap.Region region = a.memoryMap().regions().get(0);
            assertThatThrownBy(() -> sub.free(region.ptr(), region.size()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("belongs to allocator 'pinned'");
            sub.close();
            view.putLong((int) (MIB - 8), 42); // still pinned memory: no crash
            assertThat(view.getLong((int) (MIB - 8))).isEqualTo(42);
            d.memcpyDtoH(0, x.address(), device, 8);
            assertThat(view.get(0)).isEqualTo(data[0]);
            d.memFree(0, device);
        }
    }

    /**
     * Virtual memory an allocator holds: the sub-allocator's own {@code free} of the region is
     * refused, and its {@code close()} leaves the mappings (data copied there survives it) until
     * the allocator gives them back; the reservation goes then.
     */
    /** Spins about a billion clocks, then writes {@link #MARK} into the 8 bytes at its argument. */
    private static final String SPIN_THEN_MARK = FaultingKernelRun.HEADER + String.join("\n",
            ".visible .entry spinThenMark(.param .u64 out)", "{",
            "  .reg .pred %p;", "  .reg .b64 %t0, %t1, %d, %a, %v;",
            FaultingKernelRun.spin(1_000_000_000L),
            "  ld.param.u64 %a, [out];", "  cvta.to.global.u64 %a, %a;",
            "  mov.u64 %v, " + 0x600dcafeL + ";", "  st.global.u64 [%a], %v;",
            "  ret;", "}", "");
    private static final long MARK = 0x600dcafeL;

    /**
     * Loads {@link #SPIN_THEN_MARK} into the current context and launches it on {@code stream}
     * (null: the default stream) with {@code buffer} as its argument.
     *
     * @return the module, to unload once the kernel is done
     */
    private static CUmod_st launchSpinThenMark(CUstream_st stream, long buffer) {
        CUmod_st module = new CUmod_st();
        try (BytePointer image = new BytePointer(SPIN_THEN_MARK)) {
            assertThat(cudart.cuModuleLoadData(module, image)).as("cuModuleLoadData").isZero();
        }
        CUfunc_st function = new CUfunc_st();
        assertThat(cudart.cuModuleGetFunction(function, module, "spinThenMark")).isZero();
        try (LongPointer arg = new LongPointer(1).put(buffer);
                PointerPointer<LongPointer> params = new PointerPointer<LongPointer>(1).put(0, arg)) {
            assertThat(cudart.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params,
                    (PointerPointer<?>) null)).as("cuLaunchKernel").isZero();
        }
        return module;
    }

    /**
     * The point of a stream-ordered free: memory freed behind a kernel that still runs is not
     * handed out again until the kernel is done. A kernel spins (about half a second) and then
     * writes into its buffer; the buffer is freed on the default stream right after the launch.
     * An allocation of the same size meanwhile gets other memory, and the free stays pending;
     * once the device is idle the free completes, the same address comes back, and it holds what
     * the kernel wrote there.
     */
    @Test
    void memoryFreedBehindARunningKernelIsNotReusedUntilTheKernelIsDone() throws InterruptedException {
        CudaDriver d = requireGpu();
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(64 * MIB)
                .environment(Map.<String, String>of()::get).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            long p = a.allocateRaw(256, MIB);
            // The allocator's calls leave device 0's primary context current on this thread.
            CUmod_st module = launchSpinThenMark(null, p);
            a.deallocateRaw(p, 0);
            long during = a.allocateRaw(256, MIB);
            a.pollEvents();
            int pendingDuring = a.pendingFrees();
            assertThat(cudart.cuStreamQuery((CUstream_st) null)).as("the kernel still runs (cuStreamQuery)")
                    .isEqualTo(cudart.CUDA_ERROR_NOT_READY);
            assertThat(during).as("an allocation while the kernel runs").isNotZero().isNotEqualTo(p);
            assertThat(pendingDuring).as("the free waits for the kernel").isEqualTo(1);

            assertThat(cudart.cuCtxSynchronize()).isZero();
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (a.pendingFrees() > 0 && System.nanoTime() < deadline) {
                a.pollEvents();
                Thread.sleep(1);
            }
            assertThat(a.pendingFrees()).isZero();
            long after = a.allocateRaw(256, MIB);
            assertThat(after).as("the freed buffer, once the kernel is done").isEqualTo(p);
            try (BytePointer host = new BytePointer(8)) {
                d.memcpyDtoH(0, host.address(), after, 8);
                assertThat(host.getLong(0)).as("what the kernel wrote before the memory was reused").isEqualTo(MARK);
            }
            a.deallocateRaw(during);
            a.deallocateRaw(after);
            assertThat(cudart.cuModuleUnload(module)).isZero();
        }
    }

    /**
     * {@code emptyCache()} while a kernel on a stream of the caller's still writes into memory
     * freed on that stream: the region stays (giving it back would make the kernel's store fault),
     * and is given back once the kernel is done.
     */
    @Test
    void emptyCacheKeepsTheRegionAKernelStillWritesInto() throws InterruptedException {
        requireGpu();
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(64 * MIB).allowGrowth(true)
                .environment(Map.<String, String>of()::get).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            long p = a.allocateRaw(256, MIB);
            long reserved = a.getStats().poolBytes();
            assertThat(a.allocator().regionCount()).isEqualTo(1);
            CUstream_st stream = new CUstream_st();
            assertThat(cudart.cuStreamCreate(stream, 0)).as("cuStreamCreate").isZero();
            CUmod_st module = launchSpinThenMark(stream, p);
            a.deallocateRaw(p, stream.address());
            assertThat(a.emptyCache()).as("bytes given back while the kernel runs").isZero();
            assertThat(cudart.cuStreamQuery(stream)).as("the kernel still ran during emptyCache (cuStreamQuery)")
                    .isEqualTo(cudart.CUDA_ERROR_NOT_READY);
            assertThat(a.getStats().poolBytes()).isEqualTo(reserved);
            assertThat(a.pendingFrees()).isEqualTo(1);

            assertThat(cudart.cuStreamSynchronize(stream)).as("the kernel ended without a fault").isZero();
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (a.pendingFrees() > 0 && System.nanoTime() < deadline) {
                a.pollEvents();
                Thread.sleep(1);
            }
            assertThat(a.emptyCache()).as("bytes given back once the kernel is done").isEqualTo(reserved);
            assertThat(a.getStats().poolBytes()).isZero();
            assertThat(cudart.cuModuleUnload(module)).isZero();
            assertThat(cudart.cuStreamDestroy(stream)).isZero();
        }
    }

    /**
     * {@code pause(true)} while a kernel on a non-blocking stream (one that the copies of the
     * backup do not wait for) still writes into virtual memory freed on that stream: the pause
     * waits for the kernel before it unmaps anything, so the kernel ends without a fault, and
     * after {@code resume()} the buffer, handed out again, holds what the kernel wrote.
     */
    @Test
    void pauseWaitsForAKernelStillWritingIntoFreedMemory() throws InterruptedException {
        CudaDriver d = requireGpu();
        assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        GpuBfcOptions o = GpuBfcOptions.builder().memoryLimitBytes(64 * MIB).virtualMemory(true)
                .environment(Map.<String, String>of()::get).build();
        try (GpuBfcAllocator a = GpuBfcAllocators.create(0, o)) {
            long p = a.allocateRaw(256, MIB);
            CUstream_st stream = new CUstream_st();
            assertThat(cudart.cuStreamCreate(stream, cudart.CU_STREAM_NON_BLOCKING)).as("cuStreamCreate").isZero();
            CUmod_st module = launchSpinThenMark(stream, p);
            a.deallocateRaw(p, stream.address());
            assertThat(cudart.cuStreamQuery(stream)).as("the kernel runs when pause is called")
                    .isEqualTo(cudart.CUDA_ERROR_NOT_READY);
            a.pause(true);
            assertThat(cudart.cuStreamQuery(stream)).as("the kernel ended, without a fault, before pause returned")
                    .isZero();
            a.resume();
            assertThat(a.pendingFrees()).isZero();
            long again = a.allocateRaw(256, MIB);
            assertThat(again).isEqualTo(p);
            try (BytePointer host = new BytePointer(8)) {
                d.memcpyDtoH(0, host.address(), again, 8);
                assertThat(host.getLong(0)).as("the kernel's write, kept across pause and resume").isEqualTo(MARK);
            }
            a.deallocateRaw(again);
            assertThat(cudart.cuModuleUnload(module)).isZero();
            assertThat(cudart.cuStreamDestroy(stream)).isZero();
        }
    }

    @Test
    void virtualMemoryStaysMappedWhileItsAllocatorHoldsIt() {
        CudaDriver d = requireGpu();
        assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        CudaVirtualMemorySubAllocator sub = new CudaVirtualMemorySubAllocator(0, 256 * MIB);
        BfcAllocator a = BfcAllocator.builder().name("vmm").memoryLimit(256 * MIB).subAllocator(sub).build();
        long p = a.allocateRaw(256, 3 * MIB);
        MemoryMap.Region region = a.memoryMap().regions().get(0);
        assertThatThrownBy(() -> sub.free(region.ptr(), region.size()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("belongs to allocator 'vmm'");
        byte[] data = pattern(Math.toIntExact(3 * MIB), 5);
        upload(d, p, data);
        long freeBefore = d.memGetInfo(0).freeBytes();
        sub.close();
        assertThat(download(d, p, data.length)).as("still mapped after the sub-allocator's close").isEqualTo(data);
        assertThat(d.memGetInfo(0).freeBytes()).isLessThanOrEqualTo(freeBefore);
        a.deallocateRaw(p);
        a.close(); // the mappings go back now, then the reservation
        assertThat(sub.allocatedBytes()).isZero();
        assertThat(d.memGetInfo(0).freeBytes()).isGreaterThan(freeBefore);
    }

    /**
     * A number that is no stream is refused before the driver reads it (the driver would kill
     * the JVM with SIGSEGV), and nothing is freed.
     */
    @Test
    void aNumberThatIsNoStreamIsRefusedNotACrash() {
        requireGpu();
        try (GpuBfcAllocator gpu = GpuBfcAllocators.create(0, GpuBfcOptions.builder().memoryLimitBytes(64 * MIB)
                .build())) {
            long p = gpu.allocateRaw(256, MIB);
            for (long stream : new long[] {0x3039, 0xdeadbeef000L}) {
                assertThatThrownBy(() -> gpu.deallocateRaw(p, stream)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("is not a CUDA stream");
            }
            assertThat(gpu.getStats().bytesInUse()).isEqualTo(MIB);
            gpu.deallocateRaw(p, 0);
            assertThat(gpu.getStats().bytesInUse()).isZero();
        }
    }

    /**
     * {@link GpuHostileCalls} on the device: hostile sizes, addresses and streams, pause and
     * resume at any point. The JVM survives, only documented exceptions, nothing left in use.
     */
    @Test
    void hostileCallsGetDocumentedExceptionsNotACrash(@TempDir Path dir) {
        CudaDriver d = requireGpu();
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        assertThat(GpuHostileCalls.run(vmm -> GpuBfcAllocators.create(0, GpuBfcOptions.builder()
                .memoryLimitBytes(64 * MIB).virtualMemory(vmm).allowRetryOnFailure(false).build()),
                () -> d.deviceInfo(0).virtualMemoryManagement(), seed, 10, dir)).as("seed %d", seed).isEmpty();
    }

    /** bfc-core's sub-allocator contract on the real device. */
    @Nested
    class DeviceContract extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            requireGpu();
            return new CudaDeviceSubAllocator(0);
        }

        @Override
        protected long maxHonouredAlignment() {
            return 256;
        }
    }

    /** bfc-core's sub-allocator contract on the real device, pinned host memory. */
    @Nested
    class HostContract extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            requireGpu();
            return new CudaHostSubAllocator(0);
        }

        @Override
        protected long maxHonouredAlignment() {
            return 256; // cuMemHostAlloc's small blocks are not page-aligned
        }
    }

    /** bfc-core's sub-allocator contract on the real device, virtual memory. */
    @Nested
    class VirtualMemoryContract extends SubAllocatorContractTest {
        @Override
        protected SubAllocator newSubAllocator(long capacityHintBytes) {
            CudaDriver d = requireGpu();
            assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
            long g = d.allocationGranularity(0);
            return new CudaVirtualMemorySubAllocator(0, capacityHintBytes + MAX_LIVE_BLOCKS * g);
        }

        @Override
        protected void close(SubAllocator subAllocator) {
            if (subAllocator != null) { // null when the test was skipped
                ((CudaVirtualMemorySubAllocator) subAllocator).close();
            }
        }
    }
}
