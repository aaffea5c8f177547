/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */

/**
 * The BFC allocator (a faithful port of TensorFlow's), its options, statistics and pluggable
 * sub-allocators; a simulated address space; the trace reader, writer and replayer.
 */
@SuppressWarnings("module")
module io.github.bfc4j.core {
    // Allocation's views are JavaCPP pointers.
    requires transitive org.bytedeco.javacpp;
    // The allocator's JDK Flight Recorder events.
    requires jdk.jfr;

    exports io.github.bfc4j.core;
    exports io.github.bfc4j.core.sim;
    exports io.github.bfc4j.trace;
    // Not exported to users: io.github.bfc4j.core.internal (chunk table, bins, regions) and
    // io.github.bfc4j.core.jfr (the events are recorded by name, docs/observability.md; the
    // recorder needs no export). The bfc command writes its -o files with the internal
    // ReplacingFile, as this module writes its traces and pickles, and reads gzip logs with the
    // internal GzipMembers, as this module reads gzip traces: one implementation of each.
    // ("module" warnings suppressed: bfc-cli is built after this module, so javac compiling
    // this descriptor does not find it.)
    exports io.github.bfc4j.core.internal to io.github.bfc4j.cli;
}
