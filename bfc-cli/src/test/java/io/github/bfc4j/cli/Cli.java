/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.SourceTree;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine;

/** Runs {@code bfc} in-process and keeps what it printed. */
final class Cli {
    /** The bundled traces, found whatever the working directory (SourceTree). */
    static final Path TRACES = SourceTree.resolve("conformance-tests/src/test/resources/traces");
    static final Path RECORDED = SourceTree.resolve("conformance-tests/src/test/resources/recorded");
    static final Path TF_LOG = SourceTree.resolve("bfc-cli/src/test/resources/tf-logs/tf218-mlp-train-3steps.log.gz");
    /** ONNX Runtime serving all-MiniLM-L6-v2 on bfc4j, recorded by bfc-onnxruntime (docs/cli.md). */
    static final Path ORT_SERVING = SourceTree.resolve("bfc-cli/src/test/resources/workloads/ort-minilm-serving.bfctrace.gz");

    String out;
    String err;

    /**
     * Runs {@code bfc} with these bytes on standard input ({@code -} reads them).
     *
     * @param stdin what standard input holds
     * @param args the arguments
     * @return the exit status
     */
    int runWithStdin(byte[] stdin, Object... args) {
        return runWithStdin(new ByteArrayInputStream(stdin), args);
    }

    /** Runs the command with {@code stdin} as standard input (it may never end). */
    int runWithStdin(InputStream stdin, Object... args) {
        InputStream saved = System.in;
        System.setIn(stdin);
        try {
            return run(args);
        } finally {
            System.setIn(saved);
        }
    }

    /**
     * A workload trace of calls that end with {@code free 648}, and the same trace cut inside
     * that line, as a truncated copy would be: {@code free 6}, a valid line, and no line break.
     *
     * @param dir where to write them
     * @return {whole, cut}
     * @throws IOException if they cannot be written
     */
    static Path[] wholeAndCutTraces(Path dir) throws IOException {
        String whole = "bfctrace 1\nname cut: a trace cut inside its last line\nsource workload: a test\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=69206016 gap=0 coalescing=true\n"
                + "alloc 6 1000\nalloc 648 2000\nfree 648\n";
        Path w = dir.resolve("whole.bfctrace");
        Path c = dir.resolve("cut.bfctrace");
        Files.writeString(w, whole);
        Files.writeString(c, whole.substring(0, whole.length() - "48\n".length()));
        return new Path[] {w, c};
    }

    int run(Object... args) {
        String[] a = new String[args.length];
        for (int i = 0; i < args.length; i++) {
            a[i] = String.valueOf(args[i]);
        }
        CommandLine cmd = BfcCommand.commandLine();
        StringWriter o = new StringWriter();
        StringWriter e = new StringWriter();
        cmd.setOut(new PrintWriter(o));
        cmd.setErr(new PrintWriter(e));
        int code = cmd.execute(a);
        out = o.toString();
        err = e.toString();
        return code;
    }
}
