package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_API_VERSION;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtGetApiBase;

import io.github.bfc4j.cuda.CudaAvailability;
import io.github.bfc4j.cuda.CudaProbe;
import io.github.bfc4j.cuda.GpuBfcAllocator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FunctionPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.onnxruntime.OrtApi;
import org.bytedeco.onnxruntime.OrtCUDAProviderOptionsV2;
import org.bytedeco.onnxruntime.OrtCustomOp;
import org.bytedeco.onnxruntime.OrtThreadWorkerFn;
import org.bytedeco.onnxruntime.SessionOptionsImpl;
import org.bytedeco.onnxruntime.StringVector;

/**
 * ONNX Runtime's CUDA execution provider taking its device memory from a bfc4j
 * {@link GpuBfcAllocator}, through the provider options {@code gpu_external_alloc},
 * {@code gpu_external_free} and {@code gpu_external_empty_cache} (the addresses of C functions,
 * as decimal strings; ORT then uses its {@code CUDAExternalAllocator} instead of its own arena).
 *
 * <pre>{@code
 * try (GpuBfcAllocator gpu = GpuBfcAllocators.create(0, GpuBfcOptions.builder().build());
 *      BfcCudaProvider cuda = BfcCudaProvider.create(gpu)) {
 *     SessionOptions options = cuda.appendTo(new SessionOptions());
 *     ... // sessions; close them before cuda and gpu
 * }
 * }</pre>
 *
 * <p>Needs a CUDA-enabled ONNX Runtime: the presets' {@code linux-x86_64-gpu} natives (with
 * {@code -Dorg.bytedeco.javacpp.platform.extension=-gpu}), a GPU and its driver. Without them
 * {@link #create} throws and {@link #unavailableReason()} says what is missing.
 *
 * <h2>How the callbacks are made</h2>
 * The three options take plain C functions ({@code void* (size_t)}, {@code void (void*)},
 * {@code void (void)}) with no context argument, so each binding needs its own native function.
 * They are JavaCPP callbacks of three of the presets' callback classes whose C signatures are
 * call-compatible on x86-64 and AArch64 (one integer-class argument in the first register, the
 * result in the return register): {@code const char* (OrtCustomOp*)} for alloc (the size arrives
 * as a pointer-typed argument), {@code void (void*)} for free, {@code const char* (void)} for
 * empty-cache (ORT ignores the result). The address handed to ORT is the C function JavaCPP made
 * for the callback: the first field of the object the callback's {@code address()} points to
 * (JavaCPP's generated callback struct). JavaCPP has at most 10 native functions per callback
 * class, so at most 10 providers can be open at a time. The callbacks are made inside a JavaCPP
 * {@code PointerScope} of this class's own and retained for the life of the process, so that no
 * scope of the application's open where they are made releases them (or, with its
 * {@code deallocate()}, frees them) while sessions still call them.
 *
 * <p>ORT keeps the function addresses of the options a session was made with, so a session can
 * outlive its provider and call them later. A closed provider's slot (its three functions) is
 * therefore given to a new provider over the same {@link GpuBfcAllocator}, to one over another
 * allocator only once the allocator it last served is closed, and never to one over another
 * allocator still open: such a session would otherwise allocate from that allocator, on its
 * device. So at most 10 allocators still open can have had providers.
 *
 * <h2>Memory and errors</h2>
 * Alloc answers null when bfc4j cannot serve the request (ORT then fails the call with
 * {@code ORT_ENFORCE(p != nullptr)}); the reason is kept in {@link #stats()}. The provider
 * allocates and frees through a loan of the allocator ({@link GpuBfcAllocator#lendTo}), so a
 * {@link GpuBfcAllocator#deallocateRaw(long)} of memory ORT holds is refused. Free returns the
 * memory at once, as {@link GpuBfcAllocator#deallocateRaw(long)} does: ORT issues all of a session's
 * work on one stream, so memory reused by a later allocation is only touched by work queued
 * after the earlier work, as with ORT's own arena. Empty-cache (ORT calls it after freeing a
 * buffer it reserved for weights) does nothing: the BFC allocator keeps its regions, and gives
 * wholly free ones back when an allocation would fail if garbage collection is on (the GPU
 * default). Close the sessions before the {@link GpuBfcAllocator}: its {@code close()} is refused
 * while ORT holds memory lent to it. Memory that was taken back all the same (a close racing an
 * allocation ORT was making) is counted as returned when ORT frees it, and the free is logged
 * and kept in {@link #stats()} as an error.
 */
