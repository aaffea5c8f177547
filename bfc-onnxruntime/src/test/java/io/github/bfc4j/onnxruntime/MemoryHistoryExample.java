/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.trace.SnapshotTraces;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.bytedeco.onnxruntime.Env;

/**
 * Who holds the memory of a real workload: ONNX Runtime serves sentence embeddings with
 * all-MiniLM-L6-v2 (the model of {@link OnnxRuntimeExample}) for several requests of different
 * batch sizes and lengths, with its CPU memory from a bfc4j allocator that records its history
 * (Java stacks, and an annotation per request); then writes {@code snapshot.pickle} (PyTorch's
 * memory snapshot, for pytorch.org/memory_viz) and {@code ort-minilm.bfctrace} (the workload
 * with its provenance, for {@code bfc report}), and prints the memory summary with its largest
 * holders.
 *
 * <pre>
 * java -cp ... io.github.bfc4j.onnxruntime.MemoryHistoryExample [DIR]   # DIR: an existing directory for the files (default .)
 * </pre>
 */
public final class MemoryHistoryExample {

    private static final long SEED = 42;

    /** Requests, one a step. */
    static final int STEPS = 8;

    private static final int[] BATCHES = {1, 4, 16};
    private static final int[] LENGTHS = {16, 64, 128};

    private MemoryHistoryExample() {
    }

    private static final String USAGE = "usage: MemoryHistoryExample [DIR]   (DIR: an existing directory for"
            + " snapshot.pickle and ort-minilm.bfctrace; default: the current directory)";

    /**
     * Runs the example.
     *
     * @param args none, or the directory to write the files to
     * @throws IOException if a file cannot be written
     */
    public static void main(String[] args) throws IOException {
        if (args.length == 1 && (args[0].equals("-h") || args[0].equals("--help"))) {
            System.out.println(USAGE);
            return;
        }
        if (args.length > 1) {
            System.err.println(USAGE);
            System.exit(2);
        }
        try {
            run(System.out, Path.of(args.length == 1 ? args[0] : "."));
        } catch (IllegalArgumentException e) {
            System.err.println("MemoryHistoryExample: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        }
    }

    /**
     * The example, writing its files to {@code dir}.
     *
     * @throws IllegalArgumentException if {@code dir} is not an existing directory (a word given by
     *     mistake, {@code extra} or {@code --verbose}, is not made a directory), before the model is
     *     loaded
     */
    static void run(PrintStream out, Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("DIR=" + dir + (Files.exists(dir) ? " is not a directory" : " does not"
                    + " exist") + " (expected: an existing directory for snapshot.pickle and ort-minilm.bfctrace;"
                    + " create it first, or give none for the current directory)");
        }
        List<Encoding[]> requests = requests();
        MemorySnapshot snapshot;
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-history");
                BfcAllocator bfc = OnnxRuntimeExample.allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            // Before the first allocation, so that the history is complete (and replayable).
            bfc.recordHistory(HistoryOptions.defaults());
            EmbeddingSession session;
            try (MemoryAnnotation a = MemoryAnnotation.push("session/load")) {
                session = new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q, EmbeddingSession.options(true));
            }
            try (session) {
                for (int step = 0; step < STEPS; step++) {
                    Encoding[] request = requests.get(step);
                    try (MemoryAnnotation a = MemoryAnnotation.push(ServingWorkload.annotation(request), step)) {
                        session.run(request);
                    }
                }
                // While the session (its weights) is still open.
                snapshot = bfc.snapshot();
                out.println(bfc.memorySummary());
            }
        }
        Path pickle = dir.resolve("snapshot.pickle");
        Path trace = dir.resolve("ort-minilm.bfctrace");
        snapshot.writePyTorchPickle(pickle);
        SnapshotTraces.write(snapshot, trace);
        out.println("Recorded " + snapshot.history().events().size() + " events of allocator '"
                + snapshot.memoryMap().allocatorName() + "' (" + STEPS + " requests).");
        out.println("Wrote " + pickle + ": open https://pytorch.org/memory_viz and drag the file onto the page"
                + " (it is read in the browser, nothing is uploaded).");
        out.println("Wrote " + trace + ": bin/bfc report " + trace + " -o report.html");
    }

    /** The requests the example serves, tokenized. */
    static List<Encoding[]> requests() {
        return ServingWorkload.requests(EmbeddingModel.ALL_MINILM_L6_V2_Q, new Random(SEED), STEPS, BATCHES, LENGTHS,
                1024);
    }
}
