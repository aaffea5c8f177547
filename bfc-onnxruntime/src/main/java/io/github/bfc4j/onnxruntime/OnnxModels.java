package io.github.bfc4j.onnxruntime;

import java.util.Random;

/**
 * Small ONNX models written out as protobuf bytes, with their weights kept so that a caller can
 * compute the expected outputs independently. Used by the tests and by
 * {@link OnnxRuntimeExample}; no ONNX library is needed.
 *
 * <p>Both models have a dynamic batch dimension ({@code dim_param "N"}), IR version 8 and
 * opset 13 of the default domain.
 */
public final class OnnxModels {

    // onnx.proto field numbers.
    private static final int MODEL_IR_VERSION = 1;
    private static final int MODEL_PRODUCER_NAME = 2;
    private static final int MODEL_GRAPH = 7;
    private static final int MODEL_OPSET_IMPORT = 8;
    private static final int OPSET_DOMAIN = 1;
    private static final int OPSET_VERSION = 2;
    private static final int GRAPH_NODE = 1;
    private static final int GRAPH_NAME = 2;
    private static final int GRAPH_INITIALIZER = 5;
    private static final int GRAPH_INPUT = 11;
    private static final int GRAPH_OUTPUT = 12;
    private static final int NODE_INPUT = 1;
    private static final int NODE_OUTPUT = 2;
    private static final int NODE_NAME = 3;
    private static final int NODE_OP_TYPE = 4;
    private static final int NODE_ATTRIBUTE = 5;
    private static final int ATTRIBUTE_NAME = 1;
    private static final int ATTRIBUTE_INTS = 8;
    private static final int ATTRIBUTE_TYPE = 20;
    private static final int ATTRIBUTE_TYPE_INTS = 7;
    private static final int TENSOR_DIMS = 1;
    private static final int TENSOR_DATA_TYPE = 2;
    private static final int TENSOR_FLOAT_DATA = 4;
    private static final int TENSOR_NAME = 8;
    private static final int TENSOR_FLOAT = 1;
    private static final int VALUE_INFO_NAME = 1;
    private static final int VALUE_INFO_TYPE = 2;
    private static final int TYPE_TENSOR_TYPE = 1;
    private static final int TENSOR_TYPE_ELEM_TYPE = 1;
    private static final int TENSOR_TYPE_SHAPE = 2;
    private static final int SHAPE_DIM = 1;
    private static final int DIM_VALUE = 1;
    private static final int DIM_PARAM = 2;

    private static final long IR_VERSION = 8;
    private static final long OPSET = 13;
    /** The dynamic batch dimension's name. */
    private static final String BATCH = "N";

    private OnnxModels() {
    }

    /**
     * A two-layer perceptron: {@code Y = Softmax(Relu(X·W1 + B1)·W2 + B2)} over the last axis.
     *
     * @param inputs  features per example ({@code X} is {@code [N, inputs]})
     * @param hidden  hidden units
     * @param classes outputs per example ({@code Y} is {@code [N, classes]})
     * @param w1      {@code [inputs, hidden]}, row-major
     * @param b1      {@code [hidden]}
     * @param w2      {@code [hidden, classes]}, row-major
     * @param b2      {@code [classes]}
     * @param onnx    the serialized {@code ModelProto}
     */
    public record Mlp(int inputs, int hidden, int classes, float[] w1, float[] b1, float[] w2, float[] b2,
            byte[] onnx) {
    }

    /**
     * A convolution: {@code Y = Relu(Conv(X, W, B))}, 3x3 kernels, stride 1, padding 1 on each
     * side, so {@code Y} is {@code [N, outChannels, height, width]}.
     *
     * @param inChannels  channels of {@code X} ({@code [N, inChannels, height, width]})
     * @param outChannels channels of {@code Y}
     * @param height      image height
     * @param width       image width
     * @param w           {@code [outChannels, inChannels, 3, 3]}, row-major
     * @param b           {@code [outChannels]}
     * @param onnx        the serialized {@code ModelProto}
     */
    public record ConvNet(int inChannels, int outChannels, int height, int width, float[] w, float[] b,
            byte[] onnx) {
    }

    /**
     * Builds an MLP with weights drawn from {@code new Random(seed)}, uniform in
     * [-1/sqrt(fan-in), 1/sqrt(fan-in)) (fan-in: the inputs of the layer; biases likewise).
     *
     * @param inputs  features per example, at least 1
     * @param hidden  hidden units, at least 1
     * @param classes outputs per example, at least 1
     * @param seed    the weights' seed
     * @return the model and its weights
     * @throws IllegalArgumentException if a size is below 1
     */
    public static Mlp mlp(int inputs, int hidden, int classes, long seed) {
        checkPositive("inputs", inputs);
        checkPositive("hidden", hidden);
        checkPositive("classes", classes);
        Random random = new Random(seed);
        float[] w1 = uniform(random, inputs * hidden, inputs);
        float[] b1 = uniform(random, hidden, inputs);
        float[] w2 = uniform(random, hidden * classes, hidden);
        float[] b2 = uniform(random, classes, hidden);
        OnnxProtoWriter graph = new OnnxProtoWriter()
                .message(GRAPH_NODE, node("matmul1", "MatMul", "X", "W1", "H0"))
                .message(GRAPH_NODE, node("add1", "Add", "H0", "B1", "H1"))
                .message(GRAPH_NODE, node("relu", "Relu", "H1", "H2"))
                .message(GRAPH_NODE, node("matmul2", "MatMul", "H2", "W2", "H3"))
                .message(GRAPH_NODE, node("add2", "Add", "H3", "B2", "H4"))
                .message(GRAPH_NODE, node("softmax", "Softmax", "H4", "Y"))
                .string(GRAPH_NAME, "mlp")
                .message(GRAPH_INITIALIZER, tensor("W1", new long[] {inputs, hidden}, w1))
                .message(GRAPH_INITIALIZER, tensor("B1", new long[] {hidden}, b1))
                .message(GRAPH_INITIALIZER, tensor("W2", new long[] {hidden, classes}, w2))
                .message(GRAPH_INITIALIZER, tensor("B2", new long[] {classes}, b2))
                .message(GRAPH_INPUT, valueInfo("X", inputs))
                .message(GRAPH_OUTPUT, valueInfo("Y", classes));
        return new Mlp(inputs, hidden, classes, w1, b1, w2, b2, model(graph));
    }

