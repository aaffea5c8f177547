/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ShardRegions;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * An opt-in mode for many allocating threads: several {@link BfcAllocator}s (shards) under one
 * memory limit, each thread allocating from a shard of its own. One {@code BfcAllocator} has one
 * lock, so its threads take turns however many cores there are; here threads on different
 * shards allocate in parallel.
 *
 * <pre>{@code
 * try (ShardedBfcAllocator allocator = ShardedBfcAllocator.builder()
 *         .name("host")
 *         .memoryLimit(1L << 30)
 *         .subAllocator(new AlignedHostSubAllocator())
 *         .build()) {
 *     long ptr = allocator.allocateRaw(64, 1 << 20);
 *     // ... any thread may free it:
 *     allocator.deallocateRaw(ptr);
 * }
 * }</pre>
 *
 * <p><b>What changes.</b> Each shard is a plain {@code BfcAllocator} (TensorFlow's algorithm,
 * exactly), but it sees only the calls of its own threads, and memory freed in one shard is
 * reused by that shard first. So placement differs from one {@code BfcAllocator} applied to
 * all the calls, and more memory may be reserved for the same live bytes (each shard keeps free
 * room of its own). Use a plain {@code BfcAllocator} where TensorFlow's placement must be
 * reproduced (traces, conformance), or where one or two threads allocate.
 *
 * <p><b>How a call goes.</b> A thread's first allocation gives it a home shard (shards are
 * handed out in turn); it allocates there from then on. A free goes to the shard whose region
 * holds the address, from any thread, without a common lock. The shards obtain their regions
 * from the one sub-allocator (calls to it are serialised, so it needs no thread safety) and
 * together hold at most {@link #memoryLimit()}. When the home shard cannot serve an allocation,
 * the other shards are tried in turn; when none can, every other shard gives its free regions
 * back ({@link BfcAllocator#emptyCache()}) and the home shard tries once more. (So a sharded
 * allocator of one shard decides exactly as one {@code BfcAllocator} does.) Only that last
 * failure is an out-of-memory: reported by the home shard (its statistics; its listeners and
 * dump, whose summary ends with the figures of all shards);
 * {@link #allocate} throws a {@link BfcOutOfMemoryException} with the figures of all shards
 * together, whose cause is the home shard's own.
 *
 * <p><b>Options.</b> Growth must be on (each shard grows as its threads need: without growth the
 * first shard would take the whole limit), and a failed allocation does not wait for frees
 * (retry on failure is off: frees in another shard would not wake it).
 *
 * <p><b>Seeing into it.</b> {@link #recordHistory} and {@link #recordAnnotations} reach every
 * shard, and {@link #writePyTorchPickle(Path)} writes them all as one snapshot for
 * pytorch.org/memory_viz; {@link #snapshots()} with {@code SnapshotTraces} writes their calls as
 * one workload trace. {@link #shards()} are ordinary allocators: take their own snapshots
 * and memory maps, bind their metrics one by one (allocation ids are unique within a shard
 * only). {@link #shardOf(long)} says which holds an address. {@link #largestHolders(int)} names
 * who holds the most of all shards together, and {@link MemoryHistory#liveAtPeakOfAll} what was
 * live at the peak of all shards together (from the histories of {@link #snapshots()}).
 *
 * <p>Thread-safe. The allocate/free path creates no Java object, also where another shard serves
 * what the home shard could not.
 */
public final class ShardedBfcAllocator implements MemoryAllocator {

    private static final System.Logger LOG = System.getLogger(BfcPort.LOGGER_NAME);

    private final String name;
    /** How messages name it, after the word "allocator": {@code 'NAME'} (made once, off the hot path). */
    private final String described;
    private final ClosePolicy closePolicy;
    private final BfcAllocator[] shards;
    /** Runtimes this allocator's memory is lent to, for close()'s advice. */
    private final Loans loans = new Loans();
    /** The shards' algorithms, called directly on the allocate/free path (one load fewer per call). */
    private final BfcPort[] ports;
    private final List<BfcAllocator> shardList;
    private final ShardRegions regions;
    /** Under {@link #regions}: where every shard's views are pinned. */
    private final ViewPins pins;
    private final AtomicInteger nextHome = new AtomicInteger();
    /** The index of the current thread's home shard, handed out in turn on first use. */
    private final ThreadLocal<Integer> home;
    /**
     * The figures of all shards read for the out-of-memory report of this thread's last failed
     * allocation ({@link #withAllShards}), for the exception {@link #allocate} throws: a holder
     * made on the thread's first slow path and kept, so that later ones create no object.
     */
    private final ThreadLocal<FailureFigures> failureFigures = ThreadLocal.withInitial(FailureFigures::new);
    /**
     * A cache of {@link #home} in front of it, indexed by the low bits of the thread's id; an
     * entry is {@code threadId << 16 | shard}, written once by its thread (read and written in
     * opaque mode: never torn). A {@code ThreadLocal} lookup costs about 10 ns per call
     * (measured on the allocate/free pair of one thread); this costs about 2. Threads whose ids
     * share an entry fall back to {@link #home} by turns.
     */
    private final long[] homeCache = new long[HOME_CACHE_ENTRIES];

    private static final int HOME_CACHE_ENTRIES = 1024;
    private static final VarHandle HOME_CACHE = MethodHandles.arrayElementVarHandle(long[].class);

    private ShardedBfcAllocator(Builder b) {
        this.name = b.name;
        this.described = "'" + b.name + "'";
        this.closePolicy = b.closePolicy;
        // Below the common cap: a region held back for views has left the shards' books.
        this.pins = new ViewPins(new AllocatorCalls(b.name, b.subAllocator));
        this.regions = new ShardRegions(pins, b.memoryLimit, this::anyShardCloseBegun);
        this.shards = new BfcAllocator[b.shards];
        for (int i = 0; i < shards.length; i++) {
            BfcAllocator.Builder shard = BfcAllocator.builder()
                    .name(b.name + "/" + i)
                    .memoryLimit(b.memoryLimit)
                    .subAllocator(regions.forShard(i))
                    .options(b.options)
                    .closePolicy(b.closePolicy)
                    .sharedViewPins(pins)
                    .sharedLoans(loans)
                    .shardOf(b.name, i, b.shards);
            if (b.leakDetection != null) {
                shard.leakDetection(b.leakDetection);
            }
            shards[i] = shard.build();
        }
        this.shardList = List.of(shards);
        for (int i = 0; i < shards.length; i++) {
            int failed = i;
            shards[i].completeOutOfMemoryReports(r -> withAllShards(failed, r), this::snapshots);
        }
        this.ports = new BfcPort[shards.length];
        for (int i = 0; i < shards.length; i++) {
            ports[i] = shards[i].port;
        }
        int n = shards.length;
        this.home = ThreadLocal.withInitial(() -> Math.floorMod(nextHome.getAndIncrement(), n));
    }

    /**
     * A builder. Its defaults are {@link BfcAllocator#builder()}'s: growth on, no retry on
     * failure, {@link ClosePolicy#REFUSE}, leak detection as the system property says; and one
     * shard per available processor.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link ShardedBfcAllocator}; see {@link ShardedBfcAllocator#builder()}. */
    public static final class Builder {
        private String name = "bfc";
        private long memoryLimit = -1;
        private SubAllocator subAllocator;
        private int shards = Runtime.getRuntime().availableProcessors();
        private BfcOptions options = BfcOptions.builder().allowRetryOnFailure(false).build();
        private ClosePolicy closePolicy = ClosePolicy.REFUSE;
        private LeakDetection leakDetection;

        private Builder() {
        }

        /**
         * @param name the allocator's name ({@code "bfc"} if not set); shard {@code i} is
         *     named {@code name + "/" + i}
         * @return this builder
         * @throws IllegalArgumentException if the name is null or blank
         */
        public Builder name(String name) {
            this.name = BfcAllocator.checkName(name);
            return this;
        }

        /**
         * @param memoryLimit the most bytes all shards together may hold from the
         *     sub-allocator; required
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder memoryLimit(long memoryLimit) {
            this.memoryLimit = BfcAllocator.checkMemoryLimit("memoryLimit", memoryLimit);
            return this;
        }

        /**
         * @param subAllocator where every shard's regions come from; required. Its calls are
         *     serialised, so it need not be thread-safe
         * @return this builder
         * @throws IllegalArgumentException if null, if its {@code memoryType()} is null, or if
         *     its {@code deviceId()} is outside 0 to 1023
         */
        public Builder subAllocator(SubAllocator subAllocator) {
            this.subAllocator = BfcAllocator.checkSubAllocator(subAllocator);
            return this;
        }

        /**
         * @param shards how many shards (default: {@code availableProcessors()}). More shards
         *     than allocating threads buy nothing; each shard keeps free room of its own
         * @return this builder
         * @throws IllegalArgumentException if not in 1..1024
         */
        public Builder shards(int shards) {
            if (shards < 1 || shards > 1024) {
                throw new IllegalArgumentException("shards=" + shards
                        + " (expected: 1 to 1024, e.g. the number of cores)");
            }
            this.shards = shards;
            return this;
        }

        /**
         * @param options every shard's options
         * @return this builder
         * @throws IllegalArgumentException if null, if growth is off, or if retry on failure
         *     is on (see the class description)
         */
        public Builder options(BfcOptions options) {
            if (!BfcAllocator.checkOptions("options", options).allowGrowth()) {
                throw new IllegalArgumentException("options.allowGrowth()=false (expected: true for a"
                        + " sharded allocator: without growth the first shard to allocate would take"
                        + " the whole memory limit; use a plain BfcAllocator for allowGrowth(false))");
            }
            if (options.allowRetryOnFailure()) {
                throw new IllegalArgumentException("options.allowRetryOnFailure()=true (expected: false"
                        + " for a sharded allocator: a failed allocation cannot wait for frees in other"
                        + " shards; use a plain BfcAllocator to wait for frees)");
            }
            this.options = options;
            return this;
        }

        /**
         * @param closePolicy what {@link ShardedBfcAllocator#close()} does with live
         *     allocations (default {@link ClosePolicy#REFUSE})
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder closePolicy(ClosePolicy closePolicy) {
            this.closePolicy = BfcAllocator.checkClosePolicy(closePolicy);
            return this;
        }

        /**
         * @param leakDetection whether {@link Allocation} handles are watched for leaks
         *     (default: the system property {@value LeakDetection#PROPERTY})
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder leakDetection(LeakDetection leakDetection) {
            this.leakDetection = BfcAllocator.checkLeakDetection(leakDetection);
            return this;
        }

        /**
         * @return a new allocator; it obtains no memory until the first allocation
         * @throws IllegalStateException if the memory limit or the sub-allocator was not set
         */
        public ShardedBfcAllocator build() {
            BfcAllocator.checkRequiredSet(memoryLimit, subAllocator, "the most memory all shards together may hold");
            return new ShardedBfcAllocator(this);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Allocating and freeing
    // ---------------------------------------------------------------------------------------

    /**
     * Allocates {@code bytes}, 64-byte aligned, and returns a handle, as
     * {@link BfcAllocator#allocate(long)} does; the handle belongs to the shard that served it.
     *
     * @param bytes the size wanted, > 0
     * @return the allocation
     * @throws IllegalArgumentException if {@code bytes} is not positive, or {@code bytes + 63}
     *     exceeds {@link BfcAllocator#MAX_ALLOCATION_BYTES}
     * @throws BfcOutOfMemoryException if no shard can serve it (see the class description);
     *     its figures are those of all shards together, its cause the home shard's exception
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public Allocation allocate(long bytes) {
        return allocate(bytes, BfcAllocator.ALLOCATION_ALIGNMENT);
    }

    /**
     * Allocates {@code bytes} at a multiple of {@code alignment} and returns a handle, as
     * {@link BfcAllocator#allocate(long, long)} does.
     *
     * @param bytes the size wanted, > 0
     * @param alignment a power of two
     * @return the allocation
     * @throws IllegalArgumentException as {@link BfcAllocator#allocate(long, long)}
     * @throws BfcOutOfMemoryException if no shard can serve it
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public Allocation allocate(long bytes, long alignment) {
        BfcAllocator.checkAllocateArguments(described, bytes, alignment);
        pins.refuseCallFromSubAllocator(described, "allocate");
        int h = home();
        Allocation a;
        try {
            a = shards[h].tryAllocate(bytes, alignment);
        } catch (IllegalStateException e) {
            a = null;
            rethrowUnlessClosed(h, e);
        }
        if (a != null) {
            return a;
        }
        HandleCall served = new HandleCall();
        elsewhere(h, alignment, bytes, AllocationAttributes.DEFAULT, 0, "allocate", served);
        return served.handle;
    }

    /**
     * The exception for a call that no shard could serve: the home shard {@code h}'s {@code e}
     * with the figures of all shards, those read for the report just after the failure, before the dump
     * and the listeners ran (other threads free meanwhile), or read now if no report was made.
     */
    private BfcOutOfMemoryException ofAllShards(int h, BfcOutOfMemoryException e, FailureFigures figures) {
        AllShards f = figures.read;
        figures.read = null;
        if (f == null) {
            f = allShardsNow();
        }
        return e.ofAllShards(name, shards.length, h, f.stats.bytesInUse(), f.reserved, f.regions, f.largestFree, f.stats,
                f.holders);
    }

    /** What all shards hold together, read at one instant (every shard's lock held). */
    private record AllShards(long reserved, int regions, long largestFree, AllocatorStats stats, String holders) {
    }

    /** A thread's {@link #failureFigures}. */
    private static final class FailureFigures {
        /** Those of the report of this thread's last failure, until an exception takes them; or null. */
        AllShards read;
    }

    private AllShards allShardsNow() {
        return withAllShardsLocked("reading the figures of an out-of-memory report",
                () -> new AllShards(reservedBytes(), regionCount(), largestFreeChunkBytes(), getStats(),
                        HolderText.messageSentence(mapsForHolders())));
    }

    /**
     * Allocates without a handle, as {@link BfcAllocator#allocateRaw(long, long)} does (with
     * {@link AllocationAttributes#DEFAULT}); a failed allocation never waits for frees.
     *
     * @param alignment a power of two; only passed on to the sub-allocator
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0 or no shard can serve it
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public long allocateRaw(long alignment, long numBytes) {
        return allocateRaw(alignment, numBytes, AllocationAttributes.DEFAULT);
    }

    /**
     * Allocates without a handle, as {@link BfcAllocator#allocateRaw(long, long,
     * AllocationAttributes)} does. A failed allocation never waits for frees (the shards do not
     * retry on failure); {@code attr}'s retry flag changes only what a failure logs, as there.
     *
     * @param alignment a power of two; only passed on to the sub-allocator
     * @param numBytes the size wanted
     * @param attr per-call attributes (the timestamp constraint)
     * @return the address, or 0 if {@code numBytes} is 0 or no shard can serve it
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws NullPointerException if {@code attr} is null
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) {
        return allocateRaw(alignment, numBytes, attr, 0);
    }

    /**
     * {@link #allocateRaw(long, long, AllocationAttributes)}, or, for a loan's number
     * {@code loan} (not 0), {@link Loan#allocateRaw}: the chunk marked as lent through that loan.
     */
    private long allocateRaw(long alignment, long numBytes, AllocationAttributes attr, int loan) {
        Objects.requireNonNull(attr, "attr=null (expected: AllocationAttributes.DEFAULT, or attributes of your own)");
        if (BfcAllocator.badAllocateRawArguments(alignment, numBytes)) {
            throw BfcAllocator.badAllocateRawArguments(described, alignment, numBytes);
        }
        String call = loan != 0 ? "Loan.allocateRaw" : "allocateRaw";
        long owner = loan != 0 ? ChunkTable.lentBy(loan) : 0;
        pins.refuseCallFromSubAllocator(described, call);
        int h = home();
        long ptr = tryAllocateRawAtHome(h, alignment, numBytes, attr, owner);
        return ptr != 0 || numBytes == 0 ? ptr : elsewhere(h, alignment, numBytes, attr, owner, call, RAW);
    }

    /**
     * The home shard {@code h}'s attempt, for {@code owner} (0, or {@code ChunkTable.lentBy} of
     * a loan for lent memory): the address, or 0 if it is full or closed on its own.
     */
    private long tryAllocateRawAtHome(int h, long alignment, long numBytes, AllocationAttributes attr, long owner) {
        try {
            return ports[h].tryAllocateRaw(alignment, numBytes, attr, owner);
        } catch (IllegalStateException e) {
            rethrowUnlessClosed(h, e);
            return 0;
        }
    }

    /**
     * Allocates without a handle, as {@link #allocateRaw(long, long)} does, but a failure throws
     * the {@link BfcOutOfMemoryException} that {@link #allocate(long)} would: the figures of all
     * shards together, read just after the home shard's last attempt failed (as
     * {@link #allocate(long)}'s), its cause the home shard's exception with that shard's figures
     * of the moment of failure. Other threads may free memory while the shards are tried or
     * before the figures are read: where the largest free chunk is large enough by then, the
     * message says so (the same request may succeed if tried again).
     *
     * @param alignment a power of two; only passed on to the sub-allocator
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0
     * @throws BfcOutOfMemoryException if no shard can serve it
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public long allocateRawOrThrow(long alignment, long numBytes) {
        return allocateRawOrThrow(alignment, numBytes, 0);
    }

    /**
     * {@link #allocateRawOrThrow(long, long)}, or, for a loan's number {@code loan} (not 0),
     * {@link Loan#allocateRawOrThrow}: the chunk marked as lent through that loan, whose raw free
     * the shard refuses.
     */
    private long allocateRawOrThrow(long alignment, long numBytes, int loan) {
        String call = loan != 0 ? "Loan.allocateRawOrThrow" : "allocateRawOrThrow";
        long owner = loan != 0 ? ChunkTable.lentBy(loan) : 0;
        if (BfcAllocator.badAllocateRawArguments(alignment, numBytes)) {
            throw BfcAllocator.badAllocateRawArguments(described, alignment, numBytes);
        }
        pins.refuseCallFromSubAllocator(described, call);
        int h = home();
        long ptr = tryAllocateRawAtHome(h, alignment, numBytes, AllocationAttributes.DEFAULT, owner);
        if (ptr != 0 || numBytes == 0) {
            return ptr;
        }
        return elsewhere(h, alignment, numBytes, AllocationAttributes.DEFAULT, owner, call, RAW_OR_THROW);
    }

    /**
     * A home shard closed on its own is passed over as a full one is: the other shards serve
     * its threads. Any other failure is the caller's.
     */
    private void rethrowUnlessClosed(int h, IllegalStateException e) {
        if (!shards[h].isClosed()) {
            throw e;
        }
    }

    /**
     * Every shard but {@code h} gives its free regions back to the sub-allocator, so that shard
     * {@code h} can obtain the room they held. Shard {@code h}'s own free regions are its own
     * algorithm's business (garbage collection, if its options say so), so that one shard
     * alone decides as one {@code BfcAllocator} does.
     */
    private void emptyOtherShards(int h) {
        for (int k = 1; k < shards.length; k++) {
            shards[(h + k) % shards.length].emptyCache();
        }
    }

    /** @return the index of the calling thread's home shard */
    private int home() {
        long id = Thread.currentThread().getId();
        int slot = (int) id & (HOME_CACHE_ENTRIES - 1);
        long entry = (long) HOME_CACHE.getOpaque(homeCache, slot);
        if (entry >>> 16 == id) {
            return (int) entry & 0xFFFF;
        }
        int h = home.get();
        HOME_CACHE.setOpaque(homeCache, slot, id << 16 | h);
        return h;
    }

    /** Whether this thread holds the figures of a failure's report, for tests. */
    boolean holdsFailureFigures() {
        return failureFigures.get().read != null;
    }

    /**
     * A call of {@code numBytes} that the home shard {@code h} could not serve, made by
     * {@code c} ({@link #otherShardsThenHome}). It runs with no failure figures on this thread
     * but those its own failure's report leaves there ({@link #withAllShards}): where {@code c}
     * throws when no shard serves it, its exception takes them ({@link #ofAllShards}); a raw
     * call's failure throws nothing, so they serve no exception and go. The thread is left as it
     * was found: without figures, or, inside an out-of-memory listener of another call on this
     * thread, with that call's, put back for its own exception.
     *
     * <p>Once a shard has served the call, nothing on the way back to the caller creates a Java
     * object (the address is a primitive, the arguments are passed rather than captured, the
     * thread's holder of the figures already exists): no {@link OutOfMemoryError} of the Java
     * heap can come between the served memory and the caller, where it would lose the address
     * (and a loan's chunk would keep the loan's number taken).
     *
     * @return the address served, or 0 where {@code c} answers 0 for no memory
     */
    private long elsewhere(int h, long alignment, long numBytes, AllocationAttributes attr, long owner, String call,
            ShardCall c) {
        FailureFigures figures = failureFigures.get();
        AllShards outer = figures.read;
        figures.read = null;
        try {
            return otherShardsThenHome(h, alignment, numBytes, attr, owner, call, c);
        } catch (BfcOutOfMemoryException e) {
            if (!c.throwsWhenNoShardServes) {
                throw e;
            }
            throw ofAllShards(h, e, figures);
        } finally {
            figures.read = outer;
        }
    }

    /**
     * The other open shards try the call quietly, in turn; with none serving it, the other
     * shards give back their free regions and the home shard {@code h} makes the last, reported
     * attempt. A request above the limit can never fit: it goes to the last attempt at once.
     */
    private long otherShardsThenHome(int h, long alignment, long numBytes, AllocationAttributes attr, long owner,
            String call, ShardCall c) {
        if (numBytes <= memoryLimit()) {
            for (int k = 1; k < shards.length; k++) {
                BfcAllocator other = shards[(h + k) % shards.length];
                long served = other.isClosed() ? 0 : c.tryIn(other, alignment, numBytes, attr, owner);
                if (served != 0) {
                    return served;
                }
            }
            checkNoShardClosed();
            emptyOtherShards(h);
        }
        return c.lastIn(shards[h], alignment, numBytes, attr, owner, call);
    }

    /**
     * An allocation that the home shard could not serve, as one shard makes it: each attempt
     * answers the address it served, or 0. The call's arguments are passed to each attempt, not
     * captured, so that the raw calls' slow path creates no object.
     */
    private abstract static class ShardCall {
        /**
         * Whether the last attempt's failure throws (then with the figures of all shards)
         * rather than answering 0.
         */
        final boolean throwsWhenNoShardServes;

        ShardCall(boolean throwsWhenNoShardServes) {
            this.throwsWhenNoShardServes = throwsWhenNoShardServes;
        }

        /**
         * A shard's quiet attempt (a failure is not reported): the address, or 0. A raw
         * allocation's, unless overridden.
         */
        long tryIn(BfcAllocator shard, long alignment, long numBytes, AllocationAttributes attr, long owner) {
            return shard.tryAllocateRaw(alignment, numBytes, attr, owner);
        }

        /** The home shard's last, reported attempt: the address, or 0 (or it throws). */
        abstract long lastIn(BfcAllocator home, long alignment, long numBytes, AllocationAttributes attr, long owner,
                String call);
    }

    /** {@link #allocateRaw}'s: a failure answers 0. */
    private static final ShardCall RAW = new ShardCall(false) {
        @Override
        long lastIn(BfcAllocator home, long alignment, long numBytes, AllocationAttributes attr, long owner,
                String call) {
            return home.allocateRaw(alignment, numBytes, attr, owner, call);
        }
    };

    /** {@link #allocateRawOrThrow}'s: a failure throws. */
    private static final ShardCall RAW_OR_THROW = new ShardCall(true) {
        @Override
        long lastIn(BfcAllocator home, long alignment, long numBytes, AllocationAttributes attr, long owner,
                String call) {
            return home.allocateRawOrThrow(alignment, numBytes, owner, call);
        }
    };

    /**
     * {@link #allocate}'s, made before the shards are tried: it keeps the handle that served
     * the call, and answers its address. A failure throws.
     */
    private static final class HandleCall extends ShardCall {
        Allocation handle;

        HandleCall() {
            super(true);
        }

        @Override
        long tryIn(BfcAllocator shard, long alignment, long numBytes, AllocationAttributes attr, long owner) {
            handle = shard.tryAllocate(numBytes, alignment);
            return handle == null ? 0 : handle.address();
        }

        @Override
        long lastIn(BfcAllocator home, long alignment, long numBytes, AllocationAttributes attr, long owner,
                String call) {
            handle = home.allocate(numBytes, alignment);
            return handle.address();
        }
    }

    /**
     * Frees memory returned by {@link #allocateRaw}, from any thread, in the shard that holds
     * it.
     *
     * @param ptr an address returned by {@link #allocateRaw} and not yet freed; 0 is a no-op
     * @throws IllegalArgumentException if {@code ptr} was not allocated here or was already
     *     freed, or is memory of an {@link Allocation} handle or lent to a runtime
     *     ({@link #lendTo}); the allocator is unchanged
     * @throws IllegalStateException if the allocator (or the shard holding {@code ptr}) is
     *     closed
     * @throws IllegalStateException also if called from inside its sub-allocator's {@code alloc}
     *     or {@code free}
     */
    public void deallocateRaw(long ptr) {
        deallocateRaw(ptr, 0, null);
    }

    /**
     * {@link #deallocateRaw(long)}, or, for a loan's number {@code loan} (not 0),
     * {@link Loan#deallocateRaw}: frees only memory that loan lent, counting it off {@code lent}
     * ({@link Loans.Lending#deallocateLent}).
     */
    private void deallocateRaw(long ptr, int loan, AtomicLong lent) {
        if (ptr == 0) {
            return;
        }
        String call = loan != 0 ? "Loan.deallocateRaw" : "deallocateRaw";
        pins.refuseCallFromSubAllocator(described, call);
        int s = regions.shardOf(ptr);
        if (s < 0) {
            if (anyShardClosed()) {
                throw new IllegalStateException("allocator '" + name + "' is closed, or a shard of it"
                        + " (" + call + "(0x" + Long.toHexString(ptr) + ") after close(): the memory"
                        + " was given back already)");
            }
            throw new IllegalArgumentException("0x" + Long.toHexString(ptr) + " was not allocated by allocator '"
                    + name + "' (it lies in none of its shards' regions; or was freed with a region already given"
                    + " back, which a double free can do)");
        }
        if (loan != 0) {
            ports[s].deallocateLent(ptr, loan, lent);
            return;
        }
        ports[s].deallocateRaw(ptr);
    }

    // ---------------------------------------------------------------------------------------
    // Seeing into it
    // ---------------------------------------------------------------------------------------

    /** @return the name given to the builder */
    public String name() {
        return name;
    }

    /** @return the most bytes all shards together may hold from the sub-allocator */
    public long memoryLimit() {
        return regions.limitBytes();
    }

    /** @return what {@link #close()} does with live allocations, as the builder was told */
    public ClosePolicy closePolicy() {
        return closePolicy;
    }

    /**
     * The kind of memory handed out: the shared sub-allocator's, as
     * {@link BfcAllocator#getMemoryType()} answers it for every shard.
     *
     * @return the sub-allocator's memory type
     */
    public MemoryType getMemoryType() {
        return shards[0].getMemoryType();
    }

    /**
     * The device whose memory this is: the shared sub-allocator's, as
     * {@link BfcAllocator#deviceId()} answers it for every shard.
     *
     * @return the sub-allocator's device, by its CUDA ordinal
     */
    public int deviceId() {
        return shards[0].deviceId();
    }

    /**
     * The shards, in order: shard {@code i} is named {@code name() + "/" + i} (its messages name
     * it {@code allocator 'NAME' (shard i of N)}, by the name given to the builder). Each is an
     * ordinary {@link BfcAllocator} for observation (history, snapshots, metrics, statistics).
     * Allocating or freeing through a shard directly works, but bypasses the spreading of
     * threads over shards.
     *
     * @return the shards, an unmodifiable list
     */
    public List<BfcAllocator> shards() {
        return shardList;
    }

    /**
     * The shard holding the region that contains {@code ptr}: ask it about the allocation
     * ({@link BfcAllocator#allocationId}, {@link BfcAllocator#requestedSize}, its history).
     *
     * @param ptr an address handed out by this allocator
     * @return the shard
     * @throws IllegalArgumentException if no shard holds a region containing {@code ptr}
     */
    public BfcAllocator shardOf(long ptr) {
        int s = regions.shardOf(ptr);
        if (s < 0) {
            throw new IllegalArgumentException("0x" + Long.toHexString(ptr) + " lies in no region of allocator '"
                    + name + "' (expected: an address it handed out and that is still allocated)");
        }
        return shards[s];
    }

    /**
     * @return the calling thread's home shard (assigned now if the thread has none yet)
     */
    public BfcAllocator homeShard() {
        return shards[home()];
    }

    /** @return the bytes of chunks in use in all shards (read at one instant, as {@link #getStats()}) */
    public long bytesInUse() {
        return sum("bytesInUse()", BfcAllocator::bytesInUse);
    }

    /**
     * How many {@link Allocation}s leak detection found unreachable without close and
     * reclaimed, in all shards together ({@link BfcAllocator#leaksReclaimed()} of each, summed;
     * each leak is reclaimed by the shard that held it).
     *
     * @return the leaks reclaimed
     */
    public long leaksReclaimed() {
        long sum = 0;
        for (BfcAllocator s : shards) {
            sum += s.leaksReclaimed();
        }
        return sum;
    }

    /** @return the bytes all shards hold from the sub-allocator now */
    public long reservedBytes() {
        return regions.heldBytes();
    }

    /**
     * Bytes of regions the shards have given back whose memory waits for views of it to be
     * collected, as {@link BfcAllocator#bytesHeldForViews()} says for one allocator. They count
     * neither in {@link #reservedBytes()} nor against the memory limit. The shards share one
     * figure: each shard's {@code bytesHeldForViews()} is this.
     *
     * @return the bytes held back for views, 0 when none is
     */
    public long bytesHeldForViews() {
        return pins.heldBackBytes();
    }

    /** @return the regions of all shards (read at one instant, as {@link #getStats()}) */
    public int regionCount() {
        return (int) sum("regionCount()", BfcAllocator::regionCount);
    }

    /** @return the largest free chunk of any shard (read at one instant, as {@link #getStats()}) */
    public long largestFreeChunkBytes() {
        return withAllShardsLocked("largestFreeChunkBytes()", () -> {
            long max = 0;
            for (BfcAllocator s : shards) {
                max = Math.max(max, s.largestFreeChunkBytes());
            }
            return max;
        });
    }

    /**
     * A readable summary of all shards, like {@code torch.cuda.memory_summary()}: one line of
     * the figures of all shards together and, when provenance is recorded or memory is lent to
     * a runtime, the largest holders of all shards (both read at one instant), then each shard's
     * {@link BfcAllocator#memorySummary()} (each taken in turn).
     *
     * @return the summary
     */
    public String memorySummary() {
        StringBuilder sb = withAllShardsLocked("memorySummary()", () -> {
            final int regions = regionCount();
            return new StringBuilder()
                    .append("Sharded allocator '").append(name).append("': ").append(shards.length)
                    .append(shards.length == 1 ? " shard" : " shards").append(", limit ")
                    .append(BfcAllocator.humanReadableNumBytes(memoryLimit())).append(", reserved ")
                    .append(BfcAllocator.humanReadableNumBytes(reservedBytes())).append(" in ").append(regions)
                    .append(regions == 1 ? " region" : " regions").append(", in use ").append(BfcAllocator.humanReadableNumBytes(bytesInUse()))
                    .append(", largest free chunk ").append(BfcAllocator.humanReadableNumBytes(largestFreeChunkBytes()))
                    .append('\n')
                    .append(HolderText.summarySection(mapsForHolders(), "Largest holders of all shards"));
        });
        for (BfcAllocator s : shards) {
            sb.append(s.memorySummary());
        }
        return sb.toString();
    }

    /**
     * The largest holders of the memory in use of all shards taken together, grouped by
     * {@link MemoryMap.Chunk#holder()} and summed over the shards (a holder that allocated on
     * several threads, and so from several shards, is one): what {@link #memorySummary()} lists,
     * read at one instant. A shard's {@link BfcAllocator#memoryMap()} gives its own.
     *
     * @param limit the most holders returned
     * @return holders by bytes, largest first (ties by name); chunks allocated while nothing was
     *     recorded are grouped under {@code "(unknown)"}, or under the runtime they are lent to
     *     ({@link #lendTo}); empty when nothing is in use or the
     *     allocator is closed
     * @throws IllegalArgumentException if {@code limit} is negative
     */
    public List<MemoryMap.Holder> largestHolders(int limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit=" + limit + " (expected: >= 0)");
        }
        return withAllShardsLocked("largestHolders()", () -> {
            List<MemoryMap> maps = new ArrayList<>();
            for (BfcAllocator s : shards) {
                if (!s.isClosed()) {
                    maps.add(s.memoryMap());
                }
            }
            return MemoryMap.largestHolders(maps, limit);
        });
    }

    /**
     * The memory maps of the open shards, for their largest holders taken together; none when
     * no shard records provenance.
     */
    private List<MemoryMap> mapsForHolders() {
        List<MemoryMap> maps = new ArrayList<>();
        if (anyShard(BfcAllocator::namesHolders)) {
            for (BfcAllocator s : shards) {
                if (!s.isClosed()) {
                    maps.add(s.memoryMap());
                }
            }
        }
        return maps;
    }

    /**
     * The shards' statistics, summed, read at one instant (every shard's lock is held while
     * they are read, so a region that moves from one shard to another is never counted twice
     * or missed): {@code numAllocs}, {@code bytesInUse} and {@code poolBytes} are sums;
     * {@code largestAllocSize} is the largest; {@code bytesLimit} is {@link #memoryLimit()};
     * {@code peakPoolBytes} is the most the shards held together. {@code peakBytesInUse} is the
     * sum of the shards' peaks, which were not reached at the same moment: an upper bound of
     * the peak of the sum, not that peak.
     *
     * @return the statistics
     * @throws IllegalStateException if called from code that runs under one shard's lock (its
     *     sub-allocator, a visitor of its chunks), where taking the others could deadlock; the
     *     same holds for the other readers of every shard ({@link #bytesInUse()},
     *     {@link #regionCount()}, {@link #largestFreeChunkBytes()}, {@link #memorySummary()},
     *     {@link #snapshots()})
     */
    public AllocatorStats getStats() {
        return withAllShardsLocked("getStats()", () -> {
            long numAllocs = 0;
            long inUse = 0;
            long peakInUse = 0;
            long largest = 0;
            long pool = 0;
            for (BfcAllocator s : shards) {
                AllocatorStats st = s.getStats();
                numAllocs += st.numAllocs();
                inUse += st.bytesInUse();
                peakInUse += st.peakBytesInUse();
                largest = Math.max(largest, st.largestAllocSize());
                pool += st.poolBytes();
            }
            return new AllocatorStats(numAllocs, inUse, peakInUse, largest, memoryLimit(), 0, 0, 0, pool,
                    regions.peakHeldBytes());
        });
    }

    /**
     * Every figure of {@link BfcAllocator#memoryStats()} for all shards together, read at one
     * instant (every shard's lock held, as {@link #getStats()}): the metrics of the whole
     * allocator ({@code BfcAllocatorMetrics} of bfc-micrometer). Bytes, allocations, regions and
     * every {@code ...Total} counter are sums over the shards; {@code reservedBytes} is
     * {@link #reservedBytes()}, {@code bytesLimit} {@link #memoryLimit()} and
     * {@code bytesHeldForViews} {@link #bytesHeldForViews()} (the shards share them);
     * {@code largestFreeChunkBytes} is the largest of any shard, and the two fragmentation ratios
     * are those of all shards' free memory together. {@code peakReservedBytes} is the most the
     * shards held together (exact); {@code peakBytesInUse} and {@code peakActiveAllocations} are
     * sums of the shards' peaks, reached at different moments: upper bounds of the peaks of the
     * whole.
     *
     * @return the figures of all shards
     * @throws IllegalStateException if called from code that runs under one shard's lock, as
     *     {@link #getStats()}
     */
    public MemoryStats memoryStats() {
        return withAllShardsLocked("memoryStats()", () -> {
            long inUse = 0;
            long peakInUse = 0;
            long allocated = 0;
            long freed = 0;
            long reserved = 0;
            long reservedTotal = 0;
            long released = 0;
            long active = 0;
            long peakActive = 0;
            long allocations = 0;
            long frees = 0;
            long ooms = 0;
            long regionCount = 0;
            long extendsTotal = 0;
            long regionFrees = 0;
            long largestFree = 0;
            long regionsLargestFree = 0;
            for (BfcAllocator s : shards) {
                MemoryStats m = s.memoryStats();
                inUse += m.bytesInUse();
                peakInUse += m.peakBytesInUse();
                allocated += m.allocatedBytesTotal();
                freed += m.freedBytesTotal();
                reserved += m.reservedBytes();
                reservedTotal += m.reservedBytesTotal();
                released += m.releasedBytesTotal();
                active += m.activeAllocations();
                peakActive += m.peakActiveAllocations();
                allocations += m.allocationsTotal();
                frees += m.freesTotal();
                ooms += m.oomsTotal();
                regionCount += m.regionCount();
                extendsTotal += m.regionExtendsTotal();
                regionFrees += m.regionFreesTotal();
                largestFree = Math.max(largestFree, m.largestFreeChunkBytes());
                regionsLargestFree += s.regionsLargestFreeSum();
            }
            long free = reserved - inUse;
            double fragmentation = free <= 0 ? 0.0 : (double) (free - largestFree) / free;
            double withinRegions = free <= 0 ? 0.0 : (double) (free - regionsLargestFree) / free;
            return new MemoryStats(inUse, peakInUse, allocated, freed, reserved, regions.peakHeldBytes(),
                    reservedTotal, released, active, peakActive, allocations, frees, ooms, regionCount, extendsTotal,
                    regionFrees, largestFree, fragmentation, memoryLimit(), withinRegions, bytesHeldForViews());
        });
    }

    /**
     * Gives every shard's regions that hold no allocation back to the sub-allocator
     * ({@link BfcAllocator#emptyCache()} on each).
     *
     * @return the bytes given back
     * @throws IllegalStateException if called from inside its sub-allocator's {@code alloc} or
     *     {@code free}
     */
    public long emptyCache() {
        pins.refuseCallFromSubAllocator(described, "emptyCache()");
        // Each shard under its own lock only: the others go on allocating meanwhile.
        long bytes = 0;
        for (BfcAllocator s : shards) {
            bytes += s.emptyCache();
        }
        return bytes;
    }

    /**
     * The sum of {@code figure} over the shards, each asked in turn with every shard's lock held,
     * so that no range is counted in two shards (or in none) as it moves between them.
     */
    private long sum(String what, ToLongFunction<BfcAllocator> figure) {
        return withAllShardsLocked(what, () -> {
            long sum = 0;
            for (BfcAllocator s : shards) {
                sum += figure.applyAsLong(s);
            }
            return sum;
        });
    }

    /**
     * Says that an adapter lends this allocator's memory to a runtime that frees it only in its
     * own terms (ONNX Runtime's {@code BfcOrtAllocator}). Until the loan is closed, a
     * {@link #close()} refused because allocations are live names {@code runtime} and says
     * {@code release}, in place of its advice for memory the caller holds (close the handles, or
     * build the allocator with {@link ClosePolicy#FORCE}, which would free memory under the
     * runtime). The shards share its loans: a shard's own {@code close()} refused for live
     * allocations says the same, and a loan made on a shard counts here too.
     * The adapter allocates and frees the memory it hands the runtime through the loan
     * ({@link Loan#allocateRawOrThrow}, {@link Loan#deallocateRaw}): a {@link #deallocateRaw}
     * of such an address, or another loan's, is refused, naming {@code runtime}. Up to 255 loans
     * can be open, or closed with memory they lent not yet freed, at once.
     *
     * @param runtime who holds the memory, e.g. {@code ONNX Runtime (BfcOrtAllocator 'x')}
     * @param release what frees it, e.g. {@code release the sessions and the OrtValues they
     *     returned, then close the BfcOrtAllocator}
     * @return the loan; close it once the runtime holds none of this allocator's memory
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if 255 loans of this allocator are open or hold lent memory
     */
    @Override
    public Loan lendTo(String runtime, String release) {
        return loans.lend(runtime, release, new Loans.Lending() {
            @Override
            public long allocateLentOrThrow(int loan, long alignment, long numBytes) {
                return allocateRawOrThrow(alignment, numBytes, loan);
            }

            @Override
            public long allocateLent(int loan, long alignment, long numBytes, AllocationAttributes attr) {
                return allocateRaw(alignment, numBytes, attr, loan);
            }

            @Override
            public void deallocateLent(int loan, long ptr, AtomicLong lent) {
                deallocateRaw(ptr, loan, lent);
            }
        });
    }

    /**
     * Tells {@code listener} of every failed allocation, from whichever shard reports it. The
     * report is the failing shard's (its name, its snapshot), and its summary ends with the
     * figures and largest holders of all shards together, read just after the failure (as the
     * exception's message gives them); so does the summary of the shard's out-of-memory dump.
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    public void addOutOfMemoryListener(OutOfMemoryListener listener) {
        Objects.requireNonNull(listener, "listener=null (expected: an OutOfMemoryListener, e.g. report -> log(report.summary()))");
        for (BfcAllocator s : shards) {
            s.addOutOfMemoryListener(listener);
        }
    }

    /**
     * Stops telling a listener of failures.
     *
     * @param listener a listener given to {@link #addOutOfMemoryListener}
     * @return whether it was there
     * @throws NullPointerException if {@code listener} is null
     */
    public boolean removeOutOfMemoryListener(OutOfMemoryListener listener) {
        Objects.requireNonNull(listener, "listener=null (expected: a listener given to addOutOfMemoryListener)");
        boolean removed = false;
        for (BfcAllocator s : shards) {
            removed |= s.removeOutOfMemoryListener(listener);
        }
        return removed;
    }

    /** Shard {@code failed}'s report, its summary followed by what all shards hold, read now. */
    private OutOfMemoryReport withAllShards(int failed, OutOfMemoryReport r) {
        AllShards f = allShardsNow();
        failureFigures.get().read = f; // for the exception of allocate(), on this thread
        String all = "\nAll " + shards.length + " shards of allocator '" + name + "', read just after shard "
                + failed + " failed: " + BfcAllocator.humanReadableNumBytes(f.stats.bytesInUse()) + " in use, "
                + BfcAllocator.humanReadableNumBytes(f.reserved) + " reserved in " + f.regions
                + (f.regions == 1 ? " region" : " regions") + ", the memory limit is "
                + BfcAllocator.humanReadableNumBytes(memoryLimit()) + ", the largest free chunk is "
                + BfcAllocator.humanReadableNumBytes(f.largestFree) + "." + f.holders + "\n";
        return new OutOfMemoryReport(r.allocatorName(), r.requestedBytes(), r.roundedBytes(), r.provenance(),
                r.snapshot(), r.summary() + all, r.shardedAllocatorName(), r.shardIndex(), r.shardCount());
    }

    /**
     * Records every shard's history ({@link BfcAllocator#recordHistory}), for
     * {@link #writePyTorchPickle}.
     *
     * @param options what to record (each shard keeps up to {@code maxEntries} events)
     * @throws NullPointerException if {@code options} is null
     */
    public void recordHistory(HistoryOptions options) {
        for (BfcAllocator s : shards) {
            s.recordHistory(options);
        }
    }

    /** Stops recording every shard's history ({@link BfcAllocator#stopHistory}). */
    public void stopHistory() {
        for (BfcAllocator s : shards) {
            s.stopHistory();
        }
    }

    /**
     * Whether each chunk allocated from now on, in any shard, keeps the open
     * {@link MemoryAnnotation} ({@link BfcAllocator#recordAnnotations}).
     *
     * @param enabled true to record annotations, false to stop
     */
    public void recordAnnotations(boolean enabled) {
        for (BfcAllocator s : shards) {
            s.recordAnnotations(enabled);
        }
    }

    /**
     * Every shard's {@link BfcAllocator#snapshot()}, in shard order, all at one instant: every
     * shard's lock is held while they are taken (so no range moves from one shard to another in
     * between, and no two snapshots hold it). With the shards' history recorded from the start
     * ({@link #recordHistory}), {@code SnapshotTraces.write(snapshots(), file, name)} writes
     * their calls as one workload trace, for {@code bfc replay}, {@code whatif} and
     * {@code report}: the calls of all shards in the order they were made, replayed as one
     * allocator serving them all.
     *
     * @return the snapshots
     */
    public List<MemorySnapshot> snapshots() {
        return withAllShardsLocked("snapshots()", () -> {
            List<MemorySnapshot> out = new ArrayList<>(shards.length);
            for (BfcAllocator s : shards) {
                out.add(s.snapshot());
            }
            return out;
        });
    }

    /**
     * {@code read}, with every shard's lock held ({@link #lockAllShards(String)}): what it reads
     * of the shards is of one instant.
     */
    private <T> T withAllShardsLocked(String what, Supplier<T> read) {
        lockAllShards(what);
        try {
            return read.get();
        } finally {
            unlockAllShards();
        }
    }

    /**
     * Takes every shard's lock, in shard order: the one order in which they are ever held
     * together, so none waits here for another. A thread that holds them all already (a call
     * inside another that took them) takes them again.
     *
     * @param what the call that reads every shard, for the message
     * @throws IllegalStateException if the calling thread holds some shards' locks but not all
     *     (code that runs under a shard's lock: its sub-allocator, a visitor): taking the others
     *     could deadlock with a thread that takes them all; nothing is taken then
     */
    private void lockAllShards(String what) {
        int held = -1;
        int count = 0;
        for (int i = 0; i < ports.length; i++) {
            if (ports[i].lockHeldByCurrentThread()) {
                held = held < 0 ? i : held;
                count++;
            }
        }
        if (count != 0 && count != ports.length) {
            throw new IllegalStateException("ShardedBfcAllocator '" + name + "': " + what + " reads every shard"
                    + " at one instant, and this thread holds the lock of shard " + held + " of " + ports.length
                    + ": it is running inside that shard (its sub-allocator, or a visitor of its chunks), where"
                    + " taking the other shards' locks could deadlock with a thread that takes them all; call it"
                    + " outside, or ask the shard itself (shards().get(" + held + "))");
        }
        for (BfcPort p : ports) {
            p.lock();
        }
    }

    /** Gives back the locks {@link #lockAllShards(String)} took. */
    private void unlockAllShards() {
        for (int i = ports.length - 1; i >= 0; i--) {
            ports[i].unlock();
        }
    }

    /**
     * Writes all shards as one PyTorch memory snapshot, for pytorch.org/memory_viz: every
     * shard's regions as segments (with their chunks and who allocated them), and the events of
     * every shard's history in one timeline, ordered by time (each shard's in its own order),
     * from where every shard has its events (the latest start of a shard's recording, the
     * latest first event kept by a shard whose ring dropped some); none while any shard records
     * no history ({@link #stopHistory()} reaches the shards one after another).
     * The {@code stream} of a segment, block or event is its shard's index (the viewer shows
     * it, and never merges segments of two shards).
     * The shards' pictures are taken at one instant ({@link #snapshots()}). For a memory map or
     * allocation ids, use each shard's own {@link BfcAllocator#snapshot()} ({@link #snapshots()}):
     * allocation ids are unique within a shard only.
     *
     * @param out where the pickle goes (not closed)
     * @throws NullPointerException if {@code out} is null
     * @throws IOException if writing fails
     */
    public void writePyTorchPickle(OutputStream out) throws IOException {
        Objects.requireNonNull(out, "out=null (expected: the stream to write the pickle to)");
        PyTorchSnapshotWriter.writeShards(snapshots(), out);
    }

    /**
     * Writes all shards as one PyTorch memory snapshot to a file (created or replaced, once
     * complete: a failure leaves it as it was; a symbolic link is followed, and a device or named
     * pipe, {@code /dev/null}, written to; a file replaced keeps its POSIX permissions, and other
     * hard links to it keep the old content); see {@link #writePyTorchPickle(OutputStream)}.
     *
     * @param file the file, e.g. {@code snapshot.pickle}
     * @throws NullPointerException if {@code file} is null
     * @throws IOException if the file cannot be written (it is left as it was), among them a
     *     {@link java.nio.file.AccessDeniedException} if it exists and may not be written
     *     (read-only)
     */
    public void writePyTorchPickle(Path file) throws IOException {
        PyTorchSnapshotWriter.toFile(file, this::writePyTorchPickle);
    }

    // ---------------------------------------------------------------------------------------
    // Lifecycle
    // ---------------------------------------------------------------------------------------

    /**
     * Closes every shard ({@link BfcAllocator#close()}, with the close policy). With
     * {@link ClosePolicy#REFUSE} it is all or nothing, as for one {@code BfcAllocator}: while
     * any shard has live allocations, it throws, naming each such shard and its allocations
     * (and their largest holders, when recorded), and closes no shard (every shard's lock is
     * held while it looks, so no call slips in between); close them, then call it again. With
     * {@link ClosePolicy#FORCE} every shard closes.
     * Idempotent once closed. A shard can also be closed alone (its own {@code close()}); once
     * any shard has begun to close, no shard obtains a new region, so the ranges a closed shard
     * gave back never become another shard's: a late free of an address it held gets
     * {@link IllegalStateException}, and an allocation that would need a new region does too.
     *
     * @throws IllegalStateException if allocations are live and the policy is {@code REFUSE};
     *     no shard is closed then
     * @throws RuntimeException what a sub-allocator's {@code free} threw (the later ones
     *     suppressed by it; an {@link Error} it threw is passed on likewise); every shard is
     *     closed all the same
     * @throws IllegalStateException also if called from inside its sub-allocator's {@code alloc}
     *     or {@code free}; no shard is closed then
     */
    @Override
    public void close() {
        pins.refuseCallFromSubAllocator(described, "close()");
        // Under REFUSE, every shard's lock: no allocation can begin between the look and the
        // close.
        boolean refuse = closePolicy == ClosePolicy.REFUSE;
        if (refuse) {
            lockAllShards("close()");
        }
        try {
            if (refuse) {
                refuseIfLiveLocked();
            }
            Throwable failure = null;
            for (BfcAllocator s : shards) {
                try {
                    s.close();
                } catch (RuntimeException | Error e) { // a sub-allocator's free failed; the shard is closed
                    failure = BfcPort.collect(failure, e);
                }
            }
            BfcPort.throwIfAny(failure);
        } finally {
            if (refuse) {
                unlockAllShards();
            }
        }
    }

    /** Throws if any open shard has live allocations, naming each. Needs every shard's lock. */
    private void refuseIfLiveLocked() {
        List<String> live = new ArrayList<>();
        List<MemoryMap> recorded = new ArrayList<>();
        for (int i = 0; i < shards.length; i++) {
            BfcAllocator s = shards[i];
            String what = s.isClosed() ? null : s.liveAllocationsLocked("shard " + i + " of " + shards.length);
            if (what != null) {
                live.add(what);
                MemoryMap map = s.memoryMapForHoldersLocked();
                if (map != null) {
                    recorded.add(map);
                }
            }
        }
        if (!live.isEmpty()) {
            String message = "close() of allocator '" + name + "' refused: " + String.join("; ", live)
                    + ". No shard was closed. " + loans.advice()
                    + HolderText.messageSentence(recorded);
            LOG.log(Level.WARNING, message);
            throw new IllegalStateException(message);
        }
    }

    /** Whether a shard has begun to close (from then on no shard obtains a new region). */
    private boolean anyShardCloseBegun() {
        return anyShard(BfcAllocator::closeBegun);
    }

    private boolean anyShard(Predicate<BfcAllocator> test) {
        for (BfcAllocator s : shards) {
            if (test.test(s)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Before an allocation's last attempt: once a shard has begun to close, the others obtain
     * no new region, so an allocation that needs one is refused as closed, not reported as out
     * of memory.
     */
    private void checkNoShardClosed() {
        if (anyShardClosed()) {
            throw new IllegalStateException("allocator '" + name + "' is closed, or a shard of it: its shards"
                    + " obtain no new memory, and this allocation found no room in them");
        }
    }

    /**
     * Whether a shard is closed, each asked under its lock: a shard closing now gives its
     * regions back under its lock, so a free that found its region gone waits here for that
     * close to finish, and is then told "closed", not "not allocated".
     */
    private boolean anyShardClosed() {
        return anyShard(BfcAllocator::isClosedUnderLock);
    }

    /** @return true once every shard is closed */
    public boolean isClosed() {
        return !anyShard(s -> !s.isClosed());
    }

    @Override
    public String toString() {
        return "ShardedBfcAllocator[name=" + name + ", shards=" + shards.length + ", limit="
                + BfcAllocator.humanReadableNumBytes(memoryLimit()) + ", reserved="
                + BfcAllocator.humanReadableNumBytes(reservedBytes()) + "]";
    }
}
