/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.OutOfMemoryReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who holds the device's memory, through {@link GpuBfcAllocator}, against the simulated driver.
 * (Its name does not start with {@code GpuBfc}: a recorded stack leaves out bfc4j's classes named
 * so, and would leave out this test's frames too.)
 */
class GpuProvenanceTest {

    private static final long MIB = 1 << 20;
    private static final long STREAM = SimulatedCudaDriver.STREAM;

    private final SimulatedCudaDriver driver = new SimulatedCudaDriver(64 * MIB, 64 << 10);

    private GpuBfcAllocator create(long limit) {
        return GpuBfcAllocators.create(driver, 0, GpuBfcOptions.builder().memoryLimitBytes(limit)
                .allowRetryOnFailure(false).eventPollIntervalMicros(0).environment(Map.<String, String>of()::get)
                .build());
    }

    @Test
    void theHistoryNamesTheCallerItsThreadAndItsAnnotation() {
        try (GpuBfcAllocator gpu = create(16 * MIB)) {
            gpu.recordHistory(HistoryOptions.defaults());
            gpu.recordAnnotations(true);
            long p;
            try (MemoryAnnotation layer = MemoryAnnotation.push("encoder/layer3", 12)) {
                p = gpu.allocateRaw(256, 3 * MIB);
            }
            MemoryMap.Chunk held = gpu.snapshot().memoryMap().regions().get(0).chunks().get(0);
            assertThat(held.ptr()).isEqualTo(p);
            assertThat(held.provenance().annotation()).isEqualTo("encoder/layer3");

            gpu.deallocateRaw(p, STREAM); // recorded when made, while its event is pending
            List<MemoryEvent> events = gpu.snapshot().history().events();
            assertThat(events).extracting(MemoryEvent::kind).containsExactly(MemoryEvent.Kind.REGION_ALLOC,
                    MemoryEvent.Kind.ALLOC, MemoryEvent.Kind.FREE);
            MemoryEvent alloc = events.get(1);
            assertThat(alloc.address()).isEqualTo(p);
            assertThat(alloc.requestedBytes()).isEqualTo(3 * MIB);
            assertThat(alloc.provenance().thread()).isEqualTo(Thread.currentThread().getName());
            assertThat(alloc.provenance().annotation()).isEqualTo("encoder/layer3");
            assertThat(alloc.provenance().step()).isEqualTo(12);
            assertThat(alloc.provenance().stack().get(0).className())
                    .as("the stack starts at the caller: GpuBfcAllocator's own frames are left out")
                    .isEqualTo(getClass().getName());
            assertThat(gpu.pendingFrees()).isEqualTo(1);

            gpu.stopHistory();
            driver.completeAllEvents();
            gpu.deallocateRaw(gpu.allocateRaw(256, MIB));
            assertThat(gpu.snapshot().history().events()).as("nothing recorded once stopped").hasSize(3);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void aSnapshotIsWrittenForPyTorchsMemoryVizAsItsDevices(@TempDir Path dir) throws IOException {
        SimulatedCudaDriver twoGpus = new SimulatedCudaDriver(List.of(
                new CudaDeviceInfo(0, "Simulated GPU", 64 * MIB, 9, 0, true),
                new CudaDeviceInfo(1, "Simulated GPU", 64 * MIB, 9, 0, true)), 64 << 10);
        try (GpuBfcAllocator gpu = GpuBfcAllocators.create(twoGpus, 1, GpuBfcOptions.builder()
                .memoryLimitBytes(16 * MIB).eventPollIntervalMicros(0).environment(Map.<String, String>of()::get)
                .build())) {
            gpu.recordHistory(HistoryOptions.builder().stackDepth(4).build());
            long p = gpu.allocateRaw(256, 3 * MIB);
            Path file = dir.resolve("snapshot.pickle");
            gpu.writePyTorchPickle(file);
            Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(Files.readAllBytes(file));
            List<Map<String, Object>> segments = (List<Map<String, Object>>) d.get("segments");
            assertThat(segments).hasSize(1);
            assertThat(((Number) segments.get(0).get("device")).intValue()).isEqualTo(1);
            List<Map<String, Object>> blocks = (List<Map<String, Object>>) segments.get(0).get("blocks");
            assertThat(blocks.get(0).get("state")).isEqualTo("active_allocated");
            List<List<Map<String, Object>>> traces = (List<List<Map<String, Object>>>) d.get("device_traces");
            assertThat(traces).hasSize(2);
            assertThat(traces.get(0)).as("device 0 has no history here").isEmpty();
            assertThat(traces.get(1)).extracting(t -> t.get("action")).contains("segment_alloc", "alloc");
            gpu.deallocateRaw(p);
        }
    }

    /**
     * Every PyTorch snapshot of a device-1 allocator says device 1: the out-of-memory dump's
     * {@code .pickle} ({@code -Dbfc4j.dumpOnOom}), a listener's report written as it is, and the
     * allocator's {@link GpuBfcAllocator#snapshot()} written without naming a device. Only
     * {@link GpuBfcAllocator#writePyTorchPickle(Path)} said so: the others said device 0, whose
     * memory this is not.
     */
    @Test
    @SuppressWarnings("unchecked")
    void everySnapshotOfADevice1AllocatorSaysDevice1(@TempDir Path dir) throws IOException {
        SimulatedCudaDriver twoGpus = new SimulatedCudaDriver(List.of(
                new CudaDeviceInfo(0, "Simulated GPU", 64 * MIB, 9, 0, true),
                new CudaDeviceInfo(1, "Simulated GPU", 64 * MIB, 9, 0, true)), 64 << 10);
        Path dumps = dir.resolve("dumps");
        String old = System.getProperty("bfc4j.dumpOnOom");
        GpuBfcAllocator created;
        System.setProperty("bfc4j.dumpOnOom", dumps.toString());
        try {
            created = GpuBfcAllocators.create(twoGpus, 1, GpuBfcOptions.builder().memoryLimitBytes(4 * MIB)
                    .allowRetryOnFailure(false).eventPollIntervalMicros(0)
                    .environment(Map.<String, String>of()::get).build());
        } finally {
            if (old == null) {
                System.clearProperty("bfc4j.dumpOnOom");
            } else {
                System.setProperty("bfc4j.dumpOnOom", old);
            }
        }
        try (GpuBfcAllocator gpu = created) {
            gpu.recordHistory(HistoryOptions.builder().stackDepth(4).build());
            List<OutOfMemoryReport> reports = new ArrayList<>();
            gpu.addOutOfMemoryListener(reports::add);
            long p = gpu.allocateRaw(256, MIB);
            assertThat(gpu.allocateRaw(256, 8 * MIB)).isZero();
            Path dumped;
            try (var files = Files.list(dumps)) {
                dumped = files.filter(f -> f.toString().endsWith(".pickle")).findFirst().orElseThrow();
            }
            Path reported = dir.resolve("report.pickle");
            try (var out = Files.newOutputStream(reported)) {
                reports.get(0).snapshot().writePyTorchPickle(out);
            }
            Path snapshot = dir.resolve("snapshot.pickle");
            gpu.snapshot().writePyTorchPickle(snapshot);
            for (Path file : List.of(dumped, reported, snapshot)) {
                Map<String, Object> d = (Map<String, Object>) new Unpickler().loads(Files.readAllBytes(file));
                List<Map<String, Object>> segments = (List<Map<String, Object>>) d.get("segments");
                assertThat(segments).as(file.getFileName().toString()).hasSize(1);
                assertThat(((Number) segments.get(0).get("device")).intValue())
                        .as(file.getFileName() + ": its segment's device").isEqualTo(1);
                List<List<Map<String, Object>>> traces = (List<List<Map<String, Object>>>) d.get("device_traces");
                assertThat(traces).as(file.getFileName() + ": device_traces").hasSize(2);
                assertThat(traces.get(0)).as(file.getFileName() + ": device 0 has no history here").isEmpty();
                assertThat(traces.get(1)).as(file.getFileName() + ": device 1's history")
                        .extracting(t -> t.get("action")).contains("segment_alloc", "alloc", "oom");
            }
            gpu.deallocateRaw(p);
        }
    }

    /**
     * A device-1 allocator, and one over pinned host memory that device 1's context allocates,
     * say device 1 ({@code deviceId()}, which the meters of bfc-micrometer tag by default), as
     * their snapshots do; the pinned one's memory type says it is host memory.
     */
    @Test
    void theAllocatorsOfDevice1SayDevice1() {
        SimulatedCudaDriver twoGpus = new SimulatedCudaDriver(List.of(
                new CudaDeviceInfo(0, "Simulated GPU", 64 * MIB, 9, 0, true),
                new CudaDeviceInfo(1, "Simulated GPU", 64 * MIB, 9, 0, true)), 64 << 10);
        try (GpuBfcAllocator gpu = GpuBfcAllocators.create(twoGpus, 1, GpuBfcOptions.builder()
                .memoryLimitBytes(4 * MIB).environment(Map.<String, String>of()::get).build());
                CudaHostSubAllocator pinnedMemory = new CudaHostSubAllocator(twoGpus, 1);
                BfcAllocator pinned = new BfcAllocator(pinnedMemory, 4 * MIB, "gpu_host_bfc", BfcOptions.defaults())) {
            assertThat(gpu.allocator().deviceId()).isEqualTo(1);
            assertThat(gpu.snapshot().deviceId()).isEqualTo(1);
            assertThat(pinned.deviceId()).isEqualTo(1);
            assertThat(pinned.snapshot().deviceId()).isEqualTo(1);
            assertThat(pinned.getMemoryType()).isEqualTo(MemoryType.HOST_PINNED);
        }
    }

    @Test
    void anOutOfMemoryListenerHearsOfEachFailureUntilRemoved() {
        try (GpuBfcAllocator gpu = create(4 * MIB)) {
            List<OutOfMemoryReport> reports = new ArrayList<>();
            io.github.bfc4j.core.OutOfMemoryListener listener = reports::add;
            gpu.addOutOfMemoryListener(listener);
            assertThat(gpu.allocateRaw(256, 8 * MIB)).isZero();
            assertThat(reports).hasSize(1);
            assertThat(reports.get(0).allocatorName()).isEqualTo("GPU_0_bfc");
            assertThat(reports.get(0).requestedBytes()).isEqualTo(8 * MIB);
            assertThat(gpu.removeOutOfMemoryListener(listener)).isTrue();
            assertThat(gpu.allocateRaw(256, 8 * MIB)).isZero();
            assertThat(reports).hasSize(1);
            assertThat(gpu.removeOutOfMemoryListener(listener)).as("removed already").isFalse();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> gpu.removeOutOfMemoryListener(null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("listener=null (expected: ");
        }
    }
}
