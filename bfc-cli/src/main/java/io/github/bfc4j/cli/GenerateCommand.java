/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceWriter;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bfc generate --seed N -o TRACE [settings]}: writes a seeded random workload trace
 * ({@link WorkloadGenerator}), the input of the differential check against TensorFlow's C++
 * allocator (docs/conformance.md). Settings not given are drawn from the seed; the trace's
 * {@code source} line holds the command that regenerates it. {@code --count N} writes the
 * traces of seeds N, N+1, ... in one run, each to {@code -o} with {@code {seed}} replaced, and
 * stops after the trace whose line could not be written to standard output (its reader has gone).
 *
 * <p>Exit status: 0 written, 2 bad options or an unwritable file.
 */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description = {
            "Writes a seeded random workload trace (calls only, no answers): the same seed and options give"
                    + " the same file, byte for byte. Settings not given are drawn from the seed.",
            "Exit status: 0 written, 2 bad options or an unwritable file."
        })
public final class GenerateCommand implements Callable<Integer> {
    private static final String SEED = "{seed}";
    /**
     * The most calls a trace may be given: a thousand times the most drawn, about 1.8 GB of
     * trace. Without a bound, {@code --calls 9223372036854775807} wrote until the disk was full.
     */
    static final long MAX_CALLS = 100_000_000;

    @Spec
    private CommandSpec spec;

