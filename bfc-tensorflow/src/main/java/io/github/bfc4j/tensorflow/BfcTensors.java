/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.tensorflow.internal.c_api.global.tensorflow.TF_DeleteTensor;
import static org.tensorflow.internal.c_api.global.tensorflow.TF_NewTensor;
import static org.tensorflow.internal.c_api.global.tensorflow.TF_TensorData;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.MemoryType;
import java.lang.System.Logger.Level;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.Cleaner;
import java.security.AccessController;
import java.security.PrivilegedAction;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.PointerScope;
import org.tensorflow.RawTensor;
import org.tensorflow.SparseTensor;
import org.tensorflow.Tensor;
import org.tensorflow.TensorMapper;
import org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer;
import org.tensorflow.internal.c_api.TF_Tensor;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.ndarray.buffer.DataBuffers;
import org.tensorflow.proto.DataType;
import org.tensorflow.types.TBfloat16;
import org.tensorflow.types.TBool;
import org.tensorflow.types.TFloat16;
import org.tensorflow.types.TFloat32;
import org.tensorflow.types.TFloat64;
import org.tensorflow.types.TInt32;
import org.tensorflow.types.TInt64;
import org.tensorflow.types.TString;
import org.tensorflow.types.TUint16;
import org.tensorflow.types.TUint8;
import org.tensorflow.types.family.TType;

/**
 * TensorFlow Java tensors whose buffers come from a {@link BfcAllocator} (or a
 * {@link io.github.bfc4j.core.ShardedBfcAllocator}, where many threads make tensors at once: each
 * thread allocates from its own shard): ordinary typed tensors
 * ({@link TFloat32}, {@link TInt32}, ...) to feed to {@code Session.runner()}, read, write and
 * close as any other, but whose data lives in memory that bfc4j allocated and gets back.
 *
 * <pre>{@code
 * try (BfcAllocator cpu = BfcAllocator.builder().memoryLimit(1L << 30)
 *         .subAllocator(new AlignedHostSubAllocator()).build()) {
 *     BfcTensors tensors = new BfcTensors(cpu);
 *     try (TFloat32 x = tensors.ofFloats(Shape.of(2, 3), 1, 2, 3, 4, 5, 6);
 *          Result r = session.runner().feed(input, x).fetch(output).run()) {
 *         ...
 *     }
 * }
 * }</pre>
 *
 * <p><b>How:</b> each tensor's buffer is an {@link Allocation} of the allocator, handed to
 * TensorFlow's C API {@code TF_NewTensor} with a deallocator callback. TensorFlow counts the
 * references to the buffer (the Java tensor, tensors inside a running session, session outputs
 * that alias it, e.g. through {@code Identity}); when the last one goes, it calls the
 * deallocator, which closes the allocation. So the memory goes back to bfc4j exactly when
 * TensorFlow drops it, which may be later than the Java tensor's {@code close()}.
 *
 * <p><b>Which thread:</b> the deallocator runs on whichever thread drops the last reference: the
 * thread that closes the tensor (the usual case), one of TensorFlow's own threads, JavaCPP's
 * deallocator thread when an unclosed tensor is garbage collected, or the creating thread inside
 * {@code TF_NewTensor}. It never throws into native code: a failure inside it is logged (logger
 * {@code io.github.bfc4j.tensorflow.BfcTensors}, ERROR) and counted once ({@link #callbackFailures()},
 * or {@link #strayCallbackFailures()} for an address that is no tensor's buffer), also where
 * logging it fails.
 *
 * <p><b>No copy:</b> {@code TF_NewTensor} copies a buffer that is not aligned to Eigen's
 * {@code EIGEN_MAX_ALIGN_BYTES} (64 in TensorFlow Java 1.1.0's build) into memory of its own and
 * frees the original at once. Every buffer is allocated with that alignment
 * ({@code BfcAllocator.allocate(bytes, 64)}, on any sub-allocator), and every tensor is checked:
 * its data address is the allocation's.
 *
 * <p><b>Lifetime:</b> the allocator must outlive every tensor made here, and the tensors that
 * TensorFlow derives from them. An allocator with {@code ClosePolicy.REFUSE} (the builder's
 * default) refuses to close while TensorFlow holds a buffer. One closed by force gives its regions
 * back, but the memory of a buffer TensorFlow still holds stays mapped until TensorFlow drops it
 * (as for any view, {@code BfcAllocator.bytesHeldForViews()}): no tensor reads unmapped memory,
 * though the memory is no longer the allocator's. {@link #liveBuffers()} says how many buffers
 * TensorFlow holds. A tensor used after its {@code close()} (TensorFlow Java does not refuse it)
 * reaches memory that is bfc4j's again, maybe another allocation's by then; it stays mapped while
 * the Java tensor (or its {@code RawTensor}) is reachable, whatever {@code emptyCache()} or the
 * allocator's {@code close()} did meanwhile; the views TensorFlow Java makes of its data
 * ({@code slice(...)}, {@code get(...)}, {@code asRawTensor().data()}) and session outputs that
 * alias its buffer keep only the address, so read after the tensor's (or the output's) close,
 * once the tensor is unreachable and its region was given back, they crash the JVM: use them only
 * while the tensor is open. A JavaCPP {@code PointerScope} open on the thread
 * where a tensor is made takes no reference to it: its {@code close()} gives the buffer back
 * whether that scope is still open or not (TensorFlow Java's own tensors, made inside a scope,
 * keep their memory until it closes).
 *
 * <p><b>Scope:</b> only the buffers of tensors made here come from bfc4j. TensorFlow's
 * intermediates and outputs come from TensorFlow's own allocators (its CPU and GPU devices take no
 * outside allocator), except outputs that alias an input buffer.
 *
 * <p>Thread-safe. The {@code RawTensor}-from-handle step uses TensorFlow Java's package-private
 * {@code RawTensor.fromHandle} (reflection; see {@link #tensorOf(Class, Shape)}).
 */
