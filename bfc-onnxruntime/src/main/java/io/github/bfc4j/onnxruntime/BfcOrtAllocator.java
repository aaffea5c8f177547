package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_API_VERSION;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtDeviceAllocator;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtGetApiBase;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtMemTypeDefault;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.ShardedBfcAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FunctionPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.onnxruntime.OrtAllocator;
import org.bytedeco.onnxruntime.OrtApi;
import org.bytedeco.onnxruntime.OrtEnv;
import org.bytedeco.onnxruntime.OrtMemoryInfo;
import org.bytedeco.onnxruntime.SessionOptionsImpl;

/**
 * An ONNX Runtime {@code OrtAllocator} whose memory comes from a bfc4j {@link BfcAllocator} (or
 * a {@link ShardedBfcAllocator}, for sessions run from many threads at once), registered with
 * ORT's environment so that sessions created with {@value #USE_ENV_ALLOCATORS}{@code =1} take
 * their CPU memory from it (weights, intermediate tensors, outputs).
 *
 * <pre>{@code
 * try (BfcAllocator bfc = BfcAllocator.builder().name("ort_cpu").memoryLimit(1L << 30)
 *          .subAllocator(new AlignedHostSubAllocator()).build();
 *      BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
 *     SessionOptions options = BfcOrtAllocator.useEnvAllocators(new SessionOptions());
 *     Session session = new Session(env, modelBytes, modelBytes.capacity(), options);
 *     ... // run, close outputs and the session
 * }
 * }</pre>
 *
 * <h2>Lifecycle</h2>
 * ORT keeps one environment per process; {@link #register} takes a reference to it of its own
 * (released on {@link #close()}), so it does not matter in which order the caller's
 * {@code Env} and this object are closed. Where no environment exists yet, {@link #register}
 * creates it, with logging level {@code WARNING}, log id {@code bfc4j} and no global thread
 * pools, and an {@code Env} the caller creates afterwards is that one, its own settings ignored:
 * create the {@code Env} first where it sets anything (global thread pools, logging). Only one
 * {@code BfcOrtAllocator} can be registered at a time. {@link #close()} refuses while ORT still
 * holds memory from it (sessions or output values not yet released); after a successful close it
 * is unregistered and every later {@code Alloc} fails (see below) with an error logged, so a
 * session that outlives it fails with an error instead of touching freed memory.
 * {@link #close()} and the callbacks agree: the callbacks count themselves in flight, and
 * {@code close()} waits for those in flight before it unregisters, so no allocation lands in the
 * bfc4j allocator after a successful close. A closed
 * instance is forgotten (nothing static keeps it, its {@code BfcAllocator} or its statistics
 * reachable); only the native {@code OrtAllocator} struct and {@code OrtMemoryInfo} (a few dozen
 * bytes) are kept for the life of the process: a session made while it was registered keeps a
 * pointer to them that nothing tells us about.
 *
 * <h2>Threads and errors</h2>
 * ORT calls the callbacks on the thread that called {@code Run} (or created the session) with
 * its default sequential executor, and on its own inter-op threads with the parallel executor;
 * JavaCPP attaches such native threads to the JVM. An allocation that cannot be served (out of
 * memory, allocator closed) is answered the way ORT's own CPU allocators answer it: by throwing.
 * The callback throws a Java exception whose message starts with {@code bfc4j:}; JavaCPP turns
 * it into a C++ {@code std::exception} with that message, and ORT returns it as the error of the
 * {@code Run} or session creation that allocated (e.g. {@code Non-zero status code returned
 * while running FusedGemm node. ... Status Message: bfc4j: ONNX Runtime asked for 8.00MiB:
 * Allocator 'ort' is out of memory: tried to allocate 8.00MiB. ...}: the message of the
 * {@link BfcOutOfMemoryException} of {@link MemoryAllocator#allocateRawOrThrow}, with the figures
 * of the moment of failure). Answering null is not an option: ORT 1.22 does not
 * check a custom allocator's result and writes to it. {@code Free} and {@code Info} never throw:
 * a free that bfc4j rejects is logged (logger {@code io.github.bfc4j.onnxruntime.BfcOrtAllocator})
 * and counted in {@link #stats()}. The builder's allocators fail at once; with
 * {@code allowRetryOnFailure(true)} a failed allocation that could fit waits up to 10 s for
 * frees, inside ORT's call (worth it only when several sessions share the allocator).
 */