    /**
     * Builds a 3x3 convolution with ReLU, weights drawn from {@code new Random(seed)}, uniform in
     * [-1/sqrt(fan-in), 1/sqrt(fan-in)) with fan-in {@code 9 * inChannels} (biases likewise).
     *
     * @param inChannels  input channels, at least 1
     * @param outChannels output channels, at least 1
     * @param height      image height, at least 1
     * @param width       image width, at least 1
     * @param seed        the weights' seed
     * @return the model and its weights
     * @throws IllegalArgumentException if a size is below 1
     */
    public static ConvNet conv(int inChannels, int outChannels, int height, int width, long seed) {
        checkPositive("inChannels", inChannels);
        checkPositive("outChannels", outChannels);
        checkPositive("height", height);
        checkPositive("width", width);
        Random random = new Random(seed);
        float[] w = uniform(random, outChannels * inChannels * 9, inChannels * 9);
        float[] b = uniform(random, outChannels, inChannels * 9);
        OnnxProtoWriter conv = node("conv", "Conv", "X", "W", "B", "C")
                .message(NODE_ATTRIBUTE, intsAttribute("kernel_shape", 3, 3))
                .message(NODE_ATTRIBUTE, intsAttribute("pads", 1, 1, 1, 1))
                .message(NODE_ATTRIBUTE, intsAttribute("strides", 1, 1));
        OnnxProtoWriter graph = new OnnxProtoWriter()
                .message(GRAPH_NODE, conv)
                .message(GRAPH_NODE, node("relu", "Relu", "C", "Y"))
                .string(GRAPH_NAME, "conv")
                .message(GRAPH_INITIALIZER, tensor("W", new long[] {outChannels, inChannels, 3, 3}, w))
                .message(GRAPH_INITIALIZER, tensor("B", new long[] {outChannels}, b))
                .message(GRAPH_INPUT, valueInfo("X", inChannels, height, width))
                .message(GRAPH_OUTPUT, valueInfo("Y", outChannels, height, width));
        return new ConvNet(inChannels, outChannels, height, width, w, b, model(graph));
    }

    private static byte[] model(OnnxProtoWriter graph) {
        return new OnnxProtoWriter()
                .varint(MODEL_IR_VERSION, IR_VERSION)
                .string(MODEL_PRODUCER_NAME, "bfc4j")
                .message(MODEL_GRAPH, graph)
                .message(MODEL_OPSET_IMPORT, new OnnxProtoWriter()
                        .string(OPSET_DOMAIN, "")
                        .varint(OPSET_VERSION, OPSET))
                .toByteArray();
    }

    /** A node; the last name is the output, the others the inputs. */
    private static OnnxProtoWriter node(String name, String opType, String... inputsThenOutput) {
        OnnxProtoWriter n = new OnnxProtoWriter();
        for (int i = 0; i < inputsThenOutput.length - 1; i++) {
            n.string(NODE_INPUT, inputsThenOutput[i]);
        }
        return n.string(NODE_OUTPUT, inputsThenOutput[inputsThenOutput.length - 1])
                .string(NODE_NAME, name)
                .string(NODE_OP_TYPE, opType);
    }

    private static OnnxProtoWriter intsAttribute(String name, long... values) {
        return new OnnxProtoWriter()
                .string(ATTRIBUTE_NAME, name)
                .packedVarints(ATTRIBUTE_INTS, values)
                .varint(ATTRIBUTE_TYPE, ATTRIBUTE_TYPE_INTS);
    }

    private static OnnxProtoWriter tensor(String name, long[] dims, float[] data) {
        return new OnnxProtoWriter()
                .packedVarints(TENSOR_DIMS, dims)
                .varint(TENSOR_DATA_TYPE, TENSOR_FLOAT)
                .packedFloats(TENSOR_FLOAT_DATA, data)
                .string(TENSOR_NAME, name);
    }

    /** A float tensor {@code [N, fixedDims...]}. */
    private static OnnxProtoWriter valueInfo(String name, long... fixedDims) {
        OnnxProtoWriter shape = new OnnxProtoWriter()
                .message(SHAPE_DIM, new OnnxProtoWriter().string(DIM_PARAM, BATCH));
        for (long d : fixedDims) {
            shape.message(SHAPE_DIM, new OnnxProtoWriter().varint(DIM_VALUE, d));
        }
        OnnxProtoWriter tensorType = new OnnxProtoWriter()
                .varint(TENSOR_TYPE_ELEM_TYPE, TENSOR_FLOAT)
                .message(TENSOR_TYPE_SHAPE, shape);
        return new OnnxProtoWriter()
                .string(VALUE_INFO_NAME, name)
                .message(VALUE_INFO_TYPE, new OnnxProtoWriter().message(TYPE_TENSOR_TYPE, tensorType));
    }

    private static float[] uniform(Random random, int n, int fanIn) {
        float scale = (float) (1 / Math.sqrt(fanIn));
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (random.nextFloat() * 2 - 1) * scale;
        }
        return a;
    }

    private static void checkPositive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + "=" + value + " (expected: >= 1)");
        }
    }
}
