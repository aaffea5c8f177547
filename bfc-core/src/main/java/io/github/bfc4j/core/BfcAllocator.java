/*
 * Copyright 2026 The bfc4j Authors.
 * Port of TensorFlow's BFCAllocator (tensorflow/tensorflow @ 5263072435bf,
 * third_party/xla/xla/tsl/framework/bfc_allocator.{h,cc}; Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.ChunkTable;
import io.github.bfc4j.core.internal.ChunkWalk;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * A memory allocator that implements best-fit with coalescing (BFC): a port, in behaviour, of
 * TensorFlow's classic {@code BFCAllocator} (the version without spatial partitioning). Every
 * decision (which address, which sub-allocator call, which statistic) is TensorFlow's; the
 * conformance traces prove it call for call. Memory comes from a {@link SubAllocator} in
 * regions, is cut into chunks that are multiples of 256 bytes, and free chunks wait in 21 bins
 * by size; docs/architecture.md describes the algorithm, docs/porting-map.md maps every
 * upstream function to its Java counterpart.
 *
 * <pre>{@code
 * try (BfcAllocator allocator = BfcAllocator.builder()
 *         .name("cpu_bfc")
 *         .memoryLimit(1L << 30)
 *         .subAllocator(new AlignedHostSubAllocator())
 *         .build();
 *      Allocation a = allocator.allocate(4096)) {
 *     a.asByteBuffer().putLong(0, 42);
 * }
 * }</pre>
 *
 * <p>Two ways to allocate: {@link #allocate(long)} returns an {@link Allocation} handle and
 * throws {@link BfcOutOfMemoryException} when the memory cannot be had; upstream's
 * {@link #allocateRaw(long, long)} and {@link #deallocateRaw(long)} work on addresses, return 0
 * on failure and create no Java object. Beyond upstream's queries and {@link #getStats()}, the
 * allocator reports {@link #memoryStats()}, {@link #memorySummary()}, {@link #memoryMap()},
 * JFR events and, on request, out-of-memory dumps (docs/observability.md), and checks its own
 * invariants ({@link #checkInvariants()}).
 *
 * <p>Thread-safe: every method takes one lock, as upstream. Deliberate differences from
 * upstream are listed in docs/deviations.md.
 */
public final class BfcAllocator implements MemoryAllocator {

    private static final System.Logger LOG = System.getLogger(BfcPort.LOGGER_NAME);

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

    /** The alignment {@link #allocate(long)} asks for: upstream's {@code Allocator::kAllocatorAlignment}. */
    public static final long ALLOCATION_ALIGNMENT = 64;

    /**
     * Upstream's algorithm and state. {@link ShardedBfcAllocator} calls its shards' directly on
     * its allocate/free path.
     */
    final BfcPort port;

    /** The port's state, read-only, as the collaborators below read it. */
    private final PortView view;

    /**
     * Where views are pinned: the sub-allocator as the port sees it, whose region frees wait
     * while views of them are reachable; for a shard, the one its sharded allocator shares.
     */
    private final ViewPins pins;

    /** Upstream's debug queries. */
    private final DebugQueries debug;

    /** The memory stats, summary and map. */
    private final MemoryReports reports;

    /** The out-of-memory reports, for {@link #allocate(long)}'s exception. */
    private final OutOfMemoryReporter oomReporter;

    /**
     * Runtimes this allocator's memory is lent to, for close()'s advice: a shard's are its
     * sharded allocator's, so that a loan of either is told by the refused close of either.
     */
    private final Loans loans;

    /** Guarded by the lock: the history and who holds each chunk, when recorded. */
    private final HistoryRecorder history;

    /** The out-of-memory listeners and the dump writer. */
    final OutOfMemoryListeners oomListeners; // package-private for tests

    /** The JDK Flight Recorder events. */
    private final JfrRecorder jfr;

    /** The invariant checker. */
    private final InvariantChecker checker;

    /** Guarded by the lock: looks at the chunk of a new {@link Allocation}. */
    private final ChunkWalk newAllocationChunk;

    /**
     * Runs in {@code handOut} before the {@link Allocation} is made (under the lock): a test's
     * way to fail there. Null but in tests.
     */
    Runnable beforeHandle;

    /** What {@link #close()} does with live allocations. */
    private final ClosePolicy closePolicy;

    /**
     * This allocator's one read-only view ({@link BfcAllocatorView#of}): one object, so that what
     * holds it weakly or compares it by identity sees the allocator's lifetime and identity.
     */
    final BfcAllocatorView readOnlyView = new BfcAllocatorView(this);

    /** Whether handles from {@link #allocate(long)} are watched for leaks. */
    private final LeakDetection leakDetection;

    /** Leaked allocations found and reclaimed. */
    private final AtomicLong leaksReclaimed = new AtomicLong();

    /**
     * Set (under the lock) once {@link #close()} has given the regions back: every
     * {@link Allocation} of this allocator is closed from then on.
     */
    private volatile boolean closed;

    /**
     * Port of {@code BFCAllocator::BFCAllocator}: the upstream-compatible constructor. It checks
     * its arguments as {@link #builder()} does; its defaults are upstream's where the builder's
     * are a Java user's: the options are used as given ({@link BfcOptions#defaults()} retries
     * on failure, as upstream), and {@link #close()} frees live allocations as upstream's
     * destructor does ({@link ClosePolicy#FORCE}). docs/host-memory.md has the table.
     *
     * @param subAllocator where regions come from
     * @param totalMemory the memory limit in bytes (upstream's {@code total_memory}), > 0
     * @param name the allocator's name, for messages and metrics; not blank
     * @param opts the options
     * @throws IllegalArgumentException if an argument is null, {@code totalMemory} is not
     *     positive, {@code name} is blank, the sub-allocator's {@code memoryType()} is null or
     *     its {@code deviceId()} outside 0 to 1023, or
     *     the fragmentation fraction is positive but its threshold
     *     {@code (long) (fraction * totalMemory)} is 0
     */
    public BfcAllocator(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts) {
        this(checkSubAllocator(subAllocator), checkMemoryLimit("totalMemory", totalMemory), checkName(name),
                checkOptions("opts", opts), ClosePolicy.FORCE, LeakDetection.fromSystemProperty(), null, null);
    }

    // The checks of the constructor and the builder: one set, so that both refuse the same.

    static SubAllocator checkSubAllocator(SubAllocator subAllocator) {
        if (subAllocator == null) {
            throw new IllegalArgumentException("subAllocator=null (expected: a SubAllocator,"
                    + " e.g. new AlignedHostSubAllocator() from bfc-cpu)");
        }
        // Every view, memory map, snapshot and out-of-memory report reads it: a null there
        // would fail each of them (an allocation that should return 0 among them).
        if (subAllocator.memoryType() == null) {
            throw new IllegalArgumentException("subAllocator.memoryType()=null for " + subAllocator
                    + " (expected: a MemoryType, e.g. HOST_PAGEABLE for memory Java may view; SubAllocator's"
                    + " default is UNKNOWN)");
        }
        int device = subAllocator.deviceId();
        if (device < 0 || device > PyTorchSnapshotWriter.MAX_DEVICE) {
            throw new IllegalArgumentException("subAllocator.deviceId()=" + device + " for " + subAllocator
                    + " (expected: a CUDA device ordinal, 0 to " + PyTorchSnapshotWriter.MAX_DEVICE
                    + "; SubAllocator's default is 0)");
        }
        return subAllocator;
    }

