/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
 * <p>A trace from standard input or a pipe is copied to a temporary file first, since every
 * combination reads it. Once standard output cannot be written (its reader has gone), no further
 * combination is replayed, and the status is that of the combinations replayed.
 *
 * <p>Exit status: 0 if some combination ran without running out of memory, 1 if none did, 2
 * bad options or an unreadable trace, 3 the allocator's invariants broke
 * ({@code -Dbfc4j.checkInvariants=true}).
 */
@Command(
        name = "whatif",
        mixinStandardHelpOptions = true,
        description = {
            "Replays a trace under every combination of the option values given (comma-separated; each"
                    + " defaults to the trace header's) and prints one row per combination: peak in use, peak"
                    + " reserved, out-of-memory count, first failing line, fragmentation at peak.",
            "Exit status: 0 some combination never ran out of memory, 1 all did, 2 bad options or an"
                    + " unreadable trace, 3 an invariant of the allocator broke."
        })
public final class WhatIfCommand implements Callable<Integer> {

    private static final Map<String, String> EXAMPLES = Map.of("--memory-limit", "8GiB,12GiB",
            "--allow-growth", "true,false", "--garbage-collection", "true,false", "--fragmentation-fraction", "0,0.01");

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "TRACE",
            description = "A trace (.bfctrace or .bfctrace.gz; workload or conformance), - for standard input.")
    private Path trace;

    // Comma-separated lists, split here (not by picocli) so that an empty value is an error. One
    // word each: picocli refuses an option given twice, as it does for every other command.
    @Option(names = "--memory-limit", paramLabel = "SIZE[,SIZE...]",
            description = "Memory limits to try, e.g. 8GiB,12GiB,16GiB.")
    private String memoryLimits;

    @Option(names = "--allow-growth", paramLabel = "BOOL[,BOOL]", description = "e.g. true,false.")
    private String allowGrowth;

    @Option(names = "--garbage-collection", paramLabel = "BOOL[,BOOL]", description = "e.g. true,false.")
    private String garbageCollection;

    @Option(names = "--fragmentation-fraction", paramLabel = "F[,F...]", description = "e.g. 0,0.01.")
    private String fragmentationFraction;

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
            List<String> limitTexts = values("--memory-limit", memoryLimits);
            for (String s : limitTexts) {
                limits.add(Sizes.parse("--memory-limit", s));
            }
            List<Boolean> growths = booleans("--allow-growth", allowGrowth);
            List<Boolean> gcs = booleans("--garbage-collection", garbageCollection);
            List<Double> fractions = new ArrayList<>();
            List<String> fractionTexts = values("--fragmentation-fraction", fragmentationFraction);
            for (String s : fractionTexts) {
                fractions.add(RunConfig.parseFraction("--fragmentation-fraction", s));
            }
            String subAllocator = RunConfig.parseSub(sub);
            try (TraceInput input = TraceInput.of(trace).rereadable()) {
                try (TraceReader reader = input.open("")) {
                    RunConfig d = RunConfig.of(reader.header());
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
                    // Every combination must be possible before the first runs.
                    for (int i = 0; i < limits.size(); i++) {
                        for (int j = 0; j < fractions.size(); j++) {
                            RunConfig.checkThreshold(fractions.get(j), fractionTexts.isEmpty() ? null
                                    : "--fragmentation-fraction=" + Words.shown(fractionTexts.get(j)), limits.get(i),
                                    limitTexts.isEmpty() ? null
                                            : "--memory-limit=" + Words.shown(limitTexts.get(i)), reader);
                        }
                    }
                }
                return table(input, limits, growths, gcs, fractions, subAllocator);
            }
        });
    }

    private int table(TraceInput input, List<Long> limits, List<Boolean> growths, List<Boolean> gcs,
            List<Double> fractions, String subAllocator) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        // The columns are as wide as the widest of their values (a limit in bytes,
        // 9223372036854775807B, is 20 characters), so that the rows line up.
        int limitWidth = "memory_limit".length() + 1;
        for (long limit : limits) {
            limitWidth = Math.max(limitWidth, Sizes.exact(limit).length());
        }
        int fractionWidth = "fragmentation_fraction".length();
        for (double fraction : fractions) {
            fractionWidth = Math.max(fractionWidth, RunConfig.fraction(fraction).length());
        }
        String format = null;
        int total = limits.size() * growths.size() * gcs.size() * fractions.size();
        int n = 0;
        RunConfig best = null;
        String cut = null;
        for (long limit : limits) {
            for (boolean growth : growths) {
                for (boolean gc : gcs) {
                    for (double fraction : fractions) {
                        RunConfig c = new RunConfig(limit, growth, gc, fraction, subAllocator);
                        n++;
                        WorkloadResult r;
                        try (TraceReader reader = input.open("whatif " + n + "/" + total)) {
                            r = c.run(reader, null);
                            if (n == 1) {
                                cut = TraceInput.cutWarning(reader, "each row covers the lines read");
                                // The counts are known after the first run: every row replays the same
                                // calls, so none fails more calls than there are, nor past the last line.
                                format = "%-" + limitWidth + "s %-12s %-18s %-" + fractionWidth
                                        + "s %-13s %-13s %" + Math.max(6, Long.toString(r.calls()).length())
                                        + "s %" + Math.max(14, Long.toString(reader.lineNumber()).length())
                                        + "s %13s%n";
                                out.printf(Locale.ROOT, format, "memory_limit", "allow_growth",
                                        "garbage_collection", "fragmentation_fraction", "peak_in_use",
                                        "peak_reserved", "ooms", "first_oom_line", "fragmentation");
                            }
                        }
                        out.printf(Locale.ROOT, format, Sizes.exact(limit), growth, gc,
                                RunConfig.fraction(fraction), Sizes.format(r.peakBytesInUse()),
                                Sizes.format(r.peakPoolBytes()), r.oomCount(),
                                r.oomCount() == 0 ? "-" : Long.toString(r.oomLine(0)),
                                String.format(Locale.ROOT, "%.4f", r.fragmentationAtPeak()));
                        if (r.oomCount() == 0 && (best == null || limit < best.memoryLimit())) {
                            best = c;
                        }
                        if (StandardOutput.failed(out)) {
                            // Its reader has gone (| head -3), or it cannot be written: the other
                            // rows would reach no one, so they are not replayed.
                            CommandRunner.warn(spec, cut);
                            return best == null ? CommandRunner.EXIT_FAILED : CommandRunner.EXIT_OK;
                        }
                    }
                }
            }
        }
        CommandRunner.warn(spec, cut);
        if (best == null) {
            out.println("every combination ran out of memory");
            return CommandRunner.EXIT_FAILED;
        }
        out.println("smallest memory limit without running out of memory: " + Sizes.exact(best.memoryLimit())
                + " (allow_growth=" + best.allowGrowth() + " garbage_collection=" + best.garbageCollection()
                + " fragmentation_fraction=" + RunConfig.fraction(best.fragmentationFraction()) + ")");
        return CommandRunner.EXIT_OK;
    }

    /**
     * The values of a comma-separated list option.
     *
     * @throws UsageException for an empty value ({@code --memory-limit ,} or {@code 8GiB,,16GiB})
     */
    private static List<String> values(String option, String list) {
        List<String> out = new ArrayList<>();
        if (list == null) {
            return out;
        }
        for (String v : list.split(",", -1)) {
            String value = Words.strip(v);
            if (value.isEmpty()) {
                throw new UsageException(option + "=" + Words.shown(list) + " (expected: values separated by single"
                        + " commas, e.g. " + option + "=" + EXAMPLES.get(option) + ")");
            }
            out.add(value);
        }
        return out;
    }

    private static List<Boolean> booleans(String option, String values) {
        List<Boolean> out = new ArrayList<>();
        for (String s : values(option, values)) {
            out.add(RunConfig.parseBoolean(option, s));
        }
        return out;
    }
}
