package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Random;

/** The test models computed in plain Java (double precision), independently of ORT. */
final class Reference {

    /** Float32 kernels against a double reference: far below any real mistake. */
    static final float TOLERANCE = 1e-4f;

    private Reference() {
    }

    static float[] mlp(OnnxModels.Mlp m, float[] x, int batch) {
        float[] y = new float[batch * m.classes()];
        double[] h = new double[m.hidden()];
        double[] z = new double[m.classes()];
        for (int n = 0; n < batch; n++) {
            for (int j = 0; j < m.hidden(); j++) {
                double s = m.b1()[j];
                for (int i = 0; i < m.inputs(); i++) {
                    s += (double) x[n * m.inputs() + i] * m.w1()[i * m.hidden() + j];
                }
                h[j] = Math.max(0, s);
            }
            double max = Double.NEGATIVE_INFINITY;
            for (int k = 0; k < m.classes(); k++) {
                double s = m.b2()[k];
                for (int j = 0; j < m.hidden(); j++) {
                    s += h[j] * m.w2()[j * m.classes() + k];
                }
                z[k] = s;
                max = Math.max(max, s);
            }
            double sum = 0;
            for (int k = 0; k < m.classes(); k++) {
                z[k] = Math.exp(z[k] - max);
                sum += z[k];
            }
            for (int k = 0; k < m.classes(); k++) {
                y[n * m.classes() + k] = (float) (z[k] / sum);
            }
        }
        return y;
    }

    static float[] conv(OnnxModels.ConvNet m, float[] x, int batch) {
        int c = m.inChannels();
        int o = m.outChannels();
        int hh = m.height();
        int ww = m.width();
        float[] y = new float[batch * o * hh * ww];
        for (int n = 0; n < batch; n++) {
            for (int oc = 0; oc < o; oc++) {
                for (int r = 0; r < hh; r++) {
                    for (int col = 0; col < ww; col++) {
                        double s = m.b()[oc];
                        for (int ic = 0; ic < c; ic++) {
                            for (int kr = 0; kr < 3; kr++) {
                                for (int kc = 0; kc < 3; kc++) {
                                    int ir = r + kr - 1;
                                    int icol = col + kc - 1;
                                    if (ir < 0 || ir >= hh || icol < 0 || icol >= ww) {
                                        continue;   // zero padding
                                    }
                                    s += (double) x[((n * c + ic) * hh + ir) * ww + icol]
                                            * m.w()[((oc * c + ic) * 3 + kr) * 3 + kc];
                                }
                            }
                        }
                        y[((n * o + oc) * hh + r) * ww + col] = (float) Math.max(0, s);
                    }
                }
            }
        }
        return y;
    }

    static float[] random(Random random, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = random.nextFloat() * 2 - 1;
        }
        return a;
    }

    static void assertClose(float[] actual, float[] expected, String what) {
        assertClose(actual, expected, TOLERANCE, what);
    }

    static void assertClose(float[] actual, float[] expected, float tolerance, String what) {
        assertThat(actual).as(what + ": length").hasSameSizeAs(expected);
        for (int i = 0; i < expected.length; i++) {
            assertThat(actual[i]).as(what + "[" + i + "]").isCloseTo(expected[i], within(tolerance));
        }
    }
}