public final class BfcCudaProvider implements AutoCloseable {

    /** ORT's name of the CUDA execution provider. */
    public static final String CUDA_EXECUTION_PROVIDER = "CUDAExecutionProvider";

    /** JavaCPP's default number of native functions per callback class. */
    static final int MAX_OPEN = 10;

    private static final Logger LOG = Logger.getLogger(BfcCudaProvider.class.getName());

    /** The callback slots made so far, each bound to at most one open provider. Class lock. */
    private static final List<Slot> SLOTS = new ArrayList<>();

    /** Device memory as the callbacks need it: {@link GpuBfcAllocator} or a test's stand-in. */
    interface DeviceMemory {
        /** @return the address, 0 if it cannot be had */
        long allocate(long bytes);

        void free(long ptr);

        int deviceId();

        String name();

        /**
         * What ORT is handed for {@code ptr}. Making it may fail (an OutOfMemoryError); a test's
         * stand-in fails here to show that the memory is then given back.
         */
        default BytePointer handedToOrt(long ptr) {
            return new Address(ptr);
        }

        /** @return whether the allocator under it is closed (every allocation would fail) */
        default boolean isClosed() {
            return false;
        }

        /**
         * @return the allocator under it, compared by identity: a closed provider's slot is given
         *     to a provider over the same allocator (or once its allocator is closed)
         */
        default Object allocator() {
            return this;
        }

        /** Told once the provider is closed (or was never made): the memory lends no more. */
        default void release() {
        }
    }

    private final DeviceMemory memory;
    private final Slot slot;
    private final OrtApi api;
    private final OrtCUDAProviderOptionsV2 options;
    private final Map<String, String> providerOptions;
    private volatile boolean closed;
    private final OrtCallbackStats.Counters counters = new OrtCallbackStats.Counters();

    private BfcCudaProvider(DeviceMemory memory, Slot slot, OrtApi api, OrtCUDAProviderOptionsV2 options,
            Map<String, String> providerOptions) {
        this.memory = memory;
        this.slot = slot;
        this.api = api;
        this.options = options;
        this.providerOptions = providerOptions;
    }

    /**
     * Why the CUDA provider cannot run on bfc4j memory here, or null if it can: ONNX Runtime's
     * JNI library cannot be loaded, its build lacks the CUDA execution provider, or bfc-cuda's
     * probe finds no usable GPU. Never throws; later calls give the same answer.
     *
     * @return one sentence, or null
     */
    public static String unavailableReason() {
        String ort = ortReason();
        if (ort != null) {
            return ort;
        }
        CudaAvailability cuda = CudaProbe.availability();
        return cuda.isUsable() ? null : cuda.unavailableReason();
    }

