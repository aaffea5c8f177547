/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc import-tf-log LOG --allocator NAME -o TRACE}: converts the calls of one BFC
 * allocator in a TensorFlow log ({@code TF_CPP_VMODULE=bfc_allocator=4}; see {@link TfLog} for
 * the lines used) into a workload trace (docs/trace-format.md, "Workload traces"), or with
 * {@code --with-expectations} into a trace whose expected addresses are TensorFlow's, moved region
 * by region onto the simulated address space, as the recorded traces are. That is possible only
 * when the log's regions were obtained at rising addresses; otherwise the command says so and
 * writes nothing.
 *
 * <p>The header: the memory limit from {@code --memory-limit}, else from a TensorFlow line that
 * states it (the ProcessState CPU allocator's {@code Using BFCAllocator with memory limit of <n>
 * MB}, oneDNN's {@code MklCPUAllocator: Setting max_mem_bytes: <n>}); {@code allow_growth} from
 * {@code --allow-growth}, else true when the first region is smaller than the limit;
 * {@code garbage_collection} from {@code --garbage-collection} (default false); the sim space
 * of the recorded traces (base {@code 0x100000000}, gap 4096, no coalescing).
 *
 * <p>Exit status: 0 written, 1 expected answers are impossible for this log, 2 bad options or
 * an unreadable or unusable log (the message names the line).
 */
@Command(
        name = "import-tf-log",
        mixinStandardHelpOptions = true,
        description = {
            "Converts the calls of one BFC allocator in a TensorFlow log (written with"
                    + " TF_CPP_VMODULE=bfc_allocator=4) into a workload trace.",
            "--with-expectations also writes TensorFlow's addresses moved onto the simulated space (only"
                    + " possible when the log's regions were obtained at rising addresses).",
            "Exit status: 0 written, 1 expectations impossible for this log, 2 bad options or an unusable log."
        })
public final class ImportTfLogCommand implements Callable<Integer> {

    /** The sim space of imported traces, as the recorded traces use. */
    static final long SIM_BASE = 0x100000000L;
    static final long SIM_GAP = 4096;

    @Spec
    private CommandSpec spec;

    @Parameters(paramLabel = "LOG", description = "The TensorFlow log (plain or gzip), - for standard input.")
    private Path log;

    @Option(names = "--allocator", required = true, paramLabel = "NAME",
            description = "The BFC allocator's name, e.g. GPU_0_bfc, bfc_cpu_allocator_for_gpu, mklcpu.")
    private String allocator;

    @Option(names = {"-o", "--output"}, required = true, paramLabel = "TRACE",
            description = "The trace to write (.bfctrace, or .bfctrace.gz to compress).")
    private String outputName;

    /** {@link #outputName} as a path, set first in {@link #call()}. */
    private Path output;

    @Option(names = "--memory-limit", paramLabel = "SIZE",
            description = "The allocator's memory limit (default: what the log states, where it does).")
    private String memoryLimit;

    @Option(names = "--allow-growth", paramLabel = "BOOL",
            description = "Default: true if the first region is smaller than the limit.")
    private String allowGrowth;

    @Option(names = "--garbage-collection", paramLabel = "BOOL", defaultValue = "false",
            description = "Default: false.")
    private String garbageCollection;

    @Option(names = "--name", paramLabel = "TEXT", description = "The trace's name line.")
    private String name;

    @Option(names = "--with-expectations",
            description = "Write TensorFlow's answers too (needs regions at rising addresses).")
    private boolean withExpectations;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    private boolean debug;

    /** Creates the command; picocli fills its fields. */
    public ImportTfLogCommand() {
    }

