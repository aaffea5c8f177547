/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's BFCAllocator (tensorflow/tensorflow @ 5263072435bf,
 * third_party/xla/xla/tsl/framework/bfc_allocator.{h,cc}; Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.AllocationRegion;
import io.github.bfc4j.core.internal.AllocatorRetry;
import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import io.github.bfc4j.core.internal.FreeChunkSet;
import io.github.bfc4j.core.internal.IntDeque;
import io.github.bfc4j.core.internal.LongList;
import io.github.bfc4j.core.internal.RegionManager;
import io.github.bfc4j.core.jfr.OutOfMemoryEvent;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * A memory allocator that implements best-fit with coalescing (BFC): a line-for-line port, in
 * behaviour, of TensorFlow's classic {@code BFCAllocator} (the version without spatial
 * partitioning). Every decision (which address, which sub-allocator call, which statistic) is
 * TensorFlow's; the conformance traces prove it call for call.
 *
 * <h2>Terms</h2>
 * <ul>
 *   <li><b>region</b>: a range obtained from the {@link SubAllocator} in one {@code alloc}
 *       (or several adjacent ones merged, when the sub-allocator supports coalescing).</li>
 *   <li><b>chunk</b>: a piece of a region, either wholly in use (one allocation) or wholly
 *       free. The chunks of a region tile it without gaps and are linked by {@code prev} and
 *       {@code next} in address order. Chunk metadata lives in {@link ChunkTable}, indexed by
 *       an {@code int} handle.</li>
 *   <li><b>bin</b>: one of 21 sets of free chunks. Bin {@code i} holds free chunks of size
 *       {@code >= 256 << i} (bin 20: everything from 256 MiB up), ordered by (size, address).</li>
 * </ul>
 *
 * <pre>
 *  region 0x7f0000000000 ................................................ 0x7f0000400000
 *  | chunk A in use | chunk B free | chunk C in use | chunk D free                      |
 *  |  1 KiB         |  3 KiB       |  2 KiB         |  4 MiB - 6 KiB                    |
 *       prev/next:  A <-> B <-> C <-> D
 *
 *  bins:  0 [256, 512)   1 [512, 1K)   2 [1K, 2K)   3 [2K, 4K): {B}   ...   13 [2M, 4M)  14: {D} ...
 * </pre>
 *
 * <h2>Invariants</h2>
 * <ul>
 *   <li>Sizes and chunk addresses are multiples of 256 (the {@code alignment} argument is only
 *       passed on to the sub-allocator).</li>
 *   <li>A free chunk is in exactly one bin, the one {@link #binNumForSize} names; a chunk in
 *       use is in none.</li>
 *   <li>No two adjacent chunks are both free, unless the allocator ever had a timing counter:
 *       a stamped chunk ({@code freedAtCount > 0}) is not coalesced until it is safe, and even
 *       then upstream's {@code MergeTimestampedChunks} merges each chunk once per side, so two
 *       chunks made safe in one pass can stay neighbours (see {@link #checkInvariants()}).</li>
 *   <li>The region manager maps the start address of every live chunk, and nothing else, to
 *       its handle.</li>
 * </ul>
 *
 * <h2>Algorithm, by method</h2>
 * <ul>
 *   <li>{@code allocateRawInternal}: round up to 256 ({@link #roundedBytes}); merge
 *       timestamped chunks that became safe; {@code findChunkPtr}; else {@code extend} and
 *       find again; else (no timestamp constraint) force-merge timestamped chunks and find
 *       again; else {@code deallocateFreeRegions} and {@code extend} once more; else fail
 *       (return 0).</li>
 *   <li>{@code findChunkPtr}: from the request's bin upwards, the first free chunk (smallest
 *       size, then lowest address) that is large enough (and freed no later than
 *       {@code freed_before}). It is split ({@code splitChunk}) if it is at least twice the
 *       request or the waste would reach the fragmentation threshold.</li>
 *   <li>{@code extend}: asks the sub-allocator for {@code min(region target, limit - pool)},
 *       doubling the target first until it covers the request, backing off by 0.9 (computed in
 *       {@code float}) while the sub-allocator refuses, then doubling the target for next
 *       time. The new range becomes one free chunk, merged with the tail of the region it
 *       extends when the sub-allocator supports coalescing.</li>
 *   <li>{@code deallocateRawInternal}: marks the chunk free and coalesces it with free
 *       neighbours ({@code tryToCoalesce}); with a timing counter the chunk is stamped, binned
 *       uncoalesced and queued until {@link #setSafeFrontier} passes its stamp.</li>
 *   <li>{@code deallocateFreeRegions} (garbage collection): gives every region without a chunk
 *       in use back to the sub-allocator, so that it can hand out one larger region.</li>
 * </ul>
 *
 * <p>Thread-safe: every method takes one lock, as upstream. Fields marked "guarded by lock"
 * are only touched with it held; methods ending in {@code Locked} need it held.
 *
 * <p>Deliberate differences from upstream are marked {@code DEVIATION(port)} and listed in
 * docs/deviations.md.
 */
public final class BfcAllocator implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(BfcAllocator.class.getName());

    /** Upstream's {@code kMinAllocationBits}. */
    public static final int MIN_ALLOCATION_BITS = BfcPort.MIN_ALLOCATION_BITS;

    /** Upstream's {@code kMinAllocationSize}: every chunk size is a multiple of it. */
    public static final long MIN_ALLOCATION_SIZE = BfcPort.MIN_ALLOCATION_SIZE;

    /** Upstream's {@code kNumBins}. */
    public static final int NUM_BINS = BfcPort.NUM_BINS;

    /**
     * The largest request that is served by the algorithm: {@code 2^62} bytes. DEVIATION(port):
     * a larger request fails at once (returns 0). Upstream runs any {@code size_t} through the
     * algorithm, where sizes near {@code SIZE_MAX} wrap around in the rounding (newer upstream
     * versions reject them as here); in Java they would overflow the rounding and the region
     * doubling, and no memory that large exists.
     */
    public static final long MAX_ALLOCATION_BYTES = BfcPort.MAX_ALLOCATION_BYTES;

    /** Upstream's default split threshold when {@code fragmentation_fraction} is 0. */
    private static final long DEFAULT_MAX_INTERNAL_FRAGMENTATION_BYTES = 128L << 20;

    /** Upstream's {@code kBackpedalFactor}, a {@code float}: the product is single precision. */
    private static final float BACKPEDAL_FACTOR = 0.9f;

    /** Upstream's {@code kMaxMillisToWait} of {@code AllocateRawInternalWithRetry}. */
    private static final long MAX_MILLIS_TO_WAIT = 10_000;

    /** Upstream's {@code kMaxFailureLogs}, counted per process like its static counter. */
    private static final int MAX_FAILURE_LOGS = 10;

    private static final AtomicInteger FAILURE_LOG_COUNTER = new AtomicInteger();

    // Structures immutable after construction.
    private final BfcOptions opts;
    private final long memoryLimit;
    private final boolean coalesceRegions;
    private final SubAllocator subAllocator;
    private final String name;
    private final long maxInternalFragmentationBytes;
    private final AllocatorRetry retryHelper = new AllocatorRetry();

    /** What {@link #close()} does with live allocations. */
    private final ClosePolicy closePolicy;

    /** Whether handles from {@link #allocate(long)} are watched for leaks. */
    private final LeakDetection leakDetection;

    /** Leaked allocations found and reclaimed; guarded by lock. */
    private long leaksReclaimed;

    private final ReentrantLock lock = new ReentrantLock();

    /** Guarded by lock. */
    private final ChunkTable chunks = new ChunkTable(1024);

    /** Guarded by lock. */
    private final RegionManager regionManager = new RegionManager(chunks);

    /**
     * Guarded by lock. The walk of extend and garbage collection, reused so that they create
     * nothing; everything else walks with a cursor of its own.
     */
    private final ChunkWalk walk = new ChunkWalk(chunks, regionManager);

    /** Guarded by lock. Bin {@code i} holds free chunks of size {@code >= 256 << i}. */
    private final Bin[] bins = new Bin[NUM_BINS];

    /** Guarded by lock. Upstream's {@code timestamped_chunks_}. */
    private IntDeque timestampedChunks = new IntDeque(64);

    /** Guarded by lock. Scratch queue of {@code mergeTimestampedChunksLocked}. */
    private IntDeque newTsQueue = new IntDeque(64);

    /** Guarded by lock. Scratch list of {@code mergeTimestampedChunksLocked}. */
    private final LongList toMerge = new LongList(64);

    /** Upstream's {@code safe_frontier_} (unsigned). */
    private final AtomicLong safeFrontier = new AtomicLong();

    /** Guarded by lock. Upstream's {@code timing_counter_}. */
    private SharedCounter timingCounter;

    /** Guarded by lock. Upstream's {@code curr_region_allocation_bytes_}. */
    private long currRegionAllocationBytes;

    /** Guarded by lock. Upstream's {@code next_allocation_id_}. */
    private long nextAllocationId = 1;

    // Guarded by lock: upstream's stats_.
    private long numAllocs;
    private long bytesInUse;
    private long peakBytesInUse;
    private long largestAllocSize;
    private long poolBytes;
    private long peakPoolBytes;

    /** Guarded by lock. */
    private boolean closed;

    /** This allocator's state as its collaborators read it. */
    private final PortView view = new View();

    /** The invariant checker, reading this allocator through its view. */
    private final InvariantChecker checker = new InvariantChecker(view);

    /** Upstream's debug queries, reading this allocator through its view. */
    private final DebugQueries debug = new DebugQueries(view);

    /** The memory stats, summary and map, reading this allocator through its view. */
    private final MemoryReports reports = new MemoryReports(view, debug);

    /** Reports out-of-memory failures, from the event point. */
    private final OutOfMemoryReporter oomReporter;

    /** A bin: upstream's {@code BFCAllocator::Bin}. Guarded by the allocator's lock. */
    private static final class Bin {
        /** All chunks in this bin have {@code >= binSize} bytes. */
        final long binSize;

        /** Free chunks ordered by upstream's {@code ChunkComparator}: size, then address. */
        final FreeChunkSet freeChunks;

        Bin(ChunkTable chunks, long binSize) {
            this.binSize = binSize;
            this.freeChunks = new FreeChunkSet(chunks);
        }
    }

    /**
     * Port of {@code BFCAllocator::BFCAllocator}.
     *
     * @param subAllocator where regions come from
     * @param totalMemory the memory limit in bytes (upstream's {@code total_memory})
     * @param name the allocator's name, for messages
     * @param opts the options
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code totalMemory} is negative, or the fragmentation
     *     fraction is positive but its threshold {@code (long) (fraction * totalMemory)} is 0
     */
    public BfcAllocator(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts) {
        this(subAllocator, totalMemory, name, opts, ClosePolicy.FORCE, LeakDetection.fromSystemProperty());
    }

    private BfcAllocator(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts,
            ClosePolicy closePolicy, LeakDetection leakDetection) {
        this.closePolicy = Objects.requireNonNull(closePolicy, "closePolicy");
        this.leakDetection = Objects.requireNonNull(leakDetection, "leakDetection");
        this.subAllocator = Objects.requireNonNull(subAllocator, "subAllocator");
        this.name = Objects.requireNonNull(name, "name");
        this.opts = Objects.requireNonNull(opts, "opts");
        if (totalMemory < 0) {
            throw new IllegalArgumentException("totalMemory=" + totalMemory + " (expected: >= 0)");
        }
        double fraction = opts.fragmentationFraction();
        if (fraction > 0.0) {
            long threshold = (long) (fraction * totalMemory);
            if (threshold <= 0) {
                // DEVIATION(port): upstream accepts this and then splits exact fits into
                // zero-size chunks, corrupting its bins.
                throw new IllegalArgumentException("fragmentationFraction=" + fraction
                        + " (expected: 0, or a fraction whose threshold fraction * totalMemory = "
                        + fraction * totalMemory + " is at least 1 byte for totalMemory="
                        + totalMemory + "; use 0 for upstream's 128 MiB threshold)");
            }
            this.maxInternalFragmentationBytes = threshold;
        } else {
            this.maxInternalFragmentationBytes = DEFAULT_MAX_INTERNAL_FRAGMENTATION_BYTES;
        }
        this.coalesceRegions = subAllocator.supportsCoalescing();
        if (opts.allowGrowth()) {
            // 2MiB smallest initial allocation, unless total memory available is less.
            currRegionAllocationBytes = roundedBytes(Math.min(totalMemory, 2L << 20));
        } else {
            currRegionAllocationBytes = roundedBytes(Math.min(totalMemory, MAX_ALLOCATION_BYTES));
        }
        this.memoryLimit = totalMemory;

        // Create a bunch of bins of various good sizes, covering allocations from 256 bytes up
        // to (and including) the memory limit.
        for (int b = 0; b < NUM_BINS; b++) {
            long binSize = binNumToSize(b);
            bins[b] = new Bin(chunks, binSize);
            check(binNumForSize(binSize) == b, "BinForSize(bin_size)");
            check(binNumForSize(binSize + 255) == b, "BinForSize(bin_size + 255)");
            check(binNumForSize(binSize * 2 - 1) == b, "BinForSize(bin_size * 2 - 1)");
            if (b + 1 < NUM_BINS) {
                check(binNumForSize(binSize * 2) != b, "BinForSize(bin_size * 2)");
            }
        }
        this.oomReporter = new OutOfMemoryReporter(view, reports, debug, opts.dumpOnOomDirectory());
        listen(PortListener.of(new JfrRecorder(view, opts.jfrAllocationSamplePeriod()), oomReporter));
    }

    // ---------------------------------------------------------------------------------------
    // The Java-facing API: builder, Allocation handles, out-of-memory exceptions
    // ---------------------------------------------------------------------------------------

    /**
     * A builder for an allocator, validating each option as it is set.
     *
     * <pre>{@code
     * BfcAllocator allocator = BfcAllocator.builder()
     *         .name("cpu_bfc")
     *         .memoryLimit(1L << 30)
     *         .subAllocator(new AlignedHostSubAllocator())
     *         .build();
     * }</pre>
     *
     * @return a builder with upstream's default options, {@link ClosePolicy#REFUSE} and leak
     *     detection as the system property {@value LeakDetection#PROPERTY} says
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link BfcAllocator}; see {@link BfcAllocator#builder()}. */
    public static final class Builder {
        private String name = "bfc";
        private long memoryLimit = -1;
        private SubAllocator subAllocator;
        private BfcOptions.Builder options = BfcOptions.builder();
        private ClosePolicy closePolicy = ClosePolicy.REFUSE;
        private LeakDetection leakDetection;

        private Builder() {
        }

        /**
         * @param name the allocator's name, for messages and metrics ({@code "bfc"} if not set)
         * @return this builder
         * @throws IllegalArgumentException if the name is null or blank
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("name=" + (name == null ? "null" : "'" + name + "'")
                        + " (expected: a non-empty name such as \"cpu_bfc\")");
            }
            this.name = name;
            return this;
        }

        /**
         * @param memoryLimit the most bytes the allocator may hold from its sub-allocator
         *     (upstream's {@code total_memory}); required
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder memoryLimit(long memoryLimit) {
            if (memoryLimit <= 0) {
                throw new IllegalArgumentException("memoryLimit=" + memoryLimit
                        + " (expected: a number of bytes > 0, e.g. 1L << 30 for 1 GiB)");
            }
            this.memoryLimit = memoryLimit;
            return this;
        }

        /**
         * @param subAllocator where regions come from, e.g. bfc-cpu's
         *     {@code AlignedHostSubAllocator}; required
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder subAllocator(SubAllocator subAllocator) {
            if (subAllocator == null) {
                throw new IllegalArgumentException("subAllocator=null (expected: a SubAllocator,"
                        + " e.g. new AlignedHostSubAllocator() from bfc-cpu)");
            }
            this.subAllocator = subAllocator;
            return this;
        }

        /**
         * Sets every upstream option at once (replacing earlier calls of the option setters).
         *
         * @param options the options
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder options(BfcOptions options) {
            if (options == null) {
                throw new IllegalArgumentException("options=null (expected: BfcOptions, e.g. BfcOptions.builder().build())");
            }
            this.options = options.toBuilder();
            return this;
        }

        /**
         * @param allowGrowth see {@link BfcOptions#allowGrowth()} (default true)
         * @return this builder
         */
        public Builder allowGrowth(boolean allowGrowth) {
            options.allowGrowth(allowGrowth);
            return this;
        }

        /**
         * @param garbageCollection see {@link BfcOptions#garbageCollection()} (default false)
         * @return this builder
         */
        public Builder garbageCollection(boolean garbageCollection) {
            options.garbageCollection(garbageCollection);
            return this;
        }

        /**
         * @param allowRetryOnFailure see {@link BfcOptions#allowRetryOnFailure()} (default true)
         * @return this builder
         */
        public Builder allowRetryOnFailure(boolean allowRetryOnFailure) {
            options.allowRetryOnFailure(allowRetryOnFailure);
            return this;
        }

        /**
         * @param fragmentationFraction see {@link BfcOptions#fragmentationFraction()} (default 0)
         * @return this builder
         * @throws IllegalArgumentException if negative, NaN or infinite
         */
        public Builder fragmentationFraction(double fragmentationFraction) {
            options.fragmentationFraction(fragmentationFraction);
            return this;
        }

        /**
         * @param closePolicy what {@link BfcAllocator#close()} does with live allocations
         *     (default {@link ClosePolicy#REFUSE})
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder closePolicy(ClosePolicy closePolicy) {
            if (closePolicy == null) {
                throw new IllegalArgumentException("closePolicy=null (expected: REFUSE or FORCE)");
            }
            this.closePolicy = closePolicy;
            return this;
        }

        /**
         * @param leakDetection whether handles from {@link BfcAllocator#allocate(long)} are
         *     watched for leaks (default: the system property {@value LeakDetection#PROPERTY})
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder leakDetection(LeakDetection leakDetection) {
            if (leakDetection == null) {
                throw new IllegalArgumentException("leakDetection=null (expected: DISABLED, SIMPLE or PARANOID)");
            }
            this.leakDetection = leakDetection;
            return this;
        }

        /**
         * @return a new allocator; it obtains no memory until the first allocation
         * @throws IllegalStateException if the memory limit or the sub-allocator was not set
         * @throws IllegalArgumentException if the options do not fit together (see the
         *     constructor), or the leak-detection system property is malformed
         */
        public BfcAllocator build() {
            if (memoryLimit < 0) {
                throw new IllegalStateException("memoryLimit is not set (expected: .memoryLimit(bytes),"
                        + " the most memory the allocator may hold)");
            }
            if (subAllocator == null) {
                throw new IllegalStateException("subAllocator is not set (expected: .subAllocator(...),"
                        + " e.g. new AlignedHostSubAllocator() from bfc-cpu)");
            }
            LeakDetection leaks = leakDetection != null ? leakDetection : LeakDetection.fromSystemProperty();
            return new BfcAllocator(subAllocator, memoryLimit, name, options.build(), closePolicy, leaks);
        }
    }

    /** The alignment {@link #allocate(long)} asks for: upstream's {@code Allocator::kAllocatorAlignment}. */
    public static final long ALLOCATION_ALIGNMENT = 64;

    /**
     * Allocates {@code bytes} and returns a handle that gives them back on {@link
     * Allocation#close()}. Unlike {@link #allocateRaw(long, long)}, running out of memory is an
     * exception, and the handle carries the sizes, the id and (for host memory) views. Creates
     * the handle object; use {@code allocateRaw} where even that matters.
     *
     * @param bytes the size wanted, > 0
     * @return the allocation
     * @throws IllegalArgumentException if {@code bytes} is not positive
     * @throws BfcOutOfMemoryException if the memory cannot be had (after upstream's retries,
     *     when {@link BfcOptions#allowRetryOnFailure()} is on)
     * @throws IllegalStateException if the allocator is closed
     */
    public Allocation allocate(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes=" + bytes + " (expected: > 0) for allocator '" + name + "'");
        }
        long ptr = allocateRaw(ALLOCATION_ALIGNMENT, bytes);
        if (ptr == 0) {
            // The figures of the moment of failure, taken under the lock in the failing call.
            throw oomReporter.exceptionForLastFailure(bytes);
        }
        lock.lock();
        try {
            checkOpenLocked();
            int h = regionManager.getHandle(ptr);
            return LeakGuard.newAllocation(this, leakDetection, ptr, chunks.size(h),
                    chunks.requestedSize(h), chunks.allocationId(h));
        } finally {
            lock.unlock();
        }
    }

    /** The size of the largest free chunk, 0 if none: the last chunk of the highest non-empty bin. */
    private long largestFreeChunkLocked() {
        for (int b = NUM_BINS - 1; b >= 0; b--) {
            int h = bins[b].freeChunks.last();
            if (h != FreeChunkSet.NONE) {
                return chunks.size(h);
            }
        }
        return 0;
    }

    /** {@link Allocation#close()}: frees, unless the allocator was closed (by force) before. */
    void deallocateForHandle(long ptr) {
        if (deallocateRawInternal(ptr, true)) {
            retryHelper.notifyDealloc();
        }
    }

    /** {@link LeakGuard}: returns a leaked allocation's memory and counts it. */
    void reclaimLeak(long ptr) {
        if (deallocateRawInternal(ptr, true)) {
            lock.lock();
            try {
                leaksReclaimed++;
            } finally {
                lock.unlock();
            }
            retryHelper.notifyDealloc();
        }
    }

    /**
     * @return how many {@link Allocation}s leak detection found unreachable without close and
     *     reclaimed
     */
    public long leaksReclaimed() {
        lock.lock();
        try {
            return leaksReclaimed;
        } finally {
            lock.unlock();
        }
    }

    /** @return what {@link #close()} does with live allocations */
    public ClosePolicy closePolicy() {
        return closePolicy;
    }

    /** @return whether handles from {@link #allocate(long)} are watched for leaks */
    public LeakDetection leakDetection() {
        return leakDetection;
    }

    /**
     * The allocator's name. Port of {@code BFCAllocator::Name}.
     *
     * @return the name given at construction
     */
    public String name() {
        return name;
    }

    /**
     * The memory limit. Upstream's {@code memory_limit_}.
     *
     * @return the {@code totalMemory} given at construction
     */
    public long memoryLimit() {
        return memoryLimit;
    }

    /**
     * The options given at construction.
     *
     * @return the options
     */
    public BfcOptions options() {
        return opts;
    }

    /**
     * Port of {@code BFCAllocator::RoundedBytes}: rounds up to a multiple of 256.
     *
     * @param bytes a size, {@code 0 <= bytes <= MAX_ALLOCATION_BYTES}
     * @return the size rounded up to a multiple of {@link #MIN_ALLOCATION_SIZE}
     */
    public static long roundedBytes(long bytes) {
        return BfcPort.roundedBytes(bytes);
    }

    /**
     * Port of {@code BFCAllocator::BinNumForSize}: {@code min(20, floor(log2(max(bytes, 256) >> 8)))}.
     *
     * @param bytes a size
     * @return the bin that a free chunk of this size belongs to
     */
    public static int binNumForSize(long bytes) {
        return BfcPort.binNumForSize(bytes);
    }

    /**
     * Port of {@code BFCAllocator::BinNumToSize}.
     *
     * @param index a bin number
     * @return the smallest chunk size the bin holds
     */
    static long binNumToSize(int index) {
        return BfcPort.binNumToSize(index);
    }

    // ---------------------------------------------------------------------------------------
    // Allocation
    // ---------------------------------------------------------------------------------------

    /**
     * Allocates with upstream's default attributes (retry on failure, if the options allow it;
     * no timestamp constraint). Port of {@code BFCAllocator::AllocateRaw(alignment, num_bytes)}.
     *
     * @param alignment a power of two; only passed on to the sub-allocator (every chunk is
     *     256-byte aligned within its region)
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0, above {@link #MAX_ALLOCATION_BYTES},
     *     or the memory cannot be had
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocateRaw(long alignment, long numBytes) {
        return allocateRaw(alignment, numBytes, AllocationAttributes.DEFAULT);
    }

    /**
     * Allocates. Port of {@code BFCAllocator::AllocateRaw(alignment, num_bytes, attr)}.
     *
     * @param alignment a power of two; only passed on to the sub-allocator
     * @param numBytes the size wanted
     * @param attr per-call attributes (retry, timestamp constraint)
     * @return the address, or 0 if {@code numBytes} is 0, above {@link #MAX_ALLOCATION_BYTES},
     *     or the memory cannot be had
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) {
        if (numBytes < 0) {
            throw new IllegalArgumentException("numBytes=" + numBytes
                    + " (expected: >= 0) for allocator '" + name + "'");
        }
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment=" + alignment
                    + " (expected: a power of two) for allocator '" + name + "'");
        }
        if (numBytes > MAX_ALLOCATION_BYTES) {
            // DEVIATION(port): fails at once, see MAX_ALLOCATION_BYTES.
            lock.lock();
            try {
                checkOpenLocked();
                onOutOfMemoryLocked(numBytes, numBytes, false);
            } finally {
                lock.unlock();
            }
            LOG.log(Level.WARNING, "Allocator ({0}) cannot allocate {1} bytes: more than the"
                    + " largest possible request of {2} bytes.", name, numBytes, MAX_ALLOCATION_BYTES);
            listener.outOfMemoryReported(numBytes);
            return 0;
        }
        if (!opts.allowRetryOnFailure() || !attr.retryOnFailure()) {
            // Upstream dumps the memory log for the first failures of "important" allocations
            // (those that may be retried) when retry is globally disabled.
            boolean dumpLogOnFailure = !opts.allowRetryOnFailure() && attr.retryOnFailure()
                    && FAILURE_LOG_COUNTER.get() < MAX_FAILURE_LOGS;
            long freedByCount = freedByCount(attr);
            long res = allocateRawInternal(alignment, numBytes, dumpLogOnFailure, freedByCount, true);
            if (res == 0 && numBytes != 0) {
                int counterValue = FAILURE_LOG_COUNTER.get();
                if (counterValue < MAX_FAILURE_LOGS) {
                    FAILURE_LOG_COUNTER.set(counterValue + 1);
                    LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate "
                            + "{1} bytes with freed_by_count={2}.{3}", name, numBytes,
                            Long.toUnsignedString(freedByCount), attr.retryOnFailure() ? ""
                                    : " The caller indicates that this is not a failure, but this"
                                    + " may mean that there could be performance gains if more"
                                    + " memory were available.");
                }
                listener.outOfMemoryReported(numBytes);
            }
            return res;
        }
        long r = allocateRawInternalWithRetry(alignment, numBytes, attr);
        if (r == 0 && numBytes != 0) {
            listener.outOfMemoryReported(numBytes);
        }
        return r;
    }

    private static long freedByCount(AllocationAttributes attr) {
        LongSupplier f = attr.freedByFunc();
        return f == null ? 0 : f.getAsLong();
    }

    /** Port of {@code BFCAllocator::AllocateRawInternalWithRetry}. */
    private long allocateRawInternalWithRetry(long alignment, long numBytes,
            AllocationAttributes attr) {
        // Fast path: try once to allocate without getting the retry helper involved.
        long r = allocateRawInternal(alignment, numBytes, false, freedByCount(attr), false);
        if (r != 0) {
            return r;
        }
        // The retry helper's verbose attempt is its last.
        return retryHelper.allocateRaw(
                (a, nb, v) -> allocateRawInternal(a, nb, v, freedByCount(attr), v),
                MAX_MILLIS_TO_WAIT, alignment, numBytes);
    }

    /**
     * Port of {@code BFCAllocator::AllocateRawInternal}.
     *
     * @param lastAttempt not in upstream: whether a failure here is the failure of the
     *     {@code AllocateRaw} (false for the attempts that the retry repeats); only then is the
     *     out-of-memory event point reached
     */
    private long allocateRawInternal(long alignment, long numBytes, boolean dumpLogOnFailure,
            long freedBefore, boolean lastAttempt) {
        if (numBytes == 0) {
            return 0;
        }
        // Always allocate a multiple of 256 bytes, so that every address is nicely aligned.
        final long roundedBytes = roundedBytes(numBytes);

        // The BFC allocator tries to find the best fit first.
        final int binNum = binNumForSize(roundedBytes);

        lock.lock();
        try {
            checkOpenLocked();
            if (!timestampedChunks.isEmpty()) {
                // Merge timestamped chunks whose counts have become safe for general use.
                mergeTimestampedChunksLocked(0);
            }
            long ptr = findChunkPtrLocked(binNum, roundedBytes, numBytes, freedBefore);
            if (ptr != 0) {
                return ptr;
            }

            // Try to extend.
            if (extendLocked(alignment, roundedBytes)) {
                ptr = findChunkPtrLocked(binNum, roundedBytes, numBytes, freedBefore);
                if (ptr != 0) {
                    return ptr;
                }
            }

            if (freedBefore == 0 && !timestampedChunks.isEmpty()) {
                // Unable to satisfy a request without a timestamp requirement: rather than
                // fail, merge held-out timestamped chunks more aggressively until a free chunk
                // of the necessary size is formed.
                if (mergeTimestampedChunksLocked(roundedBytes)) {
                    ptr = findChunkPtrLocked(binNum, roundedBytes, numBytes, freedBefore);
                    if (ptr != 0) {
                        return ptr;
                    }
                }
            }

            // No chunk can satisfy the request and the unallocated bytes cannot either. Before
            // giving up, deallocate free regions so that the sub-allocator can combine them with
            // the unallocated bytes into a larger region.
            if (deallocateFreeRegionsLocked(roundedBytes) && extendLocked(alignment, roundedBytes)) {
                ptr = findChunkPtrLocked(binNum, roundedBytes, numBytes, freedBefore);
                if (ptr != 0) {
                    return ptr;
                }
            }

            // We searched all bins for an existing free chunk to use and couldn't find one: out
            // of memory. Upstream writes its memory map here (MaybeWriteMemoryMap) and, if
            // dumpLogOnFailure, logs DumpMemoryLog and RenderOccupancy: the out-of-memory event
            // point, where the report's picture is taken under this lock.
            assert lastAttempt || !dumpLogOnFailure;
            if (lastAttempt) {
                onOutOfMemoryLocked(numBytes, roundedBytes, dumpLogOnFailure);
            }
            return 0;
        } finally {
            unlockAfterCall();
        }
    }

    /** Port of {@code BFCAllocator::FindChunkPtr}. Needs the lock. */
    private long findChunkPtrLocked(int binNum, long roundedBytes, long numBytes, long freedBefore) {
        final ChunkTable chunks = this.chunks;
        // First identify the first bin that could satisfy roundedBytes.
        for (; binNum < NUM_BINS; binNum++) {
            // Search from the smallest chunk that fits roundedBytes: upstream scans the bin
            // from its start and skips smaller chunks; ceilingSize() starts where the first
            // candidate is, with the same (size, address) order: the bin's first chunk when it
            // fits (O(1), as upstream's begin()), else a walk down the tree.
            final FreeChunkSet freeChunks = bins[binNum].freeChunks;
            if (freeChunks.isEmpty()) {
                continue;
            }
            int candidate = freeChunks.ceilingSize(roundedBytes);
            while (candidate != FreeChunkSet.NONE) {
                final int h = candidate;
                assert !chunks.inUse(h);
                if (freedBefore != 0
                        && Long.compareUnsigned(freedBefore, chunks.freedAtCount(h)) < 0) {
                    candidate = freeChunks.higher(h);
                    continue;
                }
                // We found an existing chunk that fits us that wasn't in use, so remove it from
                // the free bin structure prior to using.
                removeFreeChunkIterFromBinLocked(freeChunks, h);

                // If the chunk can be broken into two reasonably large pieces, don't waste more
                // than maxInternalFragmentationBytes on padding. (Written without
                // roundedBytes * 2, which could overflow.)
                final long size = chunks.size(h);
                if (size - roundedBytes >= roundedBytes
                        || size - roundedBytes >= maxInternalFragmentationBytes) {
                    splitChunkLocked(h, roundedBytes);
                }

                // The requested size of the returned chunk is what the user has allocated.
                chunks.setRequestedSize(h, numBytes);
                // Assign a unique id and increment the id counter, marking the chunk in use.
                chunks.setAllocationId(h, nextAllocationId++);

                // Update stats.
                final long chunkSize = chunks.size(h);
                ++numAllocs;
                bytesInUse += chunkSize;
                peakBytesInUse = Math.max(peakBytesInUse, bytesInUse);
                largestAllocSize = Math.max(largestAllocSize, chunkSize);
                onAllocatedLocked(h, chunkSize);
                return chunks.ptr(h);
            }
        }
        return 0;
    }

    /** Port of {@code BFCAllocator::SplitChunk}. Needs the lock. */
    private void splitChunkLocked(int h, long numBytes) {
        // Allocate the new chunk before we look at any chunk.
        final int hNewChunk = chunks.allocateChunk();

        check(!chunks.inUse(h) && chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM,
                "SplitChunk of a chunk in use or in a bin");

        // Create a new chunk starting numBytes after c.
        final long newPtr = chunks.ptr(h) + numBytes;
        chunks.setPtr(hNewChunk, newPtr);
        regionManager.setHandle(newPtr, hNewChunk);

        // Set the new sizes of the chunks.
        chunks.setSize(hNewChunk, chunks.size(h) - numBytes);
        chunks.setSize(h, numBytes);

        // The new chunk is not in use.
        chunks.setAllocationId(hNewChunk, -1);

        // It inherits the freed time.
        chunks.setFreedAtCount(hNewChunk, chunks.freedAtCount(h));

        // Maintain the links: c <-> c_neighbor becomes c <-> new_chunk <-> c_neighbor.
        final int hNeighbor = chunks.next(h);
        chunks.setPrev(hNewChunk, h);
        chunks.setNext(hNewChunk, hNeighbor);
        chunks.setNext(h, hNewChunk);
        if (hNeighbor != ChunkTable.INVALID_CHUNK_HANDLE) {
            chunks.setPrev(hNeighbor, hNewChunk);
        }

        // Add the newly free chunk to the free bin.
        insertFreeChunkIntoBinLocked(hNewChunk);
    }

    /** Port of {@code BFCAllocator::Extend}. Needs the lock. */
    private boolean extendLocked(long alignment, long roundedBytes) {
        // DEVIATION(port): upstream computes limit - pool in size_t, which wraps around if a
        // sub-allocator ever returned more than asked near the limit; here it stops at 0.
        long availableBytes = Math.max(0, memoryLimit - poolBytes);
        // Round availableBytes down to the nearest multiple of MIN_ALLOCATION_SIZE.
        availableBytes = (availableBytes / MIN_ALLOCATION_SIZE) * MIN_ALLOCATION_SIZE;

        // Do we have enough space to handle the client's request? If not, fail immediately.
        if (roundedBytes > availableBytes) {
            return false;
        }

        // If currRegionAllocationBytes is not enough to satisfy the allocation, keep
        // multiplying by a power of two until that is sufficient.
        boolean increasedAllocation = false;
        while (roundedBytes > currRegionAllocationBytes) {
            currRegionAllocationBytes = doubled(currRegionAllocationBytes);
            increasedAllocation = true;
        }

        // Try allocating.
        long bytes = Math.min(currRegionAllocationBytes, availableBytes);
        SubAllocator.Block block = subAllocator.alloc(alignment, bytes);
        if (block == null) {
            // Try allocating less memory.
            while (block == null) {
                long smaller = roundedBytes((long) ((float) bytes * BACKPEDAL_FACTOR));
                if (smaller >= bytes) {
                    // DEVIATION(port): upstream's size sticks here forever for sizes up to 2304
                    // bytes (0.9 * size rounds back up to size); later upstream versions force
                    // progress. Step down by one allocation unit instead.
                    smaller = bytes - MIN_ALLOCATION_SIZE;
                }
                bytes = smaller;
                if (bytes < roundedBytes) {
                    return false;
                }
                block = subAllocator.alloc(alignment, bytes);
            }
        }
        final long memAddr = block.ptr();
        final long bytesReceived = block.bytes();

        if (!increasedAllocation) {
            // Increase the region size of the next required allocation.
            currRegionAllocationBytes = doubled(currRegionAllocationBytes);
        }

        poolBytes += bytesReceived;
        peakPoolBytes = Math.max(poolBytes, peakPoolBytes);
        onRegionObtainedLocked(memAddr, bytesReceived, roundedBytes);
        LOG.log(Level.DEBUG, () -> "Extending allocation by " + bytesReceived + " bytes for "
                + name + ". Total allocated bytes: " + poolBytes + ". Allocated memory at 0x"
                + Long.toHexString(memAddr) + " to 0x" + Long.toHexString(memAddr + bytesReceived));

        AllocationRegion maybeExtendedRegion = null;
        if (coalesceRegions) {
            maybeExtendedRegion = regionManager.addOrExtendAllocationRegion(memAddr, bytesReceived);
        } else {
            regionManager.addAllocationRegion(memAddr, bytesReceived);
        }

        // Create one large chunk for the whole memory space that will be chunked later.
        final int h = chunks.allocateChunk();
        chunks.setPtr(h, memAddr);
        chunks.setSize(h, bytesReceived);
        chunks.setAllocationId(h, -1);
        chunks.setPrev(h, ChunkTable.INVALID_CHUNK_HANDLE);
        chunks.setNext(h, ChunkTable.INVALID_CHUNK_HANDLE);
        chunks.setFreedAtCount(h, 0);

        regionManager.setHandle(memAddr, h);

        // If the region was extended, link its last chunk to the new chunk.
        if (maybeExtendedRegion != null) {
            // Find the last recorded chunk in the extended region.
            int prev = ChunkTable.INVALID_CHUNK_HANDLE;
            for (walk.region(regionManager.regions().indexOf(maybeExtendedRegion)); walk.next(); ) {
                prev = walk.handle();
            }
            chunks.setPrev(h, prev);
            chunks.setNext(prev, h);
        }

        // Maybe merge adjacent chunks and insert the chunk into the right bin.
        insertFreeChunkIntoBinLocked(tryToCoalesceLocked(h, false));
        return true;
    }

    /**
     * Doubles a region target. DEVIATION(port): saturates at {@link #MAX_ALLOCATION_BYTES}
     * where upstream's {@code size_t} would wrap to 0 (and then loop forever).
     */
    private static long doubled(long bytes) {
        return bytes >= MAX_ALLOCATION_BYTES / 2 ? MAX_ALLOCATION_BYTES : bytes * 2;
    }

    /** Port of {@code BFCAllocator::DeallocateFreeRegions}. Needs the lock. */
    private boolean deallocateFreeRegionsLocked(long roundedBytes) {
        // Do nothing if garbage collection is off.
        if (!opts.garbageCollection()) {
            return false;
        }

        // Search for free regions.
        final List<AllocationRegion> regions = regionManager.regions();
        final boolean[] free = new boolean[regions.size()];
        long totalFreeBytes = 0;
        for (int i = 0; i < regions.size(); i++) {
            boolean anyUse = false;
            for (walk.region(i); walk.next(); ) {
                if (walk.inUse()) {
                    anyUse = true;
                    break;
                }
            }
            if (!anyUse) {
                free[i] = true;
                totalFreeBytes += walk.regionBytes();
            }
        }

        if (totalFreeBytes == 0) {
            return false;
        }

        // Rough estimation to check whether deallocation can help.
        long availableBytes = memoryLimit - poolBytes + totalFreeBytes;
        if (roundedBytes > availableBytes) {
            return false;
        }

        LOG.log(Level.DEBUG, () -> "Garbage collection: deallocate free memory regions of "
                + name + " so that a larger region can be re-allocated to avoid OOM due to"
                + " memory fragmentation.");

        // Deallocate free regions.
        deallocateRegionsLocked(free);
        return true;
    }

    /**
     * Port of {@code BFCAllocator::DeallocateRegions}: frees the regions flagged in
     * {@code free} (indexed like {@link RegionManager#regions()}), in address order. Needs the
     * lock.
     */
    private void deallocateRegionsLocked(boolean[] free) {
        final List<AllocationRegion> regions = regionManager.regions();
        int it = 0;
        for (int i = 0; i < free.length; i++) {
            if (!free[i]) {
                ++it;
                continue;
            }
            AllocationRegion region = regions.get(it);
            // Remove all chunk registrations from bins (the walk has read the next chunk
            // before the current one is deleted).
            for (walk.region(it); walk.next(); ) {
                if (walk.binNum() != ChunkTable.INVALID_BIN_NUM) {
                    removeFreeChunkFromBinLocked(walk.handle());
                }
                deleteChunkLocked(walk.handle());
            }

            // Deallocate the memory.
            subAllocator.free(region.ptr(), region.memorySize());
            poolBytes -= region.memorySize();
            onRegionReturnedLocked(region.ptr(), region.memorySize());
            regionManager.removeAllocationRegion(it);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Deallocation
    // ---------------------------------------------------------------------------------------

    /**
     * Frees memory returned by {@link #allocateRaw}. Port of {@code BFCAllocator::DeallocateRaw}.
     *
     * @param ptr an address returned by this allocator and not yet freed; 0 is a no-op
     * @throws IllegalArgumentException if {@code ptr} was not allocated by this allocator or was
     *     already freed; the allocator is unchanged
     * @throws IllegalStateException if the allocator is closed
     */
    public void deallocateRaw(long ptr) {
        deallocateRawInternal(ptr, false);
        retryHelper.notifyDealloc();
    }

    /**
     * Port of {@code BFCAllocator::DeallocateRawInternal}.
     *
     * @param quietIfClosed return false instead of throwing when the allocator is closed
     * @return true if a chunk was freed
     */
    private boolean deallocateRawInternal(long ptr, boolean quietIfClosed) {
        if (ptr == 0) {
            return false;
        }
        lock.lock();
        try {
            if (quietIfClosed && closed) {
                return false;
            }
            checkOpenLocked();
            // Find the chunk from the ptr.
            final int h = regionManager.getHandle(ptr);
            // DEVIATION(port): upstream CHECK-fails (aborts the process); here the caller gets
            // an exception and the allocator is unchanged.
            if (h == ChunkTable.INVALID_CHUNK_HANDLE || !chunks.inUse(h)) {
                throw new IllegalArgumentException(notAllocatedMessage(ptr)
                        + ". Free each address returned by allocateRaw exactly once.");
            }

            onFreeLocked(h);
            markFreeLocked(h);

            // Consider coalescing it.
            if (timingCounter != null) {
                insertFreeChunkIntoBinLocked(h);
                timestampedChunks.pushBack(h);
            } else {
                insertFreeChunkIntoBinLocked(tryToCoalesceLocked(h, false));
            }
            return true;
        } finally {
            unlockAfterCall();
        }
    }

    private String notAllocatedMessage(long ptr) {
        return "0x" + Long.toHexString(ptr) + " was not allocated by allocator '" + name
                + "' (or was already freed)";
    }

    /**
     * Port of {@code BFCAllocator::Merge}: merges {@code h2} into {@code h1}, where
     * {@code next(h1) == h2}. Needs the lock.
     */
    private void mergeLocked(int h1, int h2) {
        // We can only merge chunks that are not in use.
        check(!chunks.inUse(h1) && !chunks.inUse(h2), "Merge of a chunk in use");

        // Fix up neighbour links: c1 <-> c2 <-> c3 becomes c1 <-> c3.
        final int h3 = chunks.next(h2);
        chunks.setNext(h1, h3);
        check(chunks.prev(h2) == h1, "Merge of chunks that are not neighbours");
        if (h3 != ChunkTable.INVALID_CHUNK_HANDLE) {
            chunks.setPrev(h3, h1);
        }

        // Set the new size.
        chunks.setSize(h1, chunks.size(h1) + chunks.size(h2));

        // Pick the latest free time.
        chunks.setFreedAtCount(h1, maxUnsigned(chunks.freedAtCount(h1), chunks.freedAtCount(h2)));

        deleteChunkLocked(h2);
    }

    /** Port of {@code BFCAllocator::DeleteChunk}. Needs the lock. */
    private void deleteChunkLocked(int h) {
        regionManager.erase(chunks.ptr(h));
        chunks.deallocateChunk(h);
    }

    /** Port of {@code BFCAllocator::InsertFreeChunkIntoBin}. Needs the lock. */
    private void insertFreeChunkIntoBinLocked(int h) {
        check(!chunks.inUse(h) && chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM,
                "InsertFreeChunkIntoBin of a chunk in use or already in a bin");
        final int binNum = binNumForSize(chunks.size(h));
        chunks.setBinNum(h, binNum);
        bins[binNum].freeChunks.add(h);
    }

    /** Port of {@code BFCAllocator::RemoveFreeChunkIterFromBin}. Needs the lock. */
    private void removeFreeChunkIterFromBinLocked(FreeChunkSet freeChunks, int h) {
        check(!chunks.inUse(h) && chunks.binNum(h) != ChunkTable.INVALID_BIN_NUM,
                "RemoveFreeChunkIterFromBin of a chunk in use or in no bin");
        freeChunks.remove(h);
        chunks.setBinNum(h, ChunkTable.INVALID_BIN_NUM);
    }

    /** Port of {@code BFCAllocator::RemoveFreeChunkFromBin}. Needs the lock. */
    private void removeFreeChunkFromBinLocked(int h) {
        check(!chunks.inUse(h) && chunks.binNum(h) != ChunkTable.INVALID_BIN_NUM,
                "RemoveFreeChunkFromBin of a chunk in use or in no bin");
        check(bins[chunks.binNum(h)].freeChunks.remove(h), "Could not find chunk in bin");
        chunks.setBinNum(h, ChunkTable.INVALID_BIN_NUM);
    }

    /** Port of {@code BFCAllocator::MarkFree}. Needs the lock. */
    private void markFreeLocked(int h) {
        check(chunks.inUse(h) && chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM,
                "MarkFree of a chunk not in use or in a bin");

        // Mark the chunk as no longer in use.
        chunks.setAllocationId(h, -1);

        // Optionally record the free time.
        if (timingCounter != null) {
            chunks.setFreedAtCount(h, timingCounter.next());
        }

        // Update the stats.
        bytesInUse -= chunks.size(h);
    }

    /**
     * Port of {@code BFCAllocator::TryToCoalesce}: merges a free chunk with its free
     * neighbours (unless timestamps forbid it). Needs the lock.
     *
     * @return the handle of the merged chunk
     */
    private int tryToCoalesceLocked(int h, boolean ignoreFreedAt) {
        if (!ignoreFreedAt && chunks.freedAtCount(h) != 0) {
            return h;
        }
        int coalescedChunk = h;

        // If the next chunk is free, merge it into c and delete it.
        int next = chunks.next(h);
        if (next != ChunkTable.INVALID_CHUNK_HANDLE && !chunks.inUse(next)) {
            if (chunks.freedAtCount(next) == 0 || ignoreFreedAt) {
                removeFreeChunkFromBinLocked(next);
                mergeLocked(h, next);
            }
        }

        // If the previous chunk is free, merge c into it and delete c.
        int prev = chunks.prev(h);
        if (prev != ChunkTable.INVALID_CHUNK_HANDLE && !chunks.inUse(prev)) {
            if (chunks.freedAtCount(prev) == 0 || ignoreFreedAt) {
                coalescedChunk = prev;
                removeFreeChunkFromBinLocked(prev);
                mergeLocked(prev, h);
            }
        }
        return coalescedChunk;
    }

    // ---------------------------------------------------------------------------------------
    // Timestamped frees
    // ---------------------------------------------------------------------------------------

    /**
     * Gives the allocator a shared timing counter. From then on every free stamps the chunk
     * with {@code sc.next()}; a stamped chunk is not coalesced, and is used only by
     * allocations whose {@code freedByFunc} allows its stamp, until {@link #setSafeFrontier}
     * passes it. Port of {@code BFCAllocator::SetTimingCounter}.
     *
     * @param sc the counter, or {@code null} to stop stamping
     */
    public void setTimingCounter(SharedCounter sc) {
        lock.lock();
        try {
            timingCounter = sc;
            timingCounterEverSet |= sc != null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Declares every chunk freed at a count below {@code count} safe for general use. Never
     * moves backwards. Port of {@code BFCAllocator::SetSafeFrontier}.
     *
     * @param count the new frontier (compared unsigned, as upstream's {@code uint64})
     */
    public void setSafeFrontier(long count) {
        long current = safeFrontier.get();
        while (Long.compareUnsigned(count, current) > 0) {
            if (safeFrontier.compareAndSet(current, count)) {
                retryHelper.notifyDealloc();
                return;
            }
            current = safeFrontier.get();
        }
    }

    /**
     * The current safe frontier.
     *
     * @return the largest count given to {@link #setSafeFrontier}, or 0
     */
    public long safeFrontier() {
        return safeFrontier.get();
    }

    /** Port of {@code BFCAllocator::MergeTimestampedChunks}. Needs the lock. */
    private boolean mergeTimestampedChunksLocked(long requiredBytes) {
        boolean satisfied = requiredBytes == 0;
        final long frontier = safeFrontier.get();
        final LongList toMerge = this.toMerge;
        toMerge.clear();
        final IntDeque newTsQueue = this.newTsQueue;
        newTsQueue.clear();
        while (!timestampedChunks.isEmpty()) {
            int h = timestampedChunks.popFront();
            assert h != ChunkTable.INVALID_CHUNK_HANDLE;
            final int c = h;
            // This chunk may have been merged already, so refetch and retest the handle. A
            // handle deleted by garbage collection still holds its old address here (and may
            // have been recycled for a new chunk), exactly as upstream.
            h = regionManager.getHandle(chunks.ptr(c));
            if (h == ChunkTable.INVALID_CHUNK_HANDLE) {
                continue;
            }
            if (chunks.inUse(c) || chunks.binNum(c) == ChunkTable.INVALID_BIN_NUM) {
                // This chunk has already been reallocated.
                continue;
            }
            if (chunks.freedAtCount(c) == 0) {
                toMerge.add(chunks.ptr(c));
                continue;
            }
            // The chunk is free and in a bin.
            if (Long.compareUnsigned(chunks.freedAtCount(c), frontier) < 0) {
                chunks.setFreedAtCount(c, 0);
                toMerge.add(chunks.ptr(c));
            } else if (requiredBytes > 0) {
                toMerge.add(chunks.ptr(c));
            } else {
                newTsQueue.pushBack(h);
            }
        }
        assert timestampedChunks.isEmpty();
        // std::swap(timestamped_chunks_, new_ts_queue): the old queue, now empty, becomes the
        // next call's scratch queue.
        this.newTsQueue = timestampedChunks;
        this.timestampedChunks = newTsQueue;

        // Every candidate has moved from the queue to toMerge. A standard merge
        // (requiredBytes == 0) merges them all; otherwise merge just until a chunk of the
        // required size is produced.
        for (int ci = 0, end = toMerge.size(); ci < end; ++ci) {
            final long ptr = toMerge.get(ci);
            // The chunk at this address may have been merged and deleted in a prior iteration,
            // so refetch the handle and retest.
            final int h = regionManager.getHandle(ptr);
            if (h == ChunkTable.INVALID_CHUNK_HANDLE) {
                continue;
            }
            if (requiredBytes == 0 || !satisfied) {
                assert chunks.binNum(h) != ChunkTable.INVALID_BIN_NUM;
                assert !chunks.inUse(h);
                removeFreeChunkFromBinLocked(h);
                final int newH = tryToCoalesceLocked(h, requiredBytes > 0);
                insertFreeChunkIntoBinLocked(newH);
                if (requiredBytes > 0) {
                    if (newH != h && chunks.freedAtCount(newH) != 0) {
                        timestampedChunks.pushBack(newH);
                    }
                    if (chunks.size(newH) >= requiredBytes) {
                        satisfied = true;
                    }
                }
            } else {
                // Forced merging of unsafe chunks produced a satisfying chunk: requeue the rest.
                timestampedChunks.pushBack(h);
            }
        }
        return satisfied;
    }

    // ---------------------------------------------------------------------------------------
    // Queries and statistics
    // ---------------------------------------------------------------------------------------

    /**
     * Port of {@code BFCAllocator::TracksAllocationSizes}.
     *
     * @return true: this allocator knows the size of every allocation
     */
    public boolean tracksAllocationSizes() {
        return true;
    }

    private int handleForQueryLocked(long ptr, String what) {
        checkOpenLocked();
        int h = regionManager.getHandle(ptr);
        if (ptr == 0 || h == ChunkTable.INVALID_CHUNK_HANDLE) {
            throw new IllegalArgumentException("Asked for " + what + " of 0x"
                    + Long.toHexString(ptr) + ", which allocator '" + name
                    + "' never allocated. Pass an address returned by allocateRaw.");
        }
        return h;
    }

    /**
     * The size the caller asked for. Port of {@code BFCAllocator::RequestedSize}.
     *
     * @param ptr an address returned by {@link #allocateRaw}
     * @return the {@code numBytes} of the allocation (for a freed chunk, of its last allocation)
     * @throws IllegalArgumentException if no chunk of this allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long requestedSize(long ptr) {
        lock.lock();
        try {
            return chunks.requestedSize(handleForQueryLocked(ptr, "requested size"));
        } finally {
            lock.unlock();
        }
    }

    /**
     * The size of the chunk backing an allocation. Port of {@code BFCAllocator::AllocatedSize}.
     *
     * @param ptr an address returned by {@link #allocateRaw}
     * @return the chunk's size, a multiple of 256, at least the requested size
     * @throws IllegalArgumentException if no chunk of this allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocatedSize(long ptr) {
        lock.lock();
        try {
            return chunks.size(handleForQueryLocked(ptr, "allocated size"));
        } finally {
            lock.unlock();
        }
    }

    /**
     * The unique id of an allocation. Port of {@code BFCAllocator::AllocationId}.
     *
     * @param ptr an address returned by {@link #allocateRaw}
     * @return the id (ids start at 1 and count successful allocations), or -1 if the chunk is
     *     free
     * @throws IllegalArgumentException if no chunk of this allocator starts at {@code ptr}
     * @throws IllegalStateException if the allocator is closed
     */
    public long allocationId(long ptr) {
        lock.lock();
        try {
            return chunks.allocationId(handleForQueryLocked(ptr, "allocation id"));
        } finally {
            lock.unlock();
        }
    }

    /**
     * A snapshot of the statistics. Port of {@code BFCAllocator::GetStats}.
     *
     * @return the statistics exactly as the classic upstream reports them
     */
    public AllocatorStats getStats() {
        lock.lock();
        try {
            return statsLocked();
        } finally {
            lock.unlock();
        }
    }

    /** Upstream's {@code stats_}: the three fields the classic version never sets are 0. */
    private AllocatorStats statsLocked() {
        return new AllocatorStats(numAllocs, bytesInUse, peakBytesInUse, largestAllocSize,
                memoryLimit, 0, 0, 0, poolBytes, peakPoolBytes);
    }

    /**
     * Resets {@code numAllocs} and {@code largestAllocSize} to 0 and {@code peakBytesInUse} to
     * the current {@code bytesInUse}. Port of {@code BFCAllocator::ClearStats}.
     *
     * @return true
     */
    public boolean clearStats() {
        lock.lock();
        try {
            numAllocs = 0;
            peakBytesInUse = bytesInUse;
            largestAllocSize = 0;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The kind of memory handed out. Port of {@code BFCAllocator::GetMemoryType}.
     *
     * @return the sub-allocator's memory type
     */
    public MemoryType getMemoryType() {
        return subAllocator.memoryType();
    }

    /**
     * Per-bin figures over every chunk (free or in use) whose size maps to the bin. Port of
     * upstream's {@code BinDebugInfo}.
     *
     * @param binNum the bin
     * @param binSize the smallest chunk size the bin holds
     * @param totalBytesInUse bytes of chunks in use
     * @param totalBytesInBin bytes of all chunks
     * @param totalRequestedBytesInUse bytes requested by the allocations in use
     * @param totalChunksInUse chunks in use
     * @param totalChunksInBin all chunks
     */
    public record BinDebugInfo(int binNum, long binSize, long totalBytesInUse, long totalBytesInBin,
            long totalRequestedBytesInUse, long totalChunksInUse, long totalChunksInBin) {
    }

    /**
     * Port of {@code BFCAllocator::get_bin_debug_info}: walks every chunk of every region.
     *
     * @return one entry per bin, in bin order
     */
    public List<BinDebugInfo> getBinDebugInfo() {
        lock.lock();
        try {
            return debug.getBinDebugInfoLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Port of {@code BFCAllocator::RenderOccupancy}: a 100-character picture of all regions,
     * {@code *} for requested bytes in use, {@code x} for padding of chunks in use, {@code _}
     * for free memory.
     *
     * @return the picture, or {@code <allocator contains no memory>}
     */
    public String renderOccupancy() {
        lock.lock();
        try {
            return debug.renderOccupancyLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Port of {@code BFCAllocator::DumpMemoryLog}, returned as text rather than logged: per-bin
     * figures, the free chunks of the bin a request of {@code numBytes} would use, every chunk
     * of every region, in-use chunks summarised by size, and the stats.
     *
     * @param numBytes the size of the request being explained
     * @return the dump, one line per upstream log line
     */
    public String dumpMemoryLog(long numBytes) {
        lock.lock();
        try {
            return debug.dumpMemoryLogLocked(numBytes);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Port of {@code tsl::strings::HumanReadableNumBytes}: {@code 1023B}, {@code 1.0KiB},
     * {@code 512.0KiB}, {@code 12.50MiB}, {@code 80.00GiB} (one decimal for KiB, two above).
     *
     * @param numBytes a byte count
     * @return the count with a binary unit
     */
    public static String humanReadableNumBytes(long numBytes) {
        return DebugQueries.humanReadableNumBytes(numBytes);
    }

    // ---------------------------------------------------------------------------------------
    // Observability (not in upstream): counters, memory summary, memory map, OOM dumps, JFR.
    // Counters are plain fields bumped under the lock on paths that exist anyway; everything
    // else runs on demand or on the slow paths (extend, garbage collection, out of memory).
    // ---------------------------------------------------------------------------------------

    /** Guarded by lock: the counters beyond upstream's stats, bumped at the event points. */
    private final MemoryCounters counters = new MemoryCounters();

    /** Guarded by lock: who listens at the event points, never null. */
    private PortListener listener = PortListener.NONE;

    /** Guarded by lock: {@link #listener} if it listens to allocations and frees, else null. */
    private PortListener callListener;

    /** Installs the listener of the event points (replacing the last one). */
    private void listen(PortListener l) {
        lock.lock();
        try {
            listener = l;
            callListener = l.listensToCalls() ? l : null;
        } finally {
            lock.unlock();
        }
    }

    // Event points (not in upstream): what the port tells beyond stats_. The counters are
    // always bumped (plain fields); the listener is told where one is installed. Allocations
    // and frees cost one null check when nothing listens to them.

    /** A region was obtained from the sub-allocator. Needs the lock. */
    private void onRegionObtainedLocked(long ptr, long bytes, long requestBytes) {
        counters.regionObtained(bytes);
        listener.regionObtainedLocked(ptr, bytes, requestBytes);
    }

    /** A region was given back by garbage collection. Needs the lock. */
    private void onRegionReturnedLocked(long ptr, long bytes) {
        counters.regionReturned(bytes);
        listener.regionReturnedLocked(ptr, bytes);
    }

    /** Chunk {@code h} of {@code chunkBytes} was allocated. Needs the lock. */
    private void onAllocatedLocked(int h, long chunkBytes) {
        counters.allocated(chunkBytes);
        final PortListener l = callListener;
        if (l != null) {
            l.allocatedLocked(h);
        }
    }

    /**
     * The last attempt of an allocation failed (with the lock held since it looked for a
     * chunk). Needs the lock.
     */
    private void onOutOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
        counters.outOfMemory();
        listener.outOfMemoryLocked(numBytes, roundedBytes, dumpLogOnFailure);
    }

    /** Chunk {@code h}, in use, is being freed. Needs the lock. */
    private void onFreeLocked(int h) {
        counters.freed(chunks.size(h));
        final PortListener l = callListener;
        if (l != null) {
            l.freedLocked(h);
        }
    }

    /**
     * Every figure beyond upstream's statistics, read in one lock acquisition.
     *
     * @return a consistent snapshot
     */
    public MemoryStats memoryStats() {
        lock.lock();
        try {
            return reports.memoryStatsLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The largest free chunk: the largest request that can be served without extending.
     * Upstream's {@code LargestFreeChunk} (the classic {@code GetStats} leaves
     * {@code largest_free_block_bytes} at 0, so {@link #getStats()} still reports 0).
     *
     * @return its size in bytes, 0 if no chunk is free
     */
    public long largestFreeChunkBytes() {
        lock.lock();
        try {
            return largestFreeChunkLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Bytes of the regions held from the sub-allocator: upstream's pool bytes
     * ({@code total_region_allocated_bytes_}), the same as {@link AllocatorStats#poolBytes()}.
     *
     * @return the reserved bytes
     */
    public long reservedBytes() {
        lock.lock();
        try {
            return poolBytes;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The largest {@link #reservedBytes()} ever, the same as {@link AllocatorStats#peakPoolBytes()}.
     *
     * @return the peak reserved bytes
     */
    public long peakReservedBytes() {
        lock.lock();
        try {
            return peakPoolBytes;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The regions held now (ranges merged by a coalescing sub-allocator count once).
     *
     * @return the number of regions
     */
    public int regionCount() {
        lock.lock();
        try {
            return regionManager.regions().size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Upstream's {@code GetFragmentation}: {@code 1 - largestFreeChunk / (reserved - inUse)},
     * 0 when nothing is free. 0 means all free memory is one chunk; near 1, free memory is
     * scattered in chunks much smaller than its sum.
     *
     * @return the ratio in {@code [0, 1)}
     */
    public double fragmentation() {
        lock.lock();
        try {
            return view.fragmentation();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A text report in the spirit of PyTorch's {@code torch.cuda.memory_summary()}: current,
     * peak, total allocated and total freed for allocated bytes, reserved bytes, allocations
     * and regions; out-of-memory failures; then upstream's per-bin lines (as in
     * {@link #dumpMemoryLog}) and {@link #renderOccupancy()}. docs/observability.md shows one.
     *
     * @return the report, lines separated by {@code \n}
     */
    public String memorySummary() {
        lock.lock();
        try {
            return reports.memorySummaryLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A snapshot of every region and chunk, the per-bin summaries and the statistics: port of
     * {@code BFCAllocator::RecordMemoryMap}. {@link MemoryMap#toJson()} serialises it.
     *
     * @return the immutable snapshot
     */
    public MemoryMap memoryMap() {
        lock.lock();
        try {
            return reports.memoryMapLocked();
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------
    // Memory introspection for tools (the bfc CLI's replay and report; issue 5). Cheap reads
    // under the lock, none of them on the allocate/free path.
    // ---------------------------------------------------------------------------------------

    /**
     * The bytes of chunks in use now (chunk sizes, not requests): {@code getStats().bytesInUse()}
     * without building a stats object.
     *
     * @return the bytes in use
     */
    public long bytesInUse() {
        lock.lock();
        try {
            return bytesInUse;
        } finally {
            lock.unlock();
        }
    }

    /** Receives the chunks of {@link #forEachChunk}, one call per chunk. */
    @FunctionalInterface
    public interface ChunkVisitor {
        /**
         * One chunk.
         *
         * @param region the region's index, in address order from 0
         * @param regionPtr the region's start address
         * @param regionBytes the region's size
         * @param ptr the chunk's address
         * @param bytes the chunk's size
         * @param requestedBytes the bytes requested of a chunk in use (0 for a free chunk)
         * @param allocationId the chunk's allocation id, -1 for a free chunk
         */
        void chunk(int region, long regionPtr, long regionBytes, long ptr, long bytes, long requestedBytes,
                long allocationId);
    }

    /**
     * Walks every chunk of every region, in address order, with the lock held: a snapshot of
     * the memory map for tools. The visitor must not call back into this allocator.
     *
     * @param visitor receives each chunk
     * @throws NullPointerException if {@code visitor} is null
     */
    public void forEachChunk(ChunkVisitor visitor) {
        Objects.requireNonNull(visitor, "visitor");
        lock.lock();
        try {
            for (ChunkWalk c = new ChunkWalk(chunks, regionManager).all(); c.next(); ) {
                boolean inUse = c.inUse();
                visitor.chunk(c.regionIndex(), c.regionPtr(), c.regionBytes(), c.ptr(), c.size(),
                        inUse ? c.requestedSize() : 0, inUse ? c.allocationId() : -1);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------
    // Invariant checking
    // ---------------------------------------------------------------------------------------

    /**
     * Whether {@link #allocateRaw} and {@link #deallocateRaw} run {@link #checkInvariants()}
     * after every call ({@code -Dbfc4j.checkInvariants=true}). Read once; when false the check
     * folds away (a {@code static final} constant) and costs nothing.
     */
    private static final boolean CHECK_INVARIANTS = Boolean.getBoolean("bfc4j.checkInvariants");

    /**
     * Guarded by lock. Whether {@link #setTimingCounter} was ever given a counter: from then on
     * two free neighbours without timestamps are possible (see {@link #checkInvariants()}).
     */
    private boolean timingCounterEverSet;

    /**
     * Checks every structural invariant of the allocator, under its lock, in time linear in the
     * number of chunks (plus the bins' ordered walk). The checks:
     * <ul>
     *   <li>regions are sorted by address, do not overlap and have positive sizes that are
     *       multiples of 256;</li>
     *   <li>the chunks of each region tile it without gap or overlap, starting at the
     *       region's start; {@code prev} and {@code next} agree with the address order; no
     *       chunk appears twice;</li>
     *   <li>no two adjacent chunks are both free, unless the allocator ever had a timing
     *       counter: a stamped chunk ({@code freedAtCount != 0}) is not coalesced until it is
     *       safe, and then upstream's {@code MergeTimestampedChunks} coalesces each
     *       chunk it makes safe once per side ({@code TryToCoalesce}), so when it makes two
     *       neighbours safe in one pass, the first absorbs the second and the free chunk beyond
     *       is left as a neighbour (the port keeps that, as it keeps every upstream decision);</li>
     *   <li>a chunk in use is in no bin, has an allocation id below the next one and a
     *       requested size of at least 1 byte that rounds up to at most its
     *       size; a free chunk is in exactly the bin its size maps to, and its {@code binNum}
     *       says so;</li>
     *   <li>every bin holds only free chunks of live regions that name it, in (size, address)
     *       order, and the bins together hold exactly the free chunks;</li>
     *   <li>the region manager maps every chunk's start address to its handle, and nothing
     *       else;</li>
     *   <li>the statistics equal what the chunks add up to: {@code bytesInUse} is the sum of
     *       the sizes of chunks in use, {@code poolBytes} the sum of the region sizes, the
     *       peaks are at least the current values, {@code numAllocs} is at most the number of
     *       allocation ids handed out.</li>
     * </ul>
     * A closed allocator must hold no region, chunk address or binned chunk.
     *
     * <p>Run after every call with {@code -Dbfc4j.checkInvariants=true}; costs nothing when that
     * is off.
     *
     * @throws BfcInvariantViolation on the first invariant that does not hold, with a dump of the
     *     offending region (each chunk: handle, address, size, requested size, in use,
     *     allocation id, bin, prev, next, timestamp)
     */
    public void checkInvariants() {
        lock.lock();
        try {
            checker.checkLocked();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Releases the lock at the end of {@code allocateRawInternal} and
     * {@code deallocateRawInternal}, checking the invariants first when
     * {@code -Dbfc4j.checkInvariants=true}. The lock is released even if the check throws.
     */
    private void unlockAfterCall() {
        try {
            if (CHECK_INVARIANTS) {
                checker.checkLocked();
            }
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------
    // Lifecycle
    // ---------------------------------------------------------------------------------------

    /**
     * Gives every region back to the sub-allocator, as upstream's destructor does. With
     * allocations still live, it logs their count and bytes, then follows the
     * {@link #closePolicy() close policy}: {@link ClosePolicy#REFUSE} throws and leaves the
     * allocator open and unchanged; {@link ClosePolicy#FORCE} frees the regions anyway (the live
     * addresses become invalid). Idempotent once closed. Afterwards allocation, deallocation and
     * per-address queries throw {@link IllegalStateException}; {@link #getStats()} still
     * answers, and closing an {@link Allocation} does nothing.
     *
     * @throws IllegalStateException if allocations are live and the policy is {@code REFUSE}
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            long live = 0;
            for (ChunkWalk c = new ChunkWalk(chunks, regionManager).all(); c.next(); ) {
                if (c.inUse()) {
                    live++;
                }
            }
            if (live > 0) {
                String what = "allocator '" + name + "' has " + live + " live allocation"
                        + (live == 1 ? "" : "s") + " (" + humanReadableNumBytes(bytesInUse) + " in use)";
                if (closePolicy == ClosePolicy.REFUSE) {
                    LOG.log(Level.WARNING, "close() refused: {0}", what);
                    throw new IllegalStateException("close() refused: " + what + ". Close (or deallocate)"
                            + " them first; or build the allocator with closePolicy(ClosePolicy.FORCE) to"
                            + " free the memory under them anyway.");
                }
                LOG.log(Level.WARNING, "close() forced: {0}; their memory is freed now and their addresses are invalid", what);
            }
            closed = true;
            for (AllocationRegion region : regionManager.regions()) {
                subAllocator.free(region.ptr(), region.memorySize());
            }
            poolBytes = 0;
            regionManager.clear();
            for (Bin b : bins) {
                b.freeChunks.clear();
            }
            chunks.clear();
            timestampedChunks.clear();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpenLocked() {
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
    }

    /** Upstream's {@code CHECK}: an always-on check of an internal invariant. */
    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("BFC allocator invariant violated: " + what);
        }
    }

    private static long maxUnsigned(long a, long b) {
        return Long.compareUnsigned(a, b) >= 0 ? a : b;
    }

    /** The read-only view of this allocator's state for its collaborators. */
    private final class View implements PortView {
        @Override
        public String name() {
            return name;
        }

        @Override
        public long memoryLimit() {
            return memoryLimit;
        }

        @Override
        public MemoryType memoryType() {
            return subAllocator.memoryType();
        }

        @Override
        public ChunkWalk walk() {
            return new ChunkWalk(chunks, regionManager);
        }

        @Override
        public boolean closed() {
            return closed;
        }

        @Override
        public AllocatorStats stats() {
            return statsLocked();
        }

        @Override
        public long bytesInUse() {
            return bytesInUse;
        }

        @Override
        public long poolBytes() {
            return poolBytes;
        }

        @Override
        public long peakPoolBytes() {
            return peakPoolBytes;
        }

        @Override
        public long nextAllocationId() {
            return nextAllocationId;
        }

        @Override
        public long currRegionAllocationBytes() {
            return currRegionAllocationBytes;
        }

        @Override
        public boolean timingCounterSet() {
            return timingCounter != null;
        }

        @Override
        public boolean timingCounterEverSet() {
            return timingCounterEverSet;
        }

        @Override
        public long largestFreeChunk() {
            return largestFreeChunkLocked();
        }

        @Override
        public double fragmentation() {
            // Upstream's GetFragmentation, defined as 0 when nothing is free.
            final long freeBytes = poolBytes - bytesInUse;
            return freeBytes <= 0 ? 0.0 : (double) (freeBytes - largestFreeChunkLocked()) / freeBytes;
        }

        @Override
        public MemoryCounters counters() {
            return counters;
        }

        @Override
        public int regionCount() {
            return regionManager.regions().size();
        }

        @Override
        public int handleCount() {
            return chunks.count();
        }

        @Override
        public int handleAt(long ptr) {
            return regionManager.getHandle(ptr);
        }

        @Override
        public int addressMapSize() {
            return regionManager.handleCount();
        }

        @Override
        public int regionIndexFor(long ptr) {
            return regionManager.regionIndexFor(ptr);
        }

        @Override
        public int binChunkCount(int binNum) {
            return bins[binNum].freeChunks.size();
        }

        @Override
        public int binFirst(int binNum) {
            return bins[binNum].freeChunks.first();
        }

        @Override
        public int binHigher(int binNum, int h) {
            return bins[binNum].freeChunks.higher(h);
        }

        @Override
        public boolean binContains(int binNum, int h) {
            return bins[binNum].freeChunks.contains(h);
        }
    }

    @Override
    public String toString() {
        return "BfcAllocator[" + name + ", limit " + memoryLimit + ", " + opts + "]";
    }
}
