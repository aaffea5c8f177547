package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.OrtDeviceAllocator;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtMemTypeDefault;

import ai.djl.huggingface.tokenizers.Encoding;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.MemoryInfo;
import org.bytedeco.onnxruntime.RunOptions;
import org.bytedeco.onnxruntime.Session;
import org.bytedeco.onnxruntime.SessionOptions;
import org.bytedeco.onnxruntime.StringVector;
import org.bytedeco.onnxruntime.Value;
import org.bytedeco.onnxruntime.ValueVector;

/**
 * One ORT session over an {@link EmbeddingModel}, run on tokenized batches. {@link #run} is
 * thread-safe (ORT allows concurrent {@code Run} calls on one session).
 */
final class EmbeddingSession implements AutoCloseable {

    private static final String[] INPUTS = {"input_ids", "attention_mask", "token_type_ids"};

    private final Session session;
    private final SessionOptions options;
    private final MemoryInfo inputInfo = MemoryInfo.CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    private final PointerPointer<BytePointer> inputNames;
    private final PointerPointer<BytePointer> outputNames = new PointerPointer<>("last_hidden_state");
    /** For each of the model's inputs in its order: which of {@link #INPUTS} it is. */
    private final int[] inputKinds;

    /**
     * Options for a CPU session.
     *
     * @param useEnvAllocators whether the session takes its CPU memory from the registered
     *                         {@link BfcOrtAllocator} (else ORT's own arena)
     */
    static SessionOptions options(boolean useEnvAllocators) {
        SessionOptions options = new SessionOptions();
        if (useEnvAllocators) {
            BfcOrtAllocator.useEnvAllocators(options);
        }
        return options;
    }

    /**
     * Creates a session; it owns {@code options} from now on (closed with it, or here if
     * creation fails).
     */
    EmbeddingSession(Env env, EmbeddingModel model, SessionOptions options) {
        this.options = options;
        byte[] onnx = model.onnx();
        Session s = null;
        try (BytePointer bytes = new BytePointer(onnx)) {
            // ORT parses the bytes into its own graph: they may go once the session exists.
            s = new Session(env, bytes, onnx.length, options);
            String[] names;
            try (StringVector v = s.GetInputNames()) {
                names = new String[(int) v.size()];
                for (int i = 0; i < names.length; i++) {
                    names[i] = v.get(i).getString();
                }
            }
            inputKinds = new int[names.length];
            for (int i = 0; i < names.length; i++) {
                inputKinds[i] = java.util.Arrays.asList(INPUTS).indexOf(names[i]);
                if (inputKinds[i] < 0) {
                    throw new IllegalStateException(model + " has input " + names[i] + " (expected: one of "
                            + String.join(", ", INPUTS) + ")");
                }
            }
            inputNames = new PointerPointer<>(names);
        } catch (RuntimeException e) {
            if (s != null) {
                s.close();
            }
            closeNative();
            throw e;
        }
        session = s;
    }

    /**
     * Runs the model on a batch.
     *
     * @param batch encodings of one length (a padded batch)
     * @return the last hidden state
     * @throws RuntimeException ORT's error (e.g. out of memory), as JavaCPP reports it
     */
    Output run(Encoding[] batch) {
        try (Value y = run(batch, inputs(batch))) {
            return output(y, batch);
        }
    }

    /**
     * Runs the model on a batch and hands over ORT's output value, in the memory ORT allocated
     * for it (bfc4j's, with {@link BfcOrtAllocator#USE_ENV_ALLOCATORS}): the caller closes it, on
     * any thread.
     *
     * @param batch encodings of one length (a padded batch)
     * @return the last hidden state, {@code [batch, length, 384]}
     * @throws RuntimeException ORT's error (e.g. out of memory), as JavaCPP reports it
     */
    Value runToValue(Encoding[] batch) {
        return run(batch, inputs(batch));
    }

