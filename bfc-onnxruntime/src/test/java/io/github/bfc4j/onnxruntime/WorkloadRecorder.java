package io.github.bfc4j.onnxruntime;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Records what ORT asks of a {@link BfcOrtAllocator} as a workload trace
 * ({@code docs/trace-format.md}): an {@code alloc} line per allocation served (ids in the order
 * served), a {@code free} line per free, written in the order the callbacks reach this recorder
 * (one lock), so a free always follows its allocation. A failed allocation is written as a
 * comment: ORT never frees it. The header takes the allocator's memory limit and options, and a
 * simulated space like the recorded TensorFlow traces' (base {@code 0x100000000}, gap 4096, no
 * coalescing: host regions never merge).
 */
final class WorkloadRecorder implements BfcOrtAllocator.CallListener, AutoCloseable {

    private static final long SIM_BASE = 0x100000000L;
    private static final long SIM_GAP = 4096;

    private final TraceWriter writer;
    private final Map<Long, Long> idByAddress = new HashMap<>();
    private long nextId = 1;
    private long allocs;
    private long frees;
    private IOException failure;

    /**
     * Starts a trace file (gzip if its name ends with {@code .gz}) and writes its header.
     *
     * @param path        the file
     * @param bfc         the allocator ORT is on (its limit and options go in the header)
     * @param name        the trace's {@code name}
     * @param source      what was run, for the {@code source} line (after {@code workload: })
     */
    WorkloadRecorder(Path path, BfcAllocator bfc, String name, String source) throws IOException {
        writer = TraceWriter.create(path);
        long limit = bfc.memoryLimit();
        writer.header(new TraceHeader(name, TraceHeader.WORKLOAD_SOURCE_PREFIX + " " + source, limit,
                bfc.options().allowGrowth(), bfc.options().garbageCollection(), bfc.options().fragmentationFraction(), false, SIM_BASE, limit + 4096 * SIM_GAP, SIM_GAP, false));
    }

    /** Writes a comment line now, e.g. to mark where a phase of the workload starts. */
    synchronized void comment(String text) {
        try {
            writer.comment(text);
        } catch (IOException e) {
            failure = e;
        }
    }

    @Override
    public synchronized void allocated(long size, long ptr, boolean reserve) {
        try {
            if (ptr == 0) {
                writer.comment((reserve ? "Reserve(" : "Alloc(") + size + ") failed: out of memory");
                return;
            }
            long id = nextId++;
            idByAddress.put(ptr, id);
            writer.workloadAlloc(id, size, BfcOrtAllocator.ALIGNMENT, 0);
            allocs++;
        } catch (IOException e) {
            failure = e;
        }
    }

    @Override
    public synchronized void freed(long ptr) {
        Long id = idByAddress.remove(ptr);
        if (id == null) {
            return;   // allocated before recording started
        }
        try {
            writer.free(id);
            frees++;
        } catch (IOException e) {
            failure = e;
        }
    }

    /** Allocations written so far. */
    synchronized long allocs() {
        return allocs;
    }

    /** Frees written so far. */
    synchronized long frees() {
        return frees;
    }

    /**
     * Finishes the file.
     *
     * @throws UncheckedIOException if a line could not be written
     */
    @Override
    public synchronized void close() {
        try {
            writer.close();
        } catch (IOException e) {
            if (failure == null) {
                failure = e;
            }
        }
        if (failure != null) {
            throw new UncheckedIOException("could not write the trace", failure);
        }
    }
}