    @Override
    public Integer call() {
        return CommandRunner.run(spec, debug, false, () -> {
            Long limitOption = memoryLimit == null ? null : Sizes.parse("--memory-limit", memoryLimit);
            Boolean growthOption = allowGrowth == null ? null : RunConfig.parseBoolean("--allow-growth", allowGrowth);
            boolean gc = RunConfig.parseBoolean("--garbage-collection", garbageCollection);
            output = OutputFile.path("-o", outputName);
            OutputFile.check("-o", output, "trace.bfctrace", log);
            if (name != null && (name.isBlank() || !CommandRunner.visible(name).equals(name))) {
                // A line break would split the trace's header; other control characters would reach
                // the terminal of every command that shows the name (as serve --name refuses them).
                throw new UsageException("--name='" + Words.shown(name) + "' (expected: text that is not"
                        + " blank, without line breaks, tabs or other control characters: the trace's name line)");
            }
            TraceInput input = TraceInput.of(log);
            TfLog tf = TfLog.read(input, allocator);
            long limit;
            String limitFrom;
            if (limitOption != null) {
                limit = limitOption;
                limitFrom = "--memory-limit";
            } else if (tf.statedLimit > 0) {
                limit = tf.statedLimit;
                limitFrom = "log " + tf.statedLimitLine;
            } else {
                throw new UsageException("--memory-limit is needed: " + input.name() + " does not state the memory"
                        + " limit of '" + allocator + "' (give the device's memory given to TensorFlow, e.g. --memory-limit=14GiB)");
            }
            boolean growth;
            String growthFrom;
            if (growthOption != null) {
                growth = growthOption;
                growthFrom = "--allow-growth";
            } else if (tf.regions.isEmpty()) {
                growth = true;
                growthFrom = "no region in the log";
            } else {
                long first = tf.regions.get(0)[1];
                growth = first < limit;
                growthFrom = "first region " + Sizes.format(first);
            }
            if (withExpectations) {
                int falling = tf.firstFallingRegion();
                if (falling >= 0) {
                    long[] r = tf.regions.get(falling);
                    long[] p = tf.regions.get(falling - 1);
                    spec.commandLine().getErr().println("bfc import-tf-log: cannot write expectations: region "
                            + (falling + 1) + " of '" + allocator + "' (log line " + r[2] + ", 0x" + Long.toHexString(r[0])
                            + ") lies below region " + falling + " (0x" + Long.toHexString(p[0]) + "); expected"
                            + " addresses can be mapped onto the sim only when regions were obtained at rising"
                            + " addresses; import without --with-expectations for a workload trace");
                    return CommandRunner.EXIT_FAILED;
                }
            }
            long gaps = SIM_GAP * Math.max(4096, tf.regions.size() + 1L);
            long largest = Long.MAX_VALUE - SIM_BASE - gaps; // the sim's space must end below 2^63
            if (limit > largest) {
                // The advice fits where the limit came from: the option itself, or the log.
                throw new UsageException("memory limit " + limit + " (from " + limitFrom + ") is too large (expected:"
                        + " at most " + largest + " bytes, so that the trace's simulated space fits; give"
                        + (limitOption != null ? " a smaller --memory-limit)" : " --memory-limit)"));
            }
            long capacity = limit + gaps;
            // Control characters in a file's name (line breaks would break the trace's name and source
            // lines) shown escaped, as commands show names.
            String fileName = CommandRunner.visible(input.shortName());
            String source = (withExpectations ? "imported" : TraceHeader.WORKLOAD_SOURCE_PREFIX + " imported")
                    + " from TensorFlow log " + fileName + ", BFCAllocator '" + allocator + "' (bfc import-tf-log"
                    + (withExpectations ? ", regions moved onto the sim in the order obtained" : "") + ")";
            TraceHeader header = new TraceHeader(
                    name != null ? name : allocator + ": imported from " + fileName,
                    source, limit, growth, gc, 0, false, SIM_BASE, capacity, SIM_GAP, false);
            long[] simStart = null;
            if (withExpectations) {
                // Before the file is written: an import that cannot be done leaves nothing behind.
                simStart = new long[tf.regions.size()];
                String impossible = placeRegions(tf, header, simStart);
                if (impossible != null) {
                    spec.commandLine().getErr().println("bfc import-tf-log: cannot write expectations: " + impossible);
                    return CommandRunner.EXIT_FAILED;
                }
            }
            long[] regionStarts = simStart;
            boolean gzip = output.getFileName().toString().endsWith(".gz");
            String comment = "memory_limit from " + limitFrom + "; allow_growth from " + growthFrom
                    + "; the log does not say the alignments of 2.18's AllocateRaw calls: 64 assumed";
            OutputFile.write("-o", output, "trace.bfctrace", file -> {
                try (TraceWriter w = TraceWriter.create(file, gzip)) {
                    w.header(header);
                    w.comment("imported by bfc import-tf-log from " + fileName + ": " + Counts.of(tf.allocs, "alloc")
                            + ", " + Counts.of(tf.frees, "free") + ", " + tf.nullFrees
                            + " DeallocateRaw(nullptr) dropped, " + Counts.of(tf.regions.size(), "region"));
                    w.comment(comment);
                    write(w, tf, regionStarts);
                }
            });
            PrintWriter out = spec.commandLine().getOut();
            out.println("wrote " + output + ": " + (withExpectations ? "trace with expected answers" : "workload trace")
                    + ", " + Counts.of(tf.calls, "call") + " (" + Counts.of(tf.allocs, "alloc") + ", "
                    + Counts.of(tf.frees, "free") + "), " + Counts.of(tf.regions.size(), "region") + " in the log");
            if (tf.allocsWithStack > 0 || tf.allocsWithOp > 0) {
                out.println("provenance: " + Counts.of(tf.allocsWithStack, "alloc") + " with "
                        + (tf.allocsWithStack == 1 ? "its" : "their") + " stack trace, " + tf.allocsWithOp + " with "
                        + (tf.allocsWithOp == 1 ? "its" : "their") + " op name (#@ lines, docs/trace-format.md)");
            }
            out.println("memory_limit=" + Sizes.exact(limit) + " (from " + limitFrom + "), allow_growth=" + growth
                    + " (from " + growthFrom + "), garbage_collection=" + gc);
            CommandRunner.warn(spec, tf.cutWarning());
            return CommandRunner.EXIT_OK;
        });
    }

