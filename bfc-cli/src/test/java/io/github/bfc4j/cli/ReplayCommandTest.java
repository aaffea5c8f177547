/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcInvariantViolation;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadException;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReplayCommandTest {
    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void summaryOfABundledTraceWithOutOfMemory() {
        // oom-too-large-nogc-256mib: requests larger than the 256 MiB device fail.
        Path t = Cli.TRACES.resolve("oom-too-large-nogc-256mib.bfctrace");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).contains("trace          " + t + " (")
                .contains("options        memory_limit=256MiB allow_growth=")
                .contains("peak in use    ")
                .contains("peak reserved  ")
                .contains("fragmentation  ")
                .contains("regions        ");
        // Every OOM line the summary lists is an alloc line answered null in the trace.
        String ooms = cli.out.lines().filter(l -> l.startsWith("out of memory")).findFirst().orElseThrow();
        assertThat(ooms).matches("out of memory  [1-9][0-9]*: line .*");
    }

    @Test
    void outOfMemoryLinesAreTheTracesNullAnswers() throws IOException {
        Path t = Cli.TRACES.resolve("oom-fragmentation-nogc-64mib.bfctrace");
        java.util.List<String> lines = Files.readAllLines(t);
        StringBuilder expected = new StringBuilder();
        int count = 0;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i);
            if (l.startsWith("alloc ") && l.endsWith("=> null") && !l.split(" ")[2].equals("0")) {
                expected.append(count == 0 ? ": " : ", ").append("line ").append(i + 1).append(" (");
                count++;
            }
        }
        assertThat(count).isPositive();
        assertThat(cli.run("replay", t)).isEqualTo(1);
        String ooms = cli.out.lines().filter(l -> l.startsWith("out of memory")).findFirst().orElseThrow();
        assertThat(ooms.replaceAll("\\([^)]*\\)", "(")).isEqualTo("out of memory  " + count + expected);
    }

    @Test
    void aLargerLimitAvoidsTheFailures() {
        Path t = Cli.TRACES.resolve("oom-too-large-nogc-256mib.bfctrace");
        assertThat(cli.run("replay", t, "--memory-limit", "64GiB")).isEqualTo(0);
        assertThat(cli.out).contains("memory_limit=64GiB").contains("out of memory  0");
    }

    @Test
    void aRecordedTensorFlowTraceUnderItsOwnOptions() {
        // tf-resnet-train-limit48mb: 48 MiB with growth; the regions it lists total 2+4+8+16+18 MiB.
        Path t = Cli.RECORDED.resolve("tf-resnet-train-limit48mb.bfctrace");
        assertThat(cli.run("replay", t, "--allow-growth")).isEqualTo(0);
        assertThat(cli.out).contains("allow_growth=true").contains("out of memory  0")
                .contains("peak reserved  48MiB (50331648 bytes)");
    }

    @Test
    void optionErrorsAreOneLineWithExitStatus2() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        assertThat(cli.run("replay", t, "--memory-limit=12XB")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc replay: --memory-limit=12XB (expected: a size like 16GiB, 512MiB or 1048576)");
        assertThat(cli.out).isEmpty();
        assertThat(cli.run("replay", t, "--memory-limit=0")).isEqualTo(2);
        assertThat(cli.err).contains("--memory-limit=0 (expected: a size of at least 1 byte");
        assertThat(cli.run("replay", t, "--sub=gpu")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: --sub=gpu (expected: sim or host)");
        assertThat(cli.run("replay", t, "--fragmentation-fraction=2")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc replay: --fragmentation-fraction=2 (expected: a fraction from 0 to 1");
        assertThat(cli.run("replay", t, "--allow-growth=yes")).isEqualTo(2);
        assertThat(cli.err.lines()).hasSize(1);
        assertThat(cli.err).contains("--allow-growth").contains("see 'bfc replay --help'");
        assertThat(cli.run("replay", t, "--frobnicate")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc replay: Unknown option: '--frobnicate' (did you mean --fragmentation-fraction?)"
                        + " (see 'bfc replay --help')");
    }

    /**
     * A fraction is a decimal as a trace's header writes it; what else Java's parser takes (a
     * type suffix, hexadecimal, an exponent) is refused by every command that takes one.
     */
    @Test
    void aFractionIsADecimalAsTheTraceFormatWritesIt() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String expected = " (expected: a fraction from 0 to 1, a decimal like 0.01 as a trace's header writes it;"
                + " 0 means upstream's 128 MiB threshold)";
        for (String f : new String[] {"1f", "0.5d", "0x1p-3", "0X0.8P0", "1e-3", "5E-1", "+0.5", ".5", "0.", "NaN",
                "Infinity", "0.5 0.5", "0,5"}) {
            assertThat(cli.run("replay", t, "--fragmentation-fraction", f)).as(f).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc replay: --fragmentation-fraction=" + f + expected);
            assertThat(cli.out).isEmpty();
        }
        assertThat(cli.run("whatif", t, "--fragmentation-fraction", "0,1f")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc whatif: --fragmentation-fraction=1f" + expected);
        assertThat(cli.run("generate", "--seed", "1", "-o", dir.resolve("g.bfctrace"), "--fragmentation-fraction",
                "0x1p-3")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: --fragmentation-fraction=0x1p-3" + expected);
        assertThat(dir.resolve("g.bfctrace")).doesNotExist();
        for (String f : new String[] {"0", "1", "0.5", "00.250", " 0.125 "}) {
            assertThat(cli.run("replay", t, "--fragmentation-fraction", f)).as("%s: %s", f, cli.err).isEqualTo(1);
        }
        assertThat(cli.out).contains(" fragmentation_fraction=0.125 ");
    }

    @Test
    void aThresholdOfZeroBytesIsBadInputNamingWhereEachValueCameFrom() throws IOException {
        // 1e-9 of 64 MiB is under one byte: the allocator cannot be created with it.
        Path t = Cli.TRACES.resolve("random-growth-64mib-s1.bfctrace");
        assertThat(cli.run("replay", t, "--fragmentation-fraction=0.000000001")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: --fragmentation-fraction=0.000000001 with"
                + " memory_limit=64MiB (from the trace) gives a split threshold of 0 bytes (expected: a split threshold"
                + " fragmentation_fraction * memory_limit of at least 1 byte: a fraction of at least 0.000000015 at"
                + " this limit, or 0 for upstream's 128 MiB threshold)");
        assertThat(cli.out).isEmpty();
        // The same fraction in the trace's header (line 4).
        Path header = dir.resolve("tiny-fraction.bfctrace");
        Files.writeString(header, Files.readString(t).replaceFirst("fragmentation_fraction=0 ",
                "fragmentation_fraction=0.000000001 "));
        assertThat(cli.run("replay", header)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + header + " line 4: found"
                + " fragmentation_fraction=0.000000001 with memory_limit=67108864, a split threshold of 0 bytes,"
                + " expected a split threshold fragmentation_fraction * memory_limit of at least 1 byte: a fraction of"
                + " at least 0.000000015 at this limit, or 0 for upstream's 128 MiB threshold");
        // A header fraction that works at the trace's limit but not at a smaller one.
        Files.writeString(header, Files.readString(t).replaceFirst("fragmentation_fraction=0 ",
                "fragmentation_fraction=0.0000001 "));
        assertThat(cli.run("replay", header, "--memory-limit=1MiB")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc replay: fragmentation_fraction=0.0000001 (from " + header
                + " line 4) with --memory-limit=1MiB gives a split threshold of 0 bytes (expected: ");
        assertThat(cli.run("replay", header)).isIn(0, 1);
    }

    @Test
    void readsATraceFromStandardInput() throws IOException {
        Path t = Cli.TRACES.resolve("oom-too-large-nogc-256mib.bfctrace");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        String fromFile = cli.out;
        assertThat(cli.runWithStdin(Files.readAllBytes(t), "replay", "-")).isEqualTo(1);
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).isEqualTo(fromFile.replace(t.toString(), "<stdin>"));
    }

    @Test
    void aNamedPipeIsReadOnce() throws Exception {
        Path fifo = Fifo.create(dir, "trace.fifo");
        Path t = Cli.TRACES.resolve("oom-too-large-nogc-256mib.bfctrace");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        String fromFile = cli.out;
        // Opening the pipe twice waited for a second writer forever.
        Thread writer = Fifo.write(fifo, Files.readAllBytes(t));
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(30), () -> cli.run("replay", fifo)))
                .as(cli.err).isEqualTo(1);
        writer.join(10_000);
        assertThat(cli.out).isEqualTo(fromFile.replace(t.toString(), fifo.toString()));
    }

    @Test
    void aTraceCutInsideItsLastLineIsReportedAsPossiblyTruncated() throws IOException {
        Path[] traces = Cli.wholeAndCutTraces(dir);
        assertThat(cli.run("replay", traces[0])).isZero();
        assertThat(cli.err).isEmpty();
        // "free 648" cut to "free 6": a valid call, so the replay runs, and says the file may be cut.
        assertThat(cli.run("replay", traces[1])).isZero();
        assertThat(cli.out).contains("trace          " + traces[1] + " (3 calls)");
        assertThat(cli.err.lines()).containsExactly("bfc replay: warning: " + traces[1] + " line 8: the last line"
                + " has no line break after it: the file may be truncated (the summary covers the lines read)");
    }

    @Test
    void aBadValueAfterAnOptionalBooleanOptionIsNamed() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        assertThat(cli.run("replay", t, "--allow-growth", "maybe")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: --allow-growth maybe (expected: true or false, or"
                + " nothing for true: --allow-growth, --allow-growth=false) (see 'bfc replay --help')");
        // Before the trace, the word fills TRACE and the trace is left over.
        assertThat(cli.run("replay", "--garbage-collection", "maybe", t)).isEqualTo(2);
        assertThat(cli.err).contains("'maybe' after --garbage-collection is not its value:"
                + " --garbage-collection takes true or false, or nothing for true");
        assertThat(cli.run("replay", t, "--allow-growth", "FALSE")).isEqualTo(1); // one allocation fails
        assertThat(cli.out).contains("allow_growth=false");
    }

    @Test
    void unreadableAndMalformedTraces() throws IOException {
        Path missing = dir.resolve("missing.bfctrace");
        assertThat(cli.run("replay", missing)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + missing + ": no such file");
        assertThat(cli.run("replay", dir)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + dir + ": is a directory (expected: a file)");
        Path bad = dir.resolve("bad.bfctrace");
        Files.writeString(bad, "bfctrace 1\nname x\nsource workload: t\noptions memory_limit=1048576"
                + " allow_growth=true garbage_collection=false fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=69206016 gap=0 coalescing=true\n"
                + "alloc 1 100\nfree 2\n");
        assertThat(cli.run("replay", bad)).isEqualTo(2);
        assertThat(cli.err.lines()).hasSize(1);
        assertThat(cli.err).startsWith("bfc replay: " + bad + " line 7: found ");
        assertThat(cli.run("replay", bad, "--debug")).isEqualTo(2);
        assertThat(cli.err).contains("TraceFormatException").contains("\tat ");
    }

    @Test
    void oneRegionOfRealHostMemoryGivesTheSimsSummary() {
        // No growth: one region, so every decision is an offset from its start, wherever the
        // operating system puts it (29 allocations fail).
        Path t = Cli.TRACES.resolve("random-nogrowth-256mib-s2.bfctrace");
        assertThat(cli.run("replay", t)).isEqualTo(1);
        String sim = cli.out;
        assertThat(sim).contains("out of memory  29: ");
        assertThat(cli.run("replay", t, "--sub", "host")).isEqualTo(1);
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).contains("sub=host");
        assertThat(cli.out.replace("sub=host", "sub=sim")).isEqualTo(sim);
    }

    @Test
    void severalRegionsOfRealHostMemoryReplayTheTrace() {
        // gap 4096, no coalescing: the sim's regions behave as separate host mallocs do. Which of
        // two equal free chunks in different regions comes first depends on where the operating
        // system put the regions (in a JVM whose earlier work left malloc's heap otherwise, one
        // allocation more can fail than on the sim), so only what does not depend on it is compared.
        Path t = Cli.TRACES.resolve("nocoalesce-gap4k-gc.bfctrace");
        assertThat(cli.run("replay", t)).isIn(0, 1);
        List<String> sim = cli.out.lines().collect(Collectors.toList());
        assertThat(cli.run("replay", t, "--sub", "host")).isIn(0, 1);
        assertThat(cli.err).isEmpty();
        List<String> host = cli.out.replace("sub=host", "sub=sim").lines().collect(Collectors.toList());
        assertThat(host).hasSameSizeAs(sim);
        assertThat(host.subList(0, 2)).isEqualTo(sim.subList(0, 2)); // the trace, its calls, the options
        for (int i = 2; i < sim.size(); i++) {
            assertThat(host.get(i)).startsWith(sim.get(i).substring(0, 15)); // the same figures named
        }
    }

    @Test
    void checkInvariantsRunsTheCheckerAfterEveryCall() {
        Path t = Cli.RECORDED.resolve("tf-resnet-train.bfctrace");
        assertThat(cli.run("replay", "--check-invariants", t)).as(cli.err).isZero();
        String calls = cli.out.lines().filter(l -> l.startsWith("trace ")).findFirst().orElseThrow()
                .replaceAll(".*\\((\\d+) calls\\)$", "$1");
        assertThat(cli.out).contains("invariants     held after each of the " + calls + " calls");
        assertThat(Long.parseLong(calls)).isGreaterThan(5000);
    }

    /**
     * A runner whose allocator's bytes_in_use is corrupted after the 10th call, as a bug would,
     * and whose listener is {@code --check-invariants}'s, which must find it.
     */
    private static WorkloadRunner corruptedAfterTenCalls(TraceReader r) throws ReflectiveOperationException {
        Field port = BfcAllocator.class.getDeclaredField("port");
        port.setAccessible(true);
        Field inUse = port.getType().getDeclaredField("bytesInUse");
        inUse.setAccessible(true);
        return WorkloadRunner.forHeader(r.header()).listener(step -> {
            if (step.callIndex() == 10) {
                try {
                    Object p = port.get(step.allocator());
                    inUse.setLong(p, inUse.getLong(p) + 256);
                } catch (IllegalAccessException e) {
                    throw new AssertionError(e);
                }
            }
            ReplayCommand.checkInvariants(step);
        });
    }

    @Test
    void aViolationHasItsOwnExitStatus() throws Exception {
        // The replay command's error path (CommandRunner) around a replay whose allocator breaks.
        Path t = Cli.RECORDED.resolve("tf-resnet-train.bfctrace");
        picocli.CommandLine replay = BfcCommand.commandLine().getSubcommands().get("replay");
        StringWriter err = new StringWriter();
        replay.setErr(new PrintWriter(err));
        int status = CommandRunner.run(replay.getCommandSpec(), false, false, () -> {
            try (TraceReader r = TraceReader.open(t)) {
                corruptedAfterTenCalls(r).run(r);
            }
            return CommandRunner.EXIT_OK;
        });
        assertThat(status).isEqualTo(CommandRunner.EXIT_INVARIANT_VIOLATION).isEqualTo(3);
        assertThat(err.toString()).startsWith("bfc replay: line ").contains("the allocator's invariants do not hold");
        // Running out of memory keeps status 1.
        assertThat(cli.run("replay", Cli.TRACES.resolve("oom-too-large-nogc-256mib.bfctrace"), "--check-invariants"))
                .isEqualTo(1);
    }

    @Test
    void aViolationStopsTheReplayNamingTheLine() throws Exception {
        Path t = Cli.RECORDED.resolve("tf-resnet-train.bfctrace");
        try (TraceReader r = TraceReader.open(t)) {
            WorkloadRunner runner = corruptedAfterTenCalls(r);
            assertThatThrownBy(() -> runner.run(r))
                    .isInstanceOf(WorkloadException.class)
                    .hasCauseInstanceOf(BfcInvariantViolation.class)
                    .hasMessageStartingWith("line ")
                    .hasMessageContaining("the allocator's invariants do not hold: ")
                    .hasMessageContaining("bytes_in_use");
        }
    }
}
