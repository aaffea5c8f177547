/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static io.github.bfc4j.core.BfcAllocator.humanReadableNumBytes;

/**
 * Thrown by {@link BfcAllocator#allocate(long)} when the memory cannot be had. The message reads
 * like PyTorch's: what was asked, what is in use, what is reserved, the limit, the largest free
 * chunk, and a hint when one applies. The same figures are fields, read under the allocator's
 * lock at the moment of failure; a {@link ShardedBfcAllocator}'s are those of all its shards,
 * read just after the failing shard failed, when other threads may have freed memory (the hint
 * then says so where a free chunk has become large enough). When out-of-memory dumps are on
 * ({@link BfcOptions#dumpOnOomDirectory()}), the message ends by naming the dump's files.
 *
 * <p>The exception of a shard of a {@link ShardedBfcAllocator} (the cause of the sharded
 * allocator's own exception, or thrown by a shard called directly) names both, as
 * {@link OutOfMemoryReport} does: the sharded allocator, by the name its user gave
 * ({@link #shardedAllocatorName()}), and the shard that failed ({@link #shardIndex()} of
 * {@link #shardCount()}); {@link #allocatorName()} is the shard's own name ({@code NAME/I}).
 * The sharded allocator's own exception is of no shard: its {@link #allocatorName()} is the
 * name its user gave.
 */