    static long checkMemoryLimit(String what, long memoryLimit) {
        // DEVIATION(port): upstream takes a total_memory of 0 and then fails every allocation.
        if (memoryLimit <= 0) {
            throw new IllegalArgumentException(what + "=" + memoryLimit
                    + " (expected: a number of bytes > 0, e.g. 1L << 30 for 1 GiB)");
        }
        return memoryLimit;
    }

    static String checkName(String name) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("name=" + (name == null ? "null" : "'" + name + "'")
                    + " (expected: a non-empty name such as \"cpu_bfc\")");
        }
        return name;
    }

    static BfcOptions checkOptions(String what, BfcOptions options) {
        if (options == null) {
            throw new IllegalArgumentException(what + "=null (expected: BfcOptions, e.g. BfcOptions.builder().build())");
        }
        return options;
    }

    static ClosePolicy checkClosePolicy(ClosePolicy closePolicy) {
        if (closePolicy == null) {
            throw new IllegalArgumentException("closePolicy=null (expected: REFUSE or FORCE)");
        }
        return closePolicy;
    }

    /**
     * The builders' check that their two required settings were given.
     *
     * @param limitMeaning what the limit bounds, for the message (e.g. "the most memory the
     *     allocator may hold")
     */
    static void checkRequiredSet(long memoryLimit, SubAllocator subAllocator, String limitMeaning) {
        if (memoryLimit < 0) {
            throw new IllegalStateException("memoryLimit is not set (expected: .memoryLimit(bytes), "
                    + limitMeaning + ")");
        }
        if (subAllocator == null) {
            throw new IllegalStateException("subAllocator is not set (expected: .subAllocator(...),"
                    + " e.g. new AlignedHostSubAllocator() from bfc-cpu)");
        }
    }

    static LeakDetection checkLeakDetection(LeakDetection leakDetection) {
        if (leakDetection == null) {
            throw new IllegalArgumentException("leakDetection=null (expected: DISABLED, SIMPLE or PARANOID)");
        }
        return leakDetection;
    }

    private BfcAllocator(SubAllocator subAllocator, long totalMemory, String name, BfcOptions opts,
            ClosePolicy closePolicy, LeakDetection leakDetection, ViewPins sharedPins, Loans sharedLoans) {
        this.closePolicy = Objects.requireNonNull(closePolicy, "closePolicy");
        this.loans = sharedLoans != null ? sharedLoans : new Loans();
        this.leakDetection = Objects.requireNonNull(leakDetection, "leakDetection");
        if (sharedPins != null) {
            this.pins = sharedPins;
            this.port = new BfcPort(subAllocator, totalMemory, name, opts);
        } else {
            // DEVIATION(port): a region that a view of memory in it still reaches is given back
            // to the sub-allocator once the view is collected (docs/deviations.md).
            this.pins = new ViewPins(new AllocatorCalls(name, subAllocator));
            this.port = new BfcPort(pins, totalMemory, name, opts);
        }
        port.guardSubAllocatorCalls(pins);
        port.nameLoansBy(loans);
        this.view = port.view();
        this.debug = new DebugQueries(view);
        this.history = new HistoryRecorder(view);
        this.reports = new MemoryReports(view, debug, history, loans, pins::heldBackBytes);
        this.oomListeners = new OutOfMemoryListeners(opts);
        this.oomReporter = new OutOfMemoryReporter(view, reports, debug, history, oomListeners, opts);
        this.checker = new InvariantChecker(view);
        this.newAllocationChunk = view.walk();
        this.jfr = new JfrRecorder(view, opts.jfrAllocationSamplePeriod());
        installListeners();
    }

    /**
     * Installs the port's listeners: the JFR recorder, the provenance recorder while it records
     * (so that with nothing recorded, allocations and frees call no listener), and the
     * out-of-memory reporter (last: it reads the failure's provenance).
     */
    private void installListeners() {
        port.install(history.isOn() ? PortListener.of(jfr, history, oomReporter) : PortListener.of(jfr, oomReporter),
                checker::checkLocked);
    }

    // ---------------------------------------------------------------------------------------
    // Building, Allocation handles, lifecycle
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
     * @return a builder with upstream's default options except retrying on failure (off: an
     *     allocation that does not fit throws at once), {@link ClosePolicy#REFUSE}, and leak
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
        // Retry off: a Java caller expects BfcOutOfMemoryException now, not a wait of up to 10 s.
        private BfcOptions.Builder options = BfcOptions.builder().allowRetryOnFailure(false);
        private ClosePolicy closePolicy = ClosePolicy.REFUSE;
        private LeakDetection leakDetection;
        /** Set by {@link ShardedBfcAllocator}: the pins its shards share (below their common cap). */
        private ViewPins sharedPins;
        /** Set by {@link ShardedBfcAllocator}: its loans, which its shards share. */
        private Loans sharedLoans;
        /** Set by {@link ShardedBfcAllocator}: its name, this shard's index and the shard count. */
        private String shardOf;
        private int shardIndex;
        private int shardCount;

        private Builder() {
        }

        /**
         * Pins views into {@code pins}, which the caller has placed under {@link
         * #subAllocator(SubAllocator)} itself (the sub-allocator is then used as given).
         */
        Builder sharedViewPins(ViewPins pins) {
            this.sharedPins = Objects.requireNonNull(pins, "pins");
            return this;
        }

        /** Tells {@code loans} (the sharded allocator's) in a refused close, and lends into them. */
        Builder sharedLoans(Loans loans) {
            this.sharedLoans = Objects.requireNonNull(loans, "loans");
            return this;
        }

        /**
         * Makes the allocator shard {@code index} of {@code count} of the sharded allocator
         * named {@code sharded}: its messages name it so ({@link #described()}), not by its own
         * name, which the sharded allocator's user never gave.
         */
        Builder shardOf(String sharded, int index, int count) {
            this.shardOf = Objects.requireNonNull(sharded, "sharded");
            this.shardIndex = index;
            this.shardCount = count;
            return this;
        }

        /**
         * @param name the allocator's name, for messages and metrics ({@code "bfc"} if not set)
         * @return this builder
         * @throws IllegalArgumentException if the name is null or blank
         */
        public Builder name(String name) {
            this.name = checkName(name);
            return this;
        }

        /**
         * @param memoryLimit the most bytes the allocator may hold from its sub-allocator
         *     (upstream's {@code total_memory}); required
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder memoryLimit(long memoryLimit) {
            this.memoryLimit = checkMemoryLimit("memoryLimit", memoryLimit);
            return this;
        }

        /**
         * @param subAllocator where regions come from, e.g. bfc-cpu's
         *     {@code AlignedHostSubAllocator}; required
         * @return this builder
         * @throws IllegalArgumentException if null, if its {@code memoryType()} is null, or if
         *     its {@code deviceId()} is outside 0 to 1023
         */
        public Builder subAllocator(SubAllocator subAllocator) {
            this.subAllocator = checkSubAllocator(subAllocator);
            return this;
        }

        /**
         * Sets every upstream option at once, as given (replacing earlier calls of the option
         * setters, and the builder's default of no retry: {@code BfcOptions.defaults()} retries).
         *
         * @param options the options
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder options(BfcOptions options) {
            this.options = checkOptions("options", options).toBuilder();
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
         * @param allowRetryOnFailure see {@link BfcOptions#allowRetryOnFailure()}; default
         *     false for the builder: an allocation that does not fit throws
         *     {@link BfcOutOfMemoryException} at once. True waits up to 10 s for other threads
         *     to free memory first, as upstream (whose default it is); a request that can never
         *     fit fails at once either way
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
            this.closePolicy = checkClosePolicy(closePolicy);
            return this;
        }

        /**
         * @param leakDetection whether handles from {@link BfcAllocator#allocate(long)} are
         *     watched for leaks (default: the system property {@value LeakDetection#PROPERTY})
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder leakDetection(LeakDetection leakDetection) {
            this.leakDetection = checkLeakDetection(leakDetection);
            return this;
        }

        /**
         * @return a new allocator; it obtains no memory until the first allocation
         * @throws IllegalStateException if the memory limit or the sub-allocator was not set
         * @throws IllegalArgumentException if the options do not fit together (see the
         *     constructor), or the leak-detection system property is malformed
         */
        public BfcAllocator build() {
            checkRequiredSet(memoryLimit, subAllocator, "the most memory the allocator may hold");
            LeakDetection leaks = leakDetection != null ? leakDetection : LeakDetection.fromSystemProperty();
            BfcAllocator a = new BfcAllocator(subAllocator, memoryLimit, name, options.build(), closePolicy, leaks,
                    sharedPins, sharedLoans);
            if (shardOf != null) {
                // Before the allocator is published: the sharded allocator's constructor is not done.
                a.port.describeAsShard(shardOf, shardIndex, shardCount);
            }
            return a;
        }
    }

    /**
     * Allocates {@code bytes} and returns a handle that gives them back on {@link
     * Allocation#close()}. Unlike {@link #allocateRaw(long, long)}, running out of memory is an
     * exception, and the handle carries the sizes, the id and (for host memory) views. Creates
     * the handle object; use {@code allocateRaw} where even that matters. The address is aligned
     * to {@link #ALLOCATION_ALIGNMENT} (64) bytes: {@code allocate(bytes, 64)}.
     *
     * @param bytes the size wanted, > 0
     * @return the allocation
     * @throws IllegalArgumentException if {@code bytes} is not positive, or {@code bytes + 63}
     *     exceeds {@link #MAX_ALLOCATION_BYTES}
     * @throws BfcOutOfMemoryException if the memory cannot be had (after upstream's retries,
     *     when {@link BfcOptions#allowRetryOnFailure()} is on)
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     * @throws RuntimeException what the sub-allocator's {@code alloc} or {@code free} threw while
     *     serving it (bfc-cuda's {@code CudaException} for a driver error other than out of
     *     memory): the allocator stays whole (docs/deviations.md #27)
     */
    public Allocation allocate(long bytes) {
        return allocate(bytes, ALLOCATION_ALIGNMENT);
    }

    /**
     * Allocates {@code bytes} at an address that is a multiple of {@code alignment}, and
     * returns a handle as {@link #allocate(long)} does. Unlike {@link #allocateRaw(long, long)},
     * whose alignment is only passed on to the sub-allocator, this one is kept: chunks are
     * 256-byte aligned within their region, so for an alignment above 256 bytes (or a region
     * that is not aligned) the chunk is over-allocated by up to {@code alignment - 256} bytes
     * (or {@code alignment - 1}) and {@link Allocation#address()} is the first aligned address
     * in it; {@link Allocation#size()} is then the whole chunk. An alignment of at most 256 on
     * a sub-allocator with 256-byte aligned regions (all of bfc4j's) costs nothing.
     *
     * @param bytes the size wanted, > 0
     * @param alignment a power of two
     * @return the allocation, {@code address() % alignment == 0}
     * @throws IllegalArgumentException if {@code bytes} is not positive, {@code alignment} is
     *     not a power of two, or {@code bytes + alignment - 1} exceeds
     *     {@link #MAX_ALLOCATION_BYTES}
     * @throws BfcOutOfMemoryException if the memory (with the padding) cannot be had
     * @throws IllegalStateException if the allocator is closed
     * @throws RuntimeException what the sub-allocator's {@code alloc} or {@code free} threw while
     *     serving it (bfc-cuda's {@code CudaException} for a driver error other than out of
     *     memory): the allocator stays whole (docs/deviations.md #27)
     */
    public Allocation allocate(long bytes, long alignment) {
        checkAllocateArguments(port.described(), bytes, alignment);
        return allocateAligned(bytes, alignment, true);
    }

    /** The argument checks of {@link #allocate(long, long)}, for allocator {@code name}. */
    static void checkAllocateArguments(String described, long bytes, long alignment) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes=" + bytes + " (expected: > 0) for allocator "
                    + described);
        }
        checkAlignment(described, alignment);
        if (bytes > MAX_ALLOCATION_BYTES - alignment + 1) {
            throw new IllegalArgumentException("bytes=" + bytes + " with alignment=" + alignment
                    + " (expected: bytes + alignment - 1 <= " + MAX_ALLOCATION_BYTES + ") for allocator "
                    + described);
        }
    }

    /**
     * Whether {@link #allocateRaw(long, long, AllocationAttributes)}'s arguments are bad: the
     * hot path's one test (the name for the message is read only when they are).
     */
    static boolean badAllocateRawArguments(long alignment, long numBytes) {
        return numBytes < 0 || !isPowerOfTwo(alignment);
    }

    /**
     * The exception for {@link #badAllocateRawArguments}, for the allocator as
     * {@code described} names it ({@code 'NAME'}, or {@code 'SHARDED' (shard I of N)}).
     */
    static IllegalArgumentException badAllocateRawArguments(String described, long alignment, long numBytes) {
        if (numBytes < 0) {
            return new IllegalArgumentException("numBytes=" + numBytes
                    + " (expected: >= 0) for allocator " + described);
        }
        return badAlignment(described, alignment);
    }

    private static void checkAlignment(String described, long alignment) {
        if (!isPowerOfTwo(alignment)) {
            throw badAlignment(described, alignment);
        }
    }

    private static boolean isPowerOfTwo(long alignment) {
        return alignment > 0 && (alignment & (alignment - 1)) == 0;
    }

    private static IllegalArgumentException badAlignment(String described, long alignment) {
        return new IllegalArgumentException("alignment=" + alignment
                + " (expected: a power of two) for allocator " + described);
    }

    /**
     * {@link ShardedBfcAllocator}'s quiet attempt: {@link #allocate(long, long)} (arguments
     * already checked), but a failure is not reported (no out-of-memory event, log, listener or
     * count), because another shard may still serve the call.
     *
     * @return the allocation, or null if the memory cannot be had here
     */
    Allocation tryAllocate(long bytes, long alignment) {
        return allocateAligned(bytes, alignment, false);
    }

    /**
     * {@link ShardedBfcAllocator}'s quiet attempt of {@link #allocateRaw(long, long,
     * AllocationAttributes)} (arguments already checked): a failure is not reported and does not
     * wait for frees.
     *
     * @param owner who owns the chunk: 0 (none), {@link ChunkTable#lentBy(int)} for memory lent
     *     through a loan
     * @return the address, or 0
     */
    long tryAllocateRaw(long alignment, long numBytes, AllocationAttributes attr, long owner) {
        return port.tryAllocateRaw(alignment, numBytes, attr, owner);
    }

    /**
     * {@link #allocate(long, long)} with its arguments checked.
     *
     * @param report whether a failure is the allocation's failure (reported, then thrown) or
     *     only this allocator's (null is returned)
     */
    private Allocation allocateAligned(long bytes, long alignment, boolean report) {
        pins.refuseCallFromSubAllocator(port.described(), "allocate");
        // Chunks start 256 bytes apart from their region's start: in a 256-aligned region that
        // padding suffices; where it does not (an unaligned region), alignment - 1 always does.
        long padded = alignment <= MIN_ALLOCATION_SIZE ? bytes : bytes + alignment - MIN_ALLOCATION_SIZE;
        long ptr = chunkFor(alignment, padded, report);
        if (ptr == 0) {
            return null;
        }
        Allocation a = handOut(ptr, bytes, alignment);
        if (a != null) {
            return a;
        }
        ptr = chunkFor(alignment, bytes + alignment - 1, report);
        return ptr == 0 ? null : handOut(ptr, bytes, alignment);
    }

    /**
     * Allocates the chunk of an {@link Allocation}, owned by the handle from the lock hold that
     * finds it: no raw free (a stale one of another thread) can take it before {@link #handOut}.
     *
     * @return the chunk's address, or 0 if it cannot be had and {@code !report}
     * @throws BfcOutOfMemoryException if it cannot be had and {@code report}
     */
    private long chunkFor(long alignment, long padded, boolean report) {
        if (!report) {
            return port.tryAllocateRaw(alignment, padded, AllocationAttributes.NO_RETRY,
                    ChunkTable.HANDLE_OWNED);
        }
        long ptr = port.allocateRaw(alignment, padded, AllocationAttributes.DEFAULT, ChunkTable.HANDLE_OWNED);
        if (ptr == 0) {
            // The figures of the moment of failure, taken under the lock in the failing call.
            throw oomReporter.exceptionForLastFailure(padded);
        }
        return ptr;
    }

    /**
     * Makes the handle of the chunk {@link #chunkFor} just returned at {@code ptr} (already
     * marked as the handle's): its first {@code alignment}-aligned address and {@code bytes}
     * from there.
     *
     * @return the allocation, or null (the chunk freed again) if the chunk holds no aligned run
     *     of {@code bytes} bytes
     * @throws IllegalStateException if the allocator was closed since the chunk was found (a
     *     forced close freed it)
     */
    private Allocation handOut(long ptr, long bytes, long alignment) {
        port.lock();
        try {
            port.checkOpenLocked();
            int h = view.handleAt(ptr);
            // A raw free cannot take a chunk marked as the handle's, and no handle knows its id
            // yet: the chunk is still the one found.
            BfcPort.check(h >= 0 && port.handleOwnedLocked(h), "the chunk of a new Allocation is the handle's");
            ChunkWalk c = newAllocationChunk.at(h);
            long allocationId = c.allocationId();
            long address = (ptr + alignment - 1) & -alignment;
            if (address - ptr > c.size() - bytes) {
                port.giveBackOwned(ptr, allocationId);
                return null;
            }
            Allocation handle;
            try {
                Runnable hook = beforeHandle;
                if (hook != null) {
                    hook.run();
                }
                handle = LeakGuard.newAllocation(this, leakDetection, ptr, address, c.size(), bytes,
                        allocationId);
            } catch (Throwable t) {
                // An Error making the handle (out of heap or of stack: the handle, its leak
                // guard, the paranoid allocation site): no handle will ever free the chunk, and
                // the caller never learns its address, so it goes back now.
                try {
                    port.giveBackOwned(ptr, allocationId);
                } catch (Throwable e) {
                    t.addSuppressed(e);
                }
                throw t;
            }
            return handle;
        } finally {
            port.unlock();
        }
    }

    /**
     * {@link Allocation#close()}: frees the chunk at {@code ptr} if it is still the allocation
     * {@code allocationId}; nothing if the allocator was closed before.
     */
    void deallocateForHandle(long ptr, long allocationId) {
        port.deallocateOwned(ptr, allocationId);
    }

    /**
     * {@link Allocation#close()} after its free threw: whether the chunk at {@code ptr} is still
     * in use as allocation {@code allocationId}'s (the free changed nothing).
     */
    boolean ownedByHandle(long ptr, long allocationId) {
        return port.ownedByHandle(ptr, allocationId);
    }

    /**
     * {@link Allocation#close()} about to wait for another thread's close of {@code handle}
     * (which may need this allocator's lock): refuses a thread on which that wait could
     * deadlock, one that holds this lock (a visitor of {@link #forEachChunk}) or walks another
     * shard's chunks.
     *
     * @throws IllegalStateException on such a thread
     */
    void refuseWaitForHandleClose(Allocation handle) {
        if (port.lockHeldByCurrentThread()) {
            throw new IllegalStateException("Allocation.close() of " + handle.described() + " was called while"
                    + " another thread's close() of it is under way, on a thread that holds the allocator's lock"
                    + " (inside a visitor of its chunks, forEachChunk): that close may need the lock, so waiting"
                    + " for it here could deadlock. Close handles after the walk; the other thread's close frees"
                    + " the memory (if it throws, the handle stays open). Nothing was done.");
        }
        port.refuseInAnotherShardsWalk();
    }

    /**
     * {@link LeakGuard}: returns a leaked allocation's memory (as its handle's close would) and
     * counts it.
     *
     * @return false if it was not returned (the allocator is closed)
     */
    boolean reclaimLeak(long ptr, long allocationId) {
        if (port.deallocateOwned(ptr, allocationId)) {
            leaksReclaimed.incrementAndGet();
            return true;
        }
        return false;
    }

    /**
     * {@link LeakGuard}, before {@link #reclaimLeak}: the provenance recorded for allocation
     * {@code allocationId} at {@code ptr}, if still there ({@link Provenance#UNKNOWN} when
     * nothing was recorded), read before the reclaim forgets it, so that the report names it
     * whether the reclaim returns the memory or fails.
     */
    Provenance recordedProvenance(long ptr, long allocationId) {
        port.lock();
        try {
            int h = view.handleAt(ptr);
            return h == ChunkTable.INVALID_CHUNK_HANDLE ? Provenance.UNKNOWN : history.chunkProvenance(h, allocationId);
        } finally {
            port.unlock();
        }
    }

    /**
     * Whether {@link #close()} has given the regions back. From then on every {@link Allocation}
     * of this allocator is closed ({@link Allocation#isClosed()}), even one that was live at a
     * forced close.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Whether a close has begun: set (under the lock) before the close gives the first region
     * back, and read here without the lock. {@link ShardedBfcAllocator}'s region table reads it
     * under its own monitor, which every region given back passes through first, so it sees a
     * close whose regions it has taken back.
     */
    boolean closeBegun() {
        return view.closed();
    }

    /**
     * Whether the allocator is closed, read under its lock: a close under way (which holds the
     * lock while it gives the regions back) has finished by then. For
     * {@link ShardedBfcAllocator}, which may see a shard's regions gone before
     * {@link #isClosed()} says so.
     */
    boolean isClosedUnderLock() {
        port.lock();
        try {
            return view.closed();
        } finally {
            port.unlock();
        }
    }

    /**
     * Bytes of regions that the allocator has given back (by {@link #close()}, garbage
     * collection of free regions or {@link #emptyCache()}) whose memory it has not yet returned
     * to the sub-allocator, because a {@code ByteBuffer} or {@code BytePointer} view of memory
     * in them is still reachable. Each such region is returned once the last of those views has
     * been collected. Not part of any statistic: the regions have left the pool.
     *
     * @return the bytes held back for views, 0 when none is
     */
    public long bytesHeldForViews() {
        return pins.heldBackBytes();
    }

    /**
     * @throws IllegalStateException if called from inside this allocator's call of its
     *     sub-allocator (see {@link ViewPins#refuseCallFromSubAllocator})
     */
    void refuseCallFromSubAllocator(String call) {
        pins.refuseCallFromSubAllocator(port.described(), call);
    }

    /** Where views of this allocator's memory hold their regions. */
    ViewPins viewPins() {
        return pins;
    }

    /**
     * @return how many {@link Allocation}s leak detection found unreachable without close and
     *     reclaimed
     */
    public long leaksReclaimed() {
        return leaksReclaimed.get();
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
     * Gives every region back to the sub-allocator, as upstream's destructor does. With
     * allocations still live, it logs their count and bytes (and their largest holders, when
     * provenance is recorded: docs/observability.md), then follows the
     * {@link #closePolicy() close policy}: {@link ClosePolicy#REFUSE} throws and leaves the
     * allocator open and unchanged; {@link ClosePolicy#FORCE} frees them with the regions: their
     * {@link Allocation} handles are closed (their views are refused, closing them does nothing)
     * and their raw addresses become invalid; the statistics count them as freed
     * ({@code bytesInUse} 0). Idempotent once closed. Afterwards allocation, deallocation and
     * per-address queries throw {@link IllegalStateException}; {@link #getStats()} still
     * answers. Views taken before the close are not invalidated: a region that one of them
     * still reaches goes back to the sub-allocator once they are collected
     * ({@link #bytesHeldForViews()}, docs/host-memory.md).
     *
     * @throws IllegalStateException if allocations are live and the policy is {@code REFUSE}
     * @throws RuntimeException what the sub-allocator's {@code free} threw (a CUDA error; the
     *     later ones suppressed by it; an {@link Error} it threw is passed on likewise): the
     *     allocator is closed all the same, every region given up
     * @throws IllegalStateException also if called from inside its sub-allocator's {@code alloc}
     *     or {@code free}; nothing is closed then
     */
    @Override
    public void close() {
        pins.refuseCallFromSubAllocator(port.described(), "close()");
        port.lock();
        try {
            if (view.closed()) {
                return;
            }
            String what = liveAllocationsLocked("allocator " + port.described());
            if (what != null) {
                MemoryMap recorded = memoryMapForHoldersLocked();
                String holders = recorded == null ? "" : HolderText.messageSentence(recorded);
                if (closePolicy == ClosePolicy.REFUSE) {
                    String message = "close() refused: " + what + ". " + loans.advice() + holders;
                    LOG.log(Level.WARNING, message);
                    throw new IllegalStateException(message);
                }
                LOG.log(Level.WARNING, "close() forced: " + what + "; their memory is freed now: their Allocation"
                        + " handles are closed and their raw addresses are invalid." + holders);
            }
            try {
                port.closeLocked();
            } finally {
                closed = true;
            }
        } finally {
            port.unlock();
        }
        // An allocation waiting for memory (the retry loop), or about to wait, tries again now
        // and finds the allocator closed, instead of waiting out its 10 seconds.
        port.endRetryWaits();
    }

    /**
     * Whether the memory map can name holders of live memory: provenance was ever recorded here
     * (annotations on, or a history started), or memory may be lent to a runtime.
     */
    boolean namesHolders() {
        port.lock();
        try {
            return reports.namesHoldersLocked();
        } finally {
            port.unlock();
        }
    }

    /**
     * The memory map, for naming the holders of live memory, when it can name them
     * ({@link #namesHolders()}); else null. Needs the lock.
     */
    MemoryMap memoryMapForHoldersLocked() {
        return reports.namesHoldersLocked() ? reports.memoryMapLocked() : null;
    }

    /**
     * What {@link #close()} reports of the live allocations: {@code "SUBJECT has N live
     * allocations (B in use)"}, or null when there are none. Needs the lock.
     *
     * @param subject how to name the allocator, e.g. {@code "allocator 'x'"} or {@code "shard 0 of 2"}
     */
    String liveAllocationsLocked(String subject) {
        long live = 0;
        for (ChunkWalk c = view.walk().all(); c.next(); ) {
            if (c.inUse()) {
                live++;
            }
        }
        return live == 0 ? null : subject + " has " + live + " live allocation"
                + (live == 1 ? "" : "s") + " (" + humanReadableNumBytes(view.bytesInUse()) + " in use)";
    }

    // ---------------------------------------------------------------------------------------
    // Upstream's API
    // ---------------------------------------------------------------------------------------

    /**
     * The allocator's name. Port of {@code BFCAllocator::Name}.
     *
     * @return the name given at construction
     */
    public String name() {
        return port.name();
    }

    /**
     * How messages name this allocator, after the word "allocator": {@code 'NAME'}, or
     * {@code 'SHARDED' (shard I of N)} for a shard of a {@link ShardedBfcAllocator}.
     */
    String described() {
        return port.described();
    }

    /**
     * The memory limit. Upstream's {@code memory_limit_}.
     *
     * @return the {@code totalMemory} given at construction
     */
    public long memoryLimit() {
        return port.memoryLimit();
    }

    /**
     * The options given at construction.
     *
     * @return the options
     */
    public BfcOptions options() {
        return port.options();
    }

    /**
     * Port of {@code BFCAllocator::RoundedBytes}: rounds up to a multiple of 256.
     *
     * @param bytes a size, {@code 0 <= bytes <= MAX_ALLOCATION_BYTES}
     * @return the size rounded up to a multiple of {@link #MIN_ALLOCATION_SIZE}
     * @throws IllegalArgumentException if {@code bytes} is outside that range
     */
    public static long roundedBytes(long bytes) {
        if (bytes < 0 || bytes > MAX_ALLOCATION_BYTES) {
            throw new IllegalArgumentException("bytes=" + bytes + " (expected: 0 to MAX_ALLOCATION_BYTES, "
                    + MAX_ALLOCATION_BYTES + ")");
        }
        return BfcPort.roundedBytes(bytes);
    }

    /**
     * Port of {@code BFCAllocator::BinNumForSize}: {@code min(20, floor(log2(max(bytes, 256) >> 8)))}.
     *
     * @param bytes a size, 0 or more
     * @return the bin that a free chunk of this size belongs to
     * @throws IllegalArgumentException if {@code bytes} is negative (upstream's {@code size_t}
     *     cannot be; read as one, it would land in the last bin, read as a Java size in the first)
     */
    public static int binNumForSize(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes=" + bytes + " (expected: a size, 0 or more)");
        }
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

    /**
     * Allocates with upstream's default attributes (retry on failure, if the options allow it;
     * no timestamp constraint). Port of {@code BFCAllocator::AllocateRaw(alignment, num_bytes)}.
     *
     * <p>The alignment is <b>not</b> a promise, as upstream's (whose parameter is named
     * {@code unused_alignment}): it is only passed on to the sub-allocator when a new region is
     * obtained. Every chunk starts a multiple of 256 bytes after its region's start, so an
     * address is 256-byte aligned in a 256-byte aligned region, and an alignment above 256 bytes
     * is not kept. {@link #allocate(long, long)} keeps any alignment.
     *
     * @param alignment a power of two; only passed on to the sub-allocator (every chunk is
     *     256-byte aligned within its region; larger alignments are not kept)
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0, above {@link #MAX_ALLOCATION_BYTES},
     *     or the memory cannot be had
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed
     * @throws RuntimeException what the sub-allocator's {@code alloc} or {@code free} threw while
     *     serving it (bfc-cuda's {@code CudaException} for a driver error other than out of
     *     memory): the allocator stays whole (docs/deviations.md #27)
     */
    public long allocateRaw(long alignment, long numBytes) {
        return allocateRaw(alignment, numBytes, AllocationAttributes.DEFAULT);
    }

    /**
     * Allocates as {@link #allocateRaw(long, long)} does (the same chunk, the same calls of the
     * sub-allocator), but a failure throws the {@link BfcOutOfMemoryException} that
     * {@link #allocate(long)} would: figures (and largest holders, when provenance is recorded)
     * of the moment of failure, taken under the lock by the failing call, not read afterwards,
     * when other threads or an out-of-memory listener may have freed memory. For adapters that
     * hand raw addresses to a runtime and report its failures in words (ONNX Runtime's
     * {@code BfcOrtAllocator}).
     *
     * @param alignment a power of two; only passed on to the sub-allocator, as in
     *     {@link #allocateRaw(long, long)}
     * @param numBytes the size wanted
     * @return the address, or 0 if {@code numBytes} is 0
     * @throws BfcOutOfMemoryException if the memory cannot be had (after upstream's retries,
     *     when the options allow them), also when {@code numBytes} is above
     *     {@link #MAX_ALLOCATION_BYTES}
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws IllegalStateException if the allocator is closed
     * @throws RuntimeException what the sub-allocator's {@code alloc} or {@code free} threw while
     *     serving it, as {@link #allocateRaw(long, long)}
     */
    public long allocateRawOrThrow(long alignment, long numBytes) {
        return allocateRawOrThrow(alignment, numBytes, 0, "allocateRawOrThrow");
    }

    /**
     * {@link #allocateRawOrThrow(long, long)} for an owner of the chunk: 0 (none),
     * {@link ChunkTable#lentBy(int)} for memory lent through a loan.
     *
     * @param call the public call, named where it is refused
     */
    long allocateRawOrThrow(long alignment, long numBytes, long owner, String call) {
        long ptr = allocateRaw(alignment, numBytes, AllocationAttributes.DEFAULT, owner, call);
        if (ptr == 0 && numBytes != 0) {
            // The figures of the moment of failure, taken under the lock in the failing call.
            throw oomReporter.exceptionForLastFailure(numBytes);
        }
        return ptr;
    }

    /**
     * Allocates. Port of {@code BFCAllocator::AllocateRaw(alignment, num_bytes, attr)}. The
     * alignment is only passed on to the sub-allocator, as in {@link #allocateRaw(long, long)}.
     *
     * @param alignment a power of two; only passed on to the sub-allocator (alignments above
     *     256 bytes are not kept)
     * @param numBytes the size wanted
     * @param attr per-call attributes (retry, timestamp constraint)
     * @return the address, or 0 if {@code numBytes} is 0, above {@link #MAX_ALLOCATION_BYTES},
     *     or the memory cannot be had
     * @throws IllegalArgumentException if {@code numBytes} is negative or {@code alignment} is
     *     not a power of two
     * @throws NullPointerException if {@code attr} is null
     * @throws IllegalStateException if the allocator is closed
     * @throws RuntimeException what the sub-allocator's {@code alloc} or {@code free} threw while
     *     serving it (bfc-cuda's {@code CudaException} for a driver error other than out of
     *     memory): the allocator stays whole (docs/deviations.md #27)
     */
    public long allocateRaw(long alignment, long numBytes, AllocationAttributes attr) {
        return allocateRaw(alignment, numBytes, attr, 0, "allocateRaw");
    }

    /**
     * {@link #allocateRaw(long, long, AllocationAttributes)} for an owner of the chunk: 0 (none),
     * {@link ChunkTable#lentBy(int)} for memory lent through a loan.
     *
     * @param call the public call, named where it is refused
     */
    long allocateRaw(long alignment, long numBytes, AllocationAttributes attr, long owner, String call) {
        Objects.requireNonNull(attr, "attr=null (expected: AllocationAttributes.DEFAULT, or attributes of your own)");
        if (badAllocateRawArguments(alignment, numBytes)) {
            throw badAllocateRawArguments(port.described(), alignment, numBytes);
        }
        pins.refuseCallFromSubAllocator(port.described(), call);
        return port.allocateRaw(alignment, numBytes, attr, owner);
    }

    /**
     * Frees memory returned by {@link #allocateRaw}. Port of {@code BFCAllocator::DeallocateRaw}.
     *
     * @param ptr an address returned by this allocator and not yet freed; 0 is a no-op
     * @throws IllegalArgumentException if {@code ptr} was not allocated by this allocator or was
     *     already freed, or is memory of an {@link Allocation} handle or lent to a runtime
     *     ({@link #lendTo}); the allocator is unchanged
     * @throws IllegalStateException if the allocator is closed, or if called from inside its
     *     sub-allocator's {@code alloc} or {@code free}
     */
    public void deallocateRaw(long ptr) {
        pins.refuseCallFromSubAllocator(port.described(), "deallocateRaw");
        port.deallocateRaw(ptr);
    }

    /**
     * {@link Loan#deallocateRaw}: frees memory lent through the loan numbered {@code loan}, and
     * nothing else, counting it off {@code lent} ({@link Loans.Lending#deallocateLent}).
     */
    void deallocateLent(long ptr, int loan, AtomicLong lent) {
        pins.refuseCallFromSubAllocator(port.described(), "Loan.deallocateRaw");
        port.deallocateLent(ptr, loan, lent);
    }

    /**
     * Gives the allocator a shared timing counter. From then on every free stamps the chunk
     * with {@code sc.next()}; a stamped chunk is not coalesced, and is used only by
     * allocations whose {@code freedByFunc} allows its stamp, until {@link #setSafeFrontier}
     * passes it. Port of {@code BFCAllocator::SetTimingCounter}.
     *
     * @param sc the counter, or {@code null} to stop stamping
     */
    public void setTimingCounter(SharedCounter sc) {
        port.setTimingCounter(sc);
    }

    /**
     * Declares every chunk freed at a count below {@code count} safe for general use. Never
     * moves backwards. Port of {@code BFCAllocator::SetSafeFrontier}, which takes no lock; here,
     * while a recorded history ({@link #recordHistory}) holds a free waiting for the frontier,
     * it takes the allocator's lock to record that free's {@link MemoryEvent.Kind#FREE_COMPLETED}.
     *
     * @param count the new frontier (compared unsigned, as upstream's {@code uint64})
     */
    public void setSafeFrontier(long count) {
        port.setSafeFrontier(count);
    }

    /**
     * The current safe frontier.
     *
     * @return the largest count given to {@link #setSafeFrontier}, or 0
     */
    public long safeFrontier() {
        return port.safeFrontier();
    }

    /**
     * Port of {@code BFCAllocator::TracksAllocationSizes}.
     *
     * @return true: this allocator knows the size of every allocation
     */
    public boolean tracksAllocationSizes() {
        return true;
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
        return port.requestedSize(ptr);
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
        return port.allocatedSize(ptr);
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
        return port.allocationId(ptr);
    }

    /**
     * A snapshot of the statistics. Port of {@code BFCAllocator::GetStats}.
     *
     * @return the statistics exactly as the classic upstream reports them
     */
    public AllocatorStats getStats() {
        return port.getStats();
    }

    /**
     * Resets {@code numAllocs} and {@code largestAllocSize} to 0 and {@code peakBytesInUse} to
     * the current {@code bytesInUse}. Port of {@code BFCAllocator::ClearStats}.
     *
     * @return true
     */
    public boolean clearStats() {
        return port.clearStats();
    }

    /**
     * Restarts the peaks, and only they, from the current values: {@link #peakBytesInUse()},
     * {@link #peakReservedBytes()} and the peak number of live allocations. PyTorch's
     * {@code torch.cuda.reset_peak_memory_stats()}; unlike {@link #clearStats()}, it leaves
     * {@code numAllocs} and {@code largestAllocSize} alone. Not in upstream.
     */
    public void resetPeakStats() {
        port.resetPeakStats();
    }

    /**
     * Gives every region that holds no allocation back to the sub-allocator now, whatever
     * {@link BfcOptions#garbageCollection()} says: PyTorch's {@code torch.cuda.empty_cache()}.
     * The allocations are untouched; the next one that needs room obtains a new region. A
     * region holding a timestamped free chunk that is not yet safe
     * ({@link #setSafeFrontier}) is kept. Counted as region frees in {@link #memoryStats()}.
     * Not in upstream (it uses upstream's {@code DeallocateRegions}). A region that a view of
     * memory in it still reaches leaves the pool now but reaches the sub-allocator once that
     * view is collected ({@link #bytesHeldForViews()}).
     *
     * @return the bytes given back (0 on a closed allocator)
     * @throws RuntimeException what the sub-allocator's {@code free} threw (a CUDA error; the
     *     later ones suppressed by it; an {@link Error} it threw is passed on likewise): every
     *     such region is given up all the same, and the sub-allocator keeps what it could not
     *     free
     * @throws IllegalStateException if called from inside its sub-allocator's {@code alloc} or
     *     {@code free}
     */
    public long emptyCache() {
        pins.refuseCallFromSubAllocator(port.described(), "emptyCache()");
        return port.emptyCache();
    }

    /**
     * The kind of memory handed out. Port of {@code BFCAllocator::GetMemoryType}.
     *
     * @return the sub-allocator's memory type
     */
    public MemoryType getMemoryType() {
        return port.getMemoryType();
    }

    /**
     * The device whose memory this is, by its CUDA ordinal: the sub-allocator's
     * {@link SubAllocator#deviceId()}, read once when the allocator was built. What its
     * snapshots ({@link MemorySnapshot#deviceId()}) and bfc-micrometer's {@code device.id} tag
     * say. Not upstream's (bfc4j's addition).
     *
     * @return the ordinal, 0 to 1023; 0 for memory of no device (host or simulated memory),
     *     unless the sub-allocator says otherwise (bfc-cuda's pinned host sub-allocator gives the
     *     device whose context allocates)
     */
    public int deviceId() {
        return view.deviceId();
    }

    // ---------------------------------------------------------------------------------------
    // Upstream's debug queries
    // ---------------------------------------------------------------------------------------

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
        port.lock();
        try {
            return debug.getBinDebugInfoLocked();
        } finally {
            port.unlock();
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
        port.lock();
        try {
            return debug.renderOccupancyLocked();
        } finally {
            port.unlock();
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
        port.lock();
        try {
            return debug.dumpMemoryLogLocked(numBytes);
        } finally {
            port.unlock();
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
    // Observability (not in upstream): figures, summary, memory map. Read on demand under the
    // lock; the counters behind them are bumped at the port's event points.
    // ---------------------------------------------------------------------------------------

    /**
     * Every figure beyond upstream's statistics, read in one lock acquisition.
     *
     * @return a consistent snapshot
     */
    public MemoryStats memoryStats() {
        port.lock();
        try {
            return reports.memoryStatsLocked();
        } finally {
            port.unlock();
        }
    }

    /**
     * The sum over regions of each region's largest free chunk (what
     * {@link MemoryStats#fragmentationWithinRegions()} compares with the free bytes), for a
     * {@link ShardedBfcAllocator}'s figures of all shards.
     */
    long regionsLargestFreeSum() {
        port.lock();
        try {
            return reports.regionsLargestFreeSumLocked();
        } finally {
            port.unlock();
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
        port.lock();
        try {
            return view.largestFreeChunk();
        } finally {
            port.unlock();
        }
    }

    /**
     * Bytes of the regions held from the sub-allocator: upstream's pool bytes
     * ({@code total_region_allocated_bytes_}), the same as {@link AllocatorStats#poolBytes()}.
     * PyTorch's {@code memory_reserved()}.
     *
     * @return the reserved bytes
     */
    public long reservedBytes() {
        port.lock();
        try {
            return view.poolBytes();
        } finally {
            port.unlock();
        }
    }

    /**
     * The largest {@link #reservedBytes()} since creation or {@link #resetPeakStats()}, the same
     * as {@link AllocatorStats#peakPoolBytes()}. PyTorch's {@code max_memory_reserved()}.
     *
     * @return the peak reserved bytes
     */
    public long peakReservedBytes() {
        port.lock();
        try {
            return view.peakPoolBytes();
        } finally {
            port.unlock();
        }
    }

    /**
     * The regions held now (ranges merged by a coalescing sub-allocator count once).
     *
     * @return the number of regions
     */
    public int regionCount() {
        port.lock();
        try {
            return view.regionCount();
        } finally {
            port.unlock();
        }
    }

    /**
     * Upstream's {@code GetFragmentation}: {@code 1 - largestFreeChunk / (reserved - inUse)},
     * 0 when nothing is free. 0 means all free memory is one chunk; near 1, free memory is
     * scattered in chunks much smaller than its sum. Free memory in several regions counts as
     * fragmented too: see {@link #fragmentationWithinRegions()}.
     *
     * @return the ratio in {@code [0, 1)}
     */
    public double fragmentation() {
        port.lock();
        try {
            return view.fragmentation();
        } finally {
            port.unlock();
        }
    }

    /**
     * Fragmentation that region boundaries do not count: {@code 1 - (sum over regions of each
     * region's largest free chunk) / (reserved - inUse)}, 0 when nothing is free. An idle pool
     * of several regions reads 0 here (each region is one free chunk), where
     * {@link #fragmentation()} reads {@code 1 - largest region / all regions}. Not in upstream;
     * costs a walk of the free chunks (docs/metrics.md).
     *
     * @return the ratio in {@code [0, 1)}
     */
    public double fragmentationWithinRegions() {
        port.lock();
        try {
            return reports.fragmentationWithinRegionsLocked();
        } finally {
            port.unlock();
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
        port.lock();
        try {
            return reports.memorySummaryLocked();
        } finally {
            port.unlock();
        }
    }

    /**
     * A snapshot of every region and chunk, the per-bin summaries and the statistics: port of
     * {@code BFCAllocator::RecordMemoryMap}. {@link MemoryMap#toJson()} serialises it.
     *
     * @return the immutable snapshot
     */
    public MemoryMap memoryMap() {
        port.lock();
        try {
            return reports.memoryMapLocked();
        } finally {
            port.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------
    // Who holds the memory: history, annotations, snapshots, out-of-memory listeners
    // (docs/observability.md). Off by default; off, allocations and frees call no listener.
    // ---------------------------------------------------------------------------------------

    /**
     * Starts recording the allocator's history, in the spirit of PyTorch's
     * {@code torch.cuda.memory._record_memory_history()}: a ring of the latest events
     * (allocations, frees, regions obtained and given back, out-of-memory failures) with their
     * time, thread, {@link MemoryAnnotation} and, as the options say, Java stack; and with each
     * chunk allocated from then on, who allocated it ({@link MemoryMap.Chunk#provenance()}).
     * Calling it again restarts the recording with the new options (the ring is cleared).
     *
     * @param options what to record, e.g. {@link HistoryOptions#defaults()}
     * @throws NullPointerException if {@code options} is null
     */
    public void recordHistory(HistoryOptions options) {
        Objects.requireNonNull(options, "options=null (expected: what to record, e.g. HistoryOptions.defaults())");
        port.lock();
        try {
            history.start(options, view.regionCount() == 0 && view.nextAllocationId() == 1);
            installListeners();
        } finally {
            port.unlock();
        }
    }

    /**
     * Stops recording the history. What was recorded stays for {@link #snapshot()} until the
     * next {@link #recordHistory}; chunks keep their provenance. A PyTorch snapshot written from
     * now on carries the segments without the history, as PyTorch's once recording stops
     * ({@link MemorySnapshot#writePyTorchPickle(java.io.OutputStream)}).
     */
    public void stopHistory() {
        port.lock();
        try {
            history.stop();
            installListeners();
        } finally {
            port.unlock();
        }
    }

    /**
     * Whether each chunk allocated from now on keeps the {@link MemoryAnnotation} open on the
     * allocating thread (its name and step), as upstream keeps {@code op_name} and
     * {@code step_id} when its memory debugging is on. Shown by {@link #memoryMap()},
     * {@link #memorySummary()} and the out-of-memory message. (The history records annotations
     * either way.)
     *
     * @param enabled true to record annotations, false to stop
     */
    public void recordAnnotations(boolean enabled) {
        port.lock();
        try {
            history.recordAnnotations(enabled);
            installListeners();
        } finally {
            port.unlock();
        }
    }

    /**
     * Everything the allocator knows about its memory now, taken under the lock in one walk
     * over the chunks and a copy of the history's ring: write it as PyTorch's memory snapshot
     * ({@link MemorySnapshot#writePyTorchPickle}) or as a trace
     * ({@code io.github.bfc4j.trace.SnapshotTraces}) after the lock is released.
     *
     * @return the immutable snapshot
     */
    public MemorySnapshot snapshot() {
        port.lock();
        try {
            return new MemorySnapshot(history.now(), reports.memoryMapLocked(), options(), view.coalescing(),
                    view.timingCounterEverSet(), history.history(), view.shardIndex() < 0 ? null : view.userName(),
                    view.shardIndex(), view.shardCount(), view.deviceId());
        } finally {
            port.unlock();
        }
    }

    /**
     * Says that an adapter lends this allocator's memory to a runtime that frees it only in its
     * own terms (ONNX Runtime's {@code BfcOrtAllocator}). Until the loan is closed, a
     * {@link #close()} refused because allocations are live names {@code runtime} and says
     * {@code release}, in place of its advice for memory the caller holds (close the handles, or
     * build the allocator with {@link ClosePolicy#FORCE}, which would free memory under the
     * runtime).
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
                return allocateRawOrThrow(alignment, numBytes, ChunkTable.lentBy(loan), "Loan.allocateRawOrThrow");
            }

            @Override
            public long allocateLent(int loan, long alignment, long numBytes, AllocationAttributes attr) {
                return allocateRaw(alignment, numBytes, attr, ChunkTable.lentBy(loan), "Loan.allocateRaw");
            }

            @Override
            public void deallocateLent(int loan, long ptr, AtomicLong lent) {
                BfcAllocator.this.deallocateLent(ptr, loan, lent);
            }
        });
    }

    /**
     * Tells {@code listener} of every failed allocation, with the allocator's state at the
     * moment of failure ({@link OutOfMemoryListener}).
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    public void addOutOfMemoryListener(OutOfMemoryListener listener) {
        oomListeners.add(Objects.requireNonNull(listener, "listener=null (expected: an OutOfMemoryListener, e.g. report -> log(report.summary()))"));
    }

    /**
     * Stops telling a listener of failures.
     *
     * @param listener a listener given to {@link #addOutOfMemoryListener}
     * @return whether it was there
     * @throws NullPointerException if {@code listener} is null
     */
    public boolean removeOutOfMemoryListener(OutOfMemoryListener listener) {
        return oomListeners.remove(Objects.requireNonNull(listener,
                "listener=null (expected: a listener given to addOutOfMemoryListener)"));
    }

    /**
     * What every out-of-memory report of this allocator becomes before its dump and its
     * listeners see it, and the snapshots its dump adds: a {@link ShardedBfcAllocator} adds
     * what all its shards hold.
     */
    void completeOutOfMemoryReports(UnaryOperator<OutOfMemoryReport> completion,
            Supplier<List<MemorySnapshot>> shardSnapshots) {
        oomListeners.complete(completion, shardSnapshots);
    }

    // ---------------------------------------------------------------------------------------
    // Introspection for tools (the bfc CLI's replay and report). Cheap reads under the lock,
    // none of them on the allocate/free path.
    // ---------------------------------------------------------------------------------------

    /**
     * The bytes of chunks in use now (chunk sizes, not requests): {@code getStats().bytesInUse()}
     * without building a stats object. PyTorch's {@code memory_allocated()}.
     *
     * @return the bytes in use
     */
    public long bytesInUse() {
        port.lock();
        try {
            return view.bytesInUse();
        } finally {
            port.unlock();
        }
    }

    /**
     * The largest {@link #bytesInUse()} since creation, {@link #clearStats()} or
     * {@link #resetPeakStats()}: upstream's {@code peak_bytes_in_use}, PyTorch's
     * {@code max_memory_allocated()}.
     *
     * @return the peak bytes in use
     */
    public long peakBytesInUse() {
        port.lock();
        try {
            return view.stats().peakBytesInUse();
        } finally {
            port.unlock();
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
     * the memory map for tools. The visitor may read this allocator (the lock is reentrant)
     * but must not change it. The visitor of a shard of a {@link ShardedBfcAllocator} must not
     * call another shard (nor the sharded allocator's calls that read every shard): that call
     * throws {@link IllegalStateException}, since waiting for the other shard's lock while
     * holding this one's could deadlock.
     *
     * @param visitor receives each chunk
     * @throws NullPointerException if {@code visitor} is null
     * @throws IllegalStateException if the visitor allocated, freed, gave regions back or
     *     closed the allocator: the walk stops there (it used to stop silently, chunks unvisited)
     */
    public void forEachChunk(ChunkVisitor visitor) {
        Objects.requireNonNull(visitor, "visitor=null (expected: a ChunkVisitor, called once per chunk)");
        port.lock();
        ViewPins.Walk walk = null;
        try {
            walk = pins.walkBegins(port.described());
            MemoryCounters k = view.counters();
            for (ChunkWalk c = view.walk().all(); c.next(); ) {
                boolean inUse = c.inUse();
                long changes = changes(k);
                visitor.chunk(c.regionIndex(), c.regionPtr(), c.regionBytes(), c.ptr(), c.size(),
                        inUse ? c.requestedSize() : 0, inUse ? c.allocationId() : -1);
                if (changes(k) != changes || view.closed()) {
                    throw new IllegalStateException("forEachChunk's visitor changed allocator " + port.described()
                            + " (an allocation, a free, a region given back, or a close) at the chunk at 0x"
                            + Long.toHexString(c.ptr()) + ": the walk stops; collect what to change, and change"
                            + " it after the walk");
                }
            }
        } finally {
            pins.walkEnds(walk);
            port.unlock();
        }
    }

    /** Allocations, frees and region changes so far: changes when anything changes the chunks. */
    private static long changes(MemoryCounters k) {
        return k.allocationsTotal() + k.freesTotal() + k.regionExtendsTotal() + k.regionFreesTotal();
    }

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
     * @throws IllegalStateException if called from inside its sub-allocator's {@code alloc} or
     *     {@code free}, where the allocator is between two states
     */
    public void checkInvariants() {
        pins.refuseCallFromSubAllocator(port.described(), "checkInvariants()");
        port.lock();
        try {
            checker.checkLocked();
        } finally {
            port.unlock();
        }
    }

    @Override
    public String toString() {
        return "BfcAllocator[" + port.name() + ", limit " + port.memoryLimit() + ", " + port.options() + "]";
    }
}
