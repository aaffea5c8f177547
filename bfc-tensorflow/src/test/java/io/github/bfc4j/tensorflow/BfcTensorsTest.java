/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.GarbageCollection;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.MemoryMapChecks;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.tensorflow.Graph;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.Tensor;
import org.tensorflow.exceptions.TFInvalidArgumentException;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Placeholder;
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

/** Tensors over bfc4j memory: types, no copy, bad input, and every buffer given back. */
class BfcTensorsTest {

    private static final List<Class<? extends TType>> TYPES = List.of(TFloat32.class, TFloat64.class, TInt32.class,
            TInt64.class, TUint8.class, TUint16.class, TBool.class, TFloat16.class, TBfloat16.class);

    private BfcAllocator cpu;
    private BfcTensors tensors;

    @BeforeEach
    void setUp() {
        cpu = BfcAllocator.builder().name("tf_test").memoryLimit(64L << 20)
                .subAllocator(new AlignedHostSubAllocator()).build();
        tensors = new BfcTensors(cpu);
    }

    @AfterEach
    void everyBufferReturned() {
        assertThat(tensors.liveBuffers()).as("buffers TensorFlow still holds").isZero();
        assertThat(cpu.bytesInUse()).as("bfc4j bytes in use").isZero();
        cpu.close(); // REFUSE: throws if anything is still allocated
    }

