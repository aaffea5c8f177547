/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import org.tensorflow.Graph;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.ndarray.buffer.DataBuffers;
import org.tensorflow.types.TFloat32;

/**
 * Runs {@code softmax(x W + b)} in TensorFlow Java on tensors whose buffers come from bfc4j,
 * prints the result beside the same computed in plain Java, and bfc4j's memory summary.
 *
 * <p>{@code --compare N} also times N runs each of feeding bfc4j-backed tensors and TensorFlow's
 * own ({@code TFloat32.tensorOf}) on a larger graph, alternating, and prints the median latencies.
 * See docs/integrations.md for the command.
 */
public final class TensorFlowExample {

    private TensorFlowExample() {
    }

    /** What bad arguments print after the line saying what was wrong. */
    static final String USAGE = "usage: TensorFlowExample [--compare N]   (N: runs of each kind of input to time,"
            + " e.g. 2000)";

    /**
     * Runs the example. It is a command: bad arguments print one line saying what was wrong, then
     * the usage, on standard error, and end the JVM with exit status 2, as {@code bin/bfc} does.
     *
     * @param args none, or {@code --compare N} (N > 0) to time both kinds of input tensor
     * @throws NullPointerException if {@code args} or one of them is null (a call from code)
     * @throws Exception if TensorFlow fails
     */
    public static void main(String[] args) throws Exception {
        int compare;
        try {
            compare = compareRuns(args);
        } catch (IllegalArgumentException e) {
            System.err.println("TensorFlowExample: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        run(System.out, compare);
    }

    /**
     * The number of runs that {@code --compare N} asks to time: {@link #main}'s arguments read.
     *
     * @param args none, or {@code --compare N} (N > 0)
     * @return N, or 0 for no arguments (no timing)
     * @throws IllegalArgumentException if the arguments are not one of those, e.g. {@code --compare abc}
     * @throws NullPointerException if {@code args} or one of them is null
     */
    static int compareRuns(String... args) {
        Objects.requireNonNull(args, "args=null (expected: none, or --compare N with N > 0)");
        for (int i = 0; i < args.length; i++) {
            if (args[i] == null) {
                throw new NullPointerException("args[" + i + "]=null (expected: none, or --compare N with N > 0)");
            }
        }
        int compare = 0;
        if (args.length == 2 && args[0].equals("--compare")) {
            try {
                compare = Integer.parseInt(args[1]);
            } catch (NumberFormatException e) {
                throw badArguments(args);
            }
        }
        if (compare < 0 || (args.length != 0 && compare == 0)) {
            throw badArguments(args);
        }
        return compare;
    }

    private static IllegalArgumentException badArguments(String[] args) {
        return new IllegalArgumentException("arguments=" + Arrays.toString(args)
                + " (expected: none, or --compare N with N > 0, a whole number of runs such as 2000)");
    }

    static void run(PrintStream out, int compare) {
        try (BfcAllocator cpu = BfcAllocator.builder()
                .name("tf_inputs")
                .memoryLimit(256L << 20)
                .subAllocator(new AlignedHostSubAllocator())
                .build()) {
            BfcTensors tensors = new BfcTensors(cpu);
            softmaxExample(out, tensors);
            if (compare > 0) {
                compareLatency(out, tensors, compare);
            }
            out.println();
            out.println("bfc4j tensors made: " + tensors.tensorsCreated() + ", buffers given back by TensorFlow: "
                    + tensors.buffersReturned() + ", still held: " + tensors.liveBuffers());
            out.println("bytes in use after closing everything: " + cpu.bytesInUse());
        }
    }

    private static void softmaxExample(PrintStream out, BfcTensors tensors) {
        int batch = 3;
        int in = 4;
        int classes = 3;
        float[] x = SoftmaxModel.pattern(batch * in, 1, 7, 0.25f);
        float[] w = SoftmaxModel.pattern(in * classes, 5, 11, 0.1f);
        float[] b = new float[classes];
        for (int i = 0; i < b.length; i++) {
            b[i] = 0.1f * i;
        }
        try (Graph g = new Graph(); Session s = new Session(g)) {
            SoftmaxModel model = new SoftmaxModel(g, in, classes);
            try (TFloat32 xt = tensors.ofFloats(Shape.of(batch, in), x);
                 TFloat32 wt = tensors.ofFloats(Shape.of(in, classes), w);
                 TFloat32 bt = tensors.ofFloats(Shape.of(classes), b)) {
                out.println("Inputs x " + xt.shape() + ", W " + wt.shape() + ", b " + bt.shape()
                        + " live in bfc4j memory at 0x" + Long.toHexString(BfcTensors.dataAddress(xt)) + ", 0x"
                        + Long.toHexString(BfcTensors.dataAddress(wt)) + ", 0x"
                        + Long.toHexString(BfcTensors.dataAddress(bt)));
                out.println();
                out.println(tensors.allocator().memorySummary());
                try (Result r = model.run(s, xt, wt, bt)) {
                    TFloat32 p = (TFloat32) r.get(0);
                    double[] expected = Reference.softmaxAffine(x, w, b, batch, in, classes);
                    double maxDiff = 0;
                    out.println("softmax(x W + b), TensorFlow vs plain Java:");
                    for (int i = 0; i < batch; i++) {
                        StringBuilder tfRow = new StringBuilder();
                        StringBuilder javaRow = new StringBuilder();
                        for (int j = 0; j < classes; j++) {
                            float v = p.getFloat(i, j);
                            tfRow.append(String.format(Locale.ROOT, " %.6f", v));
                            javaRow.append(String.format(Locale.ROOT, " %.6f", expected[i * classes + j]));
                            maxDiff = Math.max(maxDiff, Math.abs(v - expected[i * classes + j]));
                        }
                        out.println("  row " + i + ": TensorFlow" + tfRow + " | Java" + javaRow);
                    }
                    out.println(String.format(Locale.ROOT, "max |TensorFlow - Java| = %.3g", maxDiff));
                }
            }
        }
    }

    /**
     * Times {@code softmax(x W + b)} with x 64x512, W 512x256 on bfc4j-backed inputs against
     * TensorFlow's own ({@code TFloat32.tensorOf}), alternating, after a warm-up: first creating,
     * filling, running and closing x each time; then creating and closing x only (not filled,
     * not run); then running only, on inputs made once. W and b are of the same kind as x.
     */
    private static void compareLatency(PrintStream out, BfcTensors tensors, int n) {
        int batch = 64;
        int in = 512;
        int classes = 256;
        float[] x = SoftmaxModel.pattern(batch * in, 1, 13, 0.01f);
        float[] w = SoftmaxModel.pattern(in * classes, 1, 17, 0.001f);
        float[] b = new float[classes];
        try (Graph g = new Graph(); Session s = new Session(g)) {
            SoftmaxModel model = new SoftmaxModel(g, in, classes);
            Shape xShape = Shape.of(batch, in);
            try (TFloat32 wBfc = tensors.ofFloats(Shape.of(in, classes), w);
                 TFloat32 bBfc = tensors.ofFloats(Shape.of(classes), b);
                 TFloat32 xBfc = tensors.ofFloats(xShape, x);
                 TFloat32 wTf = TFloat32.tensorOf(Shape.of(in, classes), DataBuffers.of(w, true, false));
                 TFloat32 bTf = TFloat32.tensorOf(Shape.of(classes), DataBuffers.of(b, true, false));
                 TFloat32 xTf = TFloat32.tensorOf(xShape, DataBuffers.of(x, true, false))) {
                float[] sink = new float[1];
                long[][] createRun = timeAlternating(n, useBfc -> {
                    try (TFloat32 xt = useBfc ? tensors.ofFloats(xShape, x)
                            : TFloat32.tensorOf(xShape, DataBuffers.of(x, true, false));
                         Result r = model.run(s, xt, useBfc ? wBfc : wTf, useBfc ? bBfc : bTf)) {
                        sink[0] += ((TFloat32) r.get(0)).getFloat(0, 0);
                    }
                });
                long[][] createOnly = timeAlternating(n, useBfc -> {
                    try (TFloat32 xt = useBfc ? tensors.tensorOf(TFloat32.class, xShape) : TFloat32.tensorOf(xShape)) {
                        sink[0] += xt.shape().numDimensions();
                    }
                });
                long[][] runOnly = timeAlternating(n, useBfc -> {
                    try (Result r = model.run(s, useBfc ? xBfc : xTf, useBfc ? wBfc : wTf, useBfc ? bBfc : bTf)) {
                        sink[0] += ((TFloat32) r.get(0)).getFloat(0, 0);
                    }
                });
                out.println();
                out.println("Latency of softmax(x W + b), x 64x512, W 512x256, " + n
                        + " runs of each kind, alternating (check " + sink[0] + "):");
                printMedians(out, "create x + run + close", createRun);
                printMedians(out, "create x + close (not filled, not run)", createOnly);
                printMedians(out, "run only (inputs made once)", runOnly);
            }
        }
    }

    private interface Step {
        void run(boolean useBfc);
    }

    /** Times {@code step} n times for each kind, alternating which goes first; [0] bfc4j, [1] TensorFlow's. */
    private static long[][] timeAlternating(int n, Step step) {
        long[][] times = new long[2][n];
        int warmUp = Math.max(10, n / 10);
        for (int i = -warmUp; i < n; i++) {
            for (int k = 0; k < 2; k++) {
                boolean useBfc = (k == 0) == (i % 2 == 0);
                long t0 = System.nanoTime();
                step.run(useBfc);
                long t = System.nanoTime() - t0;
                if (i >= 0) {
                    times[useBfc ? 0 : 1][i] = t;
                }
            }
        }
        return times;
    }

    private static void printMedians(PrintStream out, String what, long[][] times) {
        out.println("  " + what + ":");
        out.println(String.format(Locale.ROOT, "    bfc4j-backed inputs:       median %8.1f us, p90 %8.1f us",
                percentile(times[0], 50) / 1e3, percentile(times[0], 90) / 1e3));
        out.println(String.format(Locale.ROOT, "    TFloat32.tensorOf inputs:  median %8.1f us, p90 %8.1f us",
                percentile(times[1], 50) / 1e3, percentile(times[1], 90) / 1e3));
    }

    private static double percentile(long[] values, int p) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.min(sorted.length - 1, (long) sorted.length * p / 100)];
    }
}
