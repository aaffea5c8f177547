package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.cuda.GpuBfcAllocator;
import io.github.bfc4j.cuda.GpuBfcAllocators;
import io.github.bfc4j.cuda.GpuBfcOptions;
import java.util.Random;
import org.bytedeco.onnxruntime.Env;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * ONNX Runtime's CUDA provider on bfc4j device memory. Needs {@code mvn -Pgpu} (ORT's CUDA build),
 * a GPU and its driver, CUDA 12 and cuDNN 9; skipped otherwise, saying which is missing.
 */
@Tag("gpu")
class BfcCudaProviderGpuTest {

    /** CUDA kernels (TF32 matrix products are ORT's default on Ampere and newer) vs double. */
    private static final float GPU_TOLERANCE = 5e-3f;

    @Test
    void mlpOnTheCudaProviderTakesItsDeviceMemoryFromBfc() {
        String reason = BfcCudaProvider.unavailableReason();
        assumeTrue(reason == null, () -> "skipped: " + reason);
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println("mlpOnTheCudaProviderTakesItsDeviceMemoryFromBfc seed=" + seed);
        Random random = new Random(seed);
        OnnxModels.Mlp model = OnnxModels.mlp(64, 256, 10, seed);
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-gpu-test");
                GpuBfcAllocator gpu = GpuBfcAllocators.create(0, GpuBfcOptions.builder()
                        .memoryLimitBytes(1L << 30).allowRetryOnFailure(false).build());
                BfcCudaProvider cuda = BfcCudaProvider.create(gpu)) {
            MemoryStats before = gpu.allocator().memoryStats();
            try (OrtInference session = new OrtInference(env, model.onnx(), false, cuda)) {
                assertThat(cuda.stats().allocCalls()).as("weights copied to the device through bfc4j").isPositive();
                for (int i = 0; i < 30; i++) {
                    int batch = 1 + random.nextInt(128);
                    float[] x = Reference.random(random, batch * model.inputs());
                    Reference.assertClose(session.run(x, batch, model.inputs()), Reference.mlp(model, x, batch),
                            GPU_TOLERANCE, "run " + i + " batch " + batch);
                }
                // Every device allocation of the session went through bfc4j (ORT's external
                // allocator never asks for 0 bytes).
                assertThat(gpu.allocator().memoryStats().allocationsTotal() - before.allocationsTotal())
                        .isEqualTo(cuda.stats().allocCalls() - cuda.stats().failedAllocs());
                System.out.println(cuda.stats().allocCalls() + " allocations, " + cuda.stats().freeCalls() + " frees, "
                        + cuda.stats().emptyCacheCalls() + " empty-cache calls\n" + gpu.allocator().memorySummary());
            }
            assertThat(cuda.stats().liveAllocations()).isZero();
            assertThat(gpu.allocator().bytesInUse()).isEqualTo(before.bytesInUse());
            assertThat(cuda.stats().callbackErrors()).isZero();
        }
    }
}
