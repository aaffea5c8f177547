/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.tensorflow.Graph;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Gradients;
import org.tensorflow.op.core.Placeholder;
import org.tensorflow.op.math.Mean;
import org.tensorflow.types.TFloat32;

/**
 * Real graphs fed with bfc4j-backed tensors, checked against plain Java: inference
 * ({@code softmax(x W + b)}) and training (logistic regression, gradients from
 * {@code Graph.addGradients}).
 */
class GraphTest {

    /**
     * float32 against double: the products and sums of 16 terms of magnitude below 2 and
     * probabilities in [0, 1] are within a few float ulps; 1e-5 absolute leaves a margin.
     */
    private static final double SOFTMAX_TOLERANCE = 1e-5;

    @Test
    void matMulAddSoftmaxMatchesPlainJavaForSeveralBatchSizes() {
        long seed = Seeds.seed("matMulAddSoftmaxMatchesPlainJavaForSeveralBatchSizes");
        Random random = new Random(seed);
        int in = 16;
        int out = 10;
        float[] w = randoms(random, in * out, 0.5f);
        float[] b = randoms(random, out, 0.5f);
        try (BfcAllocator cpu = hostAllocator(); Graph g = new Graph(); Session s = new Session(g)) {
            BfcTensors tensors = new BfcTensors(cpu);
            SoftmaxModel model = new SoftmaxModel(g, in, out);
            try (TFloat32 wt = tensors.ofFloats(Shape.of(in, out), w);
                 TFloat32 bt = tensors.ofFloats(Shape.of(out), b)) {
                for (int batch : List.of(1, 4, 17, 64, 3)) {
                    float[] x = randoms(random, batch * in, 2f);
                    double[] expected = Reference.softmaxAffine(x, w, b, batch, in, out);
                    try (TFloat32 xt = tensors.ofFloats(Shape.of(batch, in), x);
                         Result r = model.run(s, xt, wt, bt)) {
                        TFloat32 p = (TFloat32) r.get(0);
                        assertThat(p.shape()).isEqualTo(Shape.of(batch, out));
                        for (int i = 0; i < batch; i++) {
                            for (int j = 0; j < out; j++) {
                                assertThat((double) p.getFloat(i, j)).as("seed %d batch %d [%d, %d]", seed, batch, i, j)
                                        .isCloseTo(expected[i * out + j], within(SOFTMAX_TOLERANCE));
                            }
                        }
                    }
                }
            }
            assertThat(tensors.tensorsCreated()).isEqualTo(7);
            assertThat(tensors.buffersReturned()).isEqualTo(7);
            assertThat(cpu.bytesInUse()).isZero();
        }
    }

