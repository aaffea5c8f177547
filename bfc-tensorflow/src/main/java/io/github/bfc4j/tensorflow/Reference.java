/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

/** Plain-Java computations, in double precision, to check TensorFlow's results against. */
final class Reference {

    private Reference() {
    }

    /**
     * {@code softmax(x W + b)} row by row, row-major.
     *
     * @param x batch x in
     * @param w in x out
     * @param b out
     * @return batch x out
     */
    static double[] softmaxAffine(float[] x, float[] w, float[] b, int batch, int in, int out) {
        double[] y = new double[batch * out];
        for (int i = 0; i < batch; i++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < out; j++) {
                double sum = b[j];
                for (int k = 0; k < in; k++) {
                    sum += (double) x[i * in + k] * w[k * out + j];
                }
                y[i * out + j] = sum;
                max = Math.max(max, sum);
            }
            double total = 0;
            for (int j = 0; j < out; j++) {
                y[i * out + j] = Math.exp(y[i * out + j] - max);
                total += y[i * out + j];
            }
            for (int j = 0; j < out; j++) {
                y[i * out + j] /= total;
            }
        }
        return y;
    }
}