    /**
     * Places the log's regions on the sim in the order obtained, as the replay will: each during
     * its call, aligned to the call's alignment (the sim, as a sub-allocator is asked to, puts a
     * region at a multiple of {@code max(alignment, 256)}).
     *
     * @param simStart filled with each region's address on the sim
     * @return null, or why expected answers are impossible: a region that fits the sim only
     *     where the call's alignment would not put it
     * @throws UsageException if the sim, whose size follows the memory limit, cannot hold the
     *     regions
     */
    private String placeRegions(TfLog tf, TraceHeader header, long[] simStart) {
        SimSubAllocator sim = new SimSubAllocator(header.simBase(), header.simCapacity(), header.simGap(),
                header.simCoalescing());
        for (int i = 0; i < tf.calls; i++) {
            int first = tf.firstRegion[i];
            for (int k = first; tf.kind[i] == TfLog.ALLOC && k < first + tf.regionCount[i]; k++) {
                long[] region = tf.regions.get(k);
                SubAllocator.Block b = sim.alloc(tf.alignment[i], region[1]);
                if (b != null) {
                    simStart[k] = b.ptr();
                    continue;
                }
                // The sim aligns every region to 256 at least: a region that fits so, but not at a
                // multiple of the call's alignment, fails for the alignment, not the memory limit.
                if (tf.alignment[i] > 256 && sim.alloc(256, region[1]) != null) {
                    return "region " + (k + 1) + " of '" + allocator + "' (log line " + region[2] + ", "
                            + Sizes.format(region[1]) + ") was obtained during an AllocateRaw of alignment="
                            + tf.alignment[i] + " (log line " + tf.alignmentLine[i] + "), and the simulated space"
                            + " (0x" + Long.toHexString(header.simBase()) + " to 0x"
                            + Long.toHexString(header.simBase() + header.simCapacity()) + ") has no address that is a"
                            + " multiple of it with room for the region, where the replay would place it (a region is"
                            + " aligned to the alignment of the call that obtains it); check that line's alignment, or"
                            + " import without --with-expectations for a workload trace";
                }
                throw new UsageException("the simulated space cannot hold region " + (k + 1) + " (log line "
                        + region[2] + "); give a larger --memory-limit");
            }
        }
        return null;
    }

    /**
     * Writes the calls.
     *
     * @param simStart each region's address on the sim ({@link #placeRegions}), or null for a
     *     workload trace
     */
    private void write(TraceWriter w, TfLog tf, long[] simStart) throws IOException {
        for (int i = 0; i < tf.calls; i++) {
            if (tf.kind[i] == TfLog.FREE) {
                w.free(tf.id[i]);
                continue;
            }
            w.provenance(tf.id[i], tf.provenance(i));
            if (!withExpectations) {
                w.workloadAlloc(tf.id[i], tf.bytes[i], tf.alignment[i], 0);
                continue;
            }
            int first = tf.firstRegion[i];
            w.alloc(tf.id[i], tf.bytes[i], tf.alignment[i], 0, mapped(tf, simStart, i));
            for (int k = first; k < first + tf.regionCount[i]; k++) {
                w.subAlloc(tf.regions.get(k)[1], simStart[k]);
            }
        }
    }

    /** The sim address of call i's result: the same offset in the region, in its sim place. */
    private static long mapped(TfLog tf, long[] simStart, int i) {
        long p = tf.ptr[i];
        if (p == 0) {
            return 0;
        }
        for (int k = 0; k < tf.regions.size(); k++) {
            long[] r = tf.regions.get(k);
            // Addresses are unsigned (a region may lie at 0x9000000000000000 or above).
            if (Long.compareUnsigned(p, r[0]) >= 0 && Long.compareUnsigned(p, r[0] + r[1]) < 0 && simStart[k] != 0) {
                return simStart[k] + (p - r[0]);
            }
        }
        throw new UsageException(tf.file + " line " + tf.line[i] + ": AllocateRaw returned 0x" + Long.toHexString(p)
                + ", which lies in no region the log showed before it (expected answers need every 'Allocated"
                + " memory at' line of '" + tf.allocator + "')");
    }
}
