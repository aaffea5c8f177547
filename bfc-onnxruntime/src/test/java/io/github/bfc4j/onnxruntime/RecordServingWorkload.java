package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.onnxruntime.Env;

/**
 * Records a sentence-embedding server's memory as a workload trace: all-MiniLM-L6-v2 on bfc4j
 * memory (1 GiB limit), a session created, requests of 1 to 32 texts of 8 to 256 tokens served
 * by caller threads sharing it, the session closed. What {@code bfc replay}, {@code whatif} and
 * {@code report} then read (docs/cli.md).
 *
 * <pre>
 * java -cp ... io.github.bfc4j.onnxruntime.RecordServingWorkload OUT.bfctrace.gz [REQUESTS [THREADS]]
 * </pre>
 */
public final class RecordServingWorkload {

    static final long LIMIT = 1L << 30;
    static final long SEED = 16;
    static final int[] BATCHES = {1, 2, 4, 8, 16, 32};
    static final int[] LENGTHS = {8, 16, 32, 64, 128, 256};
    static final int MAX_TOKENS = 2048;

    private RecordServingWorkload() {
    }

    /**
     * Records.
     *
     * @param args {@code OUT [REQUESTS [THREADS]]} (defaults 60 requests, 2 threads)
     * @throws Exception if the trace cannot be written or a run fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: RecordServingWorkload OUT.bfctrace[.gz] [REQUESTS [THREADS]]");
            System.exit(2);
        }
        int requests = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        Result r = record(Path.of(args[0]), requests, threads);
        System.out.println("wrote " + args[0] + ": " + r.allocs() + " allocations, " + r.frees() + " frees; live run: peak in use "
                + BfcAllocator.humanReadableNumBytes(r.peakBytesInUse()) + ", peak reserved "
                + BfcAllocator.humanReadableNumBytes(r.peakReservedBytes()));
    }

    /** What a recording wrote, and what the live allocator saw. */
    record Result(long allocs, long frees, long allocationsTotal, long peakBytesInUse, long peakReservedBytes) {
    }

    static Result record(Path out, int requestCount, int threads) throws IOException, Exception {
        List<Encoding[]> requests = ServingWorkload.requests(EmbeddingModel.ALL_MINILM_L6_V2_Q, new Random(SEED),
                requestCount, BATCHES, LENGTHS, MAX_TOKENS);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-record");
                BfcAllocator bfc = BfcAllocator.builder().name("ort_cpu").memoryLimit(LIMIT).allowRetryOnFailure(false)
                        .subAllocator(new AlignedHostSubAllocator()).build();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            WorkloadRecorder recorder = new WorkloadRecorder(out, bfc, "ort-minilm-serving: all-MiniLM-L6-v2 (quantized)"
                    + " on ONNX Runtime 1.22, " + requestCount + " requests from " + threads + " threads",
                    "recorded from ONNX Runtime's calls into BfcOrtAllocator (bfc-onnxruntime RecordServingWorkload)");
            try {
                ort.listener(recorder);
                recorder.comment("session created: weights (Reserve) and initialization");
                try (EmbeddingSession session = new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q,
                        EmbeddingSession.options(true))) {
                    recorder.comment(requestCount + " requests from " + threads + " threads sharing the session:"
                            + " batches of " + java.util.Arrays.toString(BATCHES) + " texts of "
                            + java.util.Arrays.toString(LENGTHS) + " tokens, at most " + MAX_TOKENS + " tokens");
                    AtomicInteger next = new AtomicInteger();
                    List<Future<?>> futures = new ArrayList<>();
                    for (int t = 0; t < threads; t++) {
                        futures.add(pool.submit(() -> {
                            for (int i = next.getAndIncrement(); i < requests.size(); i = next.getAndIncrement()) {
                                session.run(requests.get(i));
                            }
                            return null;
                        }));
                    }
                    for (Future<?> f : futures) {
                        f.get();
                    }
                    recorder.comment("session closed");
                }
                ort.listener(null);
            } finally {
                recorder.close();
            }
            var stats = bfc.memoryStats();
            return new Result(recorder.allocs(), recorder.frees(), stats.allocationsTotal(), stats.peakBytesInUse(),
                    stats.peakReservedBytes());
        } finally {
            pool.shutdownNow();
        }
    }
}
