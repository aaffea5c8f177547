/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import picocli.CommandLine;

/** Runs {@code bfc} in-process and keeps what it printed. */
final class Cli {
    /** The bundled traces (surefire runs in the module's directory). */
    static final Path TRACES = Path.of("../conformance-tests/src/test/resources/traces");
    static final Path RECORDED = Path.of("../conformance-tests/src/test/resources/recorded");
    static final Path TF_LOG = Path.of("src/test/resources/tf-logs/tf218-mlp-train-3steps.log.gz");
    /** ONNX Runtime serving all-MiniLM-L6-v2 on bfc4j, recorded by bfc-onnxruntime (docs/cli.md). */
    static final Path ORT_SERVING = Path.of("src/test/resources/workloads/ort-minilm-serving.bfctrace.gz");

    String out;
    String err;

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
