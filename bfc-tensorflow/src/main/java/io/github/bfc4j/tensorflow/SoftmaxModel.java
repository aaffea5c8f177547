/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import org.tensorflow.Graph;
import org.tensorflow.Operand;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.Tensor;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Placeholder;
import org.tensorflow.types.TFloat32;

/**
 * {@code softmax(x W + b)} ({@code MatMul} + {@code Add} + {@code Softmax}) built with {@code Ops}
 * on placeholders x (batch x in), W (in x out) and b (out): the graph of the example and the tests.
 */
final class SoftmaxModel {

    private final Placeholder<TFloat32> x;
    private final Placeholder<TFloat32> w;
    private final Placeholder<TFloat32> b;
    private final Operand<TFloat32> probs;

    SoftmaxModel(Graph g, int in, int out) {
        Ops tf = Ops.create(g);
        x = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(-1, in)));
        w = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(in, out)));
        b = tf.placeholder(TFloat32.class, Placeholder.shape(Shape.of(out)));
        probs = tf.nn.softmax(tf.math.add(tf.linalg.matMul(x, w), b));
    }

    /** Runs the graph on the given inputs; the result's only tensor is the probabilities. */
    Result run(Session s, Tensor xt, Tensor wt, Tensor bt) {
        return s.runner().feed(x, xt).feed(w, wt).feed(b, bt).fetch(probs).run();
    }

    /** Deterministic values: {@code ((i * step) % mod - mod / 2) * scale}. */
    static float[] pattern(int n, int step, int mod, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = ((i * step) % mod - mod / 2) * scale;
        }
        return v;
    }
}