    /**
     * Creates CUDA provider options ({@code OrtCUDAProviderOptionsV2}) for {@code gpu}'s device
     * whose device memory comes from {@code gpu}.
     *
     * @param gpu a bfc4j GPU allocator; keep it open while sessions use the provider
     * @return the provider options; close after the sessions
     * @throws IllegalArgumentException if {@code gpu} is null or closed
     * @throws IllegalStateException if ONNX Runtime cannot be loaded or has no CUDA execution
     *     provider here ({@link #unavailableReason()}'s sentence), or
     *     {@value #MAX_OPEN} providers are open, or every slot of a closed provider was last used
     *     over another allocator that is still open (see the class comment), or 255 loans of
     *     {@code gpu} ({@link GpuBfcAllocator#lendTo}) are open or hold lent memory
     * @throws OrtCallException if ORT rejects the options
     */
    public static BfcCudaProvider create(GpuBfcAllocator gpu) {
        if (gpu == null) {
            throw new IllegalArgumentException("gpu=null (expected: a GpuBfcAllocator from GpuBfcAllocators.create)");
        }
        // Through a loan: the memory is ORT's until its free, and a deallocateRaw of the address
        // on gpu (a double free elsewhere in the application) is refused.
        GpuBfcAllocator.DeviceLoan loan = gpu.lendTo("ONNX Runtime's CUDA provider (BfcCudaProvider over '"
                + gpu.allocator().name() + "')", "release the sessions made with the provider and the OrtValues"
                + " they returned, then close the provider");
        DeviceMemory memory = new DeviceMemory() {
            @Override
            public long allocate(long bytes) {
                return loan.allocateRaw(BfcOrtAllocator.ALIGNMENT, bytes);
            }

            @Override
            public void free(long ptr) {
                loan.deallocateRaw(ptr);
            }

            @Override
            public void release() {
                loan.close();
            }

            @Override
            public int deviceId() {
                return gpu.deviceId();
            }

            @Override
            public String name() {
                return gpu.allocator().name();
            }

            @Override
            public boolean isClosed() {
                return gpu.allocator().isClosed();
            }

            @Override
            public Object allocator() {
                return gpu;
            }
        };
        try {
            return create(memory);
        } catch (RuntimeException | Error e) {
            loan.close();
            throw e;
        }
    }

    static BfcCudaProvider create(DeviceMemory memory) {
        if (memory.isClosed()) {
            throw new IllegalArgumentException("allocator '" + memory.name() + "' is closed (expected: an open"
                    + " allocator: every allocation ONNX Runtime asked of it would fail)");
        }
        String reason = ortReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        return bind(memory, OrtGetApiBase().GetApi().call(ORT_API_VERSION));
    }

    /**
     * Binds a callback slot to {@code memory} and makes the ORT options; without checking that
     * ORT has the CUDA provider (the tests' way to the slot logic).
     */
    static synchronized BfcCudaProvider bind(DeviceMemory memory, OrtApi api) {
        Slot slot = freeSlot(memory);
        Map<String, String> values = new LinkedHashMap<>();
        values.put("device_id", Integer.toString(memory.deviceId()));
        values.put("gpu_external_alloc", Long.toUnsignedString(slot.allocFunction()));
        values.put("gpu_external_free", Long.toUnsignedString(slot.freeFunction()));
        values.put("gpu_external_empty_cache", Long.toUnsignedString(slot.emptyCacheFunction()));
        OrtCUDAProviderOptionsV2 options = null;
        if (api != null) {
            PointerPointer<Pointer> out = new PointerPointer<>(1);
            PointerPointer<BytePointer> keys = new PointerPointer<>(values.keySet().toArray(new String[0]));
            PointerPointer<BytePointer> vals = new PointerPointer<>(values.values().toArray(new String[0]));
            try {
                OrtCallException.check(api, api.CreateCUDAProviderOptions(out), "CreateCUDAProviderOptions");
                options = new OrtCUDAProviderOptionsV2(out.get(0));
                OrtCallException.check(api, api.UpdateCUDAProviderOptions(options, keys, vals, values.size()),
                        "UpdateCUDAProviderOptions(" + values + ")");
            } catch (RuntimeException e) {
                if (options != null) {
                    api.ReleaseCUDAProviderOptions().call(options);
                }
                throw e;
            } finally {
                out.close();
                keys.close();
                vals.close();
            }
        }
        BfcCudaProvider p = new BfcCudaProvider(memory, slot, api, options, Map.copyOf(values));
        slot.owner = p;
        slot.served = memory;
        return p;
    }

    /** Why the CUDA provider cannot be had from ORT here, or null. */
    private static String ortReason() {
        String failure = OrtNatives.loadFailure();
        if (failure != null) {
            return failure;
        }
        List<String> providers = new ArrayList<>();
        try (StringVector v = org.bytedeco.onnxruntime.global.onnxruntime.GetAvailableProviders()) {
            for (long i = 0; i < v.size(); i++) {
                providers.add(v.get(i).getString());
            }
        }
        if (providers.contains(CUDA_EXECUTION_PROVIDER)) {
            return null;
        }
        return "This ONNX Runtime build has no " + CUDA_EXECUTION_PROVIDER + " (it has " + providers
                + "): add org.bytedeco:onnxruntime with classifier linux-x86_64-gpu and run with"
                + " -Dorg.bytedeco.javacpp.platform.extension=-gpu (mvn -Pgpu does both for bfc-onnxruntime),"
                + " see docs/integrations.md.";
    }

