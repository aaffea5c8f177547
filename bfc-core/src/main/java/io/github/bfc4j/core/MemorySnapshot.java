/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Everything an allocator knows about its memory at one moment, taken under its lock by
 * {@link BfcAllocator#snapshot()}: every region and chunk (with each live chunk's provenance,
 * when recorded), the statistics, and the recorded history. Immutable.
 *
 * <p>It can be written as PyTorch's memory snapshot ({@link #writePyTorchPickle(OutputStream)},
 * for pytorch.org/memory_viz) and, when its history is complete, as a replayable workload
 * trace ({@code io.github.bfc4j.trace.SnapshotTraces}). docs/observability.md maps every field.
 *
 * <p>A snapshot of a shard of a {@link ShardedBfcAllocator} ({@link ShardedBfcAllocator#snapshots()},
 * or a shard's own {@link BfcAllocator#snapshot()}) names both, as {@link OutOfMemoryReport}
 * does: its memory map's {@link MemoryMap#allocatorName()} is the shard's own name
 * ({@code NAME/I}), and {@link #shardedAllocatorName()}, {@link #shardIndex()} and
 * {@link #shardCount()} say which allocator, by the name its user gave, and which shard of it.
 *
 * @param timeMicros when it was taken (epoch microseconds)
 * @param memoryMap the regions, chunks, bins and statistics
 * @param options the allocator's options
 * @param coalescingRegions whether the sub-allocator merges adjacent regions
 *     ({@link SubAllocator#supportsCoalescing()})
 * @param timingCounterUsed whether the allocator was ever given a timing counter
 * @param history the recorded history ({@link MemoryHistory#NONE} if never recorded)
 * @param shardedAllocatorName for a shard of a {@link ShardedBfcAllocator}, the sharded
 *     allocator's name (the one given to its builder); null for an allocator of its own
 * @param shardIndex for a shard, its index ({@code 0} to {@code shardCount - 1}); -1 for an
 *     allocator of its own
 * @param shardCount for a shard, how many shards the sharded allocator has; 0 for an allocator
 *     of its own
 * @param deviceId the device whose memory it is, by its CUDA ordinal (the sub-allocator's
 *     {@link SubAllocator#deviceId()}, 0 for host or simulated memory): the device that
 *     {@link #writePyTorchPickle(OutputStream)} writes it as
 */
public record MemorySnapshot(long timeMicros, MemoryMap memoryMap, BfcOptions options, boolean coalescingRegions,
        boolean timingCounterUsed, MemoryHistory history, String shardedAllocatorName, int shardIndex,
        int shardCount, int deviceId) {

    /**
     * Checks the snapshot.
     *
     * @throws NullPointerException if {@code memoryMap}, {@code options} or {@code history} is
     *     null
     * @throws IllegalArgumentException if the shard's figures do not fit together (with
     *     {@code shardedAllocatorName} null, {@code shardIndex} must be -1 and {@code shardCount}
     *     0; with a name, {@code shardIndex} must lie in {@code 0 .. shardCount - 1}), or if
     *     {@code deviceId} is outside 0 to 1023
     */
    public MemorySnapshot {
        Objects.requireNonNull(memoryMap, "memoryMap=null (expected: a MemoryMap, e.g. allocator.memoryMap())");
        Objects.requireNonNull(options, "options=null (expected: the allocator's BfcOptions)");
        Objects.requireNonNull(history, "history=null (expected: a MemoryHistory, e.g. another snapshot's history())");
        ShardNames.check(shardedAllocatorName, shardIndex, shardCount);
        PyTorchSnapshotWriter.checkDevice(deviceId);
    }

    /**
     * The snapshot of memory of device 0 (host or simulated memory, or the first GPU).
     *
     * @param timeMicros when it was taken (epoch microseconds)
     * @param memoryMap the regions, chunks, bins and statistics
     * @param options the allocator's options
     * @param coalescingRegions whether the sub-allocator merges adjacent regions
     * @param timingCounterUsed whether the allocator was ever given a timing counter
     * @param history the recorded history ({@link MemoryHistory#NONE} if never recorded)
     * @param shardedAllocatorName for a shard, the sharded allocator's name; else null
     * @param shardIndex for a shard, its index; else -1
     * @param shardCount for a shard, the number of shards; else 0
     * @throws NullPointerException if {@code memoryMap}, {@code options} or {@code history} is
     *     null
     * @throws IllegalArgumentException if the shard's figures do not fit together
     */
    public MemorySnapshot(long timeMicros, MemoryMap memoryMap, BfcOptions options, boolean coalescingRegions,
            boolean timingCounterUsed, MemoryHistory history, String shardedAllocatorName, int shardIndex,
            int shardCount) {
        this(timeMicros, memoryMap, options, coalescingRegions, timingCounterUsed, history, shardedAllocatorName,
                shardIndex, shardCount, 0);
    }

    /**
     * The snapshot of an allocator of its own, not a shard, of memory of device 0:
     * {@code shardedAllocatorName} null, {@code shardIndex} -1, {@code shardCount} 0 and
     * {@code deviceId} 0.
     *
     * @param timeMicros when it was taken (epoch microseconds)
     * @param memoryMap the regions, chunks, bins and statistics
     * @param options the allocator's options
     * @param coalescingRegions whether the sub-allocator merges adjacent regions
     * @param timingCounterUsed whether the allocator was ever given a timing counter
     * @param history the recorded history ({@link MemoryHistory#NONE} if never recorded)
     * @throws NullPointerException if an object is null
     */
    public MemorySnapshot(long timeMicros, MemoryMap memoryMap, BfcOptions options, boolean coalescingRegions,
            boolean timingCounterUsed, MemoryHistory history) {
        this(timeMicros, memoryMap, options, coalescingRegions, timingCounterUsed, history, null, -1, 0, 0);
    }

    /**
     * Whose snapshot it is, as the allocator's messages name it: {@code 'NAME'} (the memory
     * map's {@link MemoryMap#allocatorName()}), or for a shard of a {@link ShardedBfcAllocator}
     * {@code 'SHARDED' (shard I of N)}, by the name given to the sharded allocator's builder.
     *
     * @return the allocator, named for a message
     */
    public String describedAllocator() {
        return ShardNames.described(memoryMap.allocatorName(), shardedAllocatorName, shardIndex, shardCount);
    }

    /**
     * Writes PyTorch's memory snapshot (the dictionary of {@code torch.cuda.memory._snapshot()},
     * pickled as {@code torch.cuda.memory._dump_snapshot()} does) as the memory of its device,
     * {@link #deviceId()} ({@link #writePyTorchPickle(OutputStream, int)}): regions as segments,
     * chunks as blocks, the history as {@code device_traces[deviceId]}. Drag the file onto
     * pytorch.org/memory_viz. The history is written only if it was still recording when the
     * snapshot was taken ({@link MemoryHistory#recording()}): as PyTorch clears its trace when
     * recording stops, a stopped one is left out (it says nothing of what the allocator did
     * since, so the viewer, replaying it from the segments of the snapshot, would find blocks in
     * no segment); {@link #history()} still has it.
     *
     * @param out where the pickle goes (not closed)
     * @throws NullPointerException if {@code out} is null
     * @throws IOException if writing fails
     */
    public void writePyTorchPickle(OutputStream out) throws IOException {
        writePyTorchPickle(out, deviceId);
    }

    /**
     * Writes PyTorch's memory snapshot as the memory of CUDA device {@code device}, whatever
     * {@link #deviceId()} says: its segments say that device, and the history is
     * {@code device_traces[device]} (the lists before it empty, as PyTorch writes devices
     * without a history).
     *
     * @param out where the pickle goes (not closed)
     * @param device the device's ordinal, as PyTorch numbers it, 0 to 1023
     * @throws IllegalArgumentException if {@code device} is outside that range
     * @throws NullPointerException if {@code out} is null
     * @throws IOException if writing fails
     */
    public void writePyTorchPickle(OutputStream out, int device) throws IOException {
        PyTorchSnapshotWriter.write(this, device, out);
    }

    /**
     * Writes PyTorch's memory snapshot, as the memory of its device ({@link #deviceId()}), to a
     * file (created or replaced; written to a temporary file beside it and moved over it once
     * complete, so a failure leaves the file as it was; a symbolic link is followed, and a
     * device or named pipe, {@code /dev/null}, written to; a file replaced keeps its POSIX
     * permissions, and other hard links to it keep the old content).
     *
     * @param file the file, e.g. {@code snapshot.pickle}
     * @throws NullPointerException if {@code file} is null
     * @throws IOException if the file cannot be written (it is left as it was), among them a
     *     {@link java.nio.file.AccessDeniedException} if it exists and may not be written
     *     (read-only)
     */
    public void writePyTorchPickle(Path file) throws IOException {
        writePyTorchPickle(file, deviceId);
    }

    /**
     * Writes PyTorch's memory snapshot as the memory of CUDA device {@code device} to a file
     * (created or replaced); see {@link #writePyTorchPickle(OutputStream, int)}.
     *
     * @param file the file, e.g. {@code snapshot.pickle}
     * @param device the device's ordinal, as PyTorch numbers it, 0 to 1023
     * @throws IllegalArgumentException if {@code device} is outside that range (the file is not
     *     touched)
     * @throws NullPointerException if {@code file} is null
     * @throws IOException if the file cannot be written (it is left as it was), among them a
     *     {@link java.nio.file.AccessDeniedException} if it exists and may not be written
     *     (read-only)
     */
    public void writePyTorchPickle(Path file, int device) throws IOException {
        PyTorchSnapshotWriter.checkDevice(device);
        PyTorchSnapshotWriter.toFile(file, out -> writePyTorchPickle(out, device));
    }
}
