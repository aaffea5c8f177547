package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtDeviceAllocator;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtMemTypeDefault;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.MemoryInfo;
import org.bytedeco.onnxruntime.RunOptions;
import org.bytedeco.onnxruntime.Session;
import org.bytedeco.onnxruntime.SessionOptions;
import org.bytedeco.onnxruntime.TensorTypeAndShapeInfo;
import org.bytedeco.onnxruntime.Value;
import org.bytedeco.onnxruntime.ValueVector;

/**
 * One session over one of {@link OnnxModels}' models (input {@code X}, output {@code Y}, float),
 * run with Java arrays. Used by the example and the tests.
 */
final class OrtInference implements AutoCloseable {

    private final Session session;
    private final SessionOptions options;
    private final BytePointer model;
    private final MemoryInfo inputInfo = MemoryInfo.CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    private final PointerPointer<BytePointer> inputNames = new PointerPointer<>("X");
    private final PointerPointer<BytePointer> outputNames = new PointerPointer<>("Y");
    private final RunOptions runOptions = new RunOptions();

    /**
     * Creates a session on the CPU.
     *
     * @param env             the ORT environment
     * @param onnx            the serialized model
     * @param useEnvAllocators whether the session takes its memory from the registered
     *                        {@link BfcOrtAllocator} ({@value BfcOrtAllocator#USE_ENV_ALLOCATORS})
     */
    OrtInference(Env env, byte[] onnx, boolean useEnvAllocators) {
        this(env, onnx, useEnvAllocators, null);
    }

    /**
     * Creates a session, on the CUDA provider if {@code cuda} is not null.
     *
     * @param env             the ORT environment
     * @param onnx            the serialized model
     * @param useEnvAllocators whether CPU memory comes from the registered {@link BfcOrtAllocator}
     * @param cuda            the CUDA provider with bfc4j device memory, or null for CPU only
     */
    OrtInference(Env env, byte[] onnx, boolean useEnvAllocators, BfcCudaProvider cuda) {
        options = new SessionOptions();
        if (useEnvAllocators) {
            BfcOrtAllocator.useEnvAllocators(options);
        }
        if (cuda != null) {
            cuda.appendTo(options);
        }
        model = new BytePointer(onnx);
        Session s;
        try {
            s = new Session(env, model, onnx.length, options);
        } catch (RuntimeException e) {
            closeNative();
            throw e;
        }
        session = s;
    }

    /**
     * Runs the model on {@code input}.
     *
     * @param input the input tensor's values, row-major
     * @param shape its shape, batch first
     * @return the output tensor's values, row-major
     * @throws RuntimeException ORT's error (e.g. out of memory) as JavaCPP reports it
     */
    float[] run(float[] input, long... shape) {
        try (FloatPointer data = new FloatPointer(input);
                LongPointer dims = new LongPointer(shape);
                Value x = Value.CreateTensor(inputInfo.asOrtMemoryInfo(), data, 4L * input.length, dims, shape.length,
                        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
                ValueVector outputs = session.Run(runOptions, inputNames, x, 1, outputNames, 1);
                // The presets' get() moves the Ort::Value out of the vector: this object owns it.
                Value y = outputs.get(0)) {
            long n;
            try (TensorTypeAndShapeInfo info = y.GetTensorTypeAndShapeInfo()) {
                n = info.GetElementCount();
            }
            float[] result = new float[Math.toIntExact(n)];
            y.GetTensorMutableDataFloat().get(result);
            return result;
        }
    }

    @Override
    public void close() {
        session.close();
        closeNative();
    }

    private void closeNative() {
        options.close();
        model.close();
        inputInfo.close();
        inputNames.close();
        outputNames.close();
        runOptions.close();
    }
}