public final class BfcOrtAllocator implements AutoCloseable {

    /** The session config entry that makes a session use the environment's allocators. */
    public static final String USE_ENV_ALLOCATORS = "session.use_env_allocators";

    /** ORT's CPU allocator aligns to 64 bytes (MLAS); BFC chunks are 256-byte aligned anyway. */
    static final long ALIGNMENT = 64;

    private static final Logger LOG = Logger.getLogger(BfcOrtAllocator.class.getName());

    /**
     * The one registered and open instance, or null; the callbacks find it by the address of its
     * native struct. Written under the class lock, read by the callbacks without a lock. A closed
     * instance is dropped here, so nothing static keeps it (or its allocator) reachable.
     */
    private static volatile BfcOrtAllocator registered;

    // JavaCPP has a fixed number of native thunks per callback class (10 by default), so the
    // callbacks are created once and shared by every instance. Created on first register, after
    // the presets' native library is loaded.
    private static AllocCallback allocCallback;
    private static FreeCallback freeCallback;
    private static InfoCallback infoCallback;
    private static ReserveCallback reserveCallback;
    /**
     * The memory info every instance reports (CPU, device allocator, default memory type): one for
     * the process, never released, so that {@code Info} can answer even for a closed instance.
     */
    private static OrtMemoryInfo cpuMemoryInfo;

    private final MemoryAllocator bfc;
    private final OrtApi api;
    private final OrtEnv env;
    private final OrtMemoryInfo memoryInfo;
    private final OrtAllocator struct;
    private final long structAddress;
    /**
     * Makes a close() of {@link #bfc} refused while ORT holds its memory say what frees it here
     * (release ORT's sessions and values, close this), not the FORCE policy register refuses.
     * Closed once this is.
     */
    private final MemoryAllocator.Loan loan;

    private volatile boolean closed;
    /**
     * Callbacks between their closed check and their return. {@link #close()} sets
     * {@link #closed} and then waits for this to reach 0; a callback increments it before it reads
     * {@code closed}. Both are volatile accesses, so either the callback sees {@code closed} or
     * {@code close()} sees the callback in flight and waits for it.
     */
    private final AtomicInteger inFlight = new AtomicInteger();
    /**
     * What {@link #close()} waits on for {@link #inFlight} to reach 0: the callback that brings it
     * there after {@link #closed} was set notifies it. (close() may wait up to the retry loop's
     * 10 s: sleeping, not spinning.) The callback decrements before it reads {@code closed}, and
     * {@code close()} sets {@code closed} before it reads the count under this monitor, so no
     * wake-up is lost: either {@code close()} reads 0, or the callback reads {@code closed} and
     * notifies, which it can only do before {@code close()} takes the monitor or once it waits.
     */
    private final Object drained = new Object();
    /**
     * Per thread, the allocations of any instance it is inside (an out-of-memory listener runs
     * inside one): {@link #close()} from there would wait for itself.
     */
    private static final ThreadLocal<int[]> IN_CALLBACK = ThreadLocal.withInitial(() -> new int[1]);
    private final OrtCallbackStats.Counters counters = new OrtCallbackStats.Counters();
    /** Told of every allocation served and every free, or null. For tests. */
    private volatile CallListener listener;

    private BfcOrtAllocator(MemoryAllocator bfc, OrtApi api, OrtEnv env, OrtMemoryInfo memoryInfo,
            OrtAllocator struct) {
        this.bfc = bfc;
        this.api = api;
        this.env = env;
        this.memoryInfo = memoryInfo;
        this.struct = struct;
        this.structAddress = struct.address();
        this.loan = bfc.lendTo("ONNX Runtime (BfcOrtAllocator '" + bfc.name() + "')", "release the sessions created"
                + " while it was registered and the OrtValues they returned, then close the BfcOrtAllocator");
    }

