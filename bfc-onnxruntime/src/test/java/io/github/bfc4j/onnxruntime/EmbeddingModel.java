package io.github.bfc4j.onnxruntime;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;

/**
 * The public sentence-embedding models the tests and the example run: ONNX files and their
 * Hugging Face {@code tokenizer.json}, read from the langchain4j jars on the test class path
 * (Maven Central, {@code dev.langchain4j:langchain4j-embeddings-*-q}; only their resources are
 * used). Both are BERT encoders quantized to int8 (MatMulInteger, DynamicQuantizeLinear) with
 * inputs {@code input_ids}, {@code attention_mask}, {@code token_type_ids} ({@code int64},
 * {@code [batch, sequence]}) and output {@code last_hidden_state} ({@code float},
 * {@code [batch, sequence, 384]}); a sentence's embedding is the mean of its tokens' states,
 * normalized to length 1 (as sentence-transformers and langchain4j compute it).
 */
enum EmbeddingModel {
    /** sentence-transformers/all-MiniLM-L6-v2, 6 layers, quantized: 23 MB of ONNX. */
    ALL_MINILM_L6_V2_Q("all-minilm-l6-v2-q", "", ""),
    /** intfloat/e5-small-v2, 12 layers, quantized: 34 MB; texts carry "query: " or "passage: ". */
    E5_SMALL_V2_Q("e5-small-v2-q", "query: ", "passage: ");

    /** The width of both models' hidden states, and so of the embeddings. */
    static final int DIMENSIONS = 384;

    private final String resource;
    private final String queryPrefix;
    private final String passagePrefix;
    private volatile byte[] onnx;

    EmbeddingModel(String resource, String queryPrefix, String passagePrefix) {
        this.resource = resource;
        this.queryPrefix = queryPrefix;
        this.passagePrefix = passagePrefix;
    }

    /** The ONNX file's name in its jar. */
    String onnxResource() {
        return resource + ".onnx";
    }

    /** The serialized model, read from the class path once. */
    byte[] onnx() {
        byte[] b = onnx;
        if (b == null) {
            b = read(onnxResource());
            onnx = b;
        }
        return b;
    }

    /** What the model expects before a query ("query: " for e5, nothing for MiniLM). */
    String query(String text) {
        return queryPrefix + text;
    }

    /** What the model expects before a passage ("passage: " for e5, nothing for MiniLM). */
    String passage(String text) {
        return passagePrefix + text;
    }

    /**
     * A tokenizer that pads a batch to its longest text and truncates at {@code maxLength}
     * tokens ({@code [CLS]} and {@code [SEP]} included).
     */
    HuggingFaceTokenizer tokenizer(int maxLength) {
        return tokenizer(Map.of("padding", "true", "truncation", "true", "maxLength", Integer.toString(maxLength)));
    }

    /**
     * A tokenizer whose every encoding is exactly {@code length} tokens: longer texts are cut,
     * shorter ones padded (attention mask 0).
     */
    HuggingFaceTokenizer fixedLengthTokenizer(int length) {
        return tokenizer(Map.of("padding", "max_length", "truncation", "true", "maxLength", Integer.toString(length)));
    }

    private HuggingFaceTokenizer tokenizer(Map<String, String> options) {
        try (InputStream in = open(resource + "-tokenizer.json")) {
            return HuggingFaceTokenizer.newInstance(in, options);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Encodes texts as one batch: every encoding of the same length. */
    static Encoding[] encode(HuggingFaceTokenizer tokenizer, List<String> texts) {
        return tokenizer.batchEncode(texts);
    }

    private static byte[] read(String name) {
        try (InputStream in = open(name)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static InputStream open(String name) {
        InputStream in = EmbeddingModel.class.getClassLoader().getResourceAsStream(name);
        if (in == null) {
            throw new IllegalStateException(name + " is not on the class path (expected: the"
                    + " dev.langchain4j:langchain4j-embeddings-*-q test dependencies of bfc-onnxruntime)");
        }
        return in;
    }
}
