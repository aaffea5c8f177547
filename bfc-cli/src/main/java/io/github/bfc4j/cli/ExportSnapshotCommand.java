/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadStep;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc export-snapshot TRACE -o snapshot.pickle}: replays a trace (as {@code bfc replay},
 * same options) with the allocator's history recorded, and writes PyTorch's memory snapshot
 * (pytorch.org/memory_viz) at the end of the trace or at its peak: the regions as segments, the
 * chunks as blocks, the calls as the event timeline, and the trace's provenance (stacks,
 * annotations: an imported TensorFlow log's) on each block and event.
 *
 * <p>Exit status: 0 written, 1 the replay itself failed, 2 bad options or an unreadable trace.
 */
@Command(
        name = "export-snapshot",
        mixinStandardHelpOptions = true,
        description = {
            "Replays a trace (options as bfc replay) recording the allocator's history, and writes PyTorch's"
                    + " memory snapshot (a pickle for pytorch.org/memory_viz) at the end of the trace or at its peak:"
                    + " regions as segments, chunks as blocks, calls as the event timeline, with the trace's"
                    + " provenance (stack traces, op names) on each.",
            "Exit status: 0 written, 1 the replay failed, 2 bad options or an unreadable trace."
        })
public final class ExportSnapshotCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "TRACE", description = "A trace (.bfctrace or .bfctrace.gz; workload or conformance),"
            + " or - for standard input.")
    private Path trace;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "PICKLE",
            description = "The snapshot to write, e.g. snapshot.pickle.")
    private String outputName;

    /** {@link #outputName} as a path, set first in {@link #call()}. */
    private Path output;

    @Option(names = "--at", paramLabel = "end|peak", defaultValue = "end",
            description = "Where to take the snapshot: after the last call (default) or right after the call with"
                    + " the most bytes in use (the history then ends there).")
    private String at;

    @Option(names = "--max-entries", paramLabel = "N", defaultValue = "" + HistoryOptions.DEFAULT_MAX_ENTRIES,
            description = "The most events kept, the latest (default ${DEFAULT-VALUE}).")
    private BigInteger maxEntriesArg; // any integer: one past a long's range gets this option's range
    private long maxEntries;

    @Mixin
    private RunOptions options;

    /** Creates the command; picocli fills its fields. */
    public ExportSnapshotCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, options.debug, options.verbose, () -> {
            if (!at.equals("end") && !at.equals("peak")) {
                throw new UsageException("--at=" + Words.shown(at) + " (expected: end or peak)");
            }
            maxEntries = WholeNumbers.inRange("--max-entries", maxEntriesArg, 1, 1 << 24, "1 to 16777216");
            options.check();
            output = OutputFile.path("-o", outputName);
            OutputFile.check("-o", output, "snapshot.pickle", trace);
            try (TraceInput input = at.equals("peak") ? TraceInput.of(trace).rereadable() : TraceInput.of(trace)) {
                return export(input);
            }
        });
    }

    private int export(TraceInput input) throws IOException {
        String name = input.shortName();
        long peakCall = -1;
        if (at.equals("peak")) {
            try (TraceReader reader = input.open("export-snapshot " + name + " (pass 1/2)")) {
                peakCall = options.config(reader).run(reader, null).peakCall();
            }
        }
        // Java stacks of the replayer say nothing: only the trace's own stacks are recorded.
        HistoryOptions history = HistoryOptions.builder().maxEntries((int) maxEntries).stacks(false).build();
        Recorder recorder = new Recorder(history, peakCall);
        WorkloadResult r;
        String cut;
        try (TraceReader reader = input.open("export-snapshot " + name + (at.equals("peak") ? " (pass 2/2)" : ""))) {
            r = options.config(reader).run(reader, recorder);
            cut = TraceInput.cutWarning(reader, "the snapshot covers the lines read");
        }
        MemorySnapshot snapshot = recorder.snapshot;
        long[] written = {0};
        OutputFile.write("-o", output, "snapshot.pickle", file -> {
            try (OutputStream out = new OutputFile.Counting(Files.newOutputStream(file), written)) {
                snapshot.writePyTorchPickle(out);
            }
        });
        int segments = snapshot.memoryMap().regions().size();
        int blocks = snapshot.memoryMap().chunks().size();
        PrintWriter out = spec.commandLine().getOut();
        out.println("wrote " + output + " (" + Sizes.format(written[0]) + "): "
                + Counts.of(segments, "segment") + ", " + Counts.of(blocks, "block") + ", "
                + Counts.of(snapshot.history().events().size(), "event")
                + (snapshot.history().droppedEvents() > 0 ? " (the latest; " + snapshot.history().droppedEvents()
                        + " older dropped, see --max-entries)" : "")
                + ", at " + (peakCall >= 0 ? "the peak (call " + (peakCall + 1) + " of " + r.calls() + ")"
                        : "the end (" + Counts.of(r.calls(), "call")
                                + (at.equals("peak") ? ": nothing was ever in use, so there is no peak" : "") + ")"));
        out.println("open it at https://pytorch.org/memory_viz (drag the file onto the page; nothing is uploaded)");
        CommandRunner.warn(spec, cut);
        return CommandRunner.EXIT_OK;
    }

    /** Starts the history before the first call; takes the snapshot after the chosen call. */
    private static final class Recorder implements WorkloadListener {
        private final HistoryOptions history;
        private final long snapshotCall;
        MemorySnapshot snapshot;

        Recorder(HistoryOptions history, long snapshotCall) {
            this.history = history;
            this.snapshotCall = snapshotCall;
        }

        @Override
        public void beforeRun(BfcAllocator a) {
            a.recordHistory(history);
        }

        @Override
        public void afterCall(WorkloadStep s) {
            if (s.callIndex() == snapshotCall) {
                snapshot = s.allocator().snapshot();
            }
        }

        @Override
        public void afterRun(BfcAllocator a) {
            if (snapshotCall < 0) {
                snapshot = a.snapshot();
            }
        }
    }
}