    /**
     * Creates an {@code OrtAllocator} over {@code bfc} and registers it with ORT's environment
     * ({@code OrtApi::RegisterAllocator}) for CPU memory ({@code OrtMemoryInfo} "Cpu", device
     * allocator, default memory type).
     *
     * <p>{@code bfc} is a {@link BfcAllocator}, or a {@link ShardedBfcAllocator} for sessions run
     * from many threads at once: then each thread ORT allocates on (the thread that called
     * {@code Run}, or ORT's inter-op threads) allocates from its own shard, and the threads do
     * not wait for one another's allocations. Addresses then differ from those one
     * {@code BfcAllocator} would give; ORT's answers do not.
     *
     * <p>ORT's environment is one per process: where none exists yet, this creates it with its
     * own settings (logging level {@code WARNING}, no global thread pools), which an {@code Env}
     * created afterwards keeps; create your {@code Env} before calling this where it sets any.
     *
     * @param bfc a bfc4j allocator over host memory with close policy {@code REFUSE}
     * @return the registered allocator; close it after the sessions that use it
     * @throws IllegalArgumentException if {@code bfc} is null, closed, not over host memory, or
     *     has close policy {@code FORCE} (closing it would free memory ORT still uses)
     * @throws IllegalStateException if another {@code BfcOrtAllocator} is registered and open,
     *     ONNX Runtime's JNI library cannot be loaded here (the natives jar for the platform, or a
     *     library it needs, is missing: the message says what JavaCPP could not find and what to
     *     add, the same on every call), or, on the first registration, JavaCPP has no native
     *     function left for one of its callbacks (other code holds all 10 of that callback
     *     class): nothing is registered, and a later call tries again
     * @throws OrtCallException if ORT refuses (e.g. another CPU allocator was registered with
     *     {@code CreateAndRegisterAllocator})
     */
    public static synchronized BfcOrtAllocator register(MemoryAllocator bfc) {
        if (bfc == null) {
            throw new IllegalArgumentException("bfc=null (expected: a BfcAllocator or ShardedBfcAllocator over"
                    + " host memory)");
        }
        MemoryType type = bfc.getMemoryType();
        if (!type.isHost()) {
            throw new IllegalArgumentException("memoryType=" + type + " of allocator '" + bfc.name()
                    + "' (expected: HOST_PAGEABLE or HOST_PINNED: ORT's CPU kernels read and write"
                    + " the memory, e.g. use AlignedHostSubAllocator)");
        }
        if (bfc.closePolicy() == ClosePolicy.FORCE) {
            throw new IllegalArgumentException("closePolicy=FORCE of allocator '" + bfc.name()
                    + "' (expected: REFUSE: closing it while ORT holds memory would free memory under"
                    + " ORT's tensors; leave the builder's closePolicy at its default)");
        }
        if (bfc.isClosed()) {
            throw new IllegalArgumentException("allocator '" + bfc.name() + "' is closed (expected: an open"
                    + " allocator: every allocation ONNX Runtime asked of it would fail)");
        }
        OrtNatives.check();
        if (registered != null) {
            throw new IllegalStateException("a BfcOrtAllocator over '" + registered.bfc.name()
                    + "' is already registered with ONNX Runtime's environment; close it first"
                    + " (ORT shares one CPU allocator per environment)");
        }
        ensureCallbacks();
        OrtApi api = OrtGetApiBase().GetApi().call(ORT_API_VERSION);
        PointerPointer<Pointer> out = new PointerPointer<>(1);
        BytePointer logId = new BytePointer("bfc4j");
        try {
            // ORT's environment is a per-process singleton: CreateEnv hands out a counted
            // reference to the existing one (or creates it with these settings).
            OrtCallException.check(api, api.CreateEnv(ORT_LOGGING_LEVEL_WARNING, logId, out), "CreateEnv");
            OrtEnv env = new OrtEnv(out.get(0));
            out.put(0, (Pointer) null);
            if (cpuMemoryInfo == null) {
                try {
                    OrtCallException.check(api, api.CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, out),
                            "CreateCpuMemoryInfo");
                    cpuMemoryInfo = new OrtMemoryInfo(out.get(0));
                } catch (RuntimeException e) {
                    api.ReleaseEnv(env);
                    throw e;
                }
            }
            // Memory that nothing frees, not even JavaCPP's deallocator thread when this object is
            // collected: a session made while it was registered may keep a pointer to it.
            int structBytes = Pointer.sizeof(OrtAllocator.class);
            OrtAllocator struct = new OrtAllocator(Pointer.memset(Pointer.malloc(structBytes), 0, structBytes));
            struct.version(ORT_API_VERSION)
                    .Alloc(allocCallback)
                    .Free(freeCallback)
                    .Info(infoCallback)
                    .Reserve(reserveCallback);
            BfcOrtAllocator a;
            try {
                a = new BfcOrtAllocator(bfc, api, env, cpuMemoryInfo, struct);
            } catch (RuntimeException e) {
                // bfc lends to no more runtimes (255 loans hold numbers): ORT never saw the
                // struct, and the environment's reference is given back.
                Pointer.free(struct);
                api.ReleaseEnv(env);
                throw e;
            }
            // Published before RegisterAllocator: ORT may call Info() while registering.
            registered = a;
            try {
                OrtCallException.check(api, api.RegisterAllocator(env, struct), "RegisterAllocator");
            } catch (RuntimeException e) {
                a.closed = true;
                a.loan.close();
                registered = null;
                api.ReleaseEnv(env);
                throw e;
            }
            return a;
        } finally {
            out.close();
            logId.close();
        }
    }

    /**
     * Sets {@value #USE_ENV_ALLOCATORS} to {@code 1}, so that a session created with these
     * options takes its CPU memory from the registered allocator.
     *
     * @param options session options (the presets' {@code SessionOptions})
     * @param <T>     their type
     * @return {@code options}
     * @throws NullPointerException if {@code options} is null
     * @throws IllegalArgumentException if {@code options} are closed (native address 0)
     */
    public static <T extends SessionOptionsImpl> T useEnvAllocators(T options) {
        if (options == null) {
            throw new NullPointerException("options=null (expected: the SessionOptions a session will be created"
                    + " with, e.g. new SessionOptions())");
        }
        if (options.isNull()) {
            throw new IllegalArgumentException("options are closed (native address 0) (expected: open SessionOptions"
                    + " that a session will be created with, e.g. new SessionOptions())");
        }
        options.AddConfigEntry(USE_ENV_ALLOCATORS, "1");
        return options;
    }

    /**
     * The bfc4j allocator behind this one.
     *
     * @return it: the {@link BfcAllocator} or {@link ShardedBfcAllocator} given to {@link #register}
     */
    public MemoryAllocator allocator() {
        return bfc;
    }

    /**
     * The native {@code OrtAllocator}, e.g. for {@code Value.CreateTensor(OrtAllocator, ...)} to
     * make a tensor in bfc4j memory directly. Valid for the life of the process: once this is
     * closed, an allocation through it fails (ORT's error says the allocator was closed).
     *
     * @return the struct
     */
    public OrtAllocator ortAllocator() {
        return struct;
    }

    /**
     * The memory info the allocator reports: CPU, device allocator, default memory type.
     *
     * @return it
     */
    public OrtMemoryInfo memoryInfo() {
        return memoryInfo;
    }

    /**
     * How ORT's calls into this allocator went so far.
     *
     * @return a snapshot of the counters
     */
    public OrtCallbackStats stats() {
        return counters.snapshot();
    }

    /**
     * Whether {@link #close()} has succeeded.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Unregisters the allocator ({@code OrtApi::UnregisterAllocator}) and releases this object's
     * reference to ORT's environment. Sessions created afterwards with
     * {@value #USE_ENV_ALLOCATORS} use ORT's own allocator. The bfc4j allocator stays open (close
     * it yourself). Callbacks already past their closed check are waited for (an allocation that
     * waits for memory, {@code allowRetryOnFailure}, can take up to 10 s), asleep, not spinning;
     * {@link #register} waits meanwhile, as the unregister has not happened yet. An allocation
     * that arrives while {@code close()} waits fails as after a close. If the calling thread is
     * interrupted meanwhile, the wait goes on and the interrupt stays set. Idempotent.
     *
     * @throws IllegalStateException if ORT still holds memory from this allocator (release the
     *     sessions and output values first), or if called on a thread inside one of ORT's
     *     allocations (an out-of-memory listener); the allocator then stays registered and open
     */
    @Override
    public void close() {
        if (IN_CALLBACK.get()[0] != 0 && !closed) {
            throw new IllegalStateException("close() of BfcOrtAllocator '" + bfc.name() + "' refused: this thread is"
                    + " inside an allocation that ONNX Runtime asked of it (e.g. in an out-of-memory listener), which"
                    + " close() would wait for forever. Close it after that call returns.");
        }
        synchronized (BfcOrtAllocator.class) {
            if (closed) {
                return;
            }
            refuseIfLive();
            closed = true;
            awaitDrained();
            try {
                refuseIfLive();   // an allocation in flight may have been served
            } catch (IllegalStateException e) {
                closed = false;
                throw e;
            }
            registered = null;
            loan.close();
            try {
                OrtCallException.check(api, api.UnregisterAllocator(env, memoryInfo), "UnregisterAllocator");
            } catch (OrtCallException e) {
                LOG.log(Level.WARNING, "Allocator ''{0}'' was no longer registered with ONNX Runtime: {1}",
                        new Object[] {bfc.name(), e.getMessage()});
            } finally {
                api.ReleaseEnv(env);
            }
        }
    }

    /**
     * Waits, without spinning, until no callback is in flight. The class lock stays held (a
     * register waits for the unregister). Not interruptible: a callback in flight returns once
     * bfc4j answers (within the retry loop's 10 s, unless an out-of-memory listener blocks); an
     * interrupt meanwhile stays set for the caller.
     */
    private void awaitDrained() {
        boolean interrupted = false;
        synchronized (drained) {
            while (inFlight.get() != 0) {
                try {
                    drained.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void refuseIfLive() {
        long live = counters.liveAllocations.get();
        if (live > 0) {
            throw new IllegalStateException("close() refused: ONNX Runtime still holds " + live
                    + " allocation" + (live == 1 ? "" : "s") + " from allocator '" + bfc.name()
                    + "' (" + BfcAllocator.humanReadableNumBytes(bfc.bytesInUse()) + " in use)."
                    + " Release the sessions and the OrtValues they returned first.");
        }
    }

    /**
     * Sets the listener told of every allocation served and every free (replacing any), or none.
     * It is called on ORT's threads, inside the callback, and must not throw.
     */
    void listener(CallListener l) {
        listener = l;
    }

    /**
     * What a {@link BfcOrtAllocator} served, as it serves it, on ORT's thread: for tests (which
     * threads call {@code Alloc}; an allocation held between bfc4j's answer and its return to
     * ORT). A workload is recorded with the allocator's history instead
     * ({@code BfcAllocator.recordHistory}, {@code SnapshotTraces}).
     */
    interface CallListener {
        /**
         * An allocation was served ({@code ptr != 0}) or failed ({@code ptr == 0}).
         *
         * @param size    the bytes ORT asked for
         * @param ptr     the address returned, or 0
         * @param reserve whether it was a {@code Reserve} call
         */
        void allocated(long size, long ptr, boolean reserve);

        /**
         * An address is being freed: called just before bfc4j takes it back, so that for any
         * one address the calls to this listener come in the allocator's order.
         *
         * @param ptr the address
         */
        void freed(long ptr);
    }

    @Override
    public String toString() {
        return "BfcOrtAllocator[" + bfc.name() + (closed ? ", closed" : "") + ", live allocations "
                + counters.liveAllocations.get() + "]";
    }

    // ---------------------------------------------------------------------------------------
    // Callbacks: called by ORT on its threads; nothing thrown may leave them.
    // ---------------------------------------------------------------------------------------

    private Pointer alloc(long size, boolean reserve) {
        (reserve ? counters.reserveCalls : counters.allocCalls).increment();
        if (size == 0) {
            return null;   // as ORT's CPUAllocator: nothing for 0 bytes
        }
        if (size < 0) {
            // A size_t of 2^63 or more. Null is no answer: ORT would write to it.
            counters.failedAllocs.increment();
            throw new AllocationFailure("allocator '" + bfc.name() + "' cannot serve it: ONNX Runtime asked for "
                    + Long.toUnsignedString(size) + " bytes, more than any allocation can be");
        }
        final int[] depth = IN_CALLBACK.get();
        depth[0]++;
        inFlight.incrementAndGet();
        try {
            return allocInFlight(size, reserve);
        } finally {
            if (inFlight.decrementAndGet() == 0 && closed) {
                synchronized (drained) {
                    drained.notifyAll();   // close() waits for this
                }
            }
            depth[0]--;
        }
    }

    private Pointer allocInFlight(long size, boolean reserve) {
        if (closed) {
            counters.failedAllocs.increment();
            String message = (reserve ? "Reserve(" : "Alloc(") + size + ") called after BfcOrtAllocator '"
                    + bfc.name() + "' was closed: a session created while it was registered is still"
                    + " running, or its ortAllocator() was used after close(). Close sessions before the"
                    + " allocator, and use its ortAllocator() only while it is open.";
            error(message, null);
            throw new AllocationFailure(message);
        }
        long ptr;
        try {
            // Through the loan: the memory is ONNX Runtime's until its Free, and a raw free of
            // the address (a double free elsewhere in the application) is refused.
            ptr = loan.allocateRawOrThrow(ALIGNMENT, size);
        } catch (BfcOutOfMemoryException e) {
            CallListener l = listener;
            if (l != null) {
                l.allocated(size, 0, reserve);
            }
            counters.failedAllocs.increment();
            // The figures of the moment of failure: read afterwards, they could show memory that
            // other threads (or an out-of-memory listener) freed since, e.g. a largest free chunk
            // larger than the request that failed.
            throw new AllocationFailure("ONNX Runtime asked for " + BfcAllocator.humanReadableNumBytes(size) + ": "
                    + e.getMessage());
        } catch (IllegalStateException e) {
            if (!bfc.isClosed()) {
                throw e;
            }
            // The BfcAllocator was closed under this registered instance (its close succeeds
            // while ORT holds none of its memory): say which, and the order that avoids it.
            counters.failedAllocs.increment();
            String message = (reserve ? "Reserve(" : "Alloc(") + size + ") on BfcOrtAllocator '" + bfc.name()
                    + "', whose allocator was closed while it was registered: nothing was allocated. Close the"
                    + " sessions and their values, then close the BfcOrtAllocator before its allocator.";
            error(message, null);
            throw new AllocationFailure(message);
        }
        try {
            CallListener l = listener;
            if (l != null) {
                l.allocated(size, ptr, reserve);
            }
            Pointer p = new Address(ptr);
            counters.liveAllocations.incrementAndGet();
            return p;
        } catch (Throwable t) {
            // ONNX Runtime never gets the address (an OutOfMemoryError making the pointer, a
            // listener that threw), so nothing else would ever free it.
            try {
                loan.deallocateRaw(ptr);
            } catch (RuntimeException e) {
                t.addSuppressed(e);
            }
            throw t;
        }
    }

    private void free(Pointer p) {
        counters.freeCalls.increment();
        if (p == null || p.isNull()) {
            return;
        }
        long ptr = p.address();
        // Told before the memory goes back: once it has, another thread may be served the same
        // address and report it first.
        CallListener l = listener;
        if (l != null) {
            l.freed(ptr);
        }
        loan.deallocateRaw(ptr);
        counters.liveAllocations.decrementAndGet();
    }

    private void error(String message, Throwable t) {
        counters.error(LOG, message, t);
    }

    /** The registered instance whose struct {@code self} is, or null (e.g. it was closed). */
    private static BfcOrtAllocator find(OrtAllocator self) {
        BfcOrtAllocator a = registered;
        return a != null && self != null && a.structAddress == self.address() ? a : null;
    }

    /**
     * Makes the four callbacks, once. JavaCPP makes 10 native functions per callback class for the
     * whole process: a callback made while other code holds all 10 of its class gets none, and
     * the struct would hand ORT a null function pointer (a crash on ORT's first call). So each
     * is checked, and they are kept only once all four have one; else none is kept, and the next
     * {@link #register} tries again. They are made inside a JavaCPP {@code PointerScope} of
     * this class's own and those kept are retained, so that no scope of the application's open
     * around the first register releases (or, with its {@code deallocate()}, frees) them.
     *
     * @throws IllegalStateException if a callback class has no native function left
     */
    private static void ensureCallbacks() {
        if (allocCallback != null) {
            return;
        }
        List<FunctionPointer> made = new ArrayList<>(4);
        // Made inside a scope of our own, the innermost on this thread: JavaCPP attaches each to
        // it, not to a scope of the application's, whose deallocate() would free them whatever
        // their reference counts.
        try (PointerScope own = new PointerScope()) {
            AllocCallback alloc = withFunction(new AllocCallback(), made);
            FreeCallback free = withFunction(new FreeCallback(), made);
            InfoCallback info = withFunction(new InfoCallback(), made);
            ReserveCallback reserve = withFunction(new ReserveCallback(), made);
            // Kept for the life of the process: our scope releases them when it closes, and ORT
            // calls them as long as any session made with them lives.
            freeCallback = free.retainReference();
            infoCallback = info.retainReference();
            reserveCallback = reserve.retainReference();
            allocCallback = alloc.retainReference();
        } catch (RuntimeException | Error e) {
            for (FunctionPointer f : made) {
                try {
                    f.close();
                } catch (RuntimeException | Error c) {
                    e.addSuppressed(c);
                }
            }
            throw e;
        }
    }

    /** Adds {@code callback} to {@code made}, then checks that JavaCPP gave it a native function. */
    private static <T extends FunctionPointer> T withFunction(T callback, List<FunctionPointer> made) {
        made.add(callback);
        if (JavaCppCallbacks.nativeFunction(callback) == 0) {
            throw new IllegalStateException("cannot register a BfcOrtAllocator: JavaCPP has no native function left"
                    + " for callback class " + callback.getClass().getSuperclass().getName() + " (it makes 10 per"
                    + " class for the whole process, and other code holds all 10 of this one): close some of those"
                    + " callbacks first");
        }
        return callback;
    }

    /** Logs an error that has no instance to be counted on. */
    private static void orphanError(String what, OrtAllocator self, Throwable t) {
        try {
            LOG.log(Level.SEVERE, what + " for an OrtAllocator at 0x"
                    + Long.toHexString(self == null ? 0 : self.address()) + " that is not registered: its"
                    + " BfcOrtAllocator was closed while a session created with it still runs, or its ortAllocator()"
                    + " was used after close() (close sessions before the allocator, and use its ortAllocator() only"
                    + " while it is open)", t);
        } catch (Throwable ignored) {
            // Logging failed too; nothing may reach native code.
        }
    }

    /**
     * Allocates for ORT. A failure is thrown, as ORT's own CPU allocators do ({@code
     * std::bad_alloc}, {@code OnnxRuntimeException}): JavaCPP turns the Java exception into a C++
     * exception with the same message, which ORT catches and returns as the error of the call
     * that allocated. ORT does not check for null: a null answer would be written to.
     */
    private static Pointer allocOrReserve(OrtAllocator self, long size, boolean reserve) {
        BfcOrtAllocator a = null;
        try {
            a = find(self);
            if (a == null) {
                orphanError((reserve ? "Reserve(" : "Alloc(") + size + ")", self, null);
                throw new AllocationFailure((reserve ? "Reserve(" : "Alloc(") + size + ") on an OrtAllocator"
                        + " whose BfcOrtAllocator was closed: close sessions before the allocator, and use its"
                        + " ortAllocator() only while it is open");
            }
            return a.alloc(size, reserve);
        } catch (AllocationFailure e) {
            throw e;
        } catch (Throwable t) {
            String message = (reserve ? "Reserve(" : "Alloc(") + size + ") failed: " + t;
            if (a != null) {
                a.counters.failedAllocs.increment();
                a.error(message, t);
            } else {
                orphanError("Alloc", self, t);
            }
            throw new AllocationFailure(message);
        }
    }

    /**
     * An allocation that could not be served, thrown to ORT through JavaCPP (see
     * {@link #allocOrReserve}). Its {@code toString()}, which becomes the C++ exception's
     * {@code what()}, is the message alone.
     */
    private static final class AllocationFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        AllocationFailure(String message) {
            super("bfc4j: " + message, null, false, false);
        }

        @Override
        public String toString() {
            return getMessage();
        }
    }

    /** A pointer to a given address, returned to ORT from the callbacks. */
    private static final class Address extends Pointer {
        Address(long ptr) {
            address = ptr;
        }
    }

    private static final class AllocCallback extends OrtAllocator.Alloc_OrtAllocator_long {
        @Override
        public Pointer call(OrtAllocator self, long size) {
            return allocOrReserve(self, size, false);
        }
    }

    private static final class ReserveCallback extends OrtAllocator.Reserve_OrtAllocator_long {
        @Override
        public Pointer call(OrtAllocator self, long size) {
            return allocOrReserve(self, size, true);
        }
    }

    private static final class FreeCallback extends OrtAllocator.Free_OrtAllocator_Pointer {
        @Override
        public void call(OrtAllocator self, Pointer p) {
            BfcOrtAllocator a = null;
            try {
                a = find(self);
                if (a == null) {
                    orphanError("Free", self, null);
                    return;
                }
                a.free(p);
            } catch (Throwable t) {
                if (a != null) {
                    a.error("Free(0x" + Long.toHexString(p == null ? 0 : p.address()) + ") on '"
                            + a.bfc.name() + "' failed, the memory is not returned: " + t, t);
                } else {
                    orphanError("Free", self, t);
                }
            }
        }
    }

    private static final class InfoCallback extends OrtAllocator.Info_OrtAllocator {
        @Override
        public OrtMemoryInfo call(OrtAllocator self) {
            // Every struct with this callback is one of ours, and all report the same memory
            // info, which outlives them: answered even for a closed instance.
            return cpuMemoryInfo;
        }
    }
}
