/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.TraceReader;
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
            description = "Split threshold as a fraction of the limit, a decimal from 0 to 1 like 0.01"
                    + " (0: upstream's 128 MiB).")
    String fragmentationFraction;

    @Option(names = "--sub", paramLabel = "sim|host", defaultValue = "sim",
            description = "Where regions come from: sim (simulated addresses, default) or host (real memory).")
    String sub;

    @Option(names = {"-v", "--verbose"}, description = "Keep the allocator's log (its out-of-memory warnings).")
    boolean verbose;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    boolean debug;

    private Long limit;
    private Double fraction;
    private String subAllocator;
    private boolean checked;

    /**
     * Checks the option values, so that a bad one is reported before the trace is opened.
     *
     * @throws UsageException for a bad option value
     */
    void check() {
        limit = memoryLimit == null ? null : Sizes.parse("--memory-limit", memoryLimit);
        fraction = fragmentationFraction == null ? null
                : RunConfig.parseFraction("--fragmentation-fraction", fragmentationFraction);
        subAllocator = RunConfig.parseSub(sub);
        checked = true;
    }

    /**
     * The configuration: the options given, the trace header's values for the others.
     *
     * @param trace the trace, its header read
     * @return the configuration
     * @throws UsageException for a bad option value, or options that give a split threshold of 0
     * @throws TraceFormatException if the header's own options give a split threshold of 0
     */
    RunConfig config(TraceReader trace) throws TraceFormatException {
        if (!checked) {
            check();
        }
        RunConfig d = RunConfig.of(trace.header());
        RunConfig c = new RunConfig(
                limit == null ? d.memoryLimit() : limit,
                allowGrowth == null ? d.allowGrowth() : allowGrowth,
                garbageCollection == null ? d.garbageCollection() : garbageCollection,
                fraction == null ? d.fragmentationFraction() : fraction,
                subAllocator);
        RunConfig.checkThreshold(c.fragmentationFraction(),
                fraction == null ? null : "--fragmentation-fraction=" + Words.shown(fragmentationFraction),
                c.memoryLimit(), limit == null ? null : "--memory-limit=" + Words.shown(memoryLimit), trace);
        return c;
    }
}