    /**
     * An OutOfMemoryError at a step of making a tensor (the buffer's pointer, its registration,
     * the PointerScope its native handle is made in,
     * TF_NewTensor, the tensor's Java deallocator) reaches the caller and the buffer goes back
     * to the allocator: before TensorFlow had it, it stayed allocated for good (and, with
     * TensorFlow holding it, so did the tensor). The allocator is usable afterwards.
     */
    @Test
    void anOutOfMemoryErrorWhileMakingATensorGivesTheBufferBack() {
        for (BfcTensors.Step failing : BfcTensors.Step.values()) {
            OutOfMemoryError oom = new OutOfMemoryError("Java heap space (injected at " + failing + ")");
            tensors.steps(step -> {
                if (step == failing) {
                    throw oom;
                }
            });
            assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(1000))).as(failing.toString())
                    .isSameAs(oom);
            assertThat(cpu.bytesInUse()).as("bytes in use after a failure at " + failing).isZero();
            assertThat(tensors.liveBuffers()).as("live buffers after a failure at " + failing).isZero();
        }
        tensors.steps(step -> { });
        try (TFloat32 t = tensors.tensorOf(TFloat32.class, Shape.of(1000))) {
            assertThat(tensors.owns(t)).isTrue();
        }
    }

    /**
     * A failed creation takes back its own buffer only: where TensorFlow gave it back already
     * and another tensor's buffer is at the same address by then, that one stays. The failing
     * call removed the other's registration by address and freed its memory under it.
     */
    @Test
    void aFailedCreationNeverTakesBackAnotherTensorsBuffer() {
        BfcTensors other = new BfcTensors(cpu);
        TFloat32[] theirs = new TFloat32[1];
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space (injected)");
        long[] mine = new long[1];
        tensors.steps(step -> {
            if (step == BfcTensors.Step.NEW_TENSOR) {
                // As if TF_NewTensor gave the buffer back and then failed, while another thread
                // made a tensor of the same size: the allocator hands it the same address.
                mine[0] = cpu.getStats().bytesInUse();
                long address = addressOfTheOnlyAllocation();
                BfcTensors.givenBack(address, 4000);
                theirs[0] = other.tensorOf(TFloat32.class, Shape.of(1000));
                assertThat(BfcTensors.dataAddress(theirs[0])).as("the same address").isEqualTo(address);
                throw oom;
            }
        });
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(1000))).isSameAs(oom);
        assertThat(other.owns(theirs[0])).as("the other tensor's buffer is still registered").isTrue();
        assertThat(cpu.bytesInUse()).as("the other tensor's buffer is still allocated").isEqualTo(mine[0]);
        theirs[0].close();
        assertThat(other.liveBuffers()).isZero();
    }

    private long addressOfTheOnlyAllocation() {
        long[] found = new long[1];
        int[] count = new int[1];
        cpu.forEachChunk((region, regionPtr, regionBytes, ptr, bytes, requestedBytes, allocationId) -> {
            if (allocationId >= 0) {
                found[0] = ptr;
                count[0]++;
            }
        });
        assertThat(count[0]).as("allocations").isEqualTo(1);
        return found[0];
    }

    @Test
    void everyFixedSizeTypeMatchesTensorFlowsOwnTensorAndUsesTheAllocationWithoutCopy() {
        Shape shape = Shape.of(3, 5);
        for (Class<? extends TType> type : TYPES) {
            try (TType ours = tensors.tensorOf(type, shape); TType theirs = Tensor.of(type, shape)) {
                assertThat(ours).as(type.getSimpleName()).isInstanceOf(type);
                assertThat(ours.dataType()).as(type.getSimpleName()).isEqualTo(theirs.dataType());
                assertThat(ours.numBytes()).as(type.getSimpleName()).isEqualTo(theirs.numBytes());
                assertThat(ours.shape()).isEqualTo(shape);
                Allocation a = tensors.allocationOf(ours);
                assertThat(a).as("allocation behind " + type.getSimpleName()).isNotNull();
                assertThat(BfcTensors.dataAddress(ours)).as("no copy: the tensor's data is the allocation")
                        .isEqualTo(a.address());
                assertThat(a.address() % BfcTensors.TENSORFLOW_ALIGNMENT).isZero();
                assertThat(a.requestedSize()).isEqualTo(theirs.numBytes());
                assertThat(tensors.owns(ours)).isTrue();
                assertThat(tensors.owns(theirs)).isFalse();
            }
        }
        assertThat(tensors.tensorsCreated()).isEqualTo(TYPES.size());
        assertThat(tensors.buffersReturned()).isEqualTo(TYPES.size());
    }

    @Test
    void valuesWrittenAreWhatTensorFlowReads() {
        try (TFloat32 f = tensors.ofFloats(Shape.of(2, 2), 1.5f, -2f, 3.25f, 4f);
             TInt32 i = tensors.ofInts(Shape.of(3), 7, -8, 9);
             TFloat64 d = tensors.tensorOf(TFloat64.class, Shape.of(2), t -> t.setDouble(0.125, 0).setDouble(-1e300, 1));
             TBool b = tensors.tensorOf(TBool.class, Shape.scalar(), t -> t.setBoolean(true));
             TUint8 u = tensors.tensorOf(TUint8.class, Shape.of(1), t -> t.setByte((byte) 200, 0))) {
            assertThat(f.getFloat(1, 0)).isEqualTo(3.25f);
            assertThat(f.getFloat(0, 1)).isEqualTo(-2f);
            assertThat(i.getInt(1)).isEqualTo(-8);
            assertThat(d.getDouble(1)).isEqualTo(-1e300);
            assertThat(b.getBoolean()).isTrue();
            assertThat(u.getByte(0) & 0xff).isEqualTo(200);
            // TensorFlow reads the same bytes: x + x computed by TensorFlow.
            try (Graph g = new Graph(); Session s = new Session(g)) {
                Ops tf = Ops.create(g);
                Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
                try (Result r = s.runner().feed(x, f).fetch(tf.math.add(x, x)).run()) {
                    TFloat32 y = (TFloat32) r.get(0);
                    assertThat(y.getFloat(1, 0)).isEqualTo(6.5f);
                    assertThat(y.getFloat(0, 1)).isEqualTo(-4f);
                }
            }
        }
    }

    @Test
    void emptyAndScalarTensors() {
        try (TFloat32 empty = tensors.tensorOf(TFloat32.class, Shape.of(0, 4));
             TInt64 scalar = tensors.tensorOf(TInt64.class, Shape.scalar(), t -> t.setLong(Long.MIN_VALUE))) {
            assertThat(empty.numBytes()).isZero();
            assertThat(empty.shape().size()).isZero();
            assertThat(scalar.getLong()).isEqualTo(Long.MIN_VALUE);
            assertThat(scalar.numBytes()).isEqualTo(8);
        }
        assertThat(tensors.buffersReturned()).isEqualTo(2);
    }

    @Test
    void badInputSaysWhatWasWrong() {
        assertThatThrownBy(() -> tensors.tensorOf(TString.class, Shape.of(2)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("type=org.tensorflow.types.TString (expected: one of TFloat32")
                .hasMessageContaining("variable-length");
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(-1, 3)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shape=[-1, 3] (expected: a fully known shape");
        // Other negative dimensions: TensorFlow would abort the process.
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(-2, 3)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shape=[-2, 3] (expected: no negative dimension; dimension 0 is -2)");
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(2, -2, -3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageEndingWith("dimension 1 is -2)");
        assertThatThrownBy(() -> tensors.tensorOf(TInt32.class, Shape.of(Long.MIN_VALUE, 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no negative dimension");
        // More dimensions than TensorFlow's 254: it would abort the process (a dead JVM here).
        long[] ones = new long[255];
        java.util.Arrays.fill(ones, 1);
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(ones)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shape of 255 dimensions (expected: at most 254, TensorFlow's limit; merge dimensions"
                        + " of size 1 into their neighbours)");
        assertThatThrownBy(() -> tensors.ofInts(Shape.of(ones), 7)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("shape of 255 dimensions");
        try (TFloat32 most = tensors.tensorOf(TFloat32.class, Shape.of(java.util.Arrays.copyOf(ones, 254)))) {
            assertThat(most.shape().numDimensions()).isEqualTo(254);
        }
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.unknown()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: a fully known shape");
        assertThatThrownBy(() -> tensors.tensorOf(TFloat64.class, Shape.of(1L << 40, 1L << 30)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shape=[1099511627776, 1073741824] (expected: at most");
        assertThatThrownBy(() -> tensors.ofFloats(Shape.of(2, 2), 1f, 2f, 3f))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("values.length=3 (expected: 4, the number of elements of shape [2, 2])");
        assertThatThrownBy(() -> tensors.ofInts(Shape.of(2), 1, 2, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("values.length=3 (expected: 2, the number of elements of shape [2])");
        // A null says which argument and what it takes, as the other integrations' do.
        assertThatThrownBy(() -> tensors.tensorOf(null, Shape.of(1))).isInstanceOf(NullPointerException.class)
                .hasMessage("type=null (expected: a tensor type, e.g. TInt32.class)");
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("shape=null (expected: a fully known shape, e.g. Shape.of(2, 3))");
        assertThatThrownBy(() -> tensors.tensorOf(TInt32.class, Shape.of(1), null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("init=null (expected: what writes the initial values, e.g. t -> t.setInt(7, 0, 1))");
        assertThatThrownBy(() -> tensors.ofFloats(Shape.of(1), (float[]) null)).isInstanceOf(NullPointerException.class)
                .hasMessage("values=null (expected: shape.size() values)");
        assertThatThrownBy(() -> tensors.ofInts(Shape.of(1), (int[]) null)).isInstanceOf(NullPointerException.class)
                .hasMessage("values=null (expected: shape.size() values)");
        assertThatThrownBy(() -> BfcTensors.dataAddress(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("tensor=null (expected: an open dense tensor)");
        assertThatThrownBy(() -> new BfcTensors(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("allocator=null (expected: a BfcAllocator or ShardedBfcAllocator over host memory,"
                        + " e.g. over new AlignedHostSubAllocator())");
        try (BfcAllocator sim = new BfcAllocator(new SimSubAllocator(1L << 40, 1L << 30, 0, true), 1L << 30, "sim",
                io.github.bfc4j.core.BfcOptions.builder().build())) {
            assertThatThrownBy(() -> new BfcTensors(sim)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("allocator 'sim' has memoryType=UNKNOWN (expected: HOST_PAGEABLE or HOST_PINNED");
        }
        assertThat(tensors.tensorsCreated()).as("the 254-dimension tensor").isOne();
        assertThat(cpu.bytesInUse()).isZero();
    }

    /**
     * A shape's elements are counted as TensorFlow counts them, one dimension at a time from the
     * left: where that overflows a long, TensorFlow aborts the process (its TensorShape's check),
     * even if a later dimension is 0, so the shape is refused, named; an empty shape whose count
     * never overflows is a tensor of 0 bytes, as TensorFlow's own is, however large the other
     * dimensions. A size in bytes past a long, or past any allocation, is refused naming the shape.
     */
    @Test
    void aShapesElementsAreCountedAsTensorFlowCountsThem() {
        assertThatThrownBy(() -> tensors.tensorOf(TFloat32.class, Shape.of(Long.MAX_VALUE, 4)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shape=[9223372036854775807, 4] (expected: at most 9223372036854775807 elements, counted"
                        + " from the left as TensorFlow does; the product of dimensions 0 to 1 overflows a long, on"
                        + " which TensorFlow would abort the process, even where a later dimension is 0)");
        assertThatThrownBy(() -> tensors.tensorOf(TUint8.class, Shape.of(3, Long.MAX_VALUE / 2, 0)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("shape=[3, 4611686018427387903, 0] (expected: at most")
                .hasMessageContaining("dimensions 0 to 1 overflows a long");
        assertThatThrownBy(() -> tensors.ofFloats(Shape.of(Long.MAX_VALUE, 4, 0)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("shape=[9223372036854775807, 4, 0] (expected: at most");
        // 2^62 elements then 0: no overflow for TensorFlow, though 2^62 floats would be 2^64 bytes.
        try (TFloat32 empty = tensors.tensorOf(TFloat32.class, Shape.of(1L << 61, 2, 0));
             TFloat32 leading = tensors.ofFloats(Shape.of(0, Long.MAX_VALUE, 4))) {
            assertThat(empty.shape()).isEqualTo(Shape.of(1L << 61, 2, 0));
            assertThat(empty.numBytes()).isZero();
            assertThat(tensors.owns(empty)).isTrue();
            assertThat(leading.shape()).isEqualTo(Shape.of(0, Long.MAX_VALUE, 4));
            assertThat(leading.numBytes()).isZero();
        }
        assertThatThrownBy(() -> tensors.tensorOf(TFloat64.class, Shape.of(1L << 61)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shape=[2305843009213693952] (expected: at most 9223372036854775807 bytes; its"
                        + " 2305843009213693952 elements of DT_DOUBLE take 8 bytes each)");
        // Bytes that fit a long but no allocation: which tensor asked says the shape.
        assertThatThrownBy(() -> tensors.tensorOf(TUint8.class, Shape.of(Long.MAX_VALUE, 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("cannot make a TUint8 tensor of shape [9223372036854775807, 1]"
                        + " (9223372036854775807 bytes): bytes=9223372036854775807");
        assertThat(tensors.tensorsCreated()).as("the two empty tensors").isEqualTo(2);
        assertThat(cpu.bytesInUse()).isZero();
    }

    /**
     * For a child JVM without TensorFlow's natives: the counters, then a tensor asked for three
     * times, then what the allocator was left with, one per line. With an argument, TensorFlow is
     * touched first ({@code new Graph()}, as an application would), so that its classes stay
     * uninitialized.
     */
    public static final class PrintTensorFailures {
        private PrintTensorFailures() {
        }

        /**
         * Calls the entry points.
         *
         * @param args none, or anything to touch TensorFlow first
         */
        public static void main(String[] args) {
            if (args.length > 0) {
                try {
                    new Graph().close();
                    System.out.println("touched first: loaded");
                } catch (Throwable t) {
                    System.out.println("touched first, failed with " + t.getClass().getName());
                }
            }
            try {
                System.out.println("stray failures " + BfcTensors.strayCallbackFailures());
            } catch (Throwable t) {
                System.out.println("strayCallbackFailures threw " + t);
            }
            try (BfcAllocator bfc = BfcAllocator.builder().name("no_natives").memoryLimit(1 << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                BfcTensors tensors;
                try {
                    tensors = new BfcTensors(bfc);
                } catch (Throwable t) {
                    System.out.println("new BfcTensors threw " + t);
                    return;
                }
                for (int i = 0; i < 3; i++) {
                    try {
                        (i == 0 ? tensors.ofFloats(Shape.of(2), 1f, 2f) : tensors.tensorOf(TInt32.class, Shape.of(3)))
                                .close();
                        System.out.println("tensor: made");
                    } catch (Throwable t) {
                        System.out.println("tensor threw: " + t);
                    }
                }
                System.out.println("left: " + tensors.tensorsCreated() + " tensors, " + bfc.bytesInUse()
                        + " bytes in use");
            }
        }
    }

    /** Runs {@link PrintTensorFailures} in a child JVM without tensorflow-core-native-*-linux-x86_64.jar. */
    private static List<String> withoutTensorFlowsNatives(String... args) throws Exception {
        String[] entries = System.getProperty("java.class.path").split(File.pathSeparator);
        String cp = Arrays.stream(entries)
                .filter(e -> !Path.of(e).getFileName().toString().matches("tensorflow-core-native-.*-linux-x86_64\\.jar"))
                .collect(Collectors.joining(File.pathSeparator));
        assertThat(cp.split(File.pathSeparator)).as("TensorFlow's natives jar to leave out")
                .hasSizeLessThan(entries.length);
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED"); // as README says; else the JVM warns
        }
        command.addAll(List.of("-cp", cp, PrintTensorFailures.class.getName()));
        command.addAll(List.of(args));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        return out.lines().toList();
    }

    /**
     * Without TensorFlow's natives for this platform, every tensor asked for fails with one
     * sentence saying what is missing and what to add (not an UnsatisfiedLinkError, then
     * NoClassDefFoundError 'Could not initialize class BfcTensors' on every use, the counters
     * and the constructor included), and nothing stays allocated.
     */
    @Test
    void withoutTensorFlowsNativesATensorFailsWithASentenceEveryTime() throws Exception {
        String sentence = "java.lang.IllegalStateException: TensorFlow's JNI library could not be loaded (Could not"
                + " find jnitensorflow in class, module, and library paths): add org.tensorflow:tensorflow-core-native"
                + " with classifier linux-x86_64 (TensorFlow Java's natives for this platform), see"
                + " docs/integrations.md.";
        assertThat(withoutTensorFlowsNatives()).containsExactly("stray failures 0",
                "tensor threw: " + sentence, "tensor threw: " + sentence, "tensor threw: " + sentence,
                "left: 0 tensors, 0 bytes in use");
    }

    /**
     * As above, where the application touched TensorFlow first (the usual order: a Graph before
     * the tensors): the sentence quotes JavaCPP's error, not the ExceptionInInitializerError
     * around it.
     */
    @Test
    void withoutTensorFlowsNativesTouchedFirstATensorStillSaysWhatIsMissing() throws Exception {
        List<String> lines = withoutTensorFlowsNatives("touch");
        assertThat(lines).hasSize(6);
        assertThat(lines.get(0)).isEqualTo("touched first, failed with java.lang.UnsatisfiedLinkError");
        String failure = lines.get(2);
        assertThat(failure).startsWith("tensor threw: java.lang.IllegalStateException: TensorFlow's JNI library"
                + " could not be loaded (no jnitensorflow in java.library.path: ")
                .endsWith("): add org.tensorflow:tensorflow-core-native with classifier linux-x86_64 (TensorFlow"
                        + " Java's natives for this platform), see docs/integrations.md.")
                .doesNotContain("Exception java", "[in thread");
        assertThat(lines.subList(1, 6)).containsExactly("stray failures 0", failure, failure, failure,
                "left: 0 tensors, 0 bytes in use");
    }

    /**
     * For a child JVM run with a JavaCPP {@code maxPhysicalBytes} below what it touches: three
     * tensors, {@code args[0]} bytes of native memory touched while the first is asked for (or,
     * with a second argument, while the second is: TensorFlow's deallocator is made by then),
     * and freed before the next; what each call did, one per line.
     */
    public static final class TensorsOverJavaCppsLimit {
        private TensorsOverJavaCppsLimit() {
        }

        /**
         * Makes the tensors.
         *
         * @param args the bytes to touch, and anything to touch them for the second tensor
         */
        public static void main(String[] args) {
            long bytes = Long.parseLong(args[0]);
            int over = args.length > 1 ? 1 : 0;
            org.bytedeco.javacpp.Pointer block = null;
            try (BfcAllocator bfc = BfcAllocator.builder().name("over_javacpp").memoryLimit(1 << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                BfcTensors tensors = new BfcTensors(bfc);
                for (int i = 0; i < 3; i++) {
                    if (i == over) {
                        block = org.bytedeco.javacpp.Pointer.malloc(bytes);
                        org.bytedeco.javacpp.Pointer.memset(block, 1, bytes);
                    } else if (i == over + 1) {
                        org.bytedeco.javacpp.Pointer.free(block);
                    }
                    makeOne(tensors);
                }
                System.out.println("left: " + tensors.liveBuffers() + " buffers, " + bfc.bytesInUse()
                        + " bytes in use; buffers given back " + tensors.buffersReturned() + ", failures "
                        + tensors.callbackFailures() + ", stray " + BfcTensors.strayCallbackFailures());
            }
        }
    }

    /**
     * The first tensor of the JVM fails when making TensorFlow's deallocator fails, here with
     * JavaCPP's OutOfMemoryError (the process's resident memory over its {@code maxPhysicalBytes},
     * 4 times -Xmx by default, which bfc4j's own regions count towards); once memory is back,
     * tensors are made. The deallocator was made in a static initializer, so every later tensor
     * of the JVM threw NoClassDefFoundError ("Could not initialize class ...TensorFlowNatives").
     */
    @Test
    void aFailureMakingTheFirstTensorsDeallocatorIsNotForever() throws Exception {
        List<String> lines = childJvm(List.of("-Dorg.bytedeco.javacpp.maxPhysicalBytes=256m",
                "-Dorg.bytedeco.javacpp.maxRetries=0"), TensorsOverJavaCppsLimit.class, Long.toString(320L << 20));
        assertThat(lines).hasSize(4);
        assertThat(lines.get(0)).as("320 MiB touched: over JavaCPP's 256 MiB")
                .startsWith("tensor threw: java.lang.OutOfMemoryError: Physical memory usage is too high");
        assertThat(lines.subList(1, 4)).containsExactly("tensor: made, 2.0", "tensor: made, 2.0",
                "left: 0 buffers, 0 bytes in use; buffers given back 2, failures 0, stray 0");
    }

    /**
     * Where JavaCPP refuses to register the tensor's handle ({@code TF_Tensor.withDeallocator}:
     * over its {@code maxPhysicalBytes}), it deletes the tensor itself, which gives the buffer back
     * through the deallocator, and nulls the handle before it throws, so BfcTensors' own delete
     * of the handle after the failure does nothing. The buffer is given back exactly once (a
     * second deallocator call would count as stray, or free another tensor's buffer at the same
     * address), nothing fails, and the next tensor is made.
     */
    @Test
    void aTensorJavaCppRefusesToRegisterGivesItsBufferBackOnce() throws Exception {
        List<String> lines = childJvm(List.of("-Dorg.bytedeco.javacpp.maxPhysicalBytes=256m",
                "-Dorg.bytedeco.javacpp.maxRetries=0"), TensorsOverJavaCppsLimit.class, Long.toString(320L << 20),
                "second");
        assertThat(lines).hasSize(4);
        assertThat(lines.get(0)).isEqualTo("tensor: made, 2.0");
        assertThat(lines.get(1)).as("320 MiB touched: over JavaCPP's 256 MiB")
                .startsWith("tensor threw: java.lang.OutOfMemoryError: Physical memory usage is too high");
        assertThat(lines.subList(2, 4)).containsExactly("tensor: made, 2.0",
                "left: 0 buffers, 0 bytes in use; buffers given back 3, failures 0, stray 0");
    }

    /**
     * For a child JVM: holds all 10 of JavaCPP's native functions for TensorFlow's deallocator
     * callback class while the first tensor is asked for, gives them back, then makes two; what
     * each call did, one per line.
     */
    public static final class FirstTensorWithDeallocatorsTaken {
        private FirstTensorWithDeallocatorsTaken() {
        }

        /**
         * Makes the tensors.
         *
         * @param args none
         */
        public static void main(String[] args) {
            org.bytedeco.javacpp.Loader.load(org.tensorflow.internal.c_api.global.tensorflow.class);
            List<org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer> held = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                held.add(new org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer() {
                    @Override
                    public void call(org.bytedeco.javacpp.Pointer data, long len, org.bytedeco.javacpp.Pointer arg) {
                    }
                });
            }
            try (BfcAllocator bfc = BfcAllocator.builder().name("deallocators_taken").memoryLimit(1 << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                BfcTensors tensors = new BfcTensors(bfc);
                for (int i = 0; i < 3; i++) {
                    if (i == 1) {
                        held.forEach(org.bytedeco.javacpp.Pointer::close);
                    }
                    makeOne(tensors);
                }
                printLeft(tensors, bfc);
            }
        }
    }

    /** For a child JVM's main: makes and closes a tensor of two floats, one line saying how it went. */
    static void makeOne(BfcTensors tensors) {
        try (TFloat32 t = tensors.ofFloats(Shape.of(2), 1f, 2f)) {
            System.out.println("tensor: made, " + t.getFloat(1));
        } catch (Throwable t) {
            System.out.println("tensor threw: " + t);
        }
    }

    /** For a child JVM's main: one line of what is left of {@code tensors} and {@code bfc}. */
    static void printLeft(BfcTensors tensors, BfcAllocator bfc) {
        System.out.println("left: " + tensors.liveBuffers() + " buffers, " + bfc.bytesInUse() + " bytes in use");
    }

    /**
     * JavaCPP makes 10 native functions per callback class for the whole process: where other
     * code held all 10 of TensorFlow's deallocator class at the first tensor, BfcTensors'
     * deallocator got none, TensorFlow was handed a null function, and closing the tensor crashed
     * the JVM. Now that tensor is refused, saying so, and the next one, once they are given back,
     * is made.
     */
    @Test
    void aFirstTensorWithNoNativeFunctionLeftForTheDeallocatorIsRefusedNotACrash() throws Exception {
        List<String> lines = childJvm(List.of(), FirstTensorWithDeallocatorsTaken.class);
        assertThat(lines).containsExactly("tensor threw: java.lang.IllegalStateException: cannot make a tensor: JavaCPP"
                + " has no native function left for TensorFlow's deallocator callback class"
                + " org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer (it makes 10 per class for the whole"
                + " process, and other code holds all 10): close some of those callbacks first",
                "tensor: made, 2.0", "tensor: made, 2.0", "left: 0 buffers, 0 bytes in use");
    }

    /**
     * For a child JVM: the process's first tensor made inside a JavaCPP {@code PointerScope}
     * that ends with {@code deallocate()} (which frees every pointer it took, whatever their
     * reference counts), then tensors made and closed after it; one line per step.
     */
    public static final class FirstTensorInsideADeallocatedScope {
        private FirstTensorInsideADeallocatedScope() {
        }

        /**
         * Makes the tensors.
         *
         * @param args none
         */
        public static void main(String[] args) {
            try (BfcAllocator bfc = BfcAllocator.builder().name("deallocated_scope").memoryLimit(1 << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                BfcTensors tensors = new BfcTensors(bfc);
                try (org.bytedeco.javacpp.PointerScope scope = new org.bytedeco.javacpp.PointerScope()) {
                    try (TFloat32 t = tensors.ofFloats(Shape.of(2), 1f, 2f)) {
                        System.out.println("tensor: made in the scope, " + t.getFloat(1));
                    }
                    scope.deallocate();
                }
                for (int i = 0; i < 2; i++) {
                    makeOne(tensors);
                }
                printLeft(tensors, bfc);
            }
        }
    }

    /**
     * The one deallocator TensorFlow calls for every tensor is made with the first tensor; made
     * inside an application's JavaCPP {@code PointerScope}, it was that scope's, and the scope's
     * {@code deallocate()} (which frees every pointer it took, whatever their reference counts)
     * freed it for the life of the process: the next tensor's close called a freed callback and
     * the JVM died (exit 134).
     */
    @Test
    void aPointerScopeDeallocatedAroundTheFirstTensorDoesNotTakeTheDeallocatorWithIt() throws Exception {
        List<String> lines = childJvm(List.of(), FirstTensorInsideADeallocatedScope.class);
        assertThat(lines).containsExactly("tensor: made in the scope, 2.0", "tensor: made, 2.0", "tensor: made, 2.0",
                "left: 0 buffers, 0 bytes in use");
    }

    /**
     * For a child JVM: a 64 MiB tensor closed, its region given back by {@code emptyCache()},
     * then read (TensorFlow Java does not check for close); beside it, on another allocator, a
     * tensor closed and dropped, whose region's return shows the collections ran. One line per
     * step.
     */
    public static final class ReadAfterCloseAndEmptyCache {
        private ReadAfterCloseAndEmptyCache() {
        }

        /**
         * Makes, closes and reads the tensor.
         *
         * @param args none
         * @throws InterruptedException if interrupted while waiting for the collections
         */
        public static void main(String[] args) throws InterruptedException {
            int n = (64 << 20) / Float.BYTES;
            try (BfcAllocator bfc = BfcAllocator.builder().name("read_after_close").memoryLimit(256L << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build();
                 BfcAllocator other = BfcAllocator.builder().name("dropped").memoryLimit(256L << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                BfcTensors tensors = new BfcTensors(bfc);
                TFloat32 kept = tensors.tensorOf(TFloat32.class, Shape.of(n));
                kept.setFloat(7f, n - 1);
                kept.close();
                new BfcTensors(other).tensorOf(TFloat32.class, Shape.of(n)).close();
                bfc.emptyCache();
                other.emptyCache();
                collectUntil(() -> other.bytesHeldForViews() == 0);
                // The dropped tensor's region is back with its sub-allocator: a region no longer
                // held went with it, or within half a second.
                long grace = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                while (bfc.bytesHeldForViews() != 0 && System.nanoTime() < grace) {
                    System.gc();
                    Thread.sleep(20);
                }
                System.out.println("left: " + tensors.liveBuffers() + " buffers, " + bfc.bytesInUse()
                        + " bytes in use, " + other.bytesHeldForViews() + " and " + bfc.bytesHeldForViews()
                        + " bytes held for views");
                System.out.println("tensor: read after its close, " + kept.getFloat(n - 1));
                kept = null;
                collectUntil(() -> bfc.bytesHeldForViews() == 0);
                System.out.println("left once it is unreachable: " + bfc.bytesHeldForViews() + " bytes held for views");
            }
        }

        /**
         * Runs the garbage collector until {@code done} holds, for at most 20 s, and returns
         * either way, failing nothing: this child only prints what it then sees, and its parent's
         * assertion on those lines names what did not come (the bytes still held for views),
         * where a failure here would end the child before it printed its other lines. Twice 20 s
         * stays inside the 60 s at which the parent ends it.
         */
        private static void collectUntil(BooleanSupplier done) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!done.getAsBoolean() && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
        }
    }

    /**
     * A tensor read after its close (TensorFlow Java does not refuse it, for its own tensors
     * either) once {@code emptyCache()} had given its region back: the sub-allocator unmapped the
     * region as soon as the collector found the view handed to TensorFlow unreachable, and the read
     * crashed the JVM (exit 134). The memory now stays mapped while the Java tensor is reachable
     * ({@code bytesHeldForViews()} says so) and goes once it is not.
     */
    @Test
    void aTensorReadAfterItsCloseAndAnEmptyCacheReadsMemoryStillMapped() throws Exception {
        List<String> lines = childJvm(List.of(), ReadAfterCloseAndEmptyCache.class);
        assertThat(lines).containsExactly("left: 0 buffers, 0 bytes in use, 0 and 67108864 bytes held for views",
                "tensor: read after its close, 7.0", "left once it is unreachable: 0 bytes held for views");
    }

    /**
     * Runs {@code main} in a child JVM with this class path and the JVM options {@code options};
     * returns its lines that start with {@code tensor} or {@code left}, having checked that it
     * exited normally (134: it crashed).
     */
    private static List<String> childJvm(List<String> options, Class<?> main, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        command.addAll(options);
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        assertThat(child.status()).as("the child's exit status (134: it crashed)%n%s", out).isZero();
        return out.lines().filter(l -> l.startsWith("tensor") || l.startsWith("left")).toList();
    }

    @Test
    void outOfMemoryAndClosedAllocatorAreClearAndLeakNothing() {
        try (BfcAllocator small = BfcAllocator.builder().name("small").memoryLimit(4L << 20)
                .allowRetryOnFailure(false).subAllocator(new AlignedHostSubAllocator()).build()) {
            BfcTensors smallTensors = new BfcTensors(small);
            assertThatThrownBy(() -> smallTensors.tensorOf(TFloat32.class, Shape.of(2048, 1024)))
                    .isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining("Allocator 'small' is out of memory");
            assertThat(smallTensors.liveBuffers()).isZero();
            assertThat(small.bytesInUse()).isZero();
            small.close();
            assertThatThrownBy(() -> smallTensors.ofFloats(Shape.of(2), 1f, 2f))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot make a TFloat32 tensor of shape [2] (8 bytes): allocator 'small' is closed");
            assertThat(smallTensors.tensorsCreated()).isZero();
        }
    }

    @Test
    void onRegionsThatAreNotAlignedTheBufferIsStillAlignedAndNotCopied() {
        // Regions 32 bytes past a 256-byte boundary: TF_NewTensor would copy (EIGEN_MAX_ALIGN_BYTES 64).
        SubAllocator offset = new ForwardingSubAllocator(new AlignedHostSubAllocator()) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                Block b = upstream.alloc(alignment, numBytes + 256);
                return b == null ? null : new Block(b.ptr() + 32, b.bytes() - 256);
            }

            @Override
            public void free(long ptr, long numBytes) {
                upstream.free(ptr - 32, numBytes + 256);
            }
        };
        try (BfcAllocator misaligned = BfcAllocator.builder().name("misaligned").memoryLimit(8L << 20)
                .subAllocator(offset).build()) {
            BfcTensors misalignedTensors = new BfcTensors(misaligned);
            try (TFloat32 t = misalignedTensors.ofFloats(Shape.of(2), 1f, 2f)) {
                Allocation a = misalignedTensors.allocationOf(t);
                assertThat(a.address() % BfcTensors.TENSORFLOW_ALIGNMENT).isZero();
                assertThat(BfcTensors.dataAddress(t)).as("no copy").isEqualTo(a.address());
                assertThat(t.getFloat(1)).isEqualTo(2f);
            }
            assertThat(misaligned.bytesInUse()).isZero();
            assertThat(misalignedTensors.liveBuffers()).isZero();
        }
    }

    @Test
    void initThatThrowsGivesTheBufferBack() {
        assertThatThrownBy(() -> tensors.tensorOf(TInt32.class, Shape.of(4), t -> {
            throw new IllegalStateException("boom");
        })).isInstanceOf(IllegalStateException.class).hasMessage("boom");
        assertThat(tensors.tensorsCreated()).isEqualTo(1);
        assertThat(tensors.buffersReturned()).isEqualTo(1);
    }

    @Test
    void tensorFlowKeepsTheBufferAliveAfterTheJavaTensorIsClosed() {
        try (Graph g = new Graph(); Session s = new Session(g)) {
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
            TFloat32 in = tensors.ofFloats(Shape.of(2, 3), 1, 2, 3, 4, 5, 6);
            long address = BfcTensors.dataAddress(in);
            Result r = s.runner().feed(x, in).fetch(tf.identity(x)).run();
            TFloat32 out = (TFloat32) r.get(0);
            // Identity forwards the input buffer: the output is the same bfc4j memory.
            assertThat(BfcTensors.dataAddress(out)).isEqualTo(address);
            assertThat(tensors.owns(out)).isTrue();
            in.close();
            assertThat(tensors.liveBuffers()).as("held by the session's output").isEqualTo(1);
            assertThat(tensors.buffersReturned()).isZero();
            assertThat(cpu.bytesInUse()).isEqualTo(256);
            assertThat(out.getFloat(1, 2)).isEqualTo(6f);
            r.close();
            assertThat(tensors.buffersReturned()).isEqualTo(1);
        }
    }

    /**
     * A tensor made while a JavaCPP {@code PointerScope} is open on the thread (an application's
     * own, around its native calls) gives its buffer back when it is closed, as outside any scope:
     * the scope took a reference to the tensor's native handle, so the buffer stayed allocated
     * (and a REFUSE close of the allocator was refused) until the scope closed, however long
     * after. A tensor still open when the scope closes stays usable and gives its buffer back when
     * it is closed. Failed creations inside a scope leave nothing behind either.
     */
    @Test
    void aTensorMadeInsideAPointerScopeGivesItsBufferBackWhenClosed() {
        TInt32 outlives;
        try (org.bytedeco.javacpp.PointerScope scope = new org.bytedeco.javacpp.PointerScope()) {
            TFloat32 t = tensors.ofFloats(Shape.of(4), 1, 2, 3, 4);
            assertThat(t.getFloat(3)).isEqualTo(4f);
            t.close();
            assertThat(tensors.liveBuffers()).as("buffers held after the tensor's close, scope open").isZero();
            assertThat(cpu.bytesInUse()).as("bytes in use after the tensor's close, scope open").isZero();
            try (Graph g = new Graph(); Session s = new Session(g)) {
                Ops tf = Ops.create(g);
                Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
                try (TFloat32 in = tensors.ofFloats(Shape.of(2), 5, 6);
                        Result r = s.runner().feed(x, in).fetch(tf.identity(x)).run()) {
                    assertThat(((TFloat32) r.get(0)).getFloat(1)).isEqualTo(6f);
                }
            }
            assertThat(tensors.liveBuffers()).as("after a run's input and aliasing output are closed").isZero();
            assertThatThrownBy(() -> tensors.tensorOf(TInt32.class, Shape.of(2), v -> {
                throw new IllegalStateException("init fails");
            })).hasMessage("init fails");
            assertThat(tensors.liveBuffers()).isZero();
            outlives = tensors.ofInts(Shape.of(2), 7, 8);
        }
        assertThat(outlives.getInt(1)).as("a tensor open when the scope closed").isEqualTo(8);
        assertThat(tensors.liveBuffers()).isOne();
        outlives.close();
        assertThat(tensors.liveBuffers()).isZero();
        assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated()).isEqualTo(4);
    }

    /**
     * A logger that throws (a handler that fails) while the deallocator reports a failure leaves
     * that failure counted once, where it belongs: the log's exception reached the deallocator's
     * last guard, which counted it again as a stray failure (a buffer not given back: counted by
     * its instance and as stray; an address of no tensor: stray twice).
     */
    @Test
    void aLoggerThatThrowsLeavesEachDeallocatorFailureCountedOnce() throws Exception {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(BfcTensors.class.getName());
        java.util.logging.Handler throwing = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                throw new IllegalStateException("this handler fails (test): " + record.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        TFloat32[] victim = new TFloat32[1];
        // A sub-allocator that closes a tensor while its allocator extends: the tensor's buffer
        // cannot be freed from there (Allocation.close() refuses), so the deallocator fails.
        SubAllocator closing = new ForwardingSubAllocator(new AlignedHostSubAllocator()) {
            @Override
            public Block alloc(long alignment, long numBytes) {
                TFloat32 v = victim[0];
                if (v != null) {
                    victim[0] = null;
                    v.close();
                }
                return upstream.alloc(alignment, numBytes);
            }
        };
        boolean useParent = jul.getUseParentHandlers();
        jul.addHandler(throwing);
        jul.setUseParentHandlers(false);
        try (BfcAllocator growing = BfcAllocator.builder().name("closing").memoryLimit(64L << 20)
                .subAllocator(closing).build()) {
            BfcTensors growingTensors = new BfcTensors(growing);
            long strayBefore = BfcTensors.strayCallbackFailures();
            TFloat32 t = growingTensors.ofFloats(Shape.of(4), 1, 2, 3, 4);
            Allocation a = growingTensors.allocationOf(t);
            victim[0] = t;
            try (TFloat32 big = growingTensors.tensorOf(TFloat32.class, Shape.of(1L << 20))) {
                assertThat(victim[0]).as("the sub-allocator was asked for a region").isNull();
            }
            assertThat(growingTensors.callbackFailures()).as("the instance's failures").isEqualTo(1);
            assertThat(BfcTensors.strayCallbackFailures() - strayBefore).as("stray failures, a buffer's failure")
                    .isZero();
            assertThat(a.isClosed()).as("the buffer the deallocator could not give back").isFalse();
            a.close();

            // An address that is no tensor buffer, given to the deallocator as TensorFlow would.
            java.lang.reflect.Method made = Class.forName(BfcTensors.class.getName() + "$TensorFlowNatives")
                    .getDeclaredMethod("deallocator");
            made.setAccessible(true);
            org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer deallocator =
                    (org.tensorflow.internal.c_api.Deallocator_Pointer_long_Pointer) made.invoke(null);
            try (org.bytedeco.javacpp.LongPointer notATensor = new org.bytedeco.javacpp.LongPointer(1)) {
                deallocator.call(notATensor, 8, null);
            }
            assertThat(BfcTensors.strayCallbackFailures() - strayBefore).as("stray failures, an unknown address")
                    .isOne();
            assertThat(growing.bytesInUse()).isZero();
        } finally {
            jul.removeHandler(throwing);
            jul.setUseParentHandlers(useParent);
        }
    }

    @Test
    void aFailedRunLeavesNothingBehind() {
        try (Graph g = new Graph(); Session s = new Session(g)) {
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> a = tf.placeholder(TFloat32.class);
            Placeholder<TFloat32> b = tf.placeholder(TFloat32.class);
            var product = tf.linalg.matMul(a, b);
            try (TFloat32 at = tensors.ofFloats(Shape.of(2, 3), new float[6]);
                 TFloat32 bt = tensors.ofFloats(Shape.of(2, 3), new float[6])) {
                assertThatThrownBy(() -> s.runner().feed(a, at).feed(b, bt).fetch(product).run())
                        .isInstanceOf(TFInvalidArgumentException.class)
                        .hasMessageContaining("Matrix size-incompatible");
                // The session still works with the same tensors afterwards.
                try (Result r = s.runner().feed(a, at).feed(b, bt).fetch(tf.linalg.matMul(a, b,
                        org.tensorflow.op.linalg.MatMul.transposeB(true))).run()) {
                    assertThat(r.get(0).shape()).isEqualTo(Shape.of(2, 2));
                }
            }
        }
        assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated()).isEqualTo(2);
    }

    @Test
    void closedInShuffledOrderTogetherWithAliasingOutputs() {
        long seed = Seeds.seed("closedInShuffledOrderTogetherWithAliasingOutputs");
        Random random = new Random(seed);
        List<AutoCloseable> open = new ArrayList<>();
        try (Graph g = new Graph(); Session s = new Session(g)) {
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
            var identity = tf.identity(x);
            var doubled = tf.math.add(x, x);
            for (int i = 0; i < 40; i++) {
                Class<? extends TType> type = TYPES.get(random.nextInt(TYPES.size()));
                Shape shape = Shape.of(1 + random.nextInt(50), 1 + random.nextInt(50));
                if (random.nextInt(3) == 0) {
                    TFloat32 in = tensors.tensorOf(TFloat32.class, shape, t -> t.setFloat(3f, 0, 0));
                    open.add(in);
                    Result r = s.runner().feed(x, in).fetch(identity).fetch(doubled).run();
                    assertThat(((TFloat32) r.get(1)).getFloat(0, 0)).isEqualTo(6f);
                    open.add(r);
                } else {
                    open.add(tensors.tensorOf(type, shape));
                }
            }
        }
        Collections.shuffle(open, random);
        long made = tensors.tensorsCreated();
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        assertThat(tensors.buffersReturned()).as("seed " + seed).isEqualTo(made).isEqualTo(40);
        assertThat(tensors.callbackFailures()).isZero();
    }

    @Test
    void aTensorOutlivingAForcedCloseReadsAndWritesMemoryThatStaysMappedUntilItIsClosed()
            throws InterruptedException {
        AtomicInteger frees = new AtomicInteger();
        SubAllocator counting = new ForwardingSubAllocator(new AlignedHostSubAllocator()) {
            @Override
            public void free(long ptr, long numBytes) {
                super.free(ptr, numBytes);
                frees.incrementAndGet();
            }
        };
        // 64 MiB: the host sub-allocator maps it and unmaps it on free, so a tensor reading it
        // after the free would crash the JVM.
        BfcAllocator forced = BfcAllocator.builder().name("forced").memoryLimit(128L << 20).subAllocator(counting)
                .closePolicy(ClosePolicy.FORCE).build();
        BfcTensors own = new BfcTensors(forced);
        int n = (64 << 20) / Float.BYTES;
        TFloat32 t = own.tensorOf(TFloat32.class, Shape.of(n));
        t.setFloat(7f, n - 1);
        for (int i = 0; i < 5; i++) { // collections first: only what BfcTensors keeps may hold the region
            System.gc();
            Thread.sleep(20);
        }
        forced.close();
        assertThat(own.liveBuffers()).isEqualTo(1);
        assertThat(frees).as("freed under a tensor TensorFlow holds").hasValue(0);
        assertThat(forced.bytesHeldForViews()).isEqualTo(64L << 20);
        t.setFloat(8f, 0);
        assertThat(t.getFloat(n - 1)).isEqualTo(7f);
        assertThat(t.getFloat(0)).isEqualTo(8f);

        t.close(); // TensorFlow drops the buffer: the view handed to it goes
        t = null;
        assertThat(own.liveBuffers()).isZero();
        GarbageCollection.gcUntil("the region given back once the tensor's view is collected",
                () -> frees.get() != 0);
        assertThat(frees).as("returned once TensorFlow dropped it").hasValue(1);
        assertThat(forced.bytesHeldForViews()).isZero();
    }

    @Test
    void anUnclosedTensorIsGivenBackWhenGarbageCollected() throws InterruptedException {
        makeAndDrop();
        GarbageCollection.gcUntil("the unclosed tensor's buffer given back", () -> tensors.buffersReturned() >= 1);
        assertThat(tensors.buffersReturned()).as("given back by JavaCPP's deallocator after GC").isEqualTo(1);
    }

    private void makeAndDrop() {
        TFloat32 dropped = tensors.ofFloats(Shape.of(16), new float[16]);
        assertThat(dropped.getFloat(3)).isZero();
    }

    @Test
    void manyThreadsMakeRunAndClose() throws Exception {
        makeRunAndCloseOnFourThreads(tensors, List.of(cpu));
        assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated()).isEqualTo(200);
    }

    @Test
    void manyThreadsMakeTensorsOnAShardedAllocatorEachFromItsOwnShard() throws Exception {
        try (ShardedBfcAllocator shards = ShardedBfcAllocator.builder().name("tf_shards").memoryLimit(64L << 20)
                .subAllocator(new AlignedHostSubAllocator()).shards(4).build()) {
            BfcTensors onShards = new BfcTensors(shards);
            assertThat(onShards.allocator()).isSameAs(shards);
            makeRunAndCloseOnFourThreads(onShards, shards.shards());
            assertThat(onShards.buffersReturned()).isEqualTo(onShards.tensorsCreated()).isEqualTo(200);
            assertThat(onShards.liveBuffers()).isZero();
            assertThat(shards.bytesInUse()).isZero();
            assertThat(shards.shards()).as("shards that served the threads' tensors")
                    .filteredOn(s -> s.getStats().numAllocs() > 0).hasSizeGreaterThan(1);
            shards.shards().forEach(BfcAllocator::checkInvariants);
        } // REFUSE: throws if anything is still allocated
    }

    /**
     * Four threads each make 50 tensors, each holding values of its own (so that two tensors
     * sharing memory would change each other's sums), feed each to a run, check its answer and
     * close it; meanwhile this thread takes the allocators' memory maps, each of which must add up.
     */
    private static void makeRunAndCloseOnFourThreads(BfcTensors tensors, List<BfcAllocator> allocators)
            throws Exception {
        try (Graph g = new Graph(); Session s = new Session(g)) {
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
            var sum = tf.reduceSum(x, tf.constant(new int[] {0, 1}));
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    int id = t;
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < 50; i++) {
                            int n = 1 + (id * 50 + i) % 37;
                            int first = (id * 50 + i) * 1000;
                            float[] values = new float[n * 3];
                            for (int k = 0; k < values.length; k++) {
                                values[k] = first + k;   // integers below 2^24: every sum is exact
                            }
                            float expected = values.length * (float) first + values.length * (values.length - 1) / 2f;
                            try (TFloat32 in = tensors.ofFloats(Shape.of(n, 3), values)) {
                                Thread.yield();   // let the other threads allocate meanwhile
                                try (Result r = s.runner().feed(x, in).fetch(sum).run()) {
                                    assertThat(((TFloat32) r.get(0)).getFloat()).as("thread %d, tensor %d", id, i)
                                            .isEqualTo(expected);
                                }
                            }
                        }
                        return null;
                    }));
                }
                int maps = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!done.stream().allMatch(Future::isDone) && System.nanoTime() < deadline) {
                    for (BfcAllocator a : allocators) {
                        MemoryMapChecks.assertAddsUp(a.memoryMap());
                        maps++;
                    }
                }
                for (Future<?> f : done) {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
                assertThat(maps).as("memory maps taken while the threads ran").isPositive();
                for (BfcAllocator a : allocators) {
                    MemoryMapChecks.assertAddsUp(a.memoryMap());
                }
            } finally {
                pool.shutdown();
            }
        }
    }

    /**
     * Four threads ask for tensors while the application holds all but 1 MiB of the limit: each
     * gets bfc4j's out-of-memory exception, nothing stays allocated; once the application lets
     * go, the same four tensors are made at once and hold what was written.
     */
    @Test
    void fourThreadsOutOfMemoryEachGetBfcsExceptionAndTheSameTensorsAreMadeOnceMemoryIsFree() throws Exception {
        Allocation ballast = cpu.allocate(cpu.memoryLimit() - (1L << 20));
        List<Callable<Object>> asks = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            float value = t;
            asks.add(() -> {
                try (TFloat32 big = tensors.tensorOf(TFloat32.class, Shape.of(512, 1024), f -> f.setFloat(value, 511, 1023))) {
                    return big.getFloat(511, 1023);
                } catch (BfcOutOfMemoryException e) {
                    return e;
                }
            });
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Object> failed = new ArrayList<>();
            for (Future<Object> f : pool.invokeAll(asks, 60, TimeUnit.SECONDS)) {
                failed.add(f.get());
            }
            assertThat(failed).allSatisfy(e -> assertThat(e).isInstanceOfSatisfying(BfcOutOfMemoryException.class,
                    oom -> assertThat(oom).hasMessageContaining("Allocator 'tf_test' is out of memory")));
            assertThat(tensors.liveBuffers()).isZero();
            assertThat(tensors.tensorsCreated()).isZero();
            assertThat(cpu.bytesInUse()).isEqualTo(ballast.size());
            cpu.checkInvariants();
            ballast.close();
            List<Object> made = new ArrayList<>();
            for (Future<Object> f : pool.invokeAll(asks, 60, TimeUnit.SECONDS)) {
                made.add(f.get());
            }
            assertThat(made).containsExactly(0f, 1f, 2f, 3f);
            assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated()).isEqualTo(4);
        } finally {
            pool.shutdown();
            ballast.close();
        }
    }

    /**
     * Tensors made on four threads at once, each inside an annotation of its own, with the
     * history recorded: while they are all held, each chunk names its thread and annotation, and
     * its stack starts at the application's call ({@link TensorMaker}), not in {@code BfcTensors}.
     */
    @Test
    void eachThreadsTensorsAreNamedByItsThreadAnnotationAndCall() throws Exception {
        cpu.recordHistory(io.github.bfc4j.core.HistoryOptions.defaults());
        java.util.concurrent.CyclicBarrier allMade = new java.util.concurrent.CyclicBarrier(5);
        java.util.concurrent.CyclicBarrier looked = new java.util.concurrent.CyclicBarrier(5);
        ExecutorService pool = Executors.newFixedThreadPool(4, r -> new Thread(r));
        try {
            List<Future<String>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int id = t;
                done.add(pool.submit(() -> {
                    String me = "maker-" + id;
                    Thread.currentThread().setName(me);
                    List<TFloat32> held;
                    try (io.github.bfc4j.core.MemoryAnnotation a = io.github.bfc4j.core.MemoryAnnotation.push(
                            "inputs of " + me)) {
                        held = TensorMaker.make(tensors, Shape.of(100 + id, 10), 5);
                    }
                    allMade.await(60, TimeUnit.SECONDS);
                    looked.await(60, TimeUnit.SECONDS);
                    held.forEach(Tensor::close);
                    return me;
                }));
            }
            allMade.await(60, TimeUnit.SECONDS);
            io.github.bfc4j.core.MemoryMap m = cpu.memoryMap();
            looked.await(60, TimeUnit.SECONDS);
            for (Future<String> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
            MemoryMapChecks.assertAddsUp(m);
            List<io.github.bfc4j.core.MemoryMap.Chunk> inUse = m.chunks().stream()
                    .filter(io.github.bfc4j.core.MemoryMap.Chunk::inUse).toList();
            assertThat(inUse).hasSize(20).allSatisfy(c -> {
                io.github.bfc4j.core.Provenance p = c.provenance();
                assertThat(p.thread()).startsWith("maker-");
                assertThat(p.annotation()).isEqualTo("inputs of " + p.thread());
                assertThat(c.requestedSize()).as("a tensor of maker %s", p.thread())
                        .isEqualTo((100L + Integer.parseInt(p.thread().substring("maker-".length()))) * 10 * 4);
                assertThat(p.stack()).isNotEmpty();
                assertThat(p.stack().get(0).toString()).as("innermost frame: the application's call")
                        .startsWith(TensorMaker.class.getName() + ".make(");
            });
            assertThat(m.largestHolders(10)).extracting(io.github.bfc4j.core.MemoryMap.Holder::holder)
                    .containsExactlyInAnyOrder("inputs of maker-0", "inputs of maker-1", "inputs of maker-2",
                            "inputs of maker-3");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aRawFreeBehindTheTensorsBackIsRefusedAndTheTensorStillGivesItsBufferBack() {
        TFloat32 t = tensors.ofFloats(Shape.of(4), 1, 2, 3, 4);
        Allocation a = tensors.allocationOf(t);
        // Misuse: the buffer's memory belongs to its Allocation handle, so a raw free is refused.
        assertThatThrownBy(() -> cpu.deallocateRaw(a.address())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("owned by an Allocation handle");
        assertThat(t.getFloat(3)).isEqualTo(4f);
        t.close();
        assertThat(tensors.callbackFailures()).isZero();
        assertThat(tensors.buffersReturned()).isEqualTo(1);
        assertThat(a.isClosed()).isTrue();
        assertThat(BfcTensors.strayCallbackFailures()).isZero();
    }
}
