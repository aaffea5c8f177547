/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc report TRACE -o report.html}: replays a trace (as {@code bfc replay}, same options)
 * and writes one self-contained HTML file: the summary, a timeline of bytes in use and reserved
 * over the calls with a mark at every out-of-memory failure and every region obtained, the
 * occupancy map of every region at the peak and after each of the first out-of-memory failures
 * (hover a chunk for its address, size, requested size, allocation id and trace line), and the
 * per-bin figures at the peak.
 *
 * <p>The trace is replayed twice: the first pass measures and records the timeline (downsampled
 * as it streams to at most {@code 2 * --points} steps, each keeping its lowest and highest bytes
 * in use, so peaks are never lost; the failure and region marks are never downsampled) and finds
 * the calls to map; the second takes the maps exactly there. A trace from standard input or a
 * pipe is copied to a temporary file first ({@link TraceInput#rereadable()}).
 *
 * <p>Exit status: 0 written, 1 the replay itself failed, 2 bad options or an unreadable trace,
 * 3 the allocator's invariants broke ({@code -Dbfc4j.checkInvariants=true}).
 */
@Command(
        name = "report",
        mixinStandardHelpOptions = true,
        description = {
            "Replays a trace (options as bfc replay) and writes one self-contained HTML file: a timeline of"
                    + " bytes in use and reserved with marks at out-of-memory failures and regions obtained, the"
                    + " occupancy map of every region at the peak and at out-of-memory failures, and per-bin figures.",
            "Exit status: 0 written, 1 the replay failed, 2 bad options or an unreadable trace, 3 an invariant of"
                    + " the allocator broke."
        })
public final class ReportCommand implements Callable<Integer> {

    /** Chunk records across all maps beyond which out-of-memory maps are left out (keeps the file small). */
    static final long MAX_CHUNK_RECORDS = 250_000;

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "TRACE",
            description = "A trace (.bfctrace or .bfctrace.gz; workload or conformance), - for standard input.")
    private Path trace;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "HTML", description = "The report to write.")
    private String outputName;

    /** {@link #outputName} as a path, set first in {@link #call()}. */
    private Path output;

    @Option(names = "--maps", paramLabel = "N", defaultValue = "20",
            description = "Occupancy maps at the first N out-of-memory failures (default 20), besides the peak's.")
    private BigInteger mapsArg; // any integer, as --points
    private long maps;

    @Option(names = "--points", paramLabel = "N", defaultValue = "2000",
            description = "Timeline resolution: at least N steps (default 2000), at most 2N.")
    private BigInteger pointsArg; // any integer: one past a long's range gets this option's range (WholeNumbers)
    private long points;

    @Mixin
    private RunOptions options;

    /** Creates the command; picocli fills its fields. */
    public ReportCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, options.debug, options.verbose, () -> {
            maps = WholeNumbers.notNegative("--maps", mapsArg);
            points = WholeNumbers.inRange("--points", pointsArg, 10, 1_000_000, "10 to 1000000");
            options.check();
            output = OutputFile.path("-o", outputName);
            OutputFile.check("-o", output, "report.html", trace);
            try (TraceInput input = TraceInput.of(trace).rereadable()) {
                return report(input);
            }
        });
    }

    private int report(TraceInput input) throws IOException {
        String name = input.shortName();
        Timeline timeline = new Timeline((int) points);
        RunConfig config;
        WorkloadResult r;
        String cut;
        try (TraceReader reader = input.open("report " + name + " (pass 1/2)")) {
            config = options.config(reader);
            r = config.run(reader, timeline);
            cut = TraceInput.cutWarning(reader, "the report covers the lines read");
        }

        // Where to take maps: the peak, then the first out-of-memory failures.
        int oomMaps = (int) Math.min(maps, r.oomCount());
        long[] calls = new long[oomMaps + 1];
        String[] labels = new String[oomMaps + 1];
        int n = 0;
        if (r.peakCall() >= 0) {
            calls[n] = r.peakCall();
            labels[n++] = "peak in use";
        }
        for (int i = 0; i < oomMaps; i++) {
            calls[n] = r.oomCall(i);
            labels[n++] = "out of memory " + (i + 1) + " of " + r.oomCount() + ": " + Sizes.format(r.oomBytes(i))
                    + " requested";
        }
        calls = Arrays.copyOf(calls, n);
        labels = Arrays.copyOf(labels, n);
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        final long[] c0 = calls;
        Arrays.sort(order, (a, b) -> Long.compare(c0[a], c0[b]));
        long[] sortedCalls = new long[n];
        String[] sortedLabels = new String[n];
        for (int i = 0; i < n; i++) {
            sortedCalls[i] = calls[order[i]];
            sortedLabels[i] = labels[order[i]];
        }
        // A peak at a failing call (impossible: a failure changes nothing in use) would repeat a call.
        // The out-of-memory maps past the size budget are not even taken (--maps 1000000 would fill
        // the heap with maps the file cannot keep).
        Snapshots snapshots = new Snapshots(sortedCalls, sortedLabels, r.peakCall(), MAX_CHUNK_RECORDS);
        config.run(input, snapshots, "report " + name + " (pass 2/2)");

        // Peak first in the menu; drop out-of-memory maps beyond the size budget, the peak's counted.
        snapshots.taken.sort((a, b) -> a.label.equals("peak in use") ? -1 : b.label.equals("peak in use") ? 1
                : Long.compare(a.call, b.call));
        long records = 0;
        int kept = 0;
        for (Snapshots.Snapshot s : snapshots.taken) {
            if (kept > 0 && records + Math.max(1, s.chunks) > MAX_CHUNK_RECORDS) {
                break;
            }
            records += Math.max(1, s.chunks);
            kept++;
        }
        snapshots.taken.subList(kept, snapshots.taken.size()).clear();
        int oomShown = kept - (r.peakCall() >= 0 ? 1 : 0);
        int dropped = oomMaps - oomShown;
        String mapsNote = r.oomCount() == 0 ? null
                : "at the peak and at the first " + oomShown + " of " + r.oomCount() + " out-of-memory failures"
                        + (dropped > 0 ? " (more would make the file too large)" : "");

        String title = input.name() + " \u2014 " + Counts.of(r.calls(), "call");
        long[] written = {0};
        OutputFile.write("-o", output, "report.html", file -> {
            try (Writer w = new BufferedWriter(new OutputStreamWriter(
                    new OutputFile.Counting(Files.newOutputStream(file), written), StandardCharsets.UTF_8), 1 << 16)) {
                HtmlReport.write(w, name, title, config, r, timeline, snapshots, mapsNote);
            }
        });
        spec.commandLine().getOut().println("wrote " + output + " (" + Sizes.format(written[0]) + "): "
                + Counts.of(r.calls(), "call") + ", " + Counts.of(timeline.count, "timeline step") + ", "
                + Counts.of(snapshots.taken.size(), "occupancy map") + ", "
                + Counts.of(r.oomCount(), "out-of-memory failure") + " marked");
        CommandRunner.warn(spec, cut);
        return CommandRunner.EXIT_OK;
    }
}
