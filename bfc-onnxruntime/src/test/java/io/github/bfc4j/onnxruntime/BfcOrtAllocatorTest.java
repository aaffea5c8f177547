package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.bytedeco.onnxruntime.global.onnxruntime.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.Value;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ONNX Runtime sessions on bfc4j memory: real models (built by {@link OnnxModels}), outputs
 * checked against {@link Reference}, memory followed through the allocator's statistics.
 */
class BfcOrtAllocatorTest {

    private static Env env;

    @BeforeAll
    static void createEnv() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-test");
    }

    @AfterAll
    static void releaseEnv() {
        if (env != null) {
            env.close();
        }
    }

    static BfcAllocator hostAllocator(String name, long limit) {
        return BfcAllocator.builder()
                .name(name)
                .memoryLimit(limit)
                .allowRetryOnFailure(false)
                .subAllocator(new AlignedHostSubAllocator())
                .build();
    }

    private static long seed(String test) {
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println(test + " seed=" + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        return seed;
    }

    private static long floatBytes(float[]... arrays) {
        long n = 0;
        for (float[] a : arrays) {
            n += 4L * a.length;
        }
        return n;
    }

    @Test
    void mlpRunsOnBfcMemoryAndGivesEverythingBack() {
        long seed = seed("mlpRunsOnBfcMemoryAndGivesEverythingBack");
        Random random = new Random(seed);
        OnnxModels.Mlp model = OnnxModels.mlp(64, 128, 10, seed);
        int runs = 60;
        try (BfcAllocator bfc = hostAllocator("ort_mlp", 256L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            MemoryStats before = bfc.memoryStats();
            assertThat(before.allocationsTotal()).isZero();
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                MemoryStats created = bfc.memoryStats();
                // The four initializers (W1, B1, W2, B2) live in bfc4j memory for the session's life.
                assertThat(created.activeAllocations()).isGreaterThanOrEqualTo(4);
                assertThat(created.bytesInUse())
                        .isGreaterThanOrEqualTo(floatBytes(model.w1(), model.b1(), model.w2(), model.b2()));
                for (int i = 0; i < runs; i++) {
                    int batch = 1 + random.nextInt(64);
                    float[] x = Reference.random(random, batch * model.inputs());
                    float[] y = session.run(x, batch, model.inputs());
                    Reference.assertClose(y, Reference.mlp(model, x, batch), "run " + i + " batch " + batch);
                }
                MemoryStats ran = bfc.memoryStats();
                // At least the output of every run came from bfc4j, and every call of ORT's
                // reached it: nothing else allocates from this allocator.
                assertThat(ran.allocationsTotal() - created.allocationsTotal()).isGreaterThanOrEqualTo(runs);
                assertThat(ran.allocationsTotal()).isEqualTo(ort.stats().allocCalls() + ort.stats().reserveCalls() - ort.stats().failedAllocs());
                // Between runs only the session's own tensors are live.
                assertThat(ran.bytesInUse()).isEqualTo(created.bytesInUse());
                System.out.println("mlp: " + ort + ", Alloc " + ort.stats().allocCalls() + ", Reserve " + ort.stats().reserveCalls()
                        + ", Free " + ort.stats().freeCalls() + "\n" + bfc.memorySummary());
            }
            MemoryStats after = bfc.memoryStats();
            assertThat(after.bytesInUse()).isEqualTo(before.bytesInUse());
            assertThat(after.activeAllocations()).isZero();
            assertThat(after.freesTotal()).isEqualTo(after.allocationsTotal());
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            bfc.checkInvariants();
        }
    }

    @Test
    void convRunsOnBfcMemory() {
        long seed = seed("convRunsOnBfcMemory");
        Random random = new Random(seed);
        OnnxModels.ConvNet model = OnnxModels.conv(3, 8, 12, 10, seed);
        try (BfcAllocator bfc = hostAllocator("ort_conv", 256L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                long created = bfc.memoryStats().allocationsTotal();
                assertThat(bfc.memoryStats().bytesInUse()).isGreaterThanOrEqualTo(floatBytes(model.w(), model.b()));
                for (int i = 0; i < 25; i++) {
                    int batch = 1 + random.nextInt(8);
                    float[] x = Reference.random(random, batch * model.inChannels() * model.height() * model.width());
                    float[] y = session.run(x, batch, model.inChannels(), model.height(), model.width());
                    Reference.assertClose(y, Reference.conv(model, x, batch), "run " + i + " batch " + batch);
                }
                assertThat(bfc.memoryStats().allocationsTotal() - created).isGreaterThanOrEqualTo(25);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
        }
    }

    @Test
    void inputTensorsCanBeMadeInBfcMemoryToo() {
        try (BfcAllocator bfc = hostAllocator("ort_inputs", 8 << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                long address = x.GetTensorMutableDataFloat().address();
                assertThat(bfc.requestedSize(address)).isEqualTo(4 * 100 * 4);
                assertThat(ort.stats().liveAllocations()).isEqualTo(1);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
        }
    }

    @Test
    void sessionWithoutEnvAllocatorsDoesNotTouchBfcMemory() {
        OnnxModels.Mlp model = OnnxModels.mlp(16, 32, 4, 7);
        try (BfcAllocator bfc = hostAllocator("ort_unused", 64L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
                OrtInference session = new OrtInference(env, model.onnx(), false)) {
            float[] x = Reference.random(new Random(1), 3 * 16);
            Reference.assertClose(session.run(x, 3, 16), Reference.mlp(model, x, 3), "ORT's own allocator");
            assertThat(bfc.memoryStats().allocationsTotal()).isZero();
            assertThat(ort.stats().allocCalls() + ort.stats().reserveCalls()).isZero();
        }
    }

    @Test
    void concurrentRunsFromSeveralThreads() throws Exception {
        long seed = seed("concurrentRunsFromSeveralThreads");
        OnnxModels.Mlp model = OnnxModels.mlp(32, 64, 8, seed);
        int threads = 4;
        int runsPerThread = 40;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (BfcAllocator bfc = hostAllocator("ort_threads", 256L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                long created = bfc.memoryStats().allocationsTotal();
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    Random random = new Random(seed + t);
                    futures.add(pool.submit(() -> {
                        for (int i = 0; i < runsPerThread; i++) {
                            int batch = 1 + random.nextInt(200);
                            float[] x = Reference.random(random, batch * model.inputs());
                            Reference.assertClose(session.run(x, batch, model.inputs()),
                                    Reference.mlp(model, x, batch), "batch " + batch);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get();
                }
                assertThat(bfc.memoryStats().allocationsTotal() - created)
                        .isGreaterThanOrEqualTo((long) threads * runsPerThread);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            bfc.checkInvariants();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void tinyMemoryLimitFailsTheRunWithOrtsErrorAndTheAllocatorWorksOn() {
        OnnxModels.Mlp model = OnnxModels.mlp(64, 512, 10, 3);
        Random random = new Random(5);
        try (BfcAllocator bfc = hostAllocator("ort_tiny", 1L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                long inUse = bfc.bytesInUse();
                // 4096 x 512 floats of hidden activations alone are 8 MiB, above the 1 MiB limit.
                float[] big = Reference.random(random, 4096 * model.inputs());
                assertThatThrownBy(() -> session.run(big, 4096, model.inputs()))
                        .isInstanceOf(RuntimeException.class)
                        .satisfies(e -> System.out.println("ORT's error: " + e.getMessage()));
                assertThat(ort.stats().failedAllocs()).isPositive();
                assertThat(bfc.memoryStats().oomsTotal()).isPositive();
                assertThat(bfc.bytesInUse()).as("nothing of the failed run is left").isEqualTo(inUse);
                // The same session and allocator go on working.
                float[] x = Reference.random(random, 4 * model.inputs());
                Reference.assertClose(session.run(x, 4, model.inputs()), Reference.mlp(model, x, 4), "after OOM");
            }
            assertThat(bfc.bytesInUse()).isZero();
            bfc.checkInvariants();
        }
    }

    @Test
    void sessionCreationFailsWhenTheWeightsDoNotFit() {
        OnnxModels.Mlp model = OnnxModels.mlp(64, 128, 10, 9);   // W1 alone is 32 KiB
        try (BfcAllocator bfc = hostAllocator("ort_weights", 16 << 10);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            assertThatThrownBy(() -> new OrtInference(env, model.onnx(), true))
                    .isInstanceOf(RuntimeException.class)
                    .hasMessageContaining("bfc4j: allocator 'ort_weights' is out of memory");
            assertThat(ort.stats().failedAllocs()).isPositive();
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
        }
    }

    @Test
    void closingTheBfcAllocatorUnderALiveSessionIsRefusedAndChangesNothing() {
        OnnxModels.Mlp model = OnnxModels.mlp(8, 16, 3, 11);
        float[] x = Reference.random(new Random(2), 2 * 8);
        try (BfcAllocator bfc = hostAllocator("ort_refuse", 64L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                long inUse = bfc.bytesInUse();
                assertThatThrownBy(bfc::close)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("close() refused: allocator 'ort_refuse' has");
                assertThatThrownBy(ort::close)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("ONNX Runtime still holds")
                        .hasMessageContaining("Release the sessions");
                assertThat(ort.isClosed()).isFalse();
                assertThat(bfc.bytesInUse()).isEqualTo(inUse);
                Reference.assertClose(session.run(x, 2, 8), Reference.mlp(model, x, 2), "after refused closes");
            }
        }
    }

    @Test
    void registerRejectsWhatCouldCorruptMemory() {
        try (BfcAllocator force = BfcAllocator.builder().name("forced").memoryLimit(1 << 20)
                .closePolicy(ClosePolicy.FORCE).subAllocator(new AlignedHostSubAllocator()).build()) {
            assertThatThrownBy(() -> BfcOrtAllocator.register(force))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("closePolicy=FORCE of allocator 'forced' (expected: REFUSE");
        }
        try (BfcAllocator sim = BfcAllocator.builder().name("simulated").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, true)).build()) {
            assertThatThrownBy(() -> BfcOrtAllocator.register(sim))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("of allocator 'simulated' (expected: HOST_PAGEABLE or HOST_PINNED");
        }
        assertThatThrownBy(() -> BfcOrtAllocator.register(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bfc=null");
    }

    @Test
    void onlyOneRegistrationAtATimeAndCloseIsIdempotent() {
        try (BfcAllocator a = hostAllocator("first", 8 << 20); BfcAllocator b = hostAllocator("second", 8 << 20)) {
            BfcOrtAllocator first = BfcOrtAllocator.register(a);
            assertThatThrownBy(() -> BfcOrtAllocator.register(b))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("a BfcOrtAllocator over 'first' is already registered");
            first.close();
            first.close();
            assertThat(first.isClosed()).isTrue();
            try (BfcOrtAllocator second = BfcOrtAllocator.register(b)) {
                assertThat(second.allocator()).isSameAs(b);
            }
        }
    }

    @Test
    void callbacksThroughTheNativeFunctionPointers() {
        try (BfcAllocator bfc = hostAllocator("callbacks", 8 << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            var struct = ort.ortAllocator();
            assertThat(struct.version()).isEqualTo(22);
            assertThat(struct.Info().call(struct).address()).isEqualTo(ort.memoryInfo().address());

            Pointer p = struct.Alloc().call(struct, 1000);
            Pointer r = struct.Reserve().call(struct, 3000);
            assertThat(p.address() % BfcOrtAllocator.ALIGNMENT).isZero();
            assertThat(bfc.requestedSize(p.address())).isEqualTo(1000);
            assertThat(bfc.requestedSize(r.address())).isEqualTo(3000);
            assertThat(ort.stats().liveAllocations()).isEqualTo(2);
            assertThat(struct.Alloc().call(struct, 0)).as("0 bytes: null, as ORT's CPU allocator").isNull();

            // Out of memory: thrown as a C++ exception (as ORT's own allocators do), which
            // JavaCPP's native call() turns back into a RuntimeException here (its message is
            // lost on this path: the presets only translate Ort::Exception).
            assertThatThrownBy(() -> struct.Alloc().call(struct, 64L << 20))
                    .isInstanceOf(RuntimeException.class);
            assertThat(ort.stats().failedAllocs()).isEqualTo(1);
            assertThat(ort.stats().callbackErrors()).isZero();

            // A free bfc4j rejects (never allocated) is logged and counted, not thrown.
            struct.Free().call(struct, new Pointer() {
                {
                    address = 0x1000;
                }
            });
            assertThat(ort.stats().callbackErrors()).isEqualTo(1);
            assertThat(ort.stats().lastError()).contains("Free(0x1000) on 'callbacks' failed");
            assertThat(ort.stats().liveAllocations()).isEqualTo(2);

            struct.Free().call(struct, p);
            assertThatThrownBy(ort::close).isInstanceOf(IllegalStateException.class);
            struct.Free().call(struct, r);
            ort.close();
            assertThat(ort.isClosed()).isTrue();

            // After close: allocation fails with a clear error.
            assertThatThrownBy(() -> struct.Alloc().call(struct, 100)).isInstanceOf(RuntimeException.class);
            assertThat(ort.stats().lastError()).contains("Alloc(100) called after BfcOrtAllocator 'callbacks' was closed");
            assertThat(bfc.bytesInUse()).isZero();
        }
    }
}