    @Option(names = "--seed", required = true, paramLabel = "N", description = "The seed (any 64-bit integer).")
    private long seed;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "TRACE",
            description = "The trace to write (.bfctrace, or .bfctrace.gz to compress); with --count, a name"
                    + " holding {seed}.")
    private String output;

    @Option(names = "--count", paramLabel = "N", defaultValue = "1",
            description = "Write the traces of N seeds, from --seed up (default: 1).")
    private BigInteger countArg; // any integer, so that a count past a long gets this option's own range
    private long count;

    @Option(names = "--calls", paramLabel = "N",
            description = "Calls in the trace (alloc, free, frontier, clear_stats), not counting the frees"
                    + " that may end it, at most 100000000 (default: drawn, 1000 to 100000).")
    private BigInteger callsArg; // any integer, as --count
    private Long calls;

    @Option(names = "--memory-limit", paramLabel = "SIZE", description = "Default: drawn, 1MiB to 80GiB.")
    private String memoryLimit;

    @Option(names = "--allow-growth", paramLabel = "BOOL", description = "Default: drawn.")
    private String allowGrowth;

    @Option(names = "--garbage-collection", paramLabel = "BOOL", description = "Default: drawn.")
    private String garbageCollection;

    @Option(names = "--fragmentation-fraction", paramLabel = "F",
            description = "Default: drawn from 0, 0.000001, 0.01, 0.1, 0.5.")
    private String fragmentationFraction;

    @Option(names = "--timing-counter", paramLabel = "BOOL",
            description = "Default: drawn. With it, allocations carry freed_before= and frontier lines follow the"
                    + " frees.")
    private String timingCounter;

    @Option(names = "--capacity", paramLabel = "SIZE",
            description = "The sim's address space (default: drawn: twice the limit, or less than the limit so"
                    + " that Extend backs off, or about the limit).")
    private String capacity;

    @Option(names = "--gap", paramLabel = "BYTES", description = "The sim's gap after each region (default: drawn"
            + " from 0, 256, 4096, 2MiB).")
    private String gap;

    @Option(names = "--coalescing", paramLabel = "BOOL", description = "What the sim's supportsCoalescing()"
            + " answers (default: drawn).")
    private String coalescing;

    @Option(names = "--release-rate", paramLabel = "R",
            description = "The chance, from 0 to 1, that a phase begins with a release: every live allocation but"
                    + " 0 to 3 freed, a block of more than half the limit allocated and freed, a larger one"
                    + " requested; the pattern that makes garbage collection give regions back (default: 0, none).")
    private String releaseRate;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    private boolean debug;

    /** Creates the command; picocli fills its fields. */
    public GenerateCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, debug, false, () -> {
            calls = callsArg == null ? null
                    : WholeNumbers.inRange("--calls", callsArg, 1, MAX_CALLS, "1 to " + MAX_CALLS);
            count = WholeNumbers.inRange("--count", countArg, 1, Integer.MAX_VALUE, "1 to " + Integer.MAX_VALUE);
            if (seed > Long.MAX_VALUE - (count - 1)) {
                throw new UsageException("--seed=" + seed + " --count=" + count + " (expected: seeds up to "
                        + Long.MAX_VALUE + "; the last would be past it)");
            }
            if (count > 1 && !output.contains(SEED)) {
                throw new UsageException("-o=" + CommandRunner.visible(output) + " (expected with --count: a name"
                        + " holding " + SEED + ", e.g. traces/g" + SEED + ".bfctrace)");
            }
            List<String> given = new ArrayList<>();
            WorkloadGenerator.Overrides o = new WorkloadGenerator.Overrides(
                    calls,
                    memoryLimit == null ? null : Sizes.parse("--memory-limit", memoryLimit),
                    bool("--allow-growth", allowGrowth),
                    bool("--garbage-collection", garbageCollection),
                    fragmentationFraction == null ? null
                            : RunConfig.parseFraction("--fragmentation-fraction", fragmentationFraction),
                    bool("--timing-counter", timingCounter),
                    capacity == null ? null : Sizes.parse("--capacity", capacity),
                    gap == null ? null : gapBytes(gap),
                    bool("--coalescing", coalescing),
                    releaseRate == null ? null : rate("--release-rate", releaseRate));
            addGiven(given, "--calls", calls);
            addGiven(given, "--memory-limit", memoryLimit);
            addGiven(given, "--allow-growth", allowGrowth);
            addGiven(given, "--garbage-collection", garbageCollection);
            addGiven(given, "--fragmentation-fraction", fragmentationFraction);
            addGiven(given, "--timing-counter", timingCounter);
            addGiven(given, "--capacity", capacity);
            addGiven(given, "--gap", gap);
            addGiven(given, "--coalescing", coalescing);
            addGiven(given, "--release-rate", releaseRate);
            // Every name first: a bad one for a later seed must not leave the earlier ones written.
            for (int i = 0; i < count; i++) {
                OutputFile.check("-o", OutputFile.path("-o", output.replace(SEED, Long.toString(seed + i))),
                        "trace.bfctrace");
            }
            for (int i = 0; i < count; i++) {
                long traceSeed = seed + i;
                Path file = Path.of(output.replace(SEED, Long.toString(traceSeed)));
                String again = "bfc generate --seed " + traceSeed
                        + (given.isEmpty() ? "" : " " + String.join(" ", given));
                write(WorkloadGenerator.settings(traceSeed, o), file, again);
                if (StandardOutput.failed(spec.commandLine().getOut())) {
                    // Its reader has gone (| head -1), or it cannot be written: the traces written
                    // are whole, the others are not written.
                    break;
                }
            }
            return CommandRunner.EXIT_OK;
        });
    }

    private void write(WorkloadGenerator.Settings s, Path file, String source) throws IOException {
        boolean gzip = file.getFileName().toString().endsWith(".gz");
        OutputFile.write("-o", file, "trace.bfctrace", f -> {
            try (TraceWriter w = TraceWriter.create(f, gzip)) {
                WorkloadGenerator.write(s, source, w);
            }
        });
        spec.commandLine().getOut().println("wrote " + file + ": seed " + s.seed() + ", "
                + Counts.of(s.calls(), "call") + ", memory_limit=" + s.memoryLimit()
                + " allow_growth=" + s.allowGrowth()
                + " garbage_collection=" + s.garbageCollection() + " fragmentation_fraction="
                + RunConfig.fraction(s.fragmentationFraction()) + " timing_counter=" + s.timingCounter()
                + ", sim capacity=" + s.simCapacity() + " gap=" + s.simGap() + " coalescing="
                + s.simCoalescing());
    }

    private static Boolean bool(String option, String value) {
        return value == null ? null : RunConfig.parseBoolean(option, value);
    }

    private static double rate(String option, String value) {
        double r = RunConfig.parseDecimal(value);
        if (!(r >= 0 && r <= 1)) {
            throw new UsageException(option + "=" + Words.shown(value) + " (expected: a chance from 0 to 1, a decimal"
                    + " like 0.3)");
        }
        return r;
    }

    private static long gapBytes(String value) {
        if (Words.strip(value).equals("0")) {
            return 0;
        }
        return Sizes.parse("--gap", value);
    }

    private static void addGiven(List<String> given, String option, Object value) {
        if (value != null) {
            given.add(option + " " + value);
        }
    }
}