public final class BfcTensors {

    /**
     * The alignment {@code TF_NewTensor} needs to take a buffer without copying it:
     * {@code EIGEN_MAX_ALIGN_BYTES} of TensorFlow Java 1.1.0's native build.
     */
    public static final long TENSORFLOW_ALIGNMENT = 64;

    private static final System.Logger LOG = System.getLogger(BfcTensors.class.getName());

    /** The most dimensions a TensorFlow tensor has ({@code TensorShape::MaxDimensions()}). */
    static final int MAX_DIMENSIONS = 254;

    /** A fixed-size TensorFlow type: its {@code DataType} and bytes per element. */
    private record DType(DataType dataType, int byteSize) {
        /** The number of elements of a shape that {@link #checkShape} accepted. */
        long elements(Shape shape) {
            return BfcTensors.byteSize(shape, this) / byteSize;
        }
    }

    private static final Map<Class<? extends TType>, DType> TYPES = types();

    private static Map<Class<? extends TType>, DType> types() {
        Map<Class<? extends TType>, DType> m = new LinkedHashMap<>();
        m.put(TFloat32.class, new DType(DataType.DT_FLOAT, 4));
        m.put(TFloat64.class, new DType(DataType.DT_DOUBLE, 8));
        m.put(TInt32.class, new DType(DataType.DT_INT32, 4));
        m.put(TInt64.class, new DType(DataType.DT_INT64, 8));
        m.put(TUint8.class, new DType(DataType.DT_UINT8, 1));
        m.put(TUint16.class, new DType(DataType.DT_UINT16, 2));
        m.put(TBool.class, new DType(DataType.DT_BOOL, 1));
        m.put(TFloat16.class, new DType(DataType.DT_HALF, 2));
        m.put(TBfloat16.class, new DType(DataType.DT_BFLOAT16, 2));
        return Collections.unmodifiableMap(m);
    }

    /**
     * A buffer TensorFlow holds: whose it is, the allocation to close when TensorFlow drops it,
     * and the view handed to TensorFlow, kept so that its region's memory stays mapped until
     * then (even if the allocator is closed by force meanwhile).
     */
    private record Owned(BfcTensors owner, Allocation allocation, Pointer view) {
    }

    /**
     * Every buffer handed to TensorFlow and not yet given back, by data address (unique among live
     * host allocations). The deallocator finds its allocation here.
     */
    private static final ConcurrentHashMap<Long, Owned> OWNED = new ConcurrentHashMap<>();

    /** Deallocator calls for an address not in {@link #OWNED}, or failing outside any owner. */
    private static final AtomicLong STRAY_CALLBACK_FAILURES = new AtomicLong();

    private final MemoryAllocator allocator;
    /** Told of each step of {@link #wrap} before it is taken: a test's way to fail there. */
    private volatile Steps steps = step -> { };
    private final AtomicLong tensorsCreated = new AtomicLong();
    private final AtomicLong buffersReturned = new AtomicLong();
    private final AtomicLong liveBuffers = new AtomicLong();
    private final AtomicLong callbackFailures = new AtomicLong();

    /**
     * @param allocator where the tensors' buffers come from: a {@code BfcAllocator} or a
     *     {@code ShardedBfcAllocator} over host memory (e.g. over bfc-cpu's
     *     {@code AlignedHostSubAllocator}), since TensorFlow's C API tensors live on the host
     * @throws NullPointerException if {@code allocator} is null
     * @throws IllegalArgumentException if the allocator's memory is not host memory
     */
    public BfcTensors(MemoryAllocator allocator) {
        this.allocator = Objects.requireNonNull(allocator, "allocator=null (expected: a BfcAllocator or"
                + " ShardedBfcAllocator over host memory, e.g. over new AlignedHostSubAllocator())");
        MemoryType type = allocator.getMemoryType();
        if (!type.isHost()) {
            throw new IllegalArgumentException("allocator '" + allocator.name() + "' has memoryType=" + type
                    + " (expected: HOST_PAGEABLE or HOST_PINNED, e.g. over new AlignedHostSubAllocator()):"
                    + " TensorFlow Java's tensors hold host memory");
        }
    }

