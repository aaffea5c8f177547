/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.WorkloadResult;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc whatif TRACE --memory-limit 8GiB,12GiB,16GiB [--allow-growth true,false] ...}:
 * replays a trace under every combination of the values given (each option defaults to the
 * header's value) and prints one table row per combination: peak in use, peak reserved,
 * out-of-memory count, first failing line, fragmentation at peak. The last line names the
 * smallest memory limit that ran without running out of memory.
 *
 * <p>Exit status: 0 if some combination ran without running out of memory, 1 if none did, 2
 * bad options or an unreadable trace.
 */
@Command(
        name = "whatif",
        mixinStandardHelpOptions = true,
        description = {
            "Replays a trace under every combination of the option values given (comma-separated; each"
                    + " defaults to the trace header's) and prints one row per combination: peak in use, peak"
                    + " reserved, out-of-memory count, first failing line, fragmentation at peak.",
            "Exit status: 0 some combination never ran out of memory, 1 all did, 2 bad options or an"
                    + " unreadable trace."
        })
public final class WhatIfCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "TRACE", description = "A trace (.bfctrace or .bfctrace.gz; workload or conformance).")
    private Path trace;

    @Option(names = "--memory-limit", split = ",", paramLabel = "SIZE",
            description = "Memory limits to try, e.g. 8GiB,12GiB,16GiB.")
    private List<String> memoryLimits;

    @Option(names = "--allow-growth", split = ",", paramLabel = "BOOL", description = "e.g. true,false.")
    private List<String> allowGrowth;

    @Option(names = "--garbage-collection", split = ",", paramLabel = "BOOL", description = "e.g. true,false.")
    private List<String> garbageCollection;

    @Option(names = "--fragmentation-fraction", split = ",", paramLabel = "F", description = "e.g. 0,0.01.")
    private List<String> fragmentationFraction;

    @Option(names = "--sub", paramLabel = "sim|host", defaultValue = "sim",
            description = "Where regions come from: sim (default) or host (real memory).")
    private String sub;

    @Option(names = {"-v", "--verbose"}, description = "Keep the allocator's log (its out-of-memory warnings).")
    private boolean verbose;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    private boolean debug;

    /** Creates the command; picocli fills its fields. */
    public WhatIfCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, debug, verbose, () -> {
            List<Long> limits = new ArrayList<>();
            for (String s : nonNull(memoryLimits)) {
                limits.add(Sizes.parse("--memory-limit", s));
            }
            List<Boolean> growths = booleans("--allow-growth", allowGrowth);
            List<Boolean> gcs = booleans("--garbage-collection", garbageCollection);
            List<Double> fractions = new ArrayList<>();
            for (String s : nonNull(fragmentationFraction)) {
                fractions.add(RunConfig.parseFraction("--fragmentation-fraction", s));
            }
            String subAllocator = RunConfig.parseSub(sub);
            RunConfig d = RunConfig.of(RunConfig.header(trace));
            if (limits.isEmpty()) {
                limits.add(d.memoryLimit());
            }
            if (growths.isEmpty()) {
                growths.add(d.allowGrowth());
            }
            if (gcs.isEmpty()) {
                gcs.add(d.garbageCollection());
            }
            if (fractions.isEmpty()) {
                fractions.add(d.fragmentationFraction());
            }
            PrintWriter out = spec.commandLine().getOut();
            String format = "%-13s %-12s %-18s %-22s %-13s %-13s %6s %14s %13s%n";
            out.printf(Locale.ROOT, format, "memory_limit", "allow_growth", "garbage_collection",
                    "fragmentation_fraction", "peak_in_use", "peak_reserved", "ooms", "first_oom_line",
                    "fragmentation");
            int total = limits.size() * growths.size() * gcs.size() * fractions.size();
            int n = 0;
            RunConfig best = null;
            for (long limit : limits) {
                for (boolean growth : growths) {
                    for (boolean gc : gcs) {
                        for (double fraction : fractions) {
                            RunConfig c = new RunConfig(limit, growth, gc, fraction, subAllocator);
                            n++;
                            WorkloadResult r = c.run(trace, null, "whatif " + n + "/" + total);
                            out.printf(Locale.ROOT, format, Sizes.format(limit), growth, gc,
                                    RunConfig.fraction(fraction), Sizes.format(r.peakBytesInUse()),
                                    Sizes.format(r.peakPoolBytes()), r.oomCount(),
                                    r.oomCount() == 0 ? "-" : Long.toString(r.oomLine(0)),
                                    String.format(Locale.ROOT, "%.4f", r.fragmentationAtPeak()));
                            out.flush();
                            if (r.oomCount() == 0 && (best == null || limit < best.memoryLimit())) {
                                best = c;
                            }
                        }
                    }
                }
            }
            if (best == null) {
                out.println("every combination ran out of memory");
                return CommandRunner.EXIT_FAILED;
            }
            out.println("smallest memory limit without running out of memory: " + Sizes.format(best.memoryLimit())
                    + " (allow_growth=" + best.allowGrowth() + " garbage_collection=" + best.garbageCollection()
                    + " fragmentation_fraction=" + RunConfig.fraction(best.fragmentationFraction()) + ")");
            return CommandRunner.EXIT_OK;
        });
    }

    private static List<String> nonNull(List<String> values) {
        return values == null ? List.of() : values;
    }

    private static List<Boolean> booleans(String option, List<String> values) {
        List<Boolean> out = new ArrayList<>();
        for (String s : nonNull(values)) {
            out.add(RunConfig.parseBoolean(option, s));
        }
        return out;
    }
}
