/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The options of {@code bfc replay} and {@code bfc report}: what to run the trace under. */
final class RunOptions {

    @Option(names = "--memory-limit", paramLabel = "SIZE", description = "The allocator's memory limit.")
    String memoryLimit;

    @Option(names = "--allow-growth", arity = "0..1", fallbackValue = "true", paramLabel = "BOOL",
            description = "Grow regions from 2 MiB, doubling (true/false).")
    Boolean allowGrowth;

    @Option(names = "--garbage-collection", arity = "0..1", fallbackValue = "true", paramLabel = "BOOL",
            description = "Give free regions back before failing (true/false).")
    Boolean garbageCollection;

    @Option(names = "--fragmentation-fraction", paramLabel = "F",
            description = "Split threshold as a fraction of the limit (0: upstream's 128 MiB).")
    String fragmentationFraction;

    @Option(names = "--sub", paramLabel = "sim|host", defaultValue = "sim",
            description = "Where regions come from: sim (simulated addresses, default) or host (real memory).")
    String sub;

    @Option(names = {"-v", "--verbose"}, description = "Keep the allocator's log (its out-of-memory warnings).")
    boolean verbose;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    boolean debug;

    /**
     * The configuration: the options given, the trace header's values for the others. The
     * options are checked before the trace is opened.
     *
     * @param trace the trace
     * @return the configuration
     * @throws UsageException for a bad option value
     * @throws IOException if the trace's header cannot be read
     */
    RunConfig config(Path trace) throws IOException {
        Long limit = memoryLimit == null ? null : Sizes.parse("--memory-limit", memoryLimit);
        Double fraction = fragmentationFraction == null ? null
                : RunConfig.parseFraction("--fragmentation-fraction", fragmentationFraction);
        String subAllocator = RunConfig.parseSub(sub);
        RunConfig d = RunConfig.of(RunConfig.header(trace));
        return new RunConfig(
                limit == null ? d.memoryLimit() : limit,
                allowGrowth == null ? d.allowGrowth() : allowGrowth,
                garbageCollection == null ? d.garbageCollection() : garbageCollection,
                fraction == null ? d.fragmentationFraction() : fraction,
                subAllocator);
    }
}