    /**
     * Runs the model on {@link #inputs}'s values of {@code batch}. Named {@code run}: the holder
     * of a run's memory, in the history, is the frame that calls ORT's {@code Run}.
     */
    private Value run(Encoding[] batch, long[][] values) {
        int n = batch.length;
        int length = batch[0].getIds().length;
        int inputs = inputKinds.length;
        LongPointer[] data = new LongPointer[inputs];
        try (LongPointer shape = new LongPointer(n, length);
                Value tensors = new Value(inputs);
                RunOptions runOptions = new RunOptions()) {
            for (int i = 0; i < inputs; i++) {
                data[i] = new LongPointer(values[inputKinds[i]]);
                try (Value v = Value.CreateTensorLong(inputInfo.asOrtMemoryInfo(), data[i], (long) n * length, shape, 2)) {
                    tensors.position(i).put(v);   // moves the Ort::Value into the array
                }
            }
            tensors.position(0);
            try (ValueVector outputs = session.Run(runOptions, inputNames, tensors, inputs, outputNames, 1)) {
                // The presets' get() moves the Ort::Value out of the vector: the caller owns it.
                return outputs.get(0);
            }
        } finally {
            for (LongPointer p : data) {
                if (p != null) {
                    p.close();
                }
            }
        }
    }

    /** What {@link #runToValue} returned for {@code batch}, read into Java arrays. */
    static Output output(Value y, Encoding[] batch) {
        int n = batch.length;
        int length = batch[0].getIds().length;
        float[] hidden = new float[n * length * EmbeddingModel.DIMENSIONS];
        y.GetTensorMutableDataFloat().get(hidden);
        return new Output(hidden, n, length, inputs(batch)[1]);
    }

    /** The batch's input ids, attention mask and token types, each row-major {@code [batch, length]}. */
    private static long[][] inputs(Encoding[] batch) {
        int n = batch.length;
        int length = batch[0].getIds().length;
        long[][] values = new long[INPUTS.length][n * length];
        for (int b = 0; b < n; b++) {
            long[][] rows = {batch[b].getIds(), batch[b].getAttentionMask(), batch[b].getTypeIds()};
            for (int k = 0; k < INPUTS.length; k++) {
                if (rows[k].length != length) {
                    throw new IllegalArgumentException("batch[" + b + "] has " + rows[k].length + " tokens (expected: "
                            + length + ", as batch[0]: pad the batch)");
                }
                System.arraycopy(rows[k], 0, values[k], b * length, length);
            }
        }
        return values;
    }

    @Override
    public void close() {
        session.close();
        closeNative();
    }

    private void closeNative() {
        options.close();
        inputInfo.close();
        if (inputNames != null) {
            inputNames.close();
        }
        outputNames.close();
    }

    /**
     * A batch's last hidden state, {@code [batch, length, 384]} row-major, and its attention mask.
     */
    record Output(float[] hidden, int batch, int length, long[] mask) {

        /** Each text's mean token state over its attention mask, normalized to length 1. */
        float[][] embeddings() {
            int d = EmbeddingModel.DIMENSIONS;
            float[][] e = new float[batch][d];
            for (int b = 0; b < batch; b++) {
                double[] sum = new double[d];
                int tokens = 0;
                for (int t = 0; t < length; t++) {
                    if (mask[b * length + t] == 0) {
                        continue;
                    }
                    tokens++;
                    int base = (b * length + t) * d;
                    for (int k = 0; k < d; k++) {
                        sum[k] += hidden[base + k];
                    }
                }
                double norm = 0;
                for (int k = 0; k < d; k++) {
                    sum[k] /= Math.max(1, tokens);
                    norm += sum[k] * sum[k];
                }
                norm = Math.sqrt(norm);
                for (int k = 0; k < d; k++) {
                    e[b][k] = (float) (sum[k] / norm);
                }
            }
            return e;
        }
    }

    /** The cosine similarity of two unit vectors: their dot product. */
    static double cosine(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (double) a[i] * b[i];
        }
        return s;
    }
}