    /**
     * Ten steps of gradient descent on a logistic regression: every input (data, labels, weights,
     * bias) is a bfc4j-backed tensor; TensorFlow computes the loss, its gradients (from
     * {@code Graph.addGradients}, through {@code Ops.gradients}) and the updated weights; the same
     * steps in double precision in plain Java must give the same losses and weights.
     */
    @Test
    void logisticRegressionTrainsLikePlainJavaGradientDescent() {
        long seed = Seeds.seed("logisticRegressionTrainsLikePlainJavaGradientDescent");
        Random random = new Random(seed);
        int n = 64;
        int d = 3;
        float learningRate = 0.5f;
        float[] trueW = {1.5f, -2f, 0.75f};
        float[] x = randoms(random, n * d, 1f);
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            double z = 0.3;
            for (int k = 0; k < d; k++) {
                z += x[i * d + k] * trueW[k];
            }
            y[i] = z + 0.3 * random.nextGaussian() > 0 ? 1f : 0f;
        }
        try (BfcAllocator cpu = hostAllocator(); Graph g = new Graph(); Session s = new Session(g)) {
            BfcTensors tensors = new BfcTensors(cpu);
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> xIn = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(n, d)));
            Placeholder<TFloat32> yIn = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(n, 1)));
            Placeholder<TFloat32> wIn = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(d, 1)));
            Placeholder<TFloat32> bIn = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(1)));
            var p = tf.math.sigmoid(tf.math.add(tf.linalg.matMul(xIn, wIn), bIn));
            var one = tf.constant(1f);
            // loss = mean(-(y log p + (1 - y) log(1 - p)))
            var loss = tf.math.mean(tf.math.neg(tf.math.add(
                    tf.math.mul(yIn, tf.math.log(p)),
                    tf.math.mul(tf.math.sub(one, yIn), tf.math.log(tf.math.sub(one, p))))),
                    tf.constant(new int[] {0, 1}), Mean.keepDims(false));
            Gradients grads = tf.gradients(loss, Arrays.asList(wIn, bIn));
            var lr = tf.constant(learningRate);
            var newW = tf.math.sub(wIn, tf.math.mul(lr, grads.<TFloat32>dy(0)));
            var newB = tf.math.sub(bIn, tf.math.mul(lr, grads.<TFloat32>dy(1)));

            float[] w = new float[d];
            float[] b = new float[1];
            double[] javaW = new double[d];
            double[] javaB = new double[1];
            double previousLoss = Double.POSITIVE_INFINITY;
            try (TFloat32 xt = tensors.ofFloats(Shape.of(n, d), x);
                 TFloat32 yt = tensors.ofFloats(Shape.of(n, 1), y)) {
                for (int step = 0; step < 10; step++) {
                    double javaLoss = logisticStep(x, y, javaW, javaB, n, d, learningRate);
                    try (TFloat32 wt = tensors.ofFloats(Shape.of(d, 1), w);
                         TFloat32 bt = tensors.ofFloats(Shape.of(1), b);
                         Result r = s.runner().feed(xIn, xt).feed(yIn, yt).feed(wIn, wt).feed(bIn, bt)
                                 .fetch(loss).fetch(newW).fetch(newB).run()) {
                        double tfLoss = ((TFloat32) r.get(0)).getFloat();
                        assertThat(tfLoss).as("seed %d step %d loss", seed, step).isCloseTo(javaLoss, within(1e-5));
                        assertThat(tfLoss).as("seed %d step %d: loss decreases", seed, step).isLessThan(previousLoss);
                        previousLoss = tfLoss;
                        for (int k = 0; k < d; k++) {
                            w[k] = ((TFloat32) r.get(1)).getFloat(k, 0);
                            assertThat((double) w[k]).as("seed %d step %d w[%d]", seed, step, k)
                                    .isCloseTo(javaW[k], within(1e-5));
                        }
                        b[0] = ((TFloat32) r.get(2)).getFloat(0);
                        assertThat((double) b[0]).as("seed %d step %d b", seed, step).isCloseTo(javaB[0], within(1e-5));
                    }
                }
            }
            System.out.println("logistic regression: loss after 10 steps " + previousLoss + ", w " + Arrays.toString(w)
                    + ", b " + b[0]);
            assertThat(tensors.tensorsCreated()).isEqualTo(2 + 10 * 2);
            assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated());
            assertThat(cpu.bytesInUse()).isZero();
        }
    }

    /**
     * One step of gradient descent in double precision: the mean cross-entropy loss at
     * {@code (w, b)}, then {@code w -= lr X^T (p - y) / n}, {@code b -= lr mean(p - y)}.
     *
     * @return the loss before the step
     */
    private static double logisticStep(float[] x, float[] y, double[] w, double[] b, int n, int d, double lr) {
        double loss = 0;
        double[] gw = new double[d];
        double gb = 0;
        for (int i = 0; i < n; i++) {
            double z = b[0];
            for (int k = 0; k < d; k++) {
                z += x[i * d + k] * w[k];
            }
            double p = 1 / (1 + Math.exp(-z));
            loss -= y[i] * Math.log(p) + (1 - y[i]) * Math.log(1 - p);
            for (int k = 0; k < d; k++) {
                gw[k] += (p - y[i]) * x[i * d + k];
            }
            gb += p - y[i];
        }
        for (int k = 0; k < d; k++) {
            w[k] -= lr * gw[k] / n;
        }
        b[0] -= lr * gb / n;
        return loss / n;
    }

    private static BfcAllocator hostAllocator() {
        return BfcAllocator.builder().name("tf_graph").memoryLimit(64L << 20)
                .subAllocator(new AlignedHostSubAllocator()).build();
    }

    private static float[] randoms(Random random, int n, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (random.nextFloat() * 2 - 1) * scale;
        }
        return v;
    }
}
