package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.cuda.GpuBfcAllocator;
import io.github.bfc4j.cuda.GpuBfcAllocators;
import io.github.bfc4j.cuda.GpuBfcOptions;
import java.util.Random;
import org.bytedeco.onnxruntime.Env;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * ONNX Runtime's CUDA provider on bfc4j device memory, running all-MiniLM-L6-v2. Needs
 * {@code mvn -Pgpu} (ORT's CUDA build), a GPU and its driver, CUDA 12 and cuDNN 9; skipped
 * otherwise, saying which is missing.
 */
@Tag("gpu")
class BfcCudaProviderGpuTest {

    @Test
    void embeddingsOnTheCudaProviderTakeTheirDeviceMemoryFromBfc() {
        String reason = BfcCudaProvider.unavailableReason();
        assumeTrue(reason == null, () -> "skipped: " + reason);
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println("embeddingsOnTheCudaProviderTakeTheirDeviceMemoryFromBfc seed=" + seed);
        Random random = new Random(seed);
        EmbeddingModel model = EmbeddingModel.ALL_MINILM_L6_V2_Q;
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-gpu-test");
                HuggingFaceTokenizer tokenizer = model.fixedLengthTokenizer(64);
                GpuBfcAllocator gpu = GpuBfcAllocators.create(0, GpuBfcOptions.builder()
                        .memoryLimitBytes(1L << 30).allowRetryOnFailure(false).build());
                BfcCudaProvider cuda = BfcCudaProvider.create(gpu);
                EmbeddingSession cpu = new EmbeddingSession(env, model, EmbeddingSession.options(false))) {
            MemoryStats before = gpu.allocator().memoryStats();
            try (EmbeddingSession session = new EmbeddingSession(env, model,
                    cuda.appendTo(EmbeddingSession.options(false)))) {
                assertThat(cuda.stats().allocCalls()).as("weights copied to the device through bfc4j").isPositive();
                for (int i = 0; i < 20; i++) {
                    int batch = 1 + random.nextInt(32);
                    Encoding[] request = ServingWorkload.request(tokenizer, random, batch, 64);
                    float[][] onGpu = session.run(request).embeddings();
                    float[][] onCpu = cpu.run(request).embeddings();
                    for (int b = 0; b < batch; b++) {
                        // Different kernels (and TF32 on Ampere and newer): the same meaning, not the same bits.
                        assertThat(EmbeddingSession.cosine(onGpu[b], onCpu[b])).as("run %d text %d", i, b)
                                .isGreaterThan(0.99);
                    }
                }
                // Every device allocation of the session went through bfc4j (ORT's external
                // allocator never asks for 0 bytes).
                assertThat(gpu.allocator().memoryStats().allocationsTotal() - before.allocationsTotal())
                        .isEqualTo(cuda.stats().allocCalls() - cuda.stats().failedAllocs());
                // The session's memory is ORT's (lent through the provider's loan): a raw free of
                // it on the allocator (an application's double free) is refused and frees nothing.
                long held = gpu.allocator().memoryMap().regions().stream().flatMap(r -> r.chunks().stream())
                        .filter(MemoryMap.Chunk::inUse).findFirst().orElseThrow().ptr();
                long inUse = gpu.allocator().bytesInUse();
                assertThatThrownBy(() -> gpu.deallocateRaw(held)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lent to ONNX Runtime's CUDA provider (BfcCudaProvider over '");
                assertThat(gpu.allocator().bytesInUse()).isEqualTo(inUse);
                System.out.println(cuda.stats().allocCalls() + " allocations, " + cuda.stats().freeCalls() + " frees, "
                        + cuda.stats().emptyCacheCalls() + " empty-cache calls\n" + gpu.allocator().memorySummary());
            }
            assertThat(cuda.stats().liveAllocations()).isZero();
            assertThat(gpu.allocator().bytesInUse()).isEqualTo(before.bytesInUse());
            assertThat(cuda.stats().callbackErrors()).isZero();
        }
    }
}
