/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcInvariantViolation;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadException;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadStep;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc replay TRACE [options]}: runs a trace's calls (expected answers ignored) under the
 * header's options or the ones given, and prints the memory summary: peak in use, peak
 * reserved, fragmentation at peak, regions, and every out-of-memory failure with its line.
 *
 * <p>Exit status: 0 no allocation failed, 1 an allocation ran out of memory (or the allocator
 * failed), 2 bad options or an unreadable trace, 3 the allocator's invariants broke
 * ({@code --check-invariants}).
 */
@Command(
        name = "replay",
        mixinStandardHelpOptions = true,
        description = {
            "Runs a trace's calls (expected answers ignored) and prints the memory summary: peak in use,"
                    + " peak reserved, fragmentation at peak, regions, out-of-memory failures with their lines.",
            "Options default to the trace header's. Sizes: 16GiB, 512MiB, 1048576 (bytes).",
            "Fragmentation at peak = 1 - largest free chunk / free bytes in the pool, at the call with the most"
                    + " bytes in use (0: all free memory in one piece).",
            "Exit status: 0 no allocation failed, 1 an allocation ran out of memory, 2 bad options or an"
                    + " unreadable trace, 3 an invariant broke (--check-invariants)."
        })
public final class ReplayCommand implements Callable<Integer> {

    /** The most out-of-memory failures listed one by one. */
    static final int MAX_OOMS_LISTED = 20;

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "TRACE",
            description = "A trace (.bfctrace or .bfctrace.gz; workload or conformance), - for standard input.")
    private Path trace;

    @Mixin
    private RunOptions options;

    @Option(names = "--check-invariants",
            description = "Check the allocator's invariants (BfcAllocator.checkInvariants) after every call;"
                    + " stop at the first violation with its line and a dump of the region (exit 3).")
    private boolean checkInvariants;

    /** Creates the command; picocli fills its fields. */
    public ReplayCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, options.debug, options.verbose, () -> {
            options.check();
            TraceInput input = TraceInput.of(trace);
            RunConfig config;
            WorkloadResult r;
            String cut;
            try (TraceReader reader = input.open("replay " + input.shortName())) {
                config = options.config(reader);
                r = config.run(reader, checkInvariants ? ReplayCommand::checkInvariants : null);
                cut = TraceInput.cutWarning(reader, "the summary covers the lines read");
            }
            print(spec.commandLine().getOut(), input.name(), config, r);
            if (checkInvariants) {
                spec.commandLine().getOut().println("invariants     held after "
                        + (r.calls() == 1 ? "the 1 call" : "each of the " + Counts.of(r.calls(), "call")));
            }
            CommandRunner.warn(spec, cut);
            return r.oomCount() > 0 ? CommandRunner.EXIT_FAILED : CommandRunner.EXIT_OK;
        });
    }

    /** The {@code --check-invariants} listener: a violation ends the replay, naming the line. */
    static void checkInvariants(WorkloadStep step) {
        try {
            step.allocator().checkInvariants();
        } catch (BfcInvariantViolation v) {
            throw new WorkloadException("line " + step.lineNumber() + " (" + step.kind().name().toLowerCase(Locale.ROOT)
                    + "): the allocator's invariants do not hold: " + v.getMessage(), step.lineNumber(), v);
        }
    }

    /** Prints the summary. */
    static void print(PrintWriter out, String trace, RunConfig config, WorkloadResult r) {
        out.println("trace          " + trace + " (" + Counts.of(r.calls(), "call") + ")");
        out.println("options        " + config.describe());
        out.println("peak in use    " + bytes(r.peakBytesInUse())
                + (r.peakLine() > 0 ? " at line " + r.peakLine() : ""));
        out.println("peak reserved  " + bytes(r.peakPoolBytes()));
        out.println("fragmentation  " + String.format(Locale.ROOT, "%.4f", r.fragmentationAtPeak())
                + " at peak (free in pool " + Sizes.format(r.freeBytesAtPeak()) + ", largest free chunk "
                + Sizes.format(r.largestFreeChunkAtPeak()) + ")");
        out.println("regions        " + r.regionsAtEnd() + " at end, " + r.maxRegions() + " at most, "
                + r.extendCount() + " obtained");
        StringBuilder ooms = new StringBuilder("out of memory  " + r.oomCount());
        for (int i = 0; i < Math.min(r.oomCount(), MAX_OOMS_LISTED); i++) {
            ooms.append(i == 0 ? ": " : ", ").append("line ").append(r.oomLine(i))
                    .append(" (").append(Sizes.format(r.oomBytes(i))).append(')');
        }
        if (r.oomCount() > MAX_OOMS_LISTED) {
            ooms.append(", ... (").append(r.oomCount() - MAX_OOMS_LISTED).append(" more)");
        }
        out.println(ooms);
    }

    private static String bytes(long n) {
        return Sizes.format(n) + " (" + n + " bytes)";
    }
}