public final class BfcOutOfMemoryException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String allocatorName;
    private final String shardedAllocatorName;
    private final int shardIndex;
    private final int shardCount;
    private final long requestedBytes;
    private final long roundedBytes;
    private final long bytesInUse;
    private final long reservedBytes;
    private final int regionCount;
    private final long memoryLimit;
    private final long largestFreeChunkBytes;
    private final AllocatorStats stats;
    private final String dumpFile;
    private final String dumpNote;

    BfcOutOfMemoryException(String allocatorName, long requestedBytes, long roundedBytes,
            long bytesInUse, long reservedBytes, int regionCount, long memoryLimit,
            long largestFreeChunkBytes, AllocatorStats stats) {
        this(allocatorName, requestedBytes, roundedBytes, bytesInUse, reservedBytes, regionCount,
                memoryLimit, largestFreeChunkBytes, stats, "", "", null);
    }

    /**
     * @param holders {@code ""}, or the sentence (starting with a space) naming the largest
     *     holders of memory (when provenance is recorded); appended to the message
     * @param dumpNote {@code ""}, or sentences (each starting with a space) naming the dump file
     *     or saying why it could not be written; appended after the holders
     * @param dumpFile the dump file's absolute path, or null
     */
    BfcOutOfMemoryException(String allocatorName, long requestedBytes, long roundedBytes,
            long bytesInUse, long reservedBytes, int regionCount, long memoryLimit,
            long largestFreeChunkBytes, AllocatorStats stats, String holders, String dumpNote,
            String dumpFile) {
        this(allocatorName, null, -1, 0, requestedBytes, roundedBytes, bytesInUse, reservedBytes,
                regionCount, memoryLimit, largestFreeChunkBytes, stats, holders, dumpNote, dumpFile, false);
    }

    /**
     * As above, for a shard of a {@link ShardedBfcAllocator} too: the message names it (after
     * the word "Allocator") as {@code 'SHARDED' (shard I of N)}.
     *
     * @param shardedAllocatorName for a shard, the sharded allocator's name; null for an
     *     allocator of its own
     * @param shardIndex for a shard, its index; -1 otherwise
     * @param shardCount for a shard, the number of shards; 0 otherwise
     */
    BfcOutOfMemoryException(String allocatorName, String shardedAllocatorName, int shardIndex, int shardCount,
            long requestedBytes, long roundedBytes, long bytesInUse, long reservedBytes, int regionCount,
            long memoryLimit, long largestFreeChunkBytes, AllocatorStats stats, String holders, String dumpNote,
            String dumpFile) {
        this(allocatorName, shardedAllocatorName, shardIndex, shardCount, requestedBytes, roundedBytes, bytesInUse,
                reservedBytes, regionCount, memoryLimit, largestFreeChunkBytes, stats, holders, dumpNote, dumpFile,
                false);
    }

    /**
     * @param readAfterFailure whether the figures were read after the failure, outside the
     *     failing call (a sharded allocator's, of all shards): other threads may have freed
     *     memory in between, so a free chunk may be large enough for the request by then
     */
    private BfcOutOfMemoryException(String allocatorName, String shardedAllocatorName, int shardIndex,
            int shardCount, long requestedBytes, long roundedBytes, long bytesInUse, long reservedBytes,
            int regionCount, long memoryLimit, long largestFreeChunkBytes, AllocatorStats stats, String holders,
            String dumpNote, String dumpFile, boolean readAfterFailure) {
        super(message(ShardNames.described(allocatorName, shardedAllocatorName, shardIndex, shardCount), requestedBytes,
                roundedBytes, bytesInUse, reservedBytes, regionCount, memoryLimit, largestFreeChunkBytes,
                readAfterFailure) + holders + dumpNote);
        this.dumpFile = dumpFile;
        this.dumpNote = dumpNote;
        this.allocatorName = allocatorName;
        this.shardedAllocatorName = shardedAllocatorName;
        this.shardIndex = shardIndex;
        this.shardCount = shardCount;
        this.requestedBytes = requestedBytes;
        this.roundedBytes = roundedBytes;
        this.bytesInUse = bytesInUse;
        this.reservedBytes = reservedBytes;
        this.regionCount = regionCount;
        this.memoryLimit = memoryLimit;
        this.largestFreeChunkBytes = largestFreeChunkBytes;
        this.stats = stats;
    }

    /**
     * The exception of a {@link ShardedBfcAllocator} whose home shard threw this one: the same
     * request, limit, dump note and file, with the figures and the largest holders of all
     * shards together.
     *
     * @param failed the index of the shard that threw this one
     * @param allHolders the holders' sentence of all shards ({@code ""} when no provenance is
     *     recorded)
     */
    BfcOutOfMemoryException ofAllShards(String name, int shards, int failed, long allInUse, long allReserved,
            int allRegions, long largestFree, AllocatorStats allStats, String allHolders) {
        BfcOutOfMemoryException e = new BfcOutOfMemoryException(name, null, -1, 0, requestedBytes,
                roundedBytes, allInUse, allReserved, allRegions, memoryLimit, largestFree, allStats,
                " (The figures are those of all " + shards + " shards together, read just after shard " + failed
                        + " failed it, the other shards having failed it too.)" + allHolders,
                dumpNote, dumpFile, true);
        e.initCause(this);
        return e;
    }

    private static String message(String described, long requested, long rounded, long inUse,
            long reserved, int regions, long limit, long largestFree, boolean readAfterFailure) {
        StringBuilder sb = new StringBuilder();
        sb.append("Allocator ").append(described).append(" is out of memory: tried to allocate ")
                .append(humanReadableNumBytes(requested));
        if (rounded != requested) {
            sb.append(" (rounded to ").append(humanReadableNumBytes(rounded)).append(')');
        }
        sb.append(". ").append(humanReadableNumBytes(inUse)).append(" is in use by live allocations, ")
                .append(humanReadableNumBytes(reserved)).append(" is reserved from the sub-allocator in ")
                .append(regions).append(regions == 1 ? " region" : " regions")
                .append(", the memory limit is ").append(humanReadableNumBytes(limit))
                .append(" and the largest free chunk is ").append(humanReadableNumBytes(largestFree)).append('.');
        long freeInPool = reserved - inUse;
        if (rounded > limit) {
            sb.append(" The request alone is larger than the memory limit: raise memoryLimit or"
                    + " allocate less at once.");
        } else if (readAfterFailure && largestFree >= rounded) {
            // One allocator's figures of the moment of failure never show it; all shards' read
            // after the home shard failed do, where other threads freed memory meanwhile.
            sb.append(" A free chunk is large enough for it now: other threads freed memory while the"
                    + " shards were tried or since (these figures were read after the failure); the same"
                    + " request may succeed if tried again.");
        } else if (freeInPool >= rounded) {
            sb.append(" ").append(humanReadableNumBytes(freeInPool)).append(" of the reserved memory"
                    + " is free but no free chunk is large enough, so the pool is fragmented: free"
                    + " long-lived allocations sooner, allocate large buffers first, or enable"
                    + " garbageCollection so that wholly free regions are returned before growing.");
        } else if (readAfterFailure && limit - reserved >= rounded) {
            // Regions given back by other threads after the failure (another thread's emptyCache,
            // say) leave room under the limit that there was not when the request failed.
            sb.append(" The limit leaves room for it now: either the sub-allocator could not provide"
                    + " the region (the host or device itself is out of memory), or other threads gave"
                    + " regions back since the failure (these figures were read after it) and the same"
                    + " request may succeed if tried again.");
        } else if (limit - reserved >= rounded) {
            sb.append(" The limit leaves room for it, so the sub-allocator could not provide the"
                    + " region: the host or device itself is out of memory.");
        }
        return sb.toString();
    }

    /**
     * @return the name of the allocator that threw: for a shard of a {@link ShardedBfcAllocator},
     *     the shard's own ({@code NAME/I}, as {@link ShardedBfcAllocator#shards()} names them);
     *     for the sharded allocator's own exception, the name given to its builder
     */
    public String allocatorName() {
        return allocatorName;
    }

    /**
     * @return for the exception of a shard of a {@link ShardedBfcAllocator}, the sharded
     *     allocator's name (the one given to its builder); null for any other allocator's,
     *     and for the sharded allocator's own exception
     */
    public String shardedAllocatorName() {
        return shardedAllocatorName;
    }

    /**
     * @return for the exception of a shard, its index ({@code 0} to {@code shardCount() - 1});
     *     -1 otherwise
     */
    public int shardIndex() {
        return shardIndex;
    }

    /** @return for the exception of a shard, how many shards the sharded allocator has; 0 otherwise */
    public int shardCount() {
        return shardCount;
    }

    /**
     * Whom the exception is of, as its message names it: {@code 'NAME'}, or for a shard of a
     * {@link ShardedBfcAllocator} {@code 'SHARDED' (shard I of N)}, by the name given to the
     * sharded allocator's builder (as {@link OutOfMemoryReport#describedAllocator()}).
     *
     * @return the allocator, named for a message
     */
    public String describedAllocator() {
        return ShardNames.described(allocatorName, shardedAllocatorName, shardIndex, shardCount);
    }

    /**
     * @return the bytes the failing call asked the allocator for: for
     *     {@link BfcAllocator#allocate(long, long)} with an alignment above 256 bytes, the size
     *     with the padding the alignment needs ({@code bytes + alignment - 256} where regions
     *     are 256-byte aligned, see there), as the out-of-memory report and the history give it
     */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** @return the request rounded as the allocator rounds it (a multiple of 256) */
    public long roundedBytes() {
        return roundedBytes;
    }

    /** @return bytes in use by live allocations (upstream's {@code bytes_in_use}) */
    public long bytesInUse() {
        return bytesInUse;
    }

    /** @return bytes held from the sub-allocator in regions (upstream's {@code pool_bytes}) */
    public long reservedBytes() {
        return reservedBytes;
    }

    /** @return the number of regions held */
    public int regionCount() {
        return regionCount;
    }

    /** @return the allocator's memory limit */
    public long memoryLimit() {
        return memoryLimit;
    }

    /** @return the size of the largest free chunk, 0 if none */
    public long largestFreeChunkBytes() {
        return largestFreeChunkBytes;
    }

    /**
     * The out-of-memory dump written for this failure (memory map and summary as JSON, see
     * docs/observability.md); PyTorch's memory snapshot of the same moment is next to it, by the
     * same name with {@code .pickle} instead of {@code .json}, when the message says it was
     * written.
     *
     * @return the file's absolute path, or null if dumps are off or it could not be written
     */
    public String dumpFile() {
        return dumpFile;
    }

    /** @return upstream's statistics at the moment of failure */
    public AllocatorStats stats() {
        return stats;
    }
}