    /**
     * A slot for a provider over {@code memory}. ORT keeps the function addresses of the options
     * a session was made with, so a session can outlive its provider and call a closed slot's
     * functions later, reaching whichever provider holds the slot then: a closed slot goes to a
     * provider over the same allocator, else (all slots made) to one over any allocator only once
     * the allocator it last served is closed, never to another allocator still open (whose memory,
     * on its own device, the old session would get).
     */
    private static Slot freeSlot(DeviceMemory memory) {
        Object allocator = memory.allocator();
        int open = 0;
        for (Slot s : SLOTS) {
            if (s.owner != null) {
                open++;
            } else if (s.served == null || s.served.allocator() == allocator) {
                return s;   // never bound (a bind that failed), or last bound over this allocator
            }
        }
        if (SLOTS.size() >= MAX_OPEN) {
            if (open >= MAX_OPEN) {
                throw new IllegalStateException(MAX_OPEN + " BfcCudaProviders are open (JavaCPP has " + MAX_OPEN
                        + " native functions per callback class); close one first");
            }
            for (Slot s : SLOTS) {
                if (s.owner == null && s.served.isClosed()) {
                    return s;
                }
            }
            throw new IllegalStateException("no BfcCudaProvider slot for '" + memory.name() + "': " + open
                    + " of the " + MAX_OPEN + " are open and the rest were last used over other allocators that"
                    + " are still open, whose sessions could still call them (JavaCPP has " + MAX_OPEN + " native"
                    + " functions per callback class); close one of those allocators (after its sessions), or make"
                    + " this provider over one of them");
        }
        // Made inside a scope of our own, the innermost on this thread: JavaCPP attaches each
        // callback to it, not to a scope of the application's, whose deallocate() would free them
        // whatever their reference counts. If a check fails, closing it frees the three (and the
        // native functions they hold) at once.
        Slot s;
        try (PointerScope own = new PointerScope()) {
            s = new Slot();
            s.allocFunction();   // fails if another user took JavaCPP's native functions of these classes
            s.freeFunction();
            s.emptyCacheFunction();
            // Kept for the life of the process, as the slot is: our scope releases them when it
            // closes, while sessions made with the options still call their C functions.
            s.alloc.retainReference();
            s.free.retainReference();
            s.emptyCache.retainReference();
        }
        SLOTS.add(s);
        return s;
    }

    /**
     * Appends the CUDA execution provider with these options to {@code sessionOptions}
     * ({@code SessionOptionsAppendExecutionProvider_CUDA_V2}).
     *
     * @param sessionOptions the presets' session options
     * @param <T>            their type
     * @return {@code sessionOptions}
     * @throws NullPointerException if {@code sessionOptions} is null (nothing is appended anywhere)
     * @throws IllegalArgumentException if {@code sessionOptions} are closed (native address 0)
     * @throws IllegalStateException if this provider is closed
     */
    public <T extends SessionOptionsImpl> T appendTo(T sessionOptions) {
        Objects.requireNonNull(sessionOptions, "sessionOptions=null (expected: the SessionOptions a session will be"
                + " created with, e.g. cuda.appendTo(new SessionOptions()))");
        if (sessionOptions.isNull()) {
            throw new IllegalArgumentException("sessionOptions are closed (native address 0) (expected: open"
                    + " SessionOptions that a session will be created with, e.g. cuda.appendTo(new SessionOptions()))");
        }
        checkOpen();
        sessionOptions.AppendExecutionProvider_CUDA_V2(options);
        return sessionOptions;
    }

    /**
     * The native provider options, e.g. to append them yourself.
     *
     * @return them; valid until {@link #close()}
     * @throws IllegalStateException if closed
     */
    public OrtCUDAProviderOptionsV2 options() {
        checkOpen();
        return options;
    }