    /** @return the allocator the buffers come from */
    public MemoryAllocator allocator() {
        return allocator;
    }

    /**
     * A tensor of the given type and shape over a new bfc4j allocation, uninitialized: the bytes
     * are whatever the memory held (bfc4j reuses freed memory).
     *
     * <p>Supported types: every fixed-size type of TensorFlow Java: {@code TFloat32},
     * {@code TFloat64}, {@code TInt32}, {@code TInt64}, {@code TUint8}, {@code TUint16},
     * {@code TBool}, {@code TFloat16}, {@code TBfloat16}. {@code TString} is not: its elements
     * are variable-length structures that TensorFlow allocates itself.
     *
     * <p>The typed tensor is made through TensorFlow Java's package-private
     * {@code RawTensor.fromHandle(TF_Tensor)}, reached by reflection, since TensorFlow Java 1.1.0
     * has no public way to turn a {@code TF_Tensor} into a {@code Tensor}. On the class path this
     * needs nothing; on the module path, open the package to this module:
     * {@code --add-opens tensorflow/org.tensorflow=io.github.bfc4j.tensorflow}.
     *
     * @param type the tensor type, e.g. {@code TFloat32.class}
     * @param shape a fully known shape ({@code Shape.scalar()} for a scalar)
     * @param <T> the tensor type
     * @return the tensor; close it when done (TensorFlow returns the buffer to bfc4j when it
     *     drops its last reference)
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the type is not supported, the shape is not fully known,
     *     has a negative dimension or more than 254 dimensions, its number of elements overflows a
     *     {@code long} as TensorFlow counts it (multiplying from the left, so even with a later
     *     dimension of 0) (TensorFlow would abort the process on any of these), its size in bytes
     *     overflows a {@code long}, or it is larger than any allocation can be (the message names
     *     the shape)
     * @throws BfcOutOfMemoryException if the allocator cannot provide the memory
     * @throws IllegalStateException if the allocator is closed, TensorFlow's JNI library
     *     cannot be loaded here (the natives jar for the platform, or a library it needs, is
     *     missing: the message says what and what to add, the same on every call), or, for the
     *     first tensor, JavaCPP has no native function left for the deallocator (other code holds
     *     all 10 of its callback class; a later call tries again)
     * @throws UnsupportedOperationException if TensorFlow Java's {@code RawTensor.fromHandle}
     *     cannot be reached (module path without {@code --add-opens})
     */
    public <T extends TType> T tensorOf(Class<T> type, Shape shape) {
        return create(type, shape);
    }

    /**
     * As {@link #tensorOf(Class, Shape)}, then {@code init} fills the tensor. If {@code init}
     * throws, the tensor is closed (its buffer returned) and the exception propagates.
     *
     * @param type the tensor type, e.g. {@code TInt32.class}
     * @param shape a fully known shape
     * @param init writes the initial values, e.g. {@code t -> t.setInt(7, 0, 1)}
     * @param <T> the tensor type
     * @return the initialized tensor
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException as {@link #tensorOf(Class, Shape)}
     * @throws BfcOutOfMemoryException if the allocator cannot provide the memory
     * @throws IllegalStateException if the allocator is closed, TensorFlow's JNI library
     *     cannot be loaded here (the natives jar for the platform, or a library it needs, is
     *     missing: the message says what and what to add, the same on every call), or, for the
     *     first tensor, JavaCPP has no native function left for the deallocator (other code holds
     *     all 10 of its callback class; a later call tries again)
     * @throws UnsupportedOperationException as {@link #tensorOf(Class, Shape)}
     */
    public <T extends TType> T tensorOf(Class<T> type, Shape shape, Consumer<? super T> init) {
        Objects.requireNonNull(init, "init=null (expected: what writes the initial values,"
                + " e.g. t -> t.setInt(7, 0, 1))");
        T tensor = create(type, shape);
        try {
            init.accept(tensor);
        } catch (Throwable t) {
            tensor.close();
            throw t;
        }
        return tensor;
    }

    /**
     * A {@link TFloat32} of the given shape holding {@code values} in row-major order (copied in
     * by TensorFlow Java's own bulk copy, as {@code TFloat32.tensorOf(shape, DataBuffers.of(values))}).
     *
     * @param shape a fully known shape
     * @param values exactly {@code shape.size()} values
     * @return the tensor
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the number of values is not the shape's size, or as
     *     {@link #tensorOf(Class, Shape)}
     * @throws BfcOutOfMemoryException if the allocator cannot provide the memory
     * @throws IllegalStateException if the allocator is closed, TensorFlow's JNI library
     *     cannot be loaded here (the natives jar for the platform, or a library it needs, is
     *     missing: the message says what and what to add, the same on every call), or, for the
     *     first tensor, JavaCPP has no native function left for the deallocator (other code holds
     *     all 10 of its callback class; a later call tries again)
     * @throws UnsupportedOperationException as {@link #tensorOf(Class, Shape)}
     */
    public TFloat32 ofFloats(Shape shape, float... values) {
        checkValues(TFloat32.class, shape,
                Objects.requireNonNull(values, "values=null (expected: shape.size() values)").length);
        return tensorOf(TFloat32.class, shape, t -> t.copyFrom(DataBuffers.of(values, true, false)));
    }

