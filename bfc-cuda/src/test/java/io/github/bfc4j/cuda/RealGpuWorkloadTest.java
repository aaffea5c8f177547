/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static io.github.bfc4j.cuda.RealGpuTest.requireGpu;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryHistory;
import io.github.bfc4j.core.TestThreads;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * GPU allocators under a workload on the real device 0 (run with {@code mvn -Pgpu verify};
 * skipped, with the probe's sentence, where no usable GPU is). Every allocation has its first
 * and last 8 bytes written on the device with a value of its own and read back before it is
 * freed, so two answers that overlapped while both were in use would show. Randomised: each
 * test prints its seed ({@code -Dbfc4j.test.seed=N} reruns one).
 */
@Tag("gpu")
class RealGpuWorkloadTest {

    private static final long MIB = 1 << 20;

    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println(test + ": seed " + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        return seed;
    }

    private static GpuBfcOptions.Builder options(long limit) {
        return GpuBfcOptions.builder().memoryLimitBytes(limit).environment(Map.<String, String>of()::get);
    }

    /** A request of 1 byte to 16 MiB, mostly small, as a model's tensors are. */
    private static long size(Random r) {
        return r.nextInt(4) == 0 ? 1 + r.nextInt(Math.toIntExact(16 * MIB)) : 1 + r.nextInt(256 << 10);
    }

    /** Writes {@code tag} into the first and the last 8 bytes of {@code [ptr, ptr + bytes)}. */
    private static void mark(CudaDriver d, BytePointer host, long ptr, long bytes, long tag) {
        host.putLong(0, tag);
        d.memcpyHtoD(0, ptr, host.address(), 8);
        if (bytes >= 16) {
            d.memcpyHtoD(0, ptr + bytes - 8, host.address(), 8);
        }
    }

    /** Reads back what {@link #mark} wrote, or fails naming the allocation. */
    private static void checkMark(CudaDriver d, BytePointer host, long ptr, long bytes, long tag) {
        long[] ends = bytes >= 16 ? new long[] {ptr, ptr + bytes - 8} : new long[] {ptr};
        for (long at : ends) {
            d.memcpyDtoH(0, host.address(), at, 8);
            assertThat(host.getLong(0))
                    .as("the 8 bytes at 0x%x of the allocation of %d bytes at 0x%x", at, bytes, ptr)
                    .isEqualTo(tag);
        }
    }

    /**
     * The same seeded workload on the device and on the simulated driver, both over virtual
     * memory at the device's granularity, under a limit it often reaches (so regions grow, are
     * collected, and are mapped again): every answer lies at the same offset from the first
     * answer, every out-of-memory answer comes at the same call, and the statistics end equal.
     * What the simulated driver stands for in every build is what the device does.
     */
    @Test
    void aWorkloadGetsTheSameAnswersOnTheDeviceAsOnTheSimulatedDriver() {
        CudaDriver d = requireGpu();
        assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        long seed = seed("aWorkloadGetsTheSameAnswersOnTheDeviceAsOnTheSimulatedDriver");
        GpuBfcOptions o = options(256 * MIB).virtualMemory(true).allowRetryOnFailure(false).build();
        SimulatedCudaDriver sim = new SimulatedCudaDriver(1L << 30, d.allocationGranularity(0));
        Random r = new Random(seed);
        int outOfMemory = 0;
        try (GpuBfcAllocator device = GpuBfcAllocators.create(0, o);
                GpuBfcAllocator simulated = GpuBfcAllocators.create(sim, 0, o);
                BytePointer host = new BytePointer(8)) {
            List<long[]> live = new ArrayList<>(); // {device address, simulated address, bytes, tag}
            List<Long> failedRequests = new ArrayList<>();
            device.addOutOfMemoryListener(report -> failedRequests.add(report.requestedBytes()));
            long deviceFirst = 0;
            long simulatedFirst = 0;
            for (int step = 0; step < 20_000; step++) {
                if (!live.isEmpty() && (r.nextInt(3) == 0 || live.size() >= 200)) {
                    long[] a = live.remove(r.nextInt(live.size()));
                    checkMark(d, host, a[0], a[2], a[3]);
                    device.deallocateRaw(a[0]);
                    simulated.deallocateRaw(a[1]);
                    continue;
                }
                long bytes = size(r);
                long p = device.allocateRaw(256, bytes);
                long q = simulated.allocateRaw(256, bytes);
                if (deviceFirst == 0 && p != 0 && q != 0) {
                    deviceFirst = p;
                    simulatedFirst = q;
                }
                assertThat(p == 0 ? -1 : p - deviceFirst)
                        .as("step %d: %d bytes, offset on the device against the simulated driver (seed %d)",
                                step, bytes, seed)
                        .isEqualTo(q == 0 ? -1 : q - simulatedFirst);
                if (p == 0) {
                    outOfMemory++;
                    assertThat(failedRequests).as("the listener told of the failure").endsWith(bytes);
                    continue;
                }
                long tag = seed ^ ((long) step << 32);
                mark(d, host, p, bytes, tag);
                live.add(new long[] {p, q, bytes, tag});
            }
            for (long[] a : live) {
                checkMark(d, host, a[0], a[2], a[3]);
                device.deallocateRaw(a[0]);
                simulated.deallocateRaw(a[1]);
            }
            assertThat(device.getStats()).isEqualTo(simulated.getStats());
            assertThat(device.getStats().bytesInUse()).isZero();
            assertThat(failedRequests).hasSize(outOfMemory);
        }
        assertThat(outOfMemory).as("out-of-memory answers: the workload must reach the limit").isPositive();
    }

    /**
     * Four threads allocate, write, read back and free on one allocator on the device, half of
     * the frees on the default stream: no two threads are ever handed overlapping memory, every
     * thread's bytes are its own until it frees them, and everything is given back.
     */
    @ParameterizedTest(name = "virtualMemory={0}")
    @ValueSource(booleans = {false, true})
    void threadsShareOneAllocatorOnTheDevice(boolean virtualMemory) throws InterruptedException {
        CudaDriver d = requireGpu();
        if (virtualMemory) {
            assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        }
        long seed = seed("threadsShareOneAllocatorOnTheDevice(" + virtualMemory + ")");
        int threads = 4;
        TreeMap<Long, Long> inUse = new TreeMap<>(); // start to end of every live answer, all threads
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        try (GpuBfcAllocator gpu = GpuBfcAllocators.create(0, options(512 * MIB).virtualMemory(virtualMemory).build())) {
            gpu.recordHistory(HistoryOptions.builder().stacks(false).build());
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Random r = new Random(seed + t);
                long thread = t;
                workers.add(new Thread(() -> {
                    try (BytePointer host = new BytePointer(8)) {
                        start.await();
                        List<long[]> live = new ArrayList<>(); // {address, bytes, tag}
                        for (int i = 0; i < 10_000; i++) {
                            if (live.size() >= 8 || (!live.isEmpty() && r.nextBoolean())) {
                                long[] a = live.remove(r.nextInt(live.size()));
                                checkMark(d, host, a[0], a[1], a[2]);
                                synchronized (inUse) {
                                    inUse.remove(a[0]);
                                }
                                if (r.nextBoolean()) {
                                    gpu.deallocateRaw(a[0], 0); // the default stream
                                } else {
                                    gpu.deallocateRaw(a[0]);
                                }
                                continue;
                            }
                            long bytes = 1 + r.nextInt(Math.toIntExact(4 * MIB));
                            long p = gpu.allocateRaw(256, bytes);
                            assertThat(p).as("allocation of %d bytes (seed %d)", bytes, seed).isNotZero();
                            synchronized (inUse) {
                                Map.Entry<Long, Long> below = inUse.floorEntry(p);
                                Map.Entry<Long, Long> above = inUse.ceilingEntry(p);
                                assertThat(below == null || below.getValue() <= p)
                                        .as("0x%x (%d bytes) overlaps a live answer below it (seed %d)", p, bytes, seed)
                                        .isTrue();
                                assertThat(above == null || above.getKey() >= p + bytes)
                                        .as("0x%x (%d bytes) overlaps a live answer above it (seed %d)", p, bytes, seed)
                                        .isTrue();
                                inUse.put(p, p + bytes);
                            }
                            long tag = (thread << 56) ^ ((long) i << 24) ^ seed;
                            mark(d, host, p, bytes, tag);
                            live.add(new long[] {p, bytes, tag});
                        }
                        for (long[] a : live) {
                            checkMark(d, host, a[0], a[1], a[2]);
                            synchronized (inUse) {
                                inUse.remove(a[0]);
                            }
                            gpu.deallocateRaw(a[0]);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "gpu-worker-" + t));
            }
            for (Thread w : workers) {
                w.setDaemon(true); // one that hangs must not keep the test JVM alive
                w.start();
            }
            start.countDown();
            TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, workers.toArray(new Thread[0]));
            if (failure.get() != null) {
                throw new AssertionError("a worker failed (seed " + seed + ")", failure.get());
            }
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (gpu.pendingFrees() > 0 && System.nanoTime() < deadline) {
                gpu.pollEvents();
                Thread.sleep(1);
            }
            assertThat(gpu.pendingFrees()).isZero();
            assertThat(gpu.getStats().bytesInUse()).isZero();
            assertThat(gpu.getStats().numAllocs()).isGreaterThan(threads * 4000L);
            MemoryHistory history = gpu.snapshot().history();
            assertThat(history.droppedEvents()).isZero();
            assertThat(history.events().stream().filter(e -> e.kind() == MemoryEvent.Kind.ALLOC).count())
                    .as("every allocation recorded").isEqualTo(gpu.getStats().numAllocs());
            assertThat(history.events().stream().map(e -> e.provenance().thread()))
                    .as("each worker's calls recorded under its name")
                    .contains("gpu-worker-0", "gpu-worker-1", "gpu-worker-2", "gpu-worker-3");
        }
    }

    /**
     * {@code close()} on one thread while four others allocate and free on streams (the
     * default, the legacy and the per-thread one) as fast as they can, 30 times: every worker
     * ends on the allocator's "is closed" refusal, never on a driver error or a crash, and every
     * close gives the device its memory back, a region of 1 GiB included. (The window in which
     * a close could release the context under a free's {@code eventRecord} is too narrow to
     * hit here; {@code GpuBfcAllocatorTest} holds it open on the simulated driver.)
     */
    @ParameterizedTest(name = "virtualMemory={0}")
    @ValueSource(booleans = {false, true})
    void aCloseWhileThreadsFreeOnStreamsEndsEveryThreadOnTheClosedRefusal(boolean virtualMemory)
            throws InterruptedException {
        CudaDriver d = requireGpu();
        if (virtualMemory) {
            assumeTrue(d.deviceInfo(0).virtualMemoryManagement(), "skipped: GPU 0 has no virtual memory management");
        }
        long seed = seed("aCloseWhileThreadsFreeOnStreamsEndsEveryThreadOnTheClosedRefusal(" + virtualMemory + ")");
        Random r = new Random(seed);
        long[] streams = {0, 1, 2}; // the default stream, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
        int threads = 4;
        long freeBefore = d.memGetInfo(0).freeBytes();
        for (int round = 0; round < 30; round++) {
            GpuBfcAllocator gpu = GpuBfcAllocators.create(0,
                    options(2L << 30).virtualMemory(virtualMemory).allowRetryOnFailure(false).build());
            long big = gpu.allocateRaw(256, 1L << 30); // a region the close must give back
            assertThat(big).as("1 GiB on the device (seed %d)", seed).isNotZero();
            gpu.deallocateRaw(big, 0);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CountDownLatch running = new CountDownLatch(threads);
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Random tr = new Random(seed + round * threads + t);
                workers.add(new Thread(() -> {
                    int calls = 0;
                    try {
                        while (true) {
                            long p = gpu.allocateRaw(256, 1 + tr.nextInt(Math.toIntExact(4 * MIB)), false);
                            if (p != 0) {
                                gpu.deallocateRaw(p, streams[tr.nextInt(streams.length)]);
                            }
                            if (++calls == 100) {
                                running.countDown();
                            }
                        }
                    } catch (IllegalStateException e) {
                        if (calls < 100 || !String.valueOf(e.getMessage()).contains("is closed")) {
                            failure.compareAndSet(null, e);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    } finally {
                        if (calls < 100) {
                            running.countDown();
                        }
                    }
                }, "gpu-closing-" + t));
            }
            for (Thread w : workers) {
                w.setDaemon(true); // one that hangs must not keep the test JVM alive
                w.start();
            }
            running.await();
            LockSupport.parkNanos(r.nextInt(2_000_000));
            gpu.close();
            TestThreads.joinOrFail(seed, TestThreads.RUN_LIMIT, workers.toArray(new Thread[0]));
            if (failure.get() != null) {
                throw new AssertionError("round " + round + ": a worker did not end on \"is closed\" (seed "
                        + seed + ")", failure.get());
            }
            assertThat(d.memGetInfo(0).freeBytes())
                    .as("round %d: device memory free after close(), against %d bytes before the first (seed %d)",
                            round, freeBefore, seed)
                    .isGreaterThan(freeBefore - 256 * MIB);
        }
        try (GpuBfcAllocator after = GpuBfcAllocators.create(0, options(256 * MIB).virtualMemory(virtualMemory).build());
                BytePointer host = new BytePointer(8)) {
            long p = after.allocateRaw(256, MIB);
            mark(d, host, p, MIB, seed);
            checkMark(d, host, p, MIB, seed);
            after.deallocateRaw(p, 0);
        }
    }
}
