package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtGetApiBase;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import org.bytedeco.onnxruntime.Env;

/**
 * Runs a small ONNX model (a two-layer perceptron built in Java) on ONNX Runtime with its CPU
 * memory from a bfc4j allocator, prints the output and the allocator's memory summary.
 *
 * <pre>
 * java -cp ... io.github.bfc4j.onnxruntime.OnnxRuntimeExample              # the example
 * java -cp ... io.github.bfc4j.onnxruntime.OnnxRuntimeExample --compare 2000
 *     # latency: the same model on bfc4j's allocator and on ORT's own arena, alternating runs
 * </pre>
 */
public final class OnnxRuntimeExample {

    private static final long SEED = 42;

    private OnnxRuntimeExample() {
    }

    /**
     * Runs the example.
     *
     * @param args none, or {@code --compare ROUNDS}
     */
    public static void main(String[] args) {
        int rounds = 0;
        if (args.length == 2 && args[0].equals("--compare")) {
            rounds = Integer.parseInt(args[1]);
            if (rounds < 1) {
                throw new IllegalArgumentException("ROUNDS=" + rounds + " (expected: >= 1)");
            }
        } else if (args.length != 0) {
            System.err.println("usage: OnnxRuntimeExample [--compare ROUNDS]");
            System.exit(2);
        }
        if (rounds == 0) {
            run(System.out);
        } else {
            compare(System.out, rounds);
        }
    }

    static BfcAllocator allocator() {
        return BfcAllocator.builder()
                .name("ort_cpu")
                .memoryLimit(1L << 30)
                .allowRetryOnFailure(false)
                .subAllocator(new AlignedHostSubAllocator())
                .build();
    }

    /** The example: prints the output of one batch and the memory summary. */
    static void run(PrintStream out) {
        OnnxModels.Mlp model = OnnxModels.mlp(64, 128, 10, SEED);
        int batch = 4;
        float[] x = input(new Random(SEED), batch * model.inputs());
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-example");
                BfcAllocator bfc = allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            out.println("ONNX Runtime " + OrtGetApiBase().GetVersionString().call().getString()
                    + ", CPU memory from bfc4j allocator '" + bfc.name() + "' (limit "
                    + BfcAllocator.humanReadableNumBytes(bfc.memoryLimit()) + ")");
            out.println("Model: MLP " + model.inputs() + "-" + model.hidden() + "-" + model.classes()
                    + " (MatMul, Add, Relu, MatMul, Add, Softmax), " + model.onnx().length
                    + " bytes of ONNX built in Java");
            try (OrtInference session = new OrtInference(env, model.onnx(), true)) {
                float[] y = session.run(x, batch, model.inputs());
                out.println("Output: class probabilities for a batch of " + batch + ":");
                for (int n = 0; n < batch; n++) {
                    float[] row = Arrays.copyOfRange(y, n * model.classes(), (n + 1) * model.classes());
                    StringBuilder line = new StringBuilder("  example " + n + ":");
                    int best = 0;
                    for (int k = 0; k < row.length; k++) {
                        line.append(String.format(Locale.ROOT, " %.4f", row[k]));
                        best = row[k] > row[best] ? k : best;
                    }
                    out.println(line + "  -> class " + best);
                }
                out.println("ORT called the allocator: Alloc " + ort.stats().allocCalls() + ", Reserve " + ort.stats().reserveCalls()
                        + ", Free " + ort.stats().freeCalls() + "; " + ort.stats().liveAllocations()
                        + " allocations live (the session's weights)");
                out.println(bfc.memorySummary());
            }
            out.println("After closing the session: " + BfcAllocator.humanReadableNumBytes(bfc.bytesInUse())
                    + " in use, " + ort.stats().liveAllocations() + " allocations live");
        }
    }

    /**
     * Latency of the same model with bfc4j's allocator and with ORT's own (its default CPU
     * arena), one run of each in turn, after a warm-up; prints medians and 90th percentiles.
     */
    static void compare(PrintStream out, int rounds) {
        OnnxModels.Mlp mlp = OnnxModels.mlp(256, 1024, 10, SEED);
        OnnxModels.ConvNet conv = OnnxModels.conv(3, 16, 32, 32, SEED);
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-compare");
                BfcAllocator bfc = allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            out.println("ONNX Runtime " + OrtGetApiBase().GetVersionString().call().getString() + ", "
                    + Runtime.getRuntime().availableProcessors() + " CPUs, " + rounds + " alternating rounds after "
                    + Math.max(20, rounds / 10) + " warm-up rounds");
            compareModel(out, env, "MLP 256-1024-10, batch 32", mlp.onnx(), 32, new long[] {32, 256}, rounds);
            compareModel(out, env, "Conv 3->16 3x3 + Relu, 32x32, batch 8", conv.onnx(), 8,
                    new long[] {8, 3, 32, 32}, rounds);
            out.println("bfc4j: Alloc " + ort.stats().allocCalls() + ", Reserve " + ort.stats().reserveCalls() + ", Free "
                    + ort.stats().freeCalls() + ", peak in use " + BfcAllocator.humanReadableNumBytes(bfc.memoryStats().peakBytesInUse()));
        }
    }

    private static void compareModel(PrintStream out, Env env, String name, byte[] onnx, int batch, long[] shape,
            int rounds) {
        long elements = 1;
        for (long d : shape) {
            elements *= d;
        }
        float[] x = input(new Random(SEED), Math.toIntExact(elements));
        long[] withBfc = new long[rounds];
        long[] withOrt = new long[rounds];
        try (OrtInference bfcSession = new OrtInference(env, onnx, true);
                OrtInference ortSession = new OrtInference(env, onnx, false)) {
            for (int i = 0; i < Math.max(20, rounds / 10); i++) {
                bfcSession.run(x, shape);
                ortSession.run(x, shape);
            }
            for (int i = 0; i < rounds; i++) {
                long t0 = System.nanoTime();
                bfcSession.run(x, shape);
                long t1 = System.nanoTime();
                ortSession.run(x, shape);
                long t2 = System.nanoTime();
                withBfc[i] = t1 - t0;
                withOrt[i] = t2 - t1;
            }
        }
        out.println(name + ":");
        out.println("  bfc4j allocator:       " + percentiles(withBfc));
        out.println("  ORT's own CPU arena:   " + percentiles(withOrt));
    }

    private static String percentiles(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "median %.1f us, p90 %.1f us", sorted[sorted.length / 2] / 1e3,
                sorted[(int) (sorted.length * 0.9)] / 1e3);
    }

    private static float[] input(Random random, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = random.nextFloat() * 2 - 1;
        }
        return a;
    }
}