    /**
     * A {@link TInt32} of the given shape holding {@code values} in row-major order.
     *
     * @param shape a fully known shape
     * @param values exactly {@code shape.size()} values
     * @return the tensor
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the number of values is not the shape's size, or as
     *     {@link #tensorOf(Class, Shape)}
     * @throws BfcOutOfMemoryException if the allocator cannot provide the memory
     * @throws IllegalStateException if the allocator is closed, TensorFlow's JNI library
     *     cannot be loaded here (the natives jar for the platform, or a library it needs, is
     *     missing: the message says what and what to add, the same on every call), or, for the
     *     first tensor, JavaCPP has no native function left for the deallocator (other code holds
     *     all 10 of its callback class; a later call tries again)
     * @throws UnsupportedOperationException as {@link #tensorOf(Class, Shape)}
     */
    public TInt32 ofInts(Shape shape, int... values) {
        checkValues(TInt32.class, shape,
                Objects.requireNonNull(values, "values=null (expected: shape.size() values)").length);
        return tensorOf(TInt32.class, shape, t -> t.copyFrom(DataBuffers.of(values, true, false)));
    }

    /**
     * @return the buffers handed to TensorFlow so far: one per tensor made (a creation that
     *     fails inside TensorFlow counts too, its buffer counted as returned); always
     *     {@link #buffersReturned()} + {@link #liveBuffers()} when nothing is in progress
     */
    public long tensorsCreated() {
        return tensorsCreated.get();
    }

    /**
     * @return the buffers TensorFlow has given back (deallocator calls, plus buffers taken back
     *     after a failed creation); equals {@link #tensorsCreated()} once TensorFlow holds none
     */
    public long buffersReturned() {
        return buffersReturned.get();
    }

    /** @return the buffers made here that TensorFlow still holds */
    public long liveBuffers() {
        return liveBuffers.get();
    }

    /**
     * @return deallocator calls for this instance's buffers that failed to give the memory back;
     *     each is logged. 0 in correct use (a raw free of a tensor's buffer behind its back is
     *     refused by the allocator, and cannot cause one).
     */
    public long callbackFailures() {
        return callbackFailures.get();
    }

    /**
     * @return deallocator calls, process-wide, that matched no buffer of any instance or failed
     *     outside one; each is logged. 0 in correct use.
     */
    public static long strayCallbackFailures() {
        return STRAY_CALLBACK_FAILURES.get();
    }

    /**
     * The address of a tensor's data ({@code TF_TensorData}), e.g. to see that a session output
     * aliases an input's buffer.
     *
     * @param tensor an open dense tensor
     * @return the native address of its first byte
     * @throws NullPointerException if {@code tensor} is null
     * @throws IllegalStateException if the tensor is closed
     */
    public static long dataAddress(Tensor tensor) {
        Objects.requireNonNull(tensor, "tensor=null (expected: an open dense tensor)");
        return TF_TensorData(Handles.of(tensor.asRawTensor())).address();
    }

    /**
     * Whether a tensor's data is a buffer made here: true for the tensors this instance made and
     * for tensors TensorFlow made that share such a buffer.
     *
     * @param tensor an open dense tensor
     * @return whether its data belongs to this instance
     * @throws NullPointerException if {@code tensor} is null
     * @throws IllegalStateException if the tensor is closed
     */
    public boolean owns(Tensor tensor) {
        Owned owned = OWNED.get(dataAddress(tensor));
        return owned != null && owned.owner == this;
    }

    /** The allocation behind a buffer made here, or null: for tests. */
    Allocation allocationOf(Tensor tensor) {
        Owned owned = OWNED.get(dataAddress(tensor));
        return owned != null && owned.owner == this ? owned.allocation : null;
    }

    private static DType checkShape(Class<? extends TType> type, Shape shape) {
        Objects.requireNonNull(type, "type=null (expected: a tensor type, e.g. TInt32.class)");
        Objects.requireNonNull(shape, "shape=null (expected: a fully known shape, e.g. Shape.of(2, 3))");
        DType dtype = TYPES.get(type);
        if (dtype == null) {
            String why = type == TString.class
                    ? "TString elements are variable-length structures that TensorFlow allocates itself;"
                            + " make string tensors with TString.tensorOf"
                    : "only TensorFlow Java's fixed-size types";
            throw new IllegalArgumentException("type=" + type.getName() + " (expected: one of "
                    + simpleNames() + "; " + why + ")");
        }
        if (shape.isUnknown() || shape.hasUnknownDimension()) {
            throw new IllegalArgumentException("shape=" + shape + " (expected: a fully known shape, no -1"
                    + " dimension; a tensor's size must be known to allocate it)");
        }
        if (shape.numDimensions() > MAX_DIMENSIONS) {
            // TensorFlow aborts the process past it (TensorShape's CHECK: "Too many dimensions").
            throw new IllegalArgumentException("shape of " + shape.numDimensions() + " dimensions (expected: at most "
                    + MAX_DIMENSIONS + ", TensorFlow's limit; merge dimensions of size 1 into their neighbours)");
        }
        for (int i = 0; i < shape.numDimensions(); i++) {
            if (shape.get(i) < 0) {
                // TensorFlow aborts the process on a negative dimension (TensorShape's CHECK).
                throw new IllegalArgumentException("shape=" + shape + " (expected: no negative dimension;"
                        + " dimension " + i + " is " + shape.get(i) + ")");
            }
        }
        byteSize(shape, dtype);
        return dtype;
    }

