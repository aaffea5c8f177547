/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/**
 * The {@code bfc} command ({@code io.github.bfc4j.cli.BfcCommand}): demo, verify, replay,
 * what-if, TensorFlow log import, HTML report, CUDA probe and a Prometheus endpoint. No API is
 * exported.
 */
@SuppressWarnings("requires-automatic")
module io.github.bfc4j.cli {
    requires io.github.bfc4j.core;
    requires io.github.bfc4j.cpu;
    requires io.github.bfc4j.cuda;
    requires io.github.bfc4j.micrometer;
    requires info.picocli;
    requires micrometer.registry.prometheus;
    requires java.logging;

    // picocli reads and sets the commands' annotated fields reflectively.
    opens io.github.bfc4j.cli to info.picocli;
}
