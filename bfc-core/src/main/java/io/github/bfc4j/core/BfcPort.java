/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's BFCAllocator (tensorflow/tensorflow @ 5263072435bf,
 * third_party/xla/xla/tsl/framework/bfc_allocator.{h,cc}; Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.AllocationRegion;
import io.github.bfc4j.core.internal.AllocatorLock;
import io.github.bfc4j.core.internal.AllocatorRetry;
import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import io.github.bfc4j.core.internal.FreeChunkSet;
import io.github.bfc4j.core.internal.IntDeque;
import io.github.bfc4j.core.internal.RegionManager;
import java.lang.System.Logger.Level;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The port of TensorFlow's classic {@code BFCAllocator} (the version without spatial
 * partitioning): its state and algorithm, in the order of {@code bfc_allocator.cc}, each
 * function marked {@code Port of BFCAllocator::X}, so that this file reads beside upstream's.
 * Every decision (which address, which sub-allocator call, which statistic) is TensorFlow's;
 * the conformance traces prove it call for call. {@link BfcAllocator} is the public facade.
 *
 * <h2>Terms</h2>
 * <ul>
 *   <li><b>region</b>: a range obtained from the {@link SubAllocator} in one {@code alloc}
 *       (or several adjacent ones merged, when the sub-allocator supports coalescing).</li>
 *   <li><b>chunk</b>: a piece of a region, either wholly in use (one allocation) or wholly
 *       free. The chunks of a region tile it without gaps and are linked by {@code prev} and
 *       {@code next} in address order. Chunk metadata lives in {@link ChunkTable}, indexed by
 *       an {@code int} handle; {@link ChunkWalk} walks them.</li>
 *   <li><b>bin</b>: one of 21 sets of free chunks. Bin {@code i} holds free chunks of size
 *       {@code >= 256 << i} (bin 20: everything from 256 MiB up), ordered by (size, address).</li>
 * </ul>
 *
 * <pre>
 *  region 0x7f0000000000 ................................................ 0x7f0000400000
 *  | chunk A in use | chunk B free | chunk C in use | chunk D free                      |
 *  |  1 KiB         |  3 KiB       |  2 KiB         |  4 MiB - 6 KiB                    |
 *       prev/next:  A &lt;-&gt; B &lt;-&gt; C &lt;-&gt; D
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
 *       chunks made safe in one pass can stay neighbours ({@link InvariantChecker}).</li>
 *   <li>The region manager maps the start address of every live chunk to its handle, and
 *       nothing else to anything; while the recording is lazy ({@link #lazyAddressMap}), a
 *       split's free rest that was never allocated is left out.</li>
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
 * <h2>The lock</h2>
 * One {@link AllocatorLock}, as upstream's {@code mutex_}: one compare-and-set and one release
 * store when nobody else wants it, a short backoff spin before sleeping when somebody does
 * (measured: docs/performance.md). The methods that upstream locks
 * ({@code AllocateRawInternal}, {@code DeallocateRawInternal}, the queries, {@code GetStats},
 * {@code ClearStats}) take it here; fields marked "guarded by lock" are only touched with it
 * held; methods ending in {@code Locked} need it held. Collaborators take it through
 * {@link #lock()} and {@link #unlock()} and read the state through {@link #view()}.
 *
 * <h2>Event points (not in upstream)</h2>
 * What the allocator tells beyond {@code stats_} happens at five points only, with the lock
 * held: {@code onRegionObtainedLocked} (in {@code extend}), {@code onRegionReturnedLocked}
 * (in {@code deallocateRegions}), {@code onAllocatedLocked} (in {@code findChunkPtr}, where
 * upstream's {@code TENSORFLOW_MEM_DEBUG} build records the op), {@code onFreeLocked} (in
 * {@code deallocateRawInternal}, where upstream records the chunk for its trace) and
 * {@code onOutOfMemoryLocked} (in {@code allocateRawInternal}, where upstream writes its
 * memory map). Each bumps the {@link MemoryCounters} and tells the installed
 * {@link PortListener}; allocations and frees cost one null check when no listener wants them.
 *
 * <p>Deliberate differences from upstream are marked {@code DEVIATION(port)} and listed in
 * docs/deviations.md.
 */
final class BfcPort {

    /**
     * The name of the one logger of everything the allocator logs, so that users configure one
     * name: the facade's class name.
     */
    static final String LOGGER_NAME = "io.github.bfc4j.core.BfcAllocator";

    private static final System.Logger LOG = System.getLogger(LOGGER_NAME);

    /** Upstream's {@code kMinAllocationBits}. */
    static final int MIN_ALLOCATION_BITS = 8;

    /** Upstream's {@code kMinAllocationSize}: every chunk size is a multiple of it. */
    static final long MIN_ALLOCATION_SIZE = 1L << MIN_ALLOCATION_BITS;

    /** Upstream's {@code kNumBins}. */
    static final int NUM_BINS = 21;

    /**
     * The largest request that is served by the algorithm: {@code 2^62} bytes. DEVIATION(port):
     * a larger request fails at once (returns 0). Upstream runs any {@code size_t} through the
     * algorithm, where sizes near {@code SIZE_MAX} wrap around in the rounding (newer upstream
     * versions reject them as here); in Java they would overflow the rounding and the region
     * doubling, and no memory that large exists.
     */
    static final long MAX_ALLOCATION_BYTES = 1L << 62;

    /** Upstream's default split threshold when {@code fragmentation_fraction} is 0. */
    private static final long DEFAULT_MAX_INTERNAL_FRAGMENTATION_BYTES = 128L << 20;

    /** Upstream's {@code kBackpedalFactor}, a {@code float}: the product is single precision. */
    private static final float BACKPEDAL_FACTOR = 0.9f;

    /** Upstream's {@code kMaxMillisToWait} of {@code AllocateRawInternalWithRetry}. */
    private static final long MAX_MILLIS_TO_WAIT = 10_000;

    /** Upstream's {@code kMaxFailureLogs}, counted per process like its static counter. */
    private static final int MAX_FAILURE_LOGS = 10;

    private static final AtomicInteger FAILURE_LOG_COUNTER = new AtomicInteger();

    /**
     * Whether the invariants are checked at the end of every {@code allocateRawInternal} and
     * {@code deallocateRawInternal} ({@code -Dbfc4j.checkInvariants=true}). Read once; when
     * false the check folds away (a {@code static final} constant) and costs nothing.
     */
    private static final boolean CHECK_INVARIANTS = Boolean.getBoolean("bfc4j.checkInvariants");

    // Structures immutable after construction.
    private final BfcOptions opts;
    private final long memoryLimit;
    private final boolean coalesceRegions;
    /** The sub-allocator's {@code deviceId()}, for snapshots (bfc4j's; upstream has none). */
    private final int deviceId;
    private final SubAllocator subAllocator;
    private final String name;
    /**
     * How messages name this allocator: {@code 'NAME'}, or for a shard of a
     * {@link ShardedBfcAllocator} {@code 'SHARDED' (shard I of N)}, the name the user gave and
     * where the address lies ({@link #describeAsShard}). Written before the port is published.
     */
    private String described;
    /**
     * For a shard of a {@link ShardedBfcAllocator}: the sharded allocator's name (the one its
     * user gave), this shard's index and the shard count; null, -1 and 0 otherwise. Written
     * before the port is published ({@link #describeAsShard}).
     */
    private String shardOf;
    private int shardIndex = -1;
    private int shardCount;
    /**
     * The allocator's name in the log lines ported from upstream's {@code LOG} (where upstream
     * writes its {@code Name()}): {@code NAME}, or for a shard {@code SHARDED (shard I of N)}, by
     * the name the user gave. Written with {@link #described}.
     */
    private String logName;
    private final long maxInternalFragmentationBytes;
    private final AllocatorRetry retryHelper = new AllocatorRetry();

    /** Upstream's {@code lock_}. */
    private final AllocatorLock lock = new AllocatorLock();

    /**
     * Where this allocator's sub-allocator calls are made (see {@link #lockChecked()}); null
     * until the facade sets it.
     */
    private ViewPins subAllocatorCalls;

    /** The allocator's loans, named by a refused free of lent memory; set once, after construction. */
    private Loans loans;

    /** Guarded by lock. Upstream's {@code chunks_} (and {@code free_chunks_list_}). */
    private final ChunkTable chunks = new ChunkTable(1024);

    /** Guarded by lock. Upstream's {@code region_manager_}. */
    private final RegionManager regionManager = new RegionManager(chunks);

    /**
     * Guarded by lock. The walk of extend, garbage collection and the address map's catching
     * up, reused so that they create nothing; the collaborators walk with cursors of their own
     * ({@link PortView#walk()}).
     */
    private final ChunkWalk walk = new ChunkWalk(chunks, regionManager);

    /**
     * Guarded by lock. The walk of the queries of a free chunk's start ({@link #handleAtLocked}):
     * a cursor of its own, so that a query made while {@link #walk} is on its way (the lock is
     * reentrant) cannot move it.
     */
    private final ChunkWalk queryWalk = new ChunkWalk(chunks, regionManager);

    /**
     * Guarded by lock. Upstream's {@code bins_space_}: bin {@code i} holds free chunks of size
     * {@code >= 256 << i} (upstream's {@code Bin}, whose {@code bin_size} is
     * {@link #binNumToSize}), ordered by its {@code ChunkComparator}: size, then address.
     */
    private final FreeChunkSet[] bins = new FreeChunkSet[NUM_BINS];

    /** Guarded by lock. Upstream's {@code timestamped_chunks_}. */
    private IntDeque timestampedChunks = new IntDeque(64);

    /** Guarded by lock. Scratch queue of {@code mergeTimestampedChunksLocked}. */
    private IntDeque newTsQueue = new IntDeque(64);

    /**
     * Guarded by lock. Scratch list of {@code mergeTimestampedChunksLocked}: upstream's
     * {@code to_merge}, by handle instead of address (see there).
     */
    private final IntDeque toMerge = new IntDeque(64);

    /** Upstream's {@code safe_frontier_} (unsigned). */
    private final AtomicLong safeFrontier = new AtomicLong();

    /** Guarded by lock. Upstream's {@code timing_counter_}. */
    private SharedCounter timingCounter;

    /**
     * Guarded by lock. Whether {@link #setTimingCounter} was ever given a counter: from then on
     * two free neighbours without timestamps are possible (see {@link InvariantChecker}).
     */
    private boolean timingCounterEverSet;

    /**
     * Guarded by lock. DEVIATION(port) (representation only, docs/deviations.md #28): while
     * true, the address map learns a split's free rest only when that chunk is first allocated
     * ({@link #findChunkPtrLocked}; until then it is marked {@link ChunkTable#FREE_UNMAPPED}),
     * and a deleted chunk's start is erased only if the map holds it. A chunk split off and
     * merged back before anyone allocates it (most allocate/free pairs) then costs the map
     * nothing. Every chunk in use and every chunk that {@code Extend} creates (a region's first)
     * is always in the map; a query of another free chunk's start walks its region
     * ({@link #handleAtLocked}); the timestamped frees keep their chunks by handle
     * ({@link #mergeTimestampedChunksLocked}). Upstream records every chunk start at once.
     * Chunk starts off 256-byte boundaries can share a slot, so the first region that starts
     * off a 256-byte boundary records every start ({@link #mapEveryChunkStartLocked}) and ends
     * this for good: the map then holds every chunk start, as upstream's does.
     */
    private boolean lazyAddressMap = true;

    /**
     * Guarded by lock. Upstream's {@code curr_region_allocation_bytes_}, a {@code size_t}: held
     * and compared as unsigned, and doubled modulo 2^64 as upstream's is ({@link #doubled}), so
     * that a memory limit above 2^62 bytes starts it at upstream's value (up to 2^63) and a
     * target that wraps around to a small value asks for what upstream asks.
     */
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

    /** Guarded by lock. Whether the regions were given back ({@link #closeLocked()}). */
    private boolean closed;

    /** Guarded by lock: the counters beyond upstream's stats, bumped at the event points. */
    private final MemoryCounters counters = new MemoryCounters();

    /**
     * Guarded by lock: who listens at the event points, never null. Written once, by
     * {@link #install}; {@link #allocateRaw} reads it right after a failed attempt released the
     * lock (that attempt saw it under the lock).
     */
    private PortListener listener = PortListener.NONE;

    /**
     * Guarded by lock. The alignment of the {@code AllocateRaw} being served: for the event
     * points (an allocation's or failure's alignment, which a recorded trace replays).
     */
    private long callAlignment;
    /**
     * Guarded by lock. The bytes the {@code AllocateRaw} being served asked for, unrounded: for
     * the event points (a region obtained for a request below the history's
     * {@code stackMinBytes} records no stack, as the allocation does not).
     */
    private long callNumBytes;
    /**
     * Guarded by lock. Not in upstream: who owns the chunk of the {@code AllocateRaw} being
     * served: 0 for a raw allocation, {@link ChunkTable#HANDLE_OWNED} for an {@link Allocation}
     * handle (owned in the hold that finds it, so that no raw free can take it before the handle
     * exists), {@link ChunkTable#lentBy(int)} of its loan for memory lent to a runtime
     * ({@link MemoryAllocator.Loan#allocateRawOrThrow}). {@link #findChunkPtrLocked} marks it.
     */
    private long callOwner;

    /** Guarded by lock: {@link #listener} if it listens to allocations and frees, else null. */
    private PortListener callListener;

    /**
     * {@link #callListener}, for {@link #setSafeFrontier}, which runs without the lock (written
     * with it, by {@link #install}).
     */
    private volatile PortListener frontierListener;

    /** Guarded by lock: run at the end of every call when {@link #CHECK_INVARIANTS}. */
    private Runnable invariantCheck = () -> { };

    /** The read-only view of this state that the collaborators get. */
    private final PortView view = new View();

    /**
     * Port of {@code BFCAllocator::BFCAllocator}.
     *
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code totalMemory} is negative, or the fragmentation
     *     fraction is positive but its threshold {@code (long) (fraction * totalMemory)} is 0
     */
    BfcPort(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts) {
        this.subAllocator = Objects.requireNonNull(subAllocator, "subAllocator");
        this.name = Objects.requireNonNull(name, "name");
        this.described = "'" + name + "'";
        this.logName = name;
        this.opts = Objects.requireNonNull(opts, "opts");
        if (totalMemory < 0) {
            throw new IllegalArgumentException("totalMemory=" + totalMemory + " (expected: >= 0)");
        }
        this.coalesceRegions = subAllocator.supportsCoalescing();
        this.deviceId = subAllocator.deviceId();
        if (opts.allowGrowth()) {
            // 2MiB smallest initial allocation, unless total memory available is less.
            currRegionAllocationBytes = roundedBytes(Math.min(totalMemory, 2L << 20));
        } else {
            // Unsigned, as upstream's size_t: RoundedBytes(2^63 - 1) is 2^63.
            currRegionAllocationBytes = roundedBytes(totalMemory);
        }
        this.memoryLimit = totalMemory;

        // Cap on how much a chunk may exceed the requested size before it is split.
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

        // Create a bunch of bins of various good sizes, covering allocations from 256 bytes up
        // to (and including) the memory limit.
        for (int b = 0; b < NUM_BINS; b++) {
            long binSize = binNumToSize(b);
            bins[b] = new FreeChunkSet(chunks, binSize);
            check(binNumForSize(binSize) == b, "BinForSize(bin_size)");
            check(binNumForSize(binSize + 255) == b, "BinForSize(bin_size + 255)");
            check(binNumForSize(binSize * 2 - 1) == b, "BinForSize(bin_size * 2 - 1)");
            if (b + 1 < NUM_BINS) {
                check(binNumForSize(binSize * 2) != b, "BinForSize(bin_size * 2)");
            }
        }
    }

    /**
     * Port of {@code BFCAllocator::~BFCAllocator}: gives every region back to the
     * sub-allocator; afterwards the allocator holds nothing and refuses every call. Needs the
     * lock.
     *
     * @throws RuntimeException the first exception (or {@link Error}) of the listeners and the
     *     sub-allocator's frees (the later ones suppressed by it), once every region is given up
     *     and the allocator is closed
     */
    void closeLocked() {
        closed = true;
        // Not in upstream: the allocations still live are freed with their regions, so each is
        // a free at the event point and bytes_in_use ends at 0 with the pool. A listener that
        // throws there does not stop the close: its exception is thrown once all is given back.
        Throwable failure = null;
        for (walk.all(); walk.next(); ) {
            if (walk.inUse()) {
                final int lender = chunks.lender(walk.handle());
                if (lender != 0 && loans != null) {
                    // Not in upstream: lent memory taken back is no longer lent; once its loan is
                    // closed and nothing else it lent is left, the loan's number serves again.
                    loans.takenBack(lender);
                }
                try {
                    onFreeLocked(walk.handle());
                } catch (Throwable t) {
                    failure = collect(failure, t);
                }
            }
        }
        // After those frees: a history tells each region given back once nothing is left in it.
        try {
            listener.closingLocked();
        } catch (Throwable t) {
            failure = collect(failure, t);
        }
        bytesInUse = 0;
        for (AllocationRegion region : regionManager.regions()) {
            failure = freeRegion(region, failure);
        }
        poolBytes = 0;
        try {
            regionManager.clear();
        } catch (Throwable t) {
            // The regions and handles are forgotten all the same (out of heap making the
            // address map's new arrays): collected with the exceptions before it.
            failure = collect(failure, t);
        }
        for (FreeChunkSet b : bins) {
            b.clear();
        }
        chunks.clear();
        timestampedChunks.clear();
        throwIfAny(failure);
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

        // Not in upstream: the chunk table grows (if it must) for the region's chunk before the
        // sub-allocator is asked, so that an Error there (out of heap) leaves no block obtained
        // that no chunk tiles.
        chunks.ensureSpareHandle();

        // DEVIATION(port): a sub-allocator that throws (upstream's Alloc cannot) leaves the
        // region target as it was before the doubling below, so that the call that threw changes
        // nothing (docs/deviations.md #30).
        final long regionTargetBefore = currRegionAllocationBytes;
        // If currRegionAllocationBytes is not enough to satisfy the allocation, keep
        // multiplying by a power of two until that is sufficient. (Unsigned, as upstream's
        // size_t; roundedBytes is at most 2^62, so this ends.)
        boolean increasedAllocation = false;
        while (Long.compareUnsigned(roundedBytes, currRegionAllocationBytes) > 0) {
            currRegionAllocationBytes = doubled(currRegionAllocationBytes);
            increasedAllocation = true;
        }

        // Try allocating (the smaller of the two, unsigned).
        long bytes = Long.compareUnsigned(currRegionAllocationBytes, availableBytes) < 0
                ? currRegionAllocationBytes : availableBytes;
        final long askedBytes = bytes;
        SubAllocator.Block block;
        try {
            block = subAllocator.alloc(alignment, bytes);
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
        } catch (Throwable t) {
            currRegionAllocationBytes = regionTargetBefore;
            throw t;
        }
        final long memAddr = block.ptr();
        final long bytesReceived = block.bytes();
        // Not in upstream: what the region's registration needs made (the address map's
        // entries, the region list's room, the region itself) is made before anything is
        // counted, so that an Error there (out of heap), or the map's refusal of a start that
        // shares a 256-byte slot, gives the block back to the sub-allocator and changes nothing
        // a later call decides by; from the region's entry on, nothing can fail until the region
        // is whole (its chunk tiling it, in the map and in a bin).
        AllocationRegion maybeExtendedRegion = null;
        try {
            if ((memAddr & (MIN_ALLOCATION_SIZE - 1)) != 0) {
                // Chunk starts off 256-byte boundaries can share an address-map slot: the map
                // must see every start as it comes (AddressHandleMap.put refuses a shared slot).
                mapEveryChunkStartLocked();
            }
            regionManager.reserveRegion();
            regionManager.reserveHandle(memAddr);
            if (coalesceRegions) {
                maybeExtendedRegion = regionManager.addOrExtendAllocationRegion(memAddr, bytesReceived);
            } else {
                regionManager.addAllocationRegion(memAddr, bytesReceived);
            }
        } catch (Throwable t) {
            currRegionAllocationBytes = regionTargetBefore;
            try {
                subAllocator.free(memAddr, bytesReceived);
            } catch (Throwable e) {
                collect(t, e);
            }
            throw t;
        }

        if (!increasedAllocation) {
            // Increase the region size of the next required allocation.
            currRegionAllocationBytes = doubled(currRegionAllocationBytes);
        }

        poolBytes += bytesReceived;
        peakPoolBytes = Math.max(poolBytes, peakPoolBytes);

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

        // Told once the region is whole (upstream logs before it registers the region), so
        // that a listener that throws (out of heap) leaves it whole: counted and usable.
        onRegionObtainedLocked(memAddr, bytesReceived, roundedBytes, askedBytes);
        LOG.log(Level.DEBUG, () -> "Extending allocation by " + bytesReceived + " bytes for "
                + logName + ". Total allocated bytes: " + poolBytes + ". Allocated memory at 0x"
                + Long.toHexString(memAddr) + " to 0x" + Long.toHexString(memAddr + bytesReceived));
        return true;
    }

    /**
     * Doubles a region target as upstream's {@code size_t} does: modulo 2^64 (a target of
     * {@code 2^62 + 256} doubles to {@code 2^63 + 512}, then to {@code 1024}).
     * DEVIATION(port): where that gives 0, after which upstream's next {@code Extend} never
     * returns (its doubling loop stays at 0), the target stays at 2^63 (unsigned) instead: at
     * least any available byte count, so {@code Extend} asks for what is available.
     */
    private static long doubled(long bytes) {
        final long twice = bytes << 1;
        return twice == 0 ? Long.MIN_VALUE : twice;
    }

    // AllocateChunk and DeallocateChunk: ChunkTable.allocateChunk and deallocateChunk.

    /** Port of {@code BFCAllocator::AllocateRawInternalWithRetry}. */
    private long allocateRawInternalWithRetry(long alignment, long numBytes,
            AllocationAttributes attr, long owner) {
        // Fast path: try once to allocate without getting the retry helper involved.
        long r = allocateRawInternal(alignment, numBytes, false, freedByCount(attr), false,
                owner);
        if (r != 0) {
            return r;
        }
        if (canNeverFit(roundedBytes(numBytes))) {
            // DEVIATION(port): upstream waits up to 10 s for frees even for a request that no
            // free can serve; here only the retry's last (verbose) attempt is made, at once.
            return allocateRawInternal(alignment, numBytes, true, freedByCount(attr), true,
                    owner);
        }
        // The retry helper's verbose attempt is its last.
        return retryHelper.allocateRaw(
                (a, nb, v) -> allocateRawInternal(a, nb, v, freedByCount(attr), v, owner),
                MAX_MILLIS_TO_WAIT, alignment, numBytes);
    }

    /**
     * Not in upstream: whether no free can ever make room for {@code roundedBytes}: they exceed
     * the memory limit (so no region is obtained for them) and the pool (so no chunk holds them,
     * every chunk being at most the pool; the pool exceeds the limit only where a sub-allocator
     * hands out more than asked).
     */
    private boolean canNeverFit(long roundedBytes) {
        if (roundedBytes <= memoryLimit) {
            return false;
        }
        lockChecked();
        try {
            return roundedBytes > poolBytes;
        } finally {
            lock.unlock();
        }
    }

    private static long freedByCount(AllocationAttributes attr) {
        LongSupplier f = attr.freedByFunc();
        return f == null ? 0 : f.getAsLong();
    }

    /**
     * Port of {@code BFCAllocator::AllocateRaw(alignment, num_bytes, attr)}. The arguments
     * are checked by the facade.
     *
     * @param owner not in upstream: 0 for a raw allocation; {@link ChunkTable#HANDLE_OWNED} for
     *     an {@link Allocation} handle's chunk, marked as the handle's in the lock hold that finds
     *     it, so that a raw free of its address is refused from the start (the handle's maker
     *     frees it with {@link #deallocateOwned} if it makes no handle);
     *     {@link ChunkTable#lentBy(int)} of a loan for memory lent to a runtime, freed by
     *     that loan's {@link #deallocateLent} only
     * @return the address, or 0
     * @throws IllegalStateException if the allocator is closed
     */
    long allocateRaw(long alignment, long numBytes, AllocationAttributes attr, long owner) {
        if (numBytes > MAX_ALLOCATION_BYTES) {
            // DEVIATION(port): fails at once, see MAX_ALLOCATION_BYTES.
            lockChecked();
            try {
                checkOpenLocked();
                callAlignment = alignment;
                callNumBytes = numBytes;
                onOutOfMemoryLocked(numBytes, numBytes, false);
            } finally {
                lock.unlock();
            }
            LOG.log(Level.WARNING, "Allocator ({0}) cannot allocate {1} bytes: more than the"
                    + " largest possible request of {2} bytes.", logName, numBytes, MAX_ALLOCATION_BYTES);
            listener.outOfMemoryReported(numBytes);
            return 0;
        }
        if (!opts.allowRetryOnFailure() || !attr.retryOnFailure()) {
            // Upstream dumps the memory log for the first failures of "important" allocations
            // (those that may be retried) when retry is globally disabled.
            boolean dumpLogOnFailure = !opts.allowRetryOnFailure() && attr.retryOnFailure()
                    && FAILURE_LOG_COUNTER.get() < MAX_FAILURE_LOGS;
            long freedByCount = freedByCount(attr);
            long res = allocateRawInternal(alignment, numBytes, dumpLogOnFailure, freedByCount, true,
                    owner);
            if (res == 0 && numBytes != 0) {
                int counterValue = FAILURE_LOG_COUNTER.get();
                if (counterValue < MAX_FAILURE_LOGS) {
                    FAILURE_LOG_COUNTER.set(counterValue + 1);
                    LOG.log(Level.WARNING, "Allocator ({0}) ran out of memory trying to allocate "
                            + "{1} bytes with freed_by_count={2}.{3}", logName, numBytes,
                            Long.toUnsignedString(freedByCount), attr.retryOnFailure() ? ""
                                    : " The caller indicates that this is not a failure, but this"
                                    + " may mean that there could be performance gains if more"
                                    + " memory were available.");
                }
                listener.outOfMemoryReported(numBytes);
            }
            return res;
        }
        long r = allocateRawInternalWithRetry(alignment, numBytes, attr, owner);
        if (r == 0 && numBytes != 0) {
            listener.outOfMemoryReported(numBytes);
        }
        return r;
    }

    /**
     * Not in upstream: one attempt of {@code AllocateRawInternal} whose failure is not the
     * allocation's failure (no out-of-memory event, log, listener or count, no wait for frees),
     * for {@link ShardedBfcAllocator}, which then tries its other shards. The arguments are
     * checked by the caller.
     *
     * @param owner who owns the chunk, as in {@link #allocateRaw}
     * @return the address, or 0
     * @throws IllegalStateException if the allocator is closed
     */
    long tryAllocateRaw(long alignment, long numBytes, AllocationAttributes attr, long owner) {
        if (numBytes > MAX_ALLOCATION_BYTES) {
            return 0;
        }
        return allocateRawInternal(alignment, numBytes, false, freedByCount(attr), false,
                owner);
    }

    /** Port of {@code BFCAllocator::RoundedBytes}: rounds up to a multiple of 256. */
    static long roundedBytes(long bytes) {
        return ((bytes + MIN_ALLOCATION_SIZE - 1) >>> MIN_ALLOCATION_BITS) << MIN_ALLOCATION_BITS;
    }

    /** Port of {@code BFCAllocator::DeallocateFreeRegions}. Needs the lock. */
    private boolean deallocateFreeRegionsLocked(long roundedBytes) {
        // Do nothing if garbage collection is off.
        if (!opts.garbageCollection()) {
            return false;
        }

        // Search for free regions.
        final int regionCount = regionManager.regions().size();
        final boolean[] free = new boolean[regionCount];
        long totalFreeBytes = 0;
        for (int i = 0; i < regionCount; i++) {
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

        // Rough estimation to check whether deallocation can help. DEVIATION(port) (#10): below 0
        // where a sub-allocator returned more than asked, so nothing is given back; upstream's
        // size_t wraps around there and gives the free regions back whatever the request.
        long availableBytes = memoryLimit - poolBytes + totalFreeBytes;
        if (roundedBytes > availableBytes) {
            return false;
        }

        LOG.log(Level.DEBUG, () -> "Garbage collection: deallocate free memory regions of "
                + logName + " so that a larger region can be re-allocated to avoid OOM due to"
                + " memory fragmentation.");

        // Deallocate free regions.
        deallocateRegionsLocked(free, roundedBytes);
        return true;
    }

    /**
     * Port of {@code BFCAllocator::DeallocateRegions}: frees the regions flagged in
     * {@code free} (indexed like {@link RegionManager#regions()}), in address order, for the
     * garbage collection of a request of {@code requestBytes} (0: {@code emptyCache()}). Needs
     * the lock.
     *
     * @throws RuntimeException the first exception (or {@link Error}) of the sub-allocator's
     *     frees (the later ones suppressed by it), once every flagged region is given up
     */
    private void deallocateRegionsLocked(boolean[] free, long requestBytes) {
        final List<AllocationRegion> regions = regionManager.regions();
        Throwable failure = null;
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

            // Deallocate the memory. Told before the sub-allocator's free: once freed, the range
            // may be another allocator's (a shard's), whose event must come after this one.
            poolBytes -= region.memorySize();
            onRegionReturnedLocked(region.ptr(), region.memorySize(), requestBytes);
            failure = freeRegion(region, failure);
            regionManager.removeAllocationRegion(it);
        }
        // Not in upstream: the address map lets the deleted chunks' empty pages and directories
        // go, once every region is given up, and an Error there (out of heap, rebuilding its
        // block table; the map is whole then) joins the sub-allocator's exceptions, never
        // replaces them.
        try {
            regionManager.trimHandles();
        } catch (Throwable t) {
            failure = collect(failure, t);
        }
        throwIfAny(failure);
    }

    /**
     * Gives a region to the sub-allocator's {@code free}. DEVIATION(port): upstream's
     * {@code SubAllocator::Free} cannot fail; here one that throws (a CUDA error) leaves the
     * region given up all the same, so the books stay whole and the other regions are still
     * freed; the sub-allocator keeps what it could not free (bfc-cuda's free it at their close;
     * docs/deviations.md #27). An {@link Error} (a sub-allocator out of heap, or of stack) is
     * taken as any exception: thrown once the books are whole, never between two states.
     *
     * @return {@code failure}, or the exception of this free, added to it as suppressed
     */
    private Throwable freeRegion(AllocationRegion region, Throwable failure) {
        try {
            subAllocator.free(region.ptr(), region.memorySize());
            return failure;
        } catch (Throwable e) {
            return collect(failure, e);
        }
    }

    /**
     * Collects the failures of steps that are all attempted (the regions' frees, the shards'
     * closes): the first is the one thrown, the later ones are suppressed by it.
     *
     * @return {@code first} with {@code next} suppressed by it, or {@code next} if it is the first
     */
    static <T extends Throwable> T collect(T first, T next) {
        if (first == null) {
            return next;
        }
        if (next != first) { // one instance thrown twice (a shared one) cannot suppress itself
            first.addSuppressed(next);
        }
        return first;
    }

    /**
     * Whether a free chunk stamped {@code freedAtCount} is not yet safe at {@code frontier}: it
     * was stamped (0 is no stamp) at or after the frontier. {@code emptyCache()} keeps its region
     * and the summary counts it.
     */
    static boolean notYetSafe(long freedAtCount, long frontier) {
        return freedAtCount != 0 && Long.compareUnsigned(freedAtCount, frontier) >= 0;
    }

    /**
     * Ends steps that were all attempted: throws the first failure, if any, as it was (an
     * unchecked exception or an {@link Error}; a checked one that a sub-allocator threw
     * undeclared, wrapped in {@link UndeclaredThrowableException}).
     */
    static void throwIfAny(Throwable failure) {
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
        if (failure != null) {
            throw new UndeclaredThrowableException(failure);
        }
    }

    /**
     * Port of {@code BFCAllocator::AllocateRawInternal}.
     *
     * @param lastAttempt not in upstream: whether a failure here is the failure of the
     *     {@code AllocateRaw} (false for the attempts that the retry repeats); only then is the
     *     out-of-memory event point reached
     * @param owner not in upstream: who owns the chunk found ({@link #callOwner})
     */
    private long allocateRawInternal(long alignment, long numBytes, boolean dumpLogOnFailure,
            long freedBefore, boolean lastAttempt, long owner) {
        if (numBytes == 0) {
            return 0;
        }
        // Always allocate a multiple of 256 bytes, so that every address is nicely aligned.
        final long roundedBytes = roundedBytes(numBytes);

        // The BFC allocator tries to find the best fit first.
        final int binNum = binNumForSize(roundedBytes);

        refuseInAnotherShardsWalk();
        lock.lock();
        try {
            checkOpenLocked();
            callAlignment = alignment;
            callNumBytes = numBytes;
            callOwner = owner;
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

    /** Port of {@code BFCAllocator::LargestFreeChunk}: the last chunk of the highest non-empty bin. Needs the lock. */
    private long largestFreeChunkLocked() {
        for (int b = NUM_BINS - 1; b >= 0; b--) {
            int h = bins[b].last();
            if (h != FreeChunkSet.NONE) {
                return chunks.size(h);
            }
        }
        return 0;
    }

    /**
     * Port of {@code BFCAllocator::GetFragmentation}: {@code (free - largest free) / free}.
     * DEVIATION(port): 0 when nothing is free, where upstream divides by 0. Needs the lock.
     */
    private double getFragmentationLocked() {
        final long bytesAvailable = poolBytes - bytesInUse;
        return bytesAvailable <= 0 ? 0.0
                : (double) (bytesAvailable - largestFreeChunkLocked()) / bytesAvailable;
    }

    // AddTraceMe: not ported (docs/deviations.md); the event points at the end of this class
    // are where the allocator tells what it did.

    /** Port of {@code BFCAllocator::FindChunkPtr}. Needs the lock. */
    private long findChunkPtrLocked(int binNum, long roundedBytes, long numBytes, long freedBefore) {
        final ChunkTable chunks = this.chunks;
        // First identify the first bin that could satisfy roundedBytes.
        for (; binNum < NUM_BINS; binNum++) {
            // Search from the smallest chunk that fits roundedBytes: upstream scans the bin
            // from its start and skips smaller chunks; ceilingSize() starts where the first
            // candidate is, with the same (size, address) order: the bin's first chunk when it
            // fits (O(1), as upstream's begin()), else a walk down the tree.
            final FreeChunkSet freeChunks = bins[binNum];
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
                // If the chunk can be broken into two reasonably large pieces, don't waste more
                // than maxInternalFragmentationBytes on padding. (Written without
                // roundedBytes * 2, which could overflow.)
                final long size = chunks.size(h);
                final boolean split = size - roundedBytes >= roundedBytes
                        || size - roundedBytes >= maxInternalFragmentationBytes;
                if (split) {
                    // Not in upstream: the split's handle is made room for before the chunk
                    // leaves its bin, so that an Error growing the chunk table (out of heap)
                    // leaves the chunk free and binned, the allocator as it was.
                    chunks.ensureSpareHandle();
                    if (!lazyAddressMap) {
                        // Likewise the address map, which then records the split's rest at
                        // once (splitChunkLocked): room for it, or its refusal of a start
                        // sharing a 256-byte slot, before anything changes.
                        regionManager.reserveHandle(chunks.ptr(h) + roundedBytes);
                    }
                }

                // DEVIATION(port): a split's rest enters the address map when it is first
                // allocated (lazyAddressMap). Its start is the same after the split below, so it
                // enters before the chunk leaves its bin: an Error growing the map (out of heap)
                // leaves the chunk free and binned, the map as it was.
                if (!chunks.mapped(h)) {
                    regionManager.setHandle(chunks.ptr(h), h);
                }

                // We found an existing chunk that fits us that wasn't in use, so remove it from
                // the free bin structure prior to using.
                removeFreeChunkIterFromBinLocked(freeChunks, h);

                if (split) {
                    splitChunkLocked(h, roundedBytes);
                }

                // The requested size of the returned chunk is what the user has allocated.
                chunks.setRequestedSize(h, numBytes);
                // Assign a unique id and increment the id counter, marking the chunk in use.
                chunks.setAllocationId(h, nextAllocationId++);
                if (callOwner != 0) {
                    // Not in upstream: the chunk of an Allocation handle (or of a loan) is its
                    // owner's from this hold on; no raw free can take it before the handle is
                    // made (or the runtime has the address).
                    chunks.setOwner(h, callOwner);
                }

                // Update stats.
                final long chunkSize = chunks.size(h);
                ++numAllocs;
                bytesInUse += chunkSize;
                peakBytesInUse = Math.max(peakBytesInUse, bytesInUse);
                largestAllocSize = Math.max(largestAllocSize, chunkSize);

                // Where upstream's TENSORFLOW_MEM_DEBUG build records the op.
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
        final boolean lazy = lazyAddressMap;
        if (!lazy) {
            regionManager.setHandle(newPtr, hNewChunk);
        }

        // Set the new sizes of the chunks.
        chunks.setSize(hNewChunk, chunks.size(h) - numBytes);
        chunks.setSize(h, numBytes);

        // The new chunk is not in use (nor, with the lazy address map, in the map yet).
        chunks.setAllocationId(hNewChunk, lazy ? ChunkTable.FREE_UNMAPPED : -1);

        // It inherits the freed time (0, not read, if no timing counter was ever set: a recycled
        // handle's stale freedAtCount is 0 then too).
        if (timingCounterEverSet) {
            chunks.setFreedAtCount(hNewChunk, chunks.freedAtCount(h));
        }

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

    /**
     * Port of {@code BFCAllocator::DeallocateRaw}.
     *
     * @throws IllegalArgumentException if {@code ptr} is not an allocation of this allocator
     * @throws IllegalStateException if the allocator is closed
     */
    void deallocateRaw(long ptr) {
        deallocateRawInternal(ptr, 0, null);
        retryHelper.notifyDealloc();
    }

    /**
     * Not in upstream: {@code DeallocateRaw} of memory lent to a runtime
     * ({@link MemoryAllocator.Loan#deallocateRaw}): frees the chunk at {@code ptr} only if it was
     * allocated through the loan numbered {@code loan} ({@link ChunkTable#lentBy(int)}).
     *
     * @param lent the loan's count of chunks lent, decremented under the lock once the chunk is
     *     sure to be freed (also where a listener told of the free throws)
     * @throws IllegalArgumentException if no chunk lent through that loan starts at {@code ptr};
     *     the allocator is unchanged
     * @throws IllegalStateException if the allocator is closed
     */
    void deallocateLent(long ptr, int loan, AtomicLong lent) {
        if (deallocateRawInternal(ptr, -ChunkTable.lentBy(loan), lent)) {
            retryHelper.notifyDealloc();
        }
    }

    /**
     * Ends the waits of the retry loop, after a close: the allocations waiting wake, and those
     * that fail later do not wait; each makes its last attempt, which finds the allocator closed.
     */
    void endRetryWaits() {
        retryHelper.close();
    }

    /**
     * {@code DeallocateRaw} for an {@link Allocation} handle and leak detection: frees the chunk
     * at {@code ptr} only if it is still the allocation {@code allocationId}, and nothing if the
     * allocator was closed (by force) before.
     *
     * @return whether a chunk was freed
     * @throws IllegalStateException if the chunk at {@code ptr} is not that allocation (never,
     *     unless the handle's books are wrong: raw frees of handle-owned chunks are refused)
     */
    boolean deallocateOwned(long ptr, long allocationId) {
        if (!deallocateRawInternal(ptr, allocationId, null)) {
            return false;
        }
        retryHelper.notifyDealloc();
        return true;
    }

    /**
     * @return whether the chunk starting at {@code ptr} is in use and owned by the
     *     {@link Allocation} handle of allocation {@code allocationId}; false once the allocator
     *     is closed; true, without taking the lock, on a thread that walks another shard's
     *     chunks (whose free of it was refused before it changed anything)
     */
    boolean ownedByHandle(long ptr, long allocationId) {
        if (inAnotherShardsWalk()) {
            // The free was refused before it took the lock (refuseInAnotherShardsWalk), so it
            // changed nothing; waiting for the lock here could deadlock as that free would have.
            return true;
        }
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            final int h = regionManager.getHandle(ptr);
            return h != ChunkTable.INVALID_CHUNK_HANDLE && chunks.ownedByHandle(h, allocationId);
        } finally {
            lock.unlock();
        }
    }

    /**
     * @param h a live chunk handle
     * @return whether the chunk is in use and owned by an {@link Allocation} handle (or by the
     *     {@code allocate} that is making one). Needs the lock.
     */
    boolean handleOwnedLocked(int h) {
        return chunks.handleOwned(h);
    }

    /**
     * Port of {@code BFCAllocator::DeallocateRawInternal}.
     *
     * @param ownerAllocationId 0 for a raw free; for a loan's, minus its
     *     {@link ChunkTable#lentBy(int)}; else the allocation id of the {@link Allocation} handle
     *     freeing its chunk (not in upstream: a handle frees only its own allocation, and nothing
     *     once the allocator is closed; a loan only the memory it lent; a raw free neither)
     * @param lent for a loan's free, its count of chunks lent, decremented once the chunk is
     *     sure to be freed; else null
     * @return true if a chunk was freed
     */
    private boolean deallocateRawInternal(long ptr, long ownerAllocationId, AtomicLong lent) {
        if (ptr == 0) {
            return false;
        }
        refuseInAnotherShardsWalk();
        lock.lock();
        try {
            if (ownerAllocationId > 0 && closed) {
                return false;
            }
            checkOpenLocked();
            // Find the chunk from the ptr.
            final int h = regionManager.getHandle(ptr);
            // DEVIATION(port): upstream CHECK-fails (aborts the process), or, for an address 1 to
            // 255 bytes past a chunk's start (in that start's 256-byte slot), frees that chunk;
            // here the caller gets an exception and the allocator is unchanged.
            // Not in upstream: a raw free of a chunk that an Allocation handle or a loan owns is
            // refused, a handle frees only its own allocation (its id, under this lock), and a
            // loan only lent memory.
            if (h == ChunkTable.INVALID_CHUNK_HANDLE || (ownerAllocationId == 0 ? !chunks.inUseRaw(h)
                    : ownerAllocationId < 0 ? !chunks.lentBy(h, -ownerAllocationId)
                    : !chunks.ownedByHandle(h, ownerAllocationId))) {
                throw refusedFreeLocked(ptr, h, ownerAllocationId);
            }
            if (timingCounter != null) {
                // Not in upstream: the timestamp queue makes room for the chunk before anything
                // changes, so that an Error growing it (out of heap) leaves the chunk allocated,
                // as it was, and never free but out of the queue (never merged once safe).
                timestampedChunks.ensureCapacity(timestampedChunks.size() + 1);
            }
            if (lent != null) {
                // Not in upstream: from here on the chunk is freed, even if a listener throws.
                lent.decrementAndGet();
            }

            // Where upstream records the chunk before it is freed, for its trace.
            try {
                onFreeLocked(h);
            } catch (Throwable t) {
                // Not in upstream: a listener threw (an OutOfMemoryError, say); the free is
                // counted, so the chunk is freed all the same, as onAllocatedLocked gives back.
                freeChunkLocked(h);
                throw t;
            }

            freeChunkLocked(h);
            return true;
        } finally {
            unlockAfterCall();
        }
    }

    /**
     * The rest of {@code DeallocateRawInternal} once the chunk is found: marks chunk {@code h}
     * free and puts it in a bin, coalesced with its free neighbours, or, with a timing counter,
     * stamped and queued. Needs the lock.
     */
    private void freeChunkLocked(int h) {
        markFreeLocked(h);

        // Consider coalescing it.
        if (timingCounter != null) {
            insertFreeChunkIntoBinLocked(h);
            timestampedChunks.pushBack(h);
            final PortListener l = callListener;
            if (l != null) {
                l.stampedLocked(h);
            }
        } else {
            insertFreeChunkIntoBinLocked(tryToCoalesceLocked(h, false));
        }
    }

    /**
     * The exception of a free that {@code deallocateRawInternal} refuses, the allocator
     * unchanged. Built here so that the free itself stays small. Needs the lock.
     */
    private RuntimeException refusedFreeLocked(long ptr, int h, long ownerAllocationId) {
        final boolean inUse = h != ChunkTable.INVALID_CHUNK_HANDLE && chunks.inUse(h);
        if (ownerAllocationId == 0) {
            if (inUse && chunks.lender(h) != 0) {
                // Not in upstream: memory lent to a runtime is freed by the runtime (through the
                // loan) only, so that a double free of an address of the caller's own, handed to
                // the runtime since, cannot free memory the runtime still uses.
                return new IllegalArgumentException("0x" + Long.toHexString(ptr)
                        + " is allocation #" + chunks.allocationId(h) + " of allocator " + described
                        + ", lent to " + runtimeOf(chunks.lender(h))
                        + ", which frees it itself: do not free it with deallocateRaw (if it was"
                        + " an address of your own, you freed it before, and the runtime was given"
                        + " it since: free each address exactly once). Nothing was freed.");
            }
            if (inUse) {
                // Not in upstream: memory behind an Allocation handle is freed by the handle
                // only, so that it can never free (or view) another allocation's memory.
                return new IllegalArgumentException("0x" + Long.toHexString(ptr)
                        + " is allocation #" + chunks.allocationId(h) + " of allocator " + described
                        + ", owned by an Allocation handle: close the Allocation instead of"
                        + " freeing its address with deallocateRaw. Nothing was freed.");
            }
            return new IllegalArgumentException("0x" + Long.toHexString(ptr)
                    + " was not allocated by allocator " + described + " (or was already"
                    + " freed). Free each address returned by allocateRaw exactly once.");
        }
        if (ownerAllocationId < 0) {
            final int lender = inUse ? chunks.lender(h) : 0;
            return new IllegalArgumentException("0x" + Long.toHexString(ptr) + " is "
                    + (!inUse ? "not allocated by allocator " + described + " (or was already freed)"
                    : "allocation #" + chunks.allocationId(h) + " of allocator " + described + ", "
                            + (lender != 0 ? "lent to " + runtimeOf(lender) + " through another loan"
                            : chunks.handleOwned(h) ? "owned by an Allocation handle" : "a raw allocation")
                            + ", not memory this loan (to "
                            + runtimeOf(ChunkTable.lenderIn(-ownerAllocationId)) + ") lent")
                    + ": a loan frees only what it lent, each address once. Nothing was freed.");
        }
        return new IllegalStateException("the Allocation handle of allocation #" + ownerAllocationId
                + " at 0x" + Long.toHexString(ptr) + " of allocator " + described + " found "
                + (!inUse ? "a free chunk" : (chunks.handleOwned(h) ? "" : chunks.lender(h) != 0 ? "lent "
                        : "raw ") + "allocation #"
                        + chunks.allocationId(h)) + " there: its memory was freed by other means;"
                + " nothing was freed");
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

        // Pick the latest free time (both 0 if no timing counter was ever set).
        if (timingCounterEverSet) {
            chunks.setFreedAtCount(h1, maxUnsigned(chunks.freedAtCount(h1), chunks.freedAtCount(h2)));
        }

        deleteChunkLocked(h2);
    }

    /** Port of {@code BFCAllocator::DeleteChunk}. Needs the lock. */
    private void deleteChunkLocked(int h) {
        if (chunks.mapped(h)) {
            regionManager.erase(chunks.ptr(h));
        }
        chunks.deallocateChunk(h);
    }

    /** Port of {@code BFCAllocator::InsertFreeChunkIntoBin}. Needs the lock. */
    private void insertFreeChunkIntoBinLocked(int h) {
        check(!chunks.inUse(h) && chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM,
                "InsertFreeChunkIntoBin of a chunk in use or already in a bin");
        final int binNum = binNumForSize(chunks.size(h));
        chunks.setBinNum(h, binNum);
        bins[binNum].add(h);
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
        check(bins[chunks.binNum(h)].remove(h), "Could not find chunk in bin");
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
        // Not in upstream: every freedAtCount is 0 until a timing counter is set, and is then
        // not read (one array, a cache line per chunk, fewer per free).
        final boolean checkFreedAt = timingCounterEverSet && !ignoreFreedAt;
        if (checkFreedAt && chunks.freedAtCount(h) != 0) {
            return h;
        }
        int coalescedChunk = h;

        // If the next chunk is free, merge it into c and delete it.
        int next = chunks.next(h);
        if (next != ChunkTable.INVALID_CHUNK_HANDLE && !chunks.inUse(next)) {
            if (!checkFreedAt || chunks.freedAtCount(next) == 0) {
                removeFreeChunkFromBinLocked(next);
                mergeLocked(h, next);
            }
        }

        // If the previous chunk is free, merge c into it and delete c.
        int prev = chunks.prev(h);
        if (prev != ChunkTable.INVALID_CHUNK_HANDLE && !chunks.inUse(prev)) {
            if (!checkFreedAt || chunks.freedAtCount(prev) == 0) {
                coalescedChunk = prev;
                removeFreeChunkFromBinLocked(prev);
                mergeLocked(prev, h);
            }
        }
        return coalescedChunk;
    }

    /** Port of {@code BFCAllocator::SetSafeFrontier}. */
    void setSafeFrontier(long count) {
        long current = safeFrontier.get();
        while (Long.compareUnsigned(count, current) > 0) {
            if (safeFrontier.compareAndSet(current, count)) {
                // DEVIATION(port) (docs/deviations.md #32): a listener waiting for the frontier
                // (a recorded history's stamped frees) hears of it. Nothing recorded: one
                // volatile read of null.
                final PortListener l = frontierListener;
                if (l != null && l.awaitsFrontier()) {
                    frontierAdvanced();
                }
                retryHelper.notifyDealloc();
                return;
            }
            current = safeFrontier.get();
        }
    }

    /**
     * Tells the listener that the frontier moved, under the lock (not in upstream, whose
     * {@code SetSafeFrontier} takes no lock: only while a recorded free waits for it). Not on a
     * thread inside a sub-allocator call made without the lock, nor on one that walks another
     * shard's chunks ({@link #refuseInAnotherShardsWalk}), where waiting for the lock could
     * deadlock ({@link #lockChecked()}): the listener hears of this frontier at its next call.
     */
    private void frontierAdvanced() {
        ViewPins calls = subAllocatorCalls;
        if (calls != null && calls.callerIsCurrentThread() && !lock.isHeldByCurrentThread()
                || inAnotherShardsWalk()) {
            return;
        }
        lock.lock();
        try {
            final PortListener l = callListener;
            if (!closed && l != null) {
                l.frontierAdvancedLocked(safeFrontier.get());
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Not in upstream: the allocator is about to act on {@code frontier} (merge the chunks it
     * made safe, give their regions back), possibly before the {@code setSafeFrontier} that
     * moved it has told the listener under the lock: tells it first, so that it sees each
     * waiting chunk the frontier passed as the free left it. Nothing recorded: one field read.
     * Needs the lock.
     */
    private void frontierReadLocked(long frontier) {
        final PortListener l = callListener;
        if (l != null && l.awaitsFrontier()) {
            l.frontierAdvancedLocked(frontier);
        }
    }

    /** Port of {@code BFCAllocator::MergeTimestampedChunks}. Needs the lock. */
    private boolean mergeTimestampedChunksLocked(long requiredBytes) {
        boolean satisfied = requiredBytes == 0;
        final long frontier = safeFrontier.get();
        frontierReadLocked(frontier);
        final IntDeque toMerge = this.toMerge;
        toMerge.clear();
        final IntDeque newTsQueue = this.newTsQueue;
        newTsQueue.clear();
        // Not in upstream: each queued chunk moves to toMerge or newTsQueue, and below at most
        // one handle per chunk of toMerge goes back to the queue (newTsQueue after the swap):
        // with this room made first, an Error growing them (out of heap) leaves the queue whole.
        final int queued = timestampedChunks.size();
        toMerge.ensureCapacity(queued);
        newTsQueue.ensureCapacity(queued);
        while (!timestampedChunks.isEmpty()) {
            final int c = timestampedChunks.popFront();
            assert c != ChunkTable.INVALID_CHUNK_HANDLE;
            // This chunk may have been merged already. Upstream refetches the handle by the
            // chunk's address and skips the entry if no chunk starts there. DEVIATION(port)
            // (representation only, docs/deviations.md #28): that lookup is left out, as it
            // changes nothing: a live handle's address gives the handle itself, and a handle
            // deleted since (it keeps its old address, as upstream's; garbage collection may
            // have given its region back) is in no bin, so the next test skips it either way.
            // A recycled handle is a live chunk, as upstream's lookup finds it.
            if (chunks.inUse(c) || chunks.binNum(c) == ChunkTable.INVALID_BIN_NUM) {
                // This chunk has already been reallocated.
                continue;
            }
            if (chunks.freedAtCount(c) == 0) {
                toMerge.pushBack(c);
                continue;
            }
            // The chunk is free and in a bin.
            if (Long.compareUnsigned(chunks.freedAtCount(c), frontier) < 0) {
                chunks.setFreedAtCount(c, 0);
                toMerge.pushBack(c);
            } else if (requiredBytes > 0) {
                toMerge.pushBack(c);
            } else {
                newTsQueue.pushBack(c);
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
            final int h = toMerge.get(ci);
            // The chunk may have been merged and deleted in a prior iteration. Upstream
            // refetches the handle by address; here (#28) the handle tells: this loop creates
            // no chunk and recycles no handle, every live chunk it meets is free and in a bin
            // between iterations, and a deleted one is in none.
            if (chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM) {
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

    // TracksAllocationSizes: BfcAllocator.tracksAllocationSizes.

    /**
     * Upstream's {@code region_manager_.get_handle(ptr)}: the chunk starting at {@code ptr},
     * free or in use. The address map answers for every chunk in use; with the lazy address map
     * a free chunk it does not hold is found by walking its region (slow path: queries only).
     * Needs the lock.
     *
     * @return the handle, or {@link ChunkTable#INVALID_CHUNK_HANDLE} if no chunk starts there
     */
    private int handleAtLocked(long ptr) {
        final int h = regionManager.getHandle(ptr);
        if (h != ChunkTable.INVALID_CHUNK_HANDLE || !lazyAddressMap) {
            return h;
        }
        final int r = regionManager.regionIndexFor(ptr);
        if (r < 0) {
            return ChunkTable.INVALID_CHUNK_HANDLE;
        }
        for (queryWalk.region(r); queryWalk.next(); ) {
            final long start = queryWalk.ptr();
            if (start == ptr) {
                return queryWalk.handle();
            }
            if (Long.compareUnsigned(start, ptr) > 0) {
                break;
            }
        }
        return ChunkTable.INVALID_CHUNK_HANDLE;
    }

    /**
     * Ends the lazy address map: records the start of every chunk the map does not hold, so
     * that it holds every chunk start, as upstream's does. Slow path (once per allocator).
     * Needs the lock.
     */
    private void mapEveryChunkStartLocked() {
        if (!lazyAddressMap) {
            return;
        }
        for (walk.all(); walk.next(); ) {
            final int h = walk.handle();
            if (!chunks.mapped(h)) {
                regionManager.setHandle(chunks.ptr(h), h);
                chunks.setAllocationId(h, -1);
            }
        }
        // Not before: an Error (out of heap) part-way leaves the map lazy, each chunk start
        // recorded so far marked as such (as a lazy map may hold any free chunk's), and the
        // next call starts again.
        lazyAddressMap = false;
    }

    /**
     * The chunk starting at {@code ptr}, for the queries. Needs the lock.
     *
     * @throws IllegalArgumentException as upstream's {@code CHECK}: no chunk starts there
     */
    private int handleForQueryLocked(long ptr, String what) {
        checkOpenLocked();
        int h = handleAtLocked(ptr);
        if (ptr == 0 || h == ChunkTable.INVALID_CHUNK_HANDLE) {
            throw new IllegalArgumentException("Asked for " + what + " of 0x"
                    + Long.toHexString(ptr) + ", which allocator " + described
                    + " never allocated. Pass an address returned by allocateRaw.");
        }
        return h;
    }

    /** Port of {@code BFCAllocator::RequestedSize}. */
    long requestedSize(long ptr) {
        lockChecked();
        try {
            return chunks.requestedSize(handleForQueryLocked(ptr, "requested size"));
        } finally {
            lock.unlock();
        }
    }

    /** Port of {@code BFCAllocator::AllocatedSize}. */
    long allocatedSize(long ptr) {
        lockChecked();
        try {
            return chunks.size(handleForQueryLocked(ptr, "allocated size"));
        } finally {
            lock.unlock();
        }
    }

    /** Port of {@code BFCAllocator::AllocationId}. */
    long allocationId(long ptr) {
        lockChecked();
        try {
            return chunks.allocationId(handleForQueryLocked(ptr, "allocation id"));
        } finally {
            lock.unlock();
        }
    }

    // RenderRegion, RenderOccupancy, DumpMemoryLog: DebugQueries. MaybeWriteMemoryMap: the
    // out-of-memory event point (OutOfMemoryReporter). RecordMemoryMap(Internal): MemoryReports.

    /** Port of {@code BFCAllocator::GetStats}. */
    AllocatorStats getStats() {
        lockChecked();
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

    /** Port of {@code BFCAllocator::ClearStats}. */
    boolean clearStats() {
        lockChecked();
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
     * Not in upstream (PyTorch's {@code reset_peak_memory_stats}): the peaks, and only they,
     * restart from the current values: {@code peak_bytes_in_use}, {@code peak_pool_bytes} and
     * the peak number of live allocations.
     */
    void resetPeakStats() {
        lockChecked();
        try {
            peakBytesInUse = bytesInUse;
            peakPoolBytes = poolBytes;
            counters.resetPeaks();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Not in upstream (PyTorch's {@code empty_cache}): gives every region without a chunk in
     * use back to the sub-allocator now, whatever {@code garbage_collection} says, through
     * upstream's {@code DeallocateRegions}. A region holding a free chunk whose timestamp is not
     * yet safe ({@link #setSafeFrontier}) is kept: its memory may still be in use (by a GPU
     * stream). Nothing on a closed allocator.
     *
     * @return the bytes given back
     */
    long emptyCache() {
        lockChecked();
        try {
            if (closed) {
                return 0;
            }
            final int regionCount = regionManager.regions().size();
            final boolean[] free = new boolean[regionCount];
            final long frontier = safeFrontier.get();
            frontierReadLocked(frontier);
            long released = 0;
            for (int i = 0; i < regionCount; i++) {
                boolean keep = false;
                for (walk.region(i); walk.next(); ) {
                    if (walk.inUse() || notYetSafe(walk.freedAtCount(), frontier)) {
                        keep = true;
                        break;
                    }
                }
                if (!keep) {
                    free[i] = true;
                    released += walk.regionBytes();
                }
            }
            if (released != 0) {
                deallocateRegionsLocked(free, 0);
            }
            return released;
        } finally {
            unlockAfterCall();
        }
    }

    // get_bin_debug_info: DebugQueries.

    /** Port of {@code BFCAllocator::GetMemoryType}. */
    MemoryType getMemoryType() {
        return subAllocator.memoryType();
    }

    // ---------------------------------------------------------------------------------------
    // From bfc_allocator.h
    // ---------------------------------------------------------------------------------------

    /** Upstream's {@code Name()}. */
    String name() {
        return name;
    }

    /**
     * How messages name this allocator, after the word "allocator": {@code 'NAME'}, or
     * {@code 'SHARDED' (shard I of N)} for a shard.
     */
    String described() {
        return described;
    }

    /**
     * Makes messages name this allocator as shard {@code index} of {@code count} of the sharded
     * allocator {@code sharded}: the name its user gave it. Called while constructing.
     */
    void describeAsShard(String sharded, int index, int count) {
        this.described = "'" + sharded + "' (shard " + index + " of " + count + ")";
        this.logName = sharded + " (shard " + index + " of " + count + ")";
        this.shardOf = sharded;
        this.shardIndex = index;
        this.shardCount = count;
    }

    /** Upstream's {@code memory_limit_}. */
    long memoryLimit() {
        return memoryLimit;
    }

    /** Upstream's {@code opts_}. */
    BfcOptions options() {
        return opts;
    }

    /** Port of {@code BFCAllocator::SetTimingCounter}. */
    void setTimingCounter(SharedCounter sc) {
        lockChecked();
        try {
            timingCounter = sc;
            timingCounterEverSet |= sc != null;
        } finally {
            lock.unlock();
        }
    }

    /** Upstream's {@code safe_frontier_}. */
    long safeFrontier() {
        return safeFrontier.get();
    }

    /** Port of {@code BFCAllocator::BinNumToSize}. */
    static long binNumToSize(int index) {
        return 256L << index;
    }

    /** Port of {@code BFCAllocator::BinNumForSize}: {@code min(20, floor(log2(max(bytes, 256) >> 8)))}. */
    static int binNumForSize(long bytes) {
        long v = Math.max(bytes, 256) >>> MIN_ALLOCATION_BITS;
        return Math.min(NUM_BINS - 1, 63 - Long.numberOfLeadingZeros(v));
    }

    /** Upstream's {@code CHECK}: an always-on check of an internal invariant. */
    static void check(boolean condition, String what) {
        if (!condition) {
            throw new IllegalStateException("BFC allocator invariant violated: " + what);
        }
    }

    private static long maxUnsigned(long a, long b) {
        return Long.compareUnsigned(a, b) >= 0 ? a : b;
    }

    // ---------------------------------------------------------------------------------------
    // Not in upstream: the lock for collaborators, closing, event points, the view
    // ---------------------------------------------------------------------------------------

    /** Takes the lock, for a collaborator that reads the view or calls a {@code Locked} method. */
    void lock() {
        lockChecked();
    }

    /**
     * Sets where this allocator's sub-allocator calls are made, so that {@link #lockChecked()}
     * can tell a thread inside one.
     */
    void guardSubAllocatorCalls(ViewPins pins) {
        this.subAllocatorCalls = pins;
    }

    /** Sets the loans whose runtimes a refused free of lent memory names. */
    void nameLoansBy(Loans loans) {
        this.loans = loans;
    }

    /** The runtime the loan numbered {@code loan} lends to, for a refused free's message. */
    private String runtimeOf(int loan) {
        return loans == null ? "a runtime" : loans.runtimeOf(loan);
    }

    /**
     * Takes the lock, but refuses a thread that is inside a call of the sub-allocator and does
     * not hold the lock: the free of a region that waited for views (on the cleaner's thread,
     * under the {@link ViewPins} monitor, which a thread holding this lock may be waiting for),
     * or a shard's region call reaching another shard (under the monitors the other shard's
     * thread may be waiting for). Waiting for the lock there could deadlock. The allocate and
     * free paths take the lock directly: the facade refuses those calls from any sub-allocator
     * call first. DEVIATION(port): upstream's sub-allocator calls come under its mutex only
     * (docs/deviations.md #31).
     *
     * @throws IllegalStateException on such a thread
     */
    private void lockChecked() {
        ViewPins calls = subAllocatorCalls;
        if (calls != null && calls.callerIsCurrentThread() && !lock.isHeldByCurrentThread()) {
            throw new IllegalStateException("allocator " + described + " was called from inside a call of its"
                    + " sub-allocator made without its lock (the free of a region that waited for views, on"
                    + " the cleaner's thread; or another shard's region call): waiting for its lock there"
                    + " could deadlock. A SubAllocator must not call back into the allocator there. Nothing"
                    + " was done.");
        }
        refuseInAnotherShardsWalk();
        lock.lock();
    }

    /**
     * @return whether {@link #refuseInAnotherShardsWalk} refuses the calling thread: it walks
     *     the chunks of another shard of the same sharded allocator
     */
    private boolean inAnotherShardsWalk() {
        return walkedInAnotherShard() != null;
    }

    /**
     * Refuses a thread that walks the chunks of another shard of the same sharded allocator
     * ({@link BfcAllocator#forEachChunk}, which holds that shard's lock): waiting for this lock
     * there could deadlock. Costs one volatile read while no walk is on.
     *
     * @throws IllegalStateException on such a thread
     */
    void refuseInAnotherShardsWalk() {
        final String walked = walkedInAnotherShard();
        if (walked != null) {
            // Not in upstream (which has no shards): the visitor holds another shard's lock.
            throw new IllegalStateException("allocator " + described + " was called from inside a visitor of"
                    + " the chunks of allocator " + walked + " (forEachChunk), which holds that shard's lock:"
                    + " waiting for this shard's lock there could deadlock with a thread that takes both"
                    + " (getStats(), snapshots() or close() of the sharded allocator, or a visitor of this"
                    + " shard calling that one). Collect what the visitor needs, and call this shard after"
                    + " the walk. Nothing was done.");
        }
    }

    /**
     * @return how messages name the other shard whose chunks the calling thread walks (holding
     *     that shard's lock, not this one's), or null; one volatile read while no walk is on
     */
    private String walkedInAnotherShard() {
        final ViewPins calls = subAllocatorCalls;
        if (calls == null || !calls.walkOn()) {
            return null;
        }
        final String walked = calls.walkedByCurrentThread();
        return walked != null && !lock.isHeldByCurrentThread() ? walked : null;
    }

    /** Releases the lock taken by {@link #lock()}. */
    void unlock() {
        lock.unlock();
    }

    /** @return whether the calling thread holds the lock */
    boolean lockHeldByCurrentThread() {
        return lock.isHeldByCurrentThread();
    }

    /** @return the read-only view of this state for the collaborators */
    PortView view() {
        return view;
    }

    /**
     * Installs who listens at the event points (replacing the last one) and the invariant
     * check run at the end of every call when {@code -Dbfc4j.checkInvariants=true}.
     */
    void install(PortListener l, Runnable check) {
        lockChecked();
        try {
            listener = Objects.requireNonNull(l, "listener");
            callListener = l.listensToCalls() ? l : null;
            frontierListener = callListener;
            invariantCheck = Objects.requireNonNull(check, "check");
        } finally {
            lock.unlock();
        }
    }

    /** @throws IllegalStateException if the allocator is closed. Needs the lock. */
    void checkOpenLocked() {
        if (closed) {
            throw new IllegalStateException("allocator " + described + " is closed");
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
                invariantCheck.run();
            }
        } finally {
            lock.unlock();
        }
    }

    // Event points: what the port tells beyond stats_. The counters are always bumped (plain
    // fields); the listener is told. Allocations and frees cost one null check when nothing
    // listens to them.

    /** A region was obtained from the sub-allocator. Needs the lock. */
    private void onRegionObtainedLocked(long ptr, long bytes, long requestBytes, long askedBytes) {
        counters.regionObtained(bytes);
        listener.regionObtainedLocked(ptr, bytes, requestBytes, askedBytes);
    }

    /**
     * A region was given back by garbage collection for a request of {@code requestBytes}, or
     * by {@code emptyCache()} (0). Needs the lock.
     */
    private void onRegionReturnedLocked(long ptr, long bytes, long requestBytes) {
        counters.regionReturned(bytes);
        listener.regionReturnedLocked(ptr, bytes, requestBytes);
    }

    /** Chunk {@code h} of {@code chunkBytes} was allocated. Needs the lock. */
    private void onAllocatedLocked(int h, long chunkBytes) {
        counters.allocated(chunkBytes);
        final PortListener l = callListener;
        if (l != null) {
            try {
                l.allocatedLocked(h);
            } catch (Throwable t) {
                giveBackLocked(h, t);
                throw t;
            }
        }
    }

    /**
     * Not in upstream: a listener (provenance, JFR) threw {@code failure} after chunk {@code h}
     * was taken for an allocation, whose caller then gets that exception instead of the address:
     * the chunk goes back, as a free that no listener hears of, so that the failed call leaks
     * nothing ({@link #freeUnhandedLocked}; an Error of the timestamp queue's growth there is
     * added to {@code failure} as suppressed). Needs the lock.
     */
    private void giveBackLocked(int h, Throwable failure) {
        counters.freed(chunks.size(h));
        final Throwable e = freeUnhandedLocked(h);
        if (e != null) {
            collect(failure, e);
        }
    }

    /**
     * Not in upstream: frees chunk {@code h}, in use but never handed to a caller (the call that
     * took it throws), where no Error may stop it. As any free ({@link #freeChunkLocked}: with a
     * timing counter, stamped and queued) when the timestamp queue has room for it or can grow;
     * where it cannot (out of heap), the chunk goes back as it was before it was taken, not
     * stamped by this free (no caller ever used it): its earlier stamp kept while not yet safe
     * (it is then binned as it is, and merged when its queue entry, if it still has one, comes
     * up), cleared once safe, and then coalesced with its free neighbours as an unstamped free
     * is. Cold path. Needs the lock.
     *
     * @return null, or the Error of the queue's growth (the chunk given back all the same)
     */
    private Throwable freeUnhandedLocked(int h) {
        if (timingCounter != null) {
            try {
                timestampedChunks.ensureCapacity(timestampedChunks.size() + 1);
            } catch (Throwable e) {
                check(chunks.inUse(h) && chunks.binNum(h) == ChunkTable.INVALID_BIN_NUM,
                        "give-back of a chunk not in use or in a bin");
                chunks.setAllocationId(h, -1);
                bytesInUse -= chunks.size(h);
                if (notYetSafe(chunks.freedAtCount(h), safeFrontier.get())) {
                    insertFreeChunkIntoBinLocked(h);
                } else {
                    chunks.setFreedAtCount(h, 0);
                    insertFreeChunkIntoBinLocked(tryToCoalesceLocked(h, false));
                }
                return e;
            }
        }
        freeChunkLocked(h);
        return null;
    }

    /**
     * Not in upstream: {@link #deallocateOwned} for a chunk whose address never reached a
     * caller: the {@code allocate} that took it for an {@link Allocation} handle throws (an
     * Error making the handle) or found no aligned run in it. The free is told and counted as
     * any; the chunk goes back even where the timestamp queue cannot grow for it
     * ({@link #freeUnhandedLocked}). Once the chunk is back, throws the exception of a listener
     * told of the free, or the Error of the queue's growth (the later one suppressed by the
     * first), as {@link #throwIfAny} does. Nothing if the allocator was closed (by force) since.
     */
    void giveBackOwned(long ptr, long allocationId) {
        Throwable failure = null;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            final int h = regionManager.getHandle(ptr);
            check(h != ChunkTable.INVALID_CHUNK_HANDLE && chunks.ownedByHandle(h, allocationId),
                    "the chunk given back is the allocation that took it");
            try {
                onFreeLocked(h);
            } catch (Throwable t) {
                failure = t;
            }
            final Throwable e = freeUnhandedLocked(h);
            if (e != null) {
                failure = collect(failure, e);
            }
        } finally {
            unlockAfterCall();
        }
        retryHelper.notifyDealloc();
        throwIfAny(failure);
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
     * The last attempt of an allocation failed (with the lock held since it looked for a
     * chunk). Needs the lock.
     */
    private void onOutOfMemoryLocked(long numBytes, long roundedBytes, boolean dumpLogOnFailure) {
        counters.outOfMemory();
        listener.outOfMemoryLocked(numBytes, roundedBytes, dumpLogOnFailure);
    }

    /** The read-only view of this state for the collaborators. */
    private final class View implements PortView {
        @Override
        public String name() {
            return name;
        }

        @Override
        public String described() {
            return described;
        }

        @Override
        public String logName() {
            return logName;
        }

        @Override
        public String userName() {
            return shardOf != null ? shardOf : name;
        }

        @Override
        public int shardIndex() {
            return shardIndex;
        }

        @Override
        public int shardCount() {
            return shardCount;
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
        public int deviceId() {
            return deviceId;
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
        public boolean coalescing() {
            return coalesceRegions;
        }

        @Override
        public long callAlignment() {
            return callAlignment;
        }

        @Override
        public long callNumBytes() {
            return callNumBytes;
        }

        @Override
        public boolean timingCounterSet() {
            return timingCounter != null;
        }

        @Override
        public long safeFrontier() {
            return safeFrontier.get();
        }

        @Override
        public boolean timingCounterEverSet() {
            return timingCounterEverSet;
        }

        @Override
        public boolean lazyAddressMap() {
            return lazyAddressMap;
        }

        @Override
        public long largestFreeChunk() {
            return largestFreeChunkLocked();
        }

        @Override
        public double fragmentation() {
            return getFragmentationLocked();
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
            return bins[binNum].size();
        }

        @Override
        public int binFirst(int binNum) {
            return bins[binNum].first();
        }

        @Override
        public int binHigher(int binNum, int h) {
            return bins[binNum].higher(h);
        }

        @Override
        public boolean binContains(int binNum, int h) {
            return bins[binNum].contains(h);
        }
    }
}