    private static void checkValues(Class<? extends TType> type, Shape shape, int length) {
        long elements = checkShape(type, shape).elements(shape);
        if (length != elements) {
            throw new IllegalArgumentException("values.length=" + length + " (expected: " + elements
                    + ", the number of elements of shape " + shape + ")");
        }
    }

    /**
     * The shape's size in bytes. TensorFlow counts a shape's elements as it builds the shape,
     * multiplying in one dimension at a time from the left, and aborts the process when a partial
     * product overflows, even where a later dimension is 0 ({@code TensorShape}'s
     * {@code InitDims}): such a shape is refused here, and so is one whose bytes overflow a long.
     * ({@code Shape.size()} may wrap.)
     */
    private static long byteSize(Shape shape, DType dtype) {
        long elements = 1;
        for (int i = 0; i < shape.numDimensions(); i++) {
            try {
                elements = Math.multiplyExact(elements, shape.get(i));
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("shape=" + shape + " (expected: at most " + Long.MAX_VALUE
                        + " elements, counted from the left as TensorFlow does; the product of dimensions 0 to " + i
                        + " overflows a long, on which TensorFlow would abort the process, even where a later"
                        + " dimension is 0)", e);
            }
        }
        try {
            return Math.multiplyExact(elements, dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("shape=" + shape + " (expected: at most " + Long.MAX_VALUE
                    + " bytes; its " + elements + " elements of " + dtype.dataType() + " take " + dtype.byteSize()
                    + " bytes each)", e);
        }
    }

    private static String simpleNames() {
        StringBuilder sb = new StringBuilder();
        for (Class<?> c : TYPES.keySet()) {
            sb.append(sb.length() == 0 ? "" : ", ").append(c.getSimpleName());
        }
        return sb.toString();
    }

    /** Allocates, wraps, types. */
    private <T extends TType> T create(Class<T> type, Shape shape) {
        DType dtype = checkShape(type, shape);
        Deallocator_Pointer_long_Pointer deallocator = TensorFlowNatives.deallocator();
        TensorFlowAccess.check();
        long bytes = byteSize(shape, dtype);
        Allocation allocation;
        try {
            // allocate(0) is refused; an empty tensor gets one byte, and TensorFlow is told 0.
            // Aligned as TF_NewTensor needs, whatever the sub-allocator's regions are.
            allocation = allocator.allocate(Math.max(1, bytes), TENSORFLOW_ALIGNMENT);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("cannot make a " + type.getSimpleName() + " tensor of shape " + shape
                    + " (" + bytes + " bytes): " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            // A request larger than any allocation can be: say which tensor asked for it.
            throw new IllegalArgumentException("cannot make a " + type.getSimpleName() + " tensor of shape " + shape
                    + " (" + bytes + " bytes): " + e.getMessage(), e);
        }
        return wrap(type, shape, dtype, allocation, bytes, deallocator);
    }

    /** The steps of {@link #wrap} that can fail (an OutOfMemoryError) and leak the buffer. */
    enum Step { AS_POINTER, REGISTER, SCOPE, NEW_TENSOR, WITH_DEALLOCATOR, PIN }

    /** Told of each step of {@link #wrap} before it is taken, for tests. */
    interface Steps {
        void reached(Step step);
    }

    /** For tests: {@code steps} is told of each step of the tensors made from now on. */
    void steps(Steps steps) {
        this.steps = steps;
    }

    private <T extends TType> T wrap(Class<T> type, Shape shape, DType dtype, Allocation allocation, long bytes,
            Deallocator_Pointer_long_Pointer deallocator) {
        long address = allocation.address();
        Steps steps = this.steps;
        Owned owned = null;
        try {
            steps.reached(Step.AS_POINTER);
            Pointer data = allocation.asPointer();
            owned = new Owned(this, allocation, data);
            steps.reached(Step.REGISTER);
            OWNED.put(address, owned);
        } catch (Throwable t) {
            // An OutOfMemoryError before TensorFlow has the buffer: it goes back (the put may have
            // failed after its entry went in, growing the table).
            if (owned != null) {
                OWNED.remove(address, owned);
            }
            try {
                allocation.close();
            } catch (Throwable c) {
                t.addSuppressed(c);
            }
            throw t;
        }
        tensorsCreated.incrementAndGet();
        liveBuffers.incrementAndGet();
        // A scope of our own while the native handle is made: JavaCPP attaches a pointer given a
        // deallocator (withDeallocator) to the innermost scope open on the thread, and one of the
        // application's would keep a reference to the handle, so the tensor's close() would not
        // delete it (nor give the buffer back) until that scope closed. Ours lets go of it when
        // closed, once the tensor's own scope (RawTensor.fromHandle's) holds it.
        PointerScope scope;
        try {
            steps.reached(Step.SCOPE);
            scope = new PointerScope();
        } catch (Throwable t) {
            // An OutOfMemoryError making the scope: the buffer is registered, not yet TensorFlow's.
            takeBack(address, owned);
            throw t;
        }
        try (scope) {
            return wrapInScope(type, shape, dtype, address, owned, bytes, deallocator, steps);
        }
    }

    /** The part of {@link #wrap} from {@code TF_NewTensor} on, inside a scope of its own. */
    private static <T extends TType> T wrapInScope(Class<T> type, Shape shape, DType dtype, long address,
            Owned owned, long bytes, Deallocator_Pointer_long_Pointer deallocator, Steps steps) {
        TF_Tensor handle;
        try {
            steps.reached(Step.NEW_TENSOR);
            handle = TF_NewTensor(dtype.dataType().getNumber(), shape.asArray(), shape.numDimensions(),
                    owned.view, bytes, deallocator, null);
        } catch (Throwable t) {
            takeBack(address, owned);
            throw t;
        }
        if (handle == null || handle.isNull()) {
            // TF_NewTensor refuses a buffer too small for the shape; it may have called the
            // deallocator already, so take the buffer back only if it is still registered.
            takeBack(address, owned);
            throw new IllegalStateException("TF_NewTensor refused a " + type.getSimpleName() + " tensor of shape "
                    + shape + " over " + bytes + " bytes");
        }
        try {
            steps.reached(Step.WITH_DEALLOCATOR);
            handle.withDeallocator();
        } catch (Throwable t) {
            // TensorFlow owns the buffer but no Java object will delete the tensor: deleting it
            // now gives the buffer back through the deallocator.
            try {
                TF_DeleteTensor(handle);
            } catch (Throwable d) {
                t.addSuppressed(d);
            }
            throw t;
        }
        if (OWNED.get(address) != owned) {
            // TF_NewTensor copied the buffer into memory of its own and called the deallocator at
            // once, which unregistered it (cheaper to see here than with TF_TensorData's JNI call).
            handle.delete();
            throw new IllegalStateException("TF_NewTensor copied the buffer at 0x" + Long.toHexString(address)
                    + " instead of using it; TensorFlow needs more alignment than " + TENSORFLOW_ALIGNMENT
                    + " bytes here");
        }
        TType tensor = TensorFlowAccess.typedTensor(handle);
        if (!type.isInstance(tensor)) {
            tensor.close();
            throw new IllegalStateException("TensorFlow Java made a " + tensor.getClass().getName() + " for "
                    + dtype.dataType() + ", not a " + type.getName());
        }
        try {
            steps.reached(Step.PIN);
            Pins.pin(tensor.asRawTensor(), owned.view);
        } catch (Throwable t) {
            // An OutOfMemoryError pinning it: the tensor is whole, and its close gives the buffer back.
            try {
                tensor.close();
            } catch (Throwable c) {
                t.addSuppressed(c);
            }
            throw t;
        }
        return type.cast(tensor);
    }

    /**
     * Takes a buffer back after a failed creation, unless TensorFlow already gave it back (the
     * address may be another buffer's by then, made on another thread: that one stays).
     */
    private static void takeBack(long address, Owned owned) {
        if (OWNED.remove(address, owned)) {
            returned(owned);
        }
    }

    private static void returned(Owned owned) {
        BfcTensors owner = owned.owner;
        owner.liveBuffers.decrementAndGet();
        owner.buffersReturned.incrementAndGet();
        try {
            owned.allocation.close();
        } catch (Throwable t) {
            owner.callbackFailures.incrementAndGet();
            logError("could not give " + owned.allocation + " back to allocator '"
                    + owner.allocator.name() + "' after TensorFlow dropped it", t);
        }
    }

    /**
     * Logs a failure already counted. A logger that throws (a handler that fails) is ignored
     * here: the failure stays counted once, where it was, and nothing reaches TensorFlow's
     * native code, nor replaces the exception of a failed creation.
     */
    private static void logError(String message, Throwable t) {
        try {
            LOG.log(Level.ERROR, message, t);
        } catch (Throwable ignored) {
            // Counted already; a failure to log it may not cross into native code.
        }
    }

    /** What the deallocator does with the buffer at {@code address}; a test calls it as TensorFlow would. */
    static void givenBack(long address, long len) {
        Owned owned = OWNED.remove(address);
        if (owned == null) {
            STRAY_CALLBACK_FAILURES.incrementAndGet();
            logError("TensorFlow gave back 0x" + Long.toHexString(address) + " (" + len
                    + " bytes), which is no bfc4j tensor buffer; ignored", null);
            return;
        }
        returned(owned);
    }

    /** TensorFlow's deallocator: gives the buffer back to bfc4j; never throws into native code. */
    private static final class Releaser extends Deallocator_Pointer_long_Pointer {
        @Override
        public void call(Pointer data, long len, Pointer arg) {
            try {
                givenBack(data == null ? 0 : data.address(), len);
            } catch (Throwable t) {
                try {
                    STRAY_CALLBACK_FAILURES.incrementAndGet();
                    LOG.log(Level.ERROR, "TensorFlow tensor deallocator failed", t);
                } catch (Throwable ignored) {
                    // Nothing may cross into native code, not even a failure to log.
                }
            }
        }
    }

    /**
     * TensorFlow's JNI library, loaded on the first tensor, and the one deallocator for every
     * tensor. A failed load is kept as a sentence, given on every later call: JavaCPP loads the
     * library in a static initializer, so a second try would only say {@code Could not initialize
     * class}. Anything else that fails here (an {@code OutOfMemoryError}: the Java heap, or
     * JavaCPP's {@code maxPhysicalBytes} when the deallocator registers) reaches the caller and
     * the next call tries again: done in a static initializer, it made the class unusable for the
     * life of the JVM ({@code NoClassDefFoundError} on every later tensor), as did a deallocator
     * made in {@link BfcTensors}' own static initializer for every use of the class (even its
     * counters).
     */
    private static final class TensorFlowNatives {
        /**
         * The one deallocator, once made. Made inside a {@code PointerScope} of our own and
         * retained, so that it stays valid as long as the class is loaded (TensorFlow may call it
         * after every Java reference is gone), whatever scope of the application's was open.
         */
        private static volatile Deallocator_Pointer_long_Pointer deallocator;
        /** Why the library could not be loaded, or null. Guarded by the class lock. */
        private static String loadFailure;

        /**
         * @throws IllegalStateException if TensorFlow's JNI library cannot be loaded, or JavaCPP
         *     has no native function left for the deallocator (the next call tries again)
         * @throws OutOfMemoryError if the deallocator cannot be made now (the next call tries again)
         */
        static Deallocator_Pointer_long_Pointer deallocator() {
            Deallocator_Pointer_long_Pointer d = deallocator;
            return d != null ? d : make();
        }

        private static synchronized Deallocator_Pointer_long_Pointer make() {
            if (deallocator == null) {
                if (loadFailure == null) {
                    try {
                        Loader.load(org.tensorflow.internal.c_api.global.tensorflow.class);
                    } catch (LinkageError e) {
                        // UnsatisfiedLinkError: the natives jar for this platform, or a library it
                        // needs, is missing. NoClassDefFoundError: TensorFlow's classes failed to
                        // initialize before (something else touched them first).
                        loadFailure = sentence(e);
                    }
                }
                if (loadFailure != null) {
                    throw new IllegalStateException(loadFailure);
                }
                // Made inside a scope of our own, the innermost on this thread: JavaCPP attaches it
                // to that scope, not to one of the application's, whose deallocate() would free it
                // whatever its reference count. Closing ours releases it once: retained, it stays;
                // refused, it is freed with its native function.
                try (PointerScope own = new PointerScope()) {
                    Releaser releaser = new Releaser();
                    // JavaCPP makes 10 native functions per callback class for the whole process;
                    // one made while other code holds all 10 has none (its struct's first field,
                    // the C function, is null), and TensorFlow would call null when it drops a
                    // buffer.
                    Pointer function = new PointerPointer<Pointer>(releaser).get(0);
                    if (function == null || function.isNull()) {
                        throw new IllegalStateException("cannot make a tensor: JavaCPP has no native function left"
                                + " for TensorFlow's deallocator callback class "
                                + Deallocator_Pointer_long_Pointer.class.getName() + " (it makes 10 per class for"
                                + " the whole process, and other code holds all 10): close some of those callbacks"
                                + " first");
                    }
                    deallocator = releaser.retainReference();
                }
            }
            return deallocator;
        }

        private static String sentence(LinkageError e) {
            Throwable deepest = e;
            while (deepest.getCause() != null && deepest.getCause() != deepest) {
                deepest = deepest.getCause();
            }
            String m = deepest.getMessage() == null ? deepest.getClass().getSimpleName() : deepest.getMessage();
            // A static initializer's failure seen again: "Exception java.lang.UnsatisfiedLinkError:
            // ... [in thread "main"]"; quote the error, not the wrapping.
            int colon = m.indexOf(": ");
            int thread = m.lastIndexOf(" [in thread ");
            if (deepest instanceof ExceptionInInitializerError && m.startsWith("Exception ") && colon >= 0
                    && thread > colon) {
                m = m.substring(colon + ": ".length(), thread);
            }
            int so = m.indexOf(".so: ");   // a dynamic linker's message starts with the library's path
            m = so >= 0 ? m.substring(so + ".so: ".length()) : m;
            if (m.endsWith(".")) {
                m = m.substring(0, m.length() - 1);
            }
            String platform;
            try {
                platform = Loader.getPlatform();
            } catch (LinkageError noJavaCpp) {
                platform = "this platform";
            }
            return "TensorFlow's JNI library could not be loaded (" + m + "): add"
                    + " org.tensorflow:tensorflow-core-native with classifier " + platform
                    + " (TensorFlow Java's natives for this platform), see docs/integrations.md.";
        }
    }

    /**
     * Keeps each tensor's buffer mapped while its Java tensor is reachable, closed or not.
     * TensorFlow Java's tensors do not check for {@code close()} when read or written, and a
     * closed tensor's buffer is back with bfc4j, whose {@code emptyCache()}, garbage collection of
     * regions or {@code close()} may give its region to the sub-allocator, which unmaps it: a read
     * after that crashed the JVM. The view of the buffer handed to TensorFlow holds its region, as
     * any view does; a cleaner action registered for the tensor's {@code RawTensor} (which the
     * typed tensor holds) keeps that view until the {@code RawTensor} is unreachable.
     */
    private static final class Pins {
        /** Made with the first tensor; a failure to start its thread is retried by the next one. */
        private static volatile Cleaner cleaner;

        private Pins() {
        }

        /** Keeps {@code view} reachable until {@code tensor} is not. */
        static void pin(RawTensor tensor, Pointer view) {
            Cleaner c = cleaner;
            (c != null ? c : make()).register(tensor, new Pin(view));
        }

        /**
         * The cleaner, its thread holding nothing of the code that made the first tensor (no
         * context class loader, no inherited thread locals, none of the callers' frames in its
         * access control context), whose class loader it would keep for the life of the JVM, as
         * bfc-core's {@code BfcCleaner} does.
         */
        @SuppressWarnings("removal") // AccessController: the only way to leave the callers' frames out before JDK 24
        private static synchronized Cleaner make() {
            if (cleaner == null) {
                cleaner = AccessController.doPrivileged((PrivilegedAction<Cleaner>) () -> Cleaner.create(r -> {
                    Thread t = new Thread(null, r, "bfc4j-tensor-pins", 0, false);
                    t.setDaemon(true);
                    t.setContextClassLoader(null);
                    return t;
                }));
            }
            return cleaner;
        }
    }

    /** A cleaner action that holds a view until it runs, and does nothing else. */
    private record Pin(Pointer view) implements Runnable {
        @Override
        public void run() {
            // Dropped once run: the view, and with it the region, may go.
        }
    }

    /** Reaches TensorMapper's protected {@code nativeHandle(RawTensor)}: public API, by subclassing. */
    private static final class Handles extends TensorMapper<TType> {
        static TF_Tensor of(RawTensor raw) {
            return nativeHandle(raw);
        }

        @Override
        protected TType mapDense(RawTensor tensor) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected SparseTensor<TType> mapSparse(TInt64 indices, TType values, TInt64 denseShape, PointerScope scope) {
            throw new UnsupportedOperationException();
        }
    }

    /**
     * TensorFlow Java's package-private {@code RawTensor.fromHandle(TF_Tensor)} and
     * {@code RawTensor.asTypedTensor()}: how TensorFlow Java itself turns session outputs into
     * typed tensors. Looked up once.
     */
    private static final class TensorFlowAccess {
        private static final MethodHandle FROM_HANDLE;
        private static final MethodHandle AS_TYPED_TENSOR;
        private static final Throwable FAILURE;

        static {
            MethodHandle fromHandle = null;
            MethodHandle asTyped = null;
            Throwable failure = null;
            try {
                MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(RawTensor.class, MethodHandles.lookup());
                fromHandle = lookup.findStatic(RawTensor.class, "fromHandle",
                        MethodType.methodType(RawTensor.class, TF_Tensor.class));
                asTyped = lookup.findVirtual(RawTensor.class, "asTypedTensor", MethodType.methodType(TType.class));
            } catch (ReflectiveOperationException | RuntimeException e) {
                failure = e;
            }
            FROM_HANDLE = fromHandle;
            AS_TYPED_TENSOR = asTyped;
            FAILURE = failure;
        }

        static void check() {
            if (FAILURE != null) {
                throw new UnsupportedOperationException("cannot reach TensorFlow Java's RawTensor.fromHandle(TF_Tensor),"
                        + " which turns a native tensor into a Java one (" + FAILURE + "): on the module path,"
                        + " run with --add-opens tensorflow/org.tensorflow=io.github.bfc4j.tensorflow;"
                        + " with a TensorFlow Java other than 1.1.0, check that the method still exists", FAILURE);
            }
        }

        /** The typed tensor over {@code handle}, which it takes over; deletes the handle on failure. */
        static TType typedTensor(TF_Tensor handle) {
            RawTensor raw;
            try {
                raw = (RawTensor) FROM_HANDLE.invokeExact(handle);
            } catch (Throwable t) {
                handle.delete();
                throw unchecked(t);
            }
            try {
                return (TType) AS_TYPED_TENSOR.invokeExact(raw);
            } catch (Throwable t) {
                raw.close();
                throw unchecked(t);
            }
        }

        private static RuntimeException unchecked(Throwable t) {
            if (t instanceof Error e) {
                throw e;
            }
            return t instanceof RuntimeException r ? r : new IllegalStateException(t);
        }
    }
}