    /**
     * The provider options set, as passed to {@code UpdateCUDAProviderOptions}: {@code device_id}
     * and the three function addresses.
     *
     * @return key to value, in that order
     */
    public Map<String, String> providerOptions() {
        return providerOptions;
    }

    /**
     * How ORT's calls into the three functions went so far ({@code reserveCalls} is always 0).
     *
     * @return a snapshot of the counters
     */
    public OrtCallbackStats stats() {
        return counters.snapshot();
    }

    /**
     * Releases the ORT options and frees the callback slot for another provider. The GPU
     * allocator stays open. An allocation ORT asks for while {@code close()} runs fails (its
     * memory, if already served, is given back and alloc answers null). Idempotent.
     *
     * @throws IllegalStateException if ORT still holds memory from it (close the sessions
     *     first); the provider then stays open
     */
    @Override
    public void close() {
        synchronized (BfcCudaProvider.class) {
            if (closed) {
                return;
            }
            refuseIfLive();
            closed = true;
            try {
                refuseIfLive();   // an allocation in flight may have been served meanwhile
            } catch (IllegalStateException e) {
                closed = false;
                throw e;
            }
            slot.owner = null;
            memory.release();
            if (options != null) {
                api.ReleaseCUDAProviderOptions().call(options);
            }
        }
    }

    private void refuseIfLive() {
        long live = counters.liveAllocations.get();
        if (live > 0) {
            throw new IllegalStateException("close() refused: ONNX Runtime's CUDA provider still holds " + live
                    + " allocation" + (live == 1 ? "" : "s") + " from '" + memory.name()
                    + "'. Close the sessions and their OrtValues first.");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("BfcCudaProvider over '" + memory.name() + "' is closed");
        }
    }

    // ---------------------------------------------------------------------------------------
    // Callbacks
    // ---------------------------------------------------------------------------------------

    private Pointer alloc(long size) {
        counters.allocCalls.increment();
        if (size == 0) {
            return null;
        }
        if (closed) {
            counters.failedAllocs.increment();
            error("alloc(" + size + ") after BfcCudaProvider over '" + memory.name() + "' was closed", null);
            return null;
        }
        long ptr = memory.allocate(size);
        if (ptr == 0) {
            counters.failedAllocs.increment();
            counters.lastError = "'" + memory.name() + "' could not allocate " + size + " bytes";
            return null;
        }
        BytePointer p;
        try {
            p = memory.handedToOrt(ptr);
        } catch (Throwable t) {
            // ONNX Runtime never gets the address (an OutOfMemoryError making the pointer), so
            // nothing else would ever free it.
            giveBack(ptr, t);
            throw t;
        }
        counters.liveAllocations.incrementAndGet();
        if (closed) {
            // close() ran while this was served and found nothing live (it sets closed before its
            // last look at the count, this counts before it looks at closed, so one of the two
            // sees the other): ORT must get nothing from a closed provider, whose free function
            // would no longer return it.
            counters.liveAllocations.decrementAndGet();
            counters.failedAllocs.increment();
            String message = "alloc(" + size + ") on BfcCudaProvider over '" + memory.name()
                    + "', which was closed while it was served";
            try {
                memory.free(ptr);
            } catch (RuntimeException e) {
                error(message + ": giving the memory back failed: " + e, e);
                return null;
            }
            error(message + ": the memory is given back", null);
            return null;
        }
        return p;
    }

    /** Frees memory ORT never received; a failure to is added to {@code cause}. */
    private void giveBack(long ptr, Throwable cause) {
        try {
            memory.free(ptr);
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    private void free(long ptr) {
        counters.freeCalls.increment();
        if (ptr == 0) {
            return;
        }
        try {
            memory.free(ptr);
        } catch (RuntimeException e) {
            if (!memory.isClosed()) {
                throw e;
            }
            // The GPU allocator was closed while ORT held this memory: its close took every
            // allocation back, this one too, so ORT holds it no longer (else close() of this
            // provider would be refused for good).
            counters.liveAllocations.updateAndGet(n -> n > 0 ? n - 1 : 0);
            error("gpu_external_free(0x" + Long.toHexString(ptr) + ") after '" + memory.name() + "' was closed"
                    + " while ONNX Runtime held the memory: its close already took it back (close the sessions"
                    + " before the allocator)", null);
            return;
        }
        counters.liveAllocations.decrementAndGet();
    }

    private void error(String message, Throwable t) {
        counters.error(LOG, message, t);
    }

    /** The C function of a callback, which must have one ({@link JavaCppCallbacks#nativeFunction}). */
    static long functionAddress(FunctionPointer callback) {
        long function = JavaCppCallbacks.nativeFunction(callback);
        if (function == 0) {
            throw new IllegalStateException("JavaCPP has no free native function left for callback class "
                    + callback.getClass().getSuperclass().getName() + " (" + MAX_OPEN + " per class)");
        }
        return function;
    }

    /** A pointer to a given address, returned to ORT from the alloc function. */
    private static final class Address extends BytePointer {
        Address(long ptr) {
            address = ptr;
        }
    }

    /** One set of three callbacks (one native function each), bound to an open provider or free. */
    static final class Slot {
        volatile BfcCudaProvider owner;
        /**
         * The memory of the provider it was last bound to (kept once it closes), null before the
         * first; class lock.
         */
        DeviceMemory served;
        final AllocFunction alloc = new AllocFunction(this);
        final FreeFunction free = new FreeFunction(this);
        final EmptyCacheFunction emptyCache = new EmptyCacheFunction(this);

        long allocFunction() {
            return functionAddress(alloc);
        }

        long freeFunction() {
            return functionAddress(free);
        }

        long emptyCacheFunction() {
            return functionAddress(emptyCache);
        }
    }

    /** {@code void* alloc(size_t)}, as {@code const char* (OrtCustomOp*)}: the size is the "pointer". */
    static final class AllocFunction extends OrtCustomOp.GetExecutionProviderType_OrtCustomOp {
        private final Slot slot;

        AllocFunction(Slot slot) {
            this.slot = slot;
        }

        @Override
        public BytePointer call(OrtCustomOp sizeAsPointer) {
            long size = sizeAsPointer == null ? 0 : sizeAsPointer.address();
            BfcCudaProvider p = slot.owner;
            try {
                if (p == null) {
                    LOG.log(Level.SEVERE, "gpu_external_alloc({0}) on a closed BfcCudaProvider slot", size);
                    return null;
                }
                return (BytePointer) p.alloc(size);
            } catch (Throwable t) {
                if (p != null) {
                    p.counters.failedAllocs.increment();
                    p.error("gpu_external_alloc(" + size + ") on '" + p.memory.name() + "' failed: " + t, t);
                }
                return null;
            }
        }
    }

    /** {@code void free(void*)}. */
    static final class FreeFunction extends OrtThreadWorkerFn {
        private final Slot slot;

        FreeFunction(Slot slot) {
            this.slot = slot;
        }

        @Override
        public void call(Pointer ptr) {
            long address = ptr == null ? 0 : ptr.address();
            BfcCudaProvider p = slot.owner;
            try {
                if (p == null) {
                    LOG.log(Level.SEVERE, "gpu_external_free(0x{0}) on a closed BfcCudaProvider slot: not returned",
                            Long.toHexString(address));
                    return;
                }
                p.free(address);
            } catch (Throwable t) {
                if (p != null) {
                    p.error("gpu_external_free(0x" + Long.toHexString(address) + ") on '" + p.memory.name()
                            + "' failed, the memory is not returned: " + t, t);
                }
            }
        }
    }

    /** {@code void empty_cache(void)}, as {@code const char* (void)} whose result ORT ignores. */
    static final class EmptyCacheFunction extends OrtApi.BytePointer_GetBuildInfoString {
        private final Slot slot;

        EmptyCacheFunction(Slot slot) {
            this.slot = slot;
        }

        @Override
        public BytePointer call() {
            BfcCudaProvider p = slot.owner;
            if (p != null) {
                p.counters.emptyCacheCalls.increment();
            }
            return null;
        }
    }
}
