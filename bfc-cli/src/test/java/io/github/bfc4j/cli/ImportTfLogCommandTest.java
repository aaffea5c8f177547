/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.StackFrame;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ImportTfLogCommandTest {
    private static final long SEED = Long.getLong("bfc4j.test.seed", 20261121L);

    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void theRealTensorFlowLogBecomesAWorkloadTrace() throws IOException {
        Path out = dir.resolve("mlp.bfctrace.gz");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", out))
                .isEqualTo(0);
        assertThat(cli.err).isEmpty();
        assertThat(cli.out.lines()).containsExactly(
                "wrote " + out + ": workload trace, 232 calls (116 allocs, 116 frees), 4 regions in the log",
                "provenance: 116 allocs with their stack trace, 0 with their op name (#@ lines, docs/trace-format.md)",
                "memory_limit=64GiB (from log line 49, ProcessState CPU allocator), allow_growth=true"
                        + " (from first region 2MiB), garbage_collection=false");
        try (TraceReader r = TraceReader.open(out)) {
            assertThat(r.header().isWorkload()).isTrue();
            assertThat(r.header().memoryLimit()).isEqualTo(64L << 30);
            int allocs = 0;
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    assertThat(e.answered()).isFalse();
                    // Every AllocateRaw of the log has its [mem-debug] stack trace, the allocator's
                    // own frames (CurrentStackTrace, BFCAllocator::AllocateRaw) left out.
                    assertThat(e.provenance()).isNotNull();
                    List<StackFrame> stack = e.provenance().stack();
                    assertThat(stack).noneMatch(f -> f.methodName().startsWith("tsl::"));
                    if (allocs == 0) {
                        assertThat(e.bytes()).isEqualTo(4); // the log's first AllocateRaw: 4 bytes
                        // log lines 66-70: Tensor::Tensor, allocate_tensor, allocate_output twice, CastOpBase::Compute
                        assertThat(stack).hasSize(24);
                        assertThat(stack.get(0).methodName()).startsWith("tensorflow::Tensor::Tensor(tsl::Allocator*,");
                        assertThat(stack.get(4).methodName())
                                .isEqualTo("tensorflow::CastOpBase::Compute(tensorflow::OpKernelContext*)");
                        assertThat(stack.get(23).methodName()).isEqualTo("TF_SessionRun");
                    }
                    allocs++;
                }
            }
            assertThat(allocs).isEqualTo(116);
        }
        // Replayed, it reserves what TensorFlow reserved: "Total allocated bytes: 30.00MiB".
        assertThat(cli.run("replay", out)).isEqualTo(0);
        assertThat(cli.out).contains("peak reserved  30MiB (31457280 bytes)").contains("4 obtained");
    }

    /**
     * A log whose file name holds control characters (an escape, a tab) gets a default name and
     * a source line that show them escaped, as commands show names: they went raw into the
     * trace (only line breaks were replaced).
     */
    @Test
    void controlCharactersInTheLogsFileNameAreEscapedInTheTrace() throws IOException {
        Path log = dir.resolve("a\u001bb\tc.log.gz");
        Files.copy(Cli.TF_LOG, log);
        Path out = dir.resolve("esc.bfctrace");
        assertThat(cli.run("import-tf-log", log, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", out)).isEqualTo(0);
        try (TraceReader r = TraceReader.open(out)) {
            for (String line : List.of(r.header().name(), r.header().source())) {
                assertThat(line).contains("a\\x1bb\\x09c.log.gz").doesNotContain("\u001b").doesNotContain("\t");
            }
        }
    }

    @Test
    void expectationsAreImpossibleForTheRealLogAndItSaysWhy() {
        Path out = dir.resolve("x.bfctrace");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o", out, "--with-expectations"))
                .isEqualTo(1);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: cannot write expectations: region 2 of"
                + " 'mklcpu' (log line 469, 0x7f195bdfe040) lies below region 1 (0x7f199c1fe040); expected addresses"
                + " can be mapped onto the sim only when regions were obtained at rising addresses; import without"
                + " --with-expectations for a workload trace");
        assertThat(out).doesNotExist();
    }

    @Test
    void aLogWithRisingRegionsGivesATraceThatVerifies() throws IOException {
        System.out.println("ImportTfLogCommandTest seed " + SEED + " (-Dbfc4j.test.seed)");
        // gap 0 here, 4096 in the sim of imported traces: the mapping moves every region.
        SyntheticTfLog s = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 3000);
        Path log = dir.resolve("gpu.log");
        Files.writeString(log, s.log);
        Path out = dir.resolve("gpu.bfctrace");
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "64MiB",
                "--with-expectations")).isEqualTo(0);
        assertThat(cli.out).startsWith("wrote " + out + ": trace with expected answers, " + (s.allocs + s.frees)
                + " calls (" + s.allocs + " allocs, " + s.frees + " frees)");
        assertThat(s.nulls).isPositive();
        assertThat(cli.run("verify", out)).isEqualTo(0);
        assertThat(cli.out.lines()).containsExactly("PASS " + out + " " + (s.allocs + s.frees) + " calls",
                "1 passed, 0 failed");
        List<String> lines = Files.readAllLines(out);
        assertThat(lines.get(2)).startsWith("source imported from TensorFlow log gpu.log, BFCAllocator 'GPU_0_bfc'");
        // The first region lands at the sim's base, the next ones 4096 bytes (the gap) after the one before.
        assertThat(lines.stream().filter(l -> l.startsWith("sub alloc ")).findFirst().orElseThrow())
                .endsWith(" => 0x100000000");
    }

    @Test
    void unknownAllocatorListsTheLogsAllocators() {
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: --allocator=GPU_0_bfc (expected: an allocator"
                + " of " + Cli.TF_LOG + ": mklcpu, bfc_cpu_allocator_for_gpu)");
    }

    /** The indexes of a synthetic log's AllocateRaw lines that give a result (size and address). */
    private static List<Integer> allocateRawResultLines(List<String> lines) {
        List<Integer> out = new java.util.ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("] AllocateRaw GPU_0_bfc  ") && lines.get(i).matches(".*  \\d+ 0x[0-9a-f]+$")) {
                out.add(i);
            }
        }
        return out;
    }

    @Test
    void aLongOrControlAddressIsQuotedCutAndVisible() throws IOException {
        String good = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 40).log.toString();
        List<String> lines = good.lines().toList();
        int target = allocateRawResultLines(lines).get(0);
        Path log = dir.resolve("bad.log");
        // An address of 300,000 characters: the message quotes 120 of it, not the whole.
        Files.writeString(log, replaceLine(lines, target, lines.get(target).replaceFirst(" 0x[0-9a-f]+$",
                " 0x" + "g".repeat(300_000))));
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"), "--memory-limit",
                "64MiB")).isEqualTo(2);
        assertThat(cli.err.lines()).singleElement().asString().hasSizeLessThan(500)
                .endsWith("in place of '0x" + "g".repeat(118) + "...')");
        // An escape character in it is shown, not sent to the terminal.
        Files.writeString(log, replaceLine(lines, target, lines.get(target).replaceFirst(" 0x[0-9a-f]+$",
                " 0x7f\u001b[2J")));
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"), "--memory-limit",
                "64MiB")).isEqualTo(2);
        assertThat(cli.err).doesNotContain("\u001b").endsWith("in place of '0x7f\\x1b[2J')\n");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    @Test
    void aRegionWhoseStartIsAboveItsEndAsAnUnsignedAddressIsRefused() throws IOException {
        String good = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 40).log.toString();
        List<String> lines = good.lines().toList();
        int target = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("Allocated memory at ")) {
                target = i;
                break;
            }
        }
        assertThat(target).isPositive();
        // 0xffffffffffffffff is -1 as a signed long: below the end, though the address is above it.
        Path log = dir.resolve("wrapped.log");
        Files.writeString(log, replaceLine(lines, target,
                lines.get(target).replaceFirst("at 0x[0-9a-f]+ to", "at 0xffffffffffffffff to")));
        Path out = dir.resolve("x");
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "64MiB"))
                .isEqualTo(2);
        assertThat(cli.err).startsWith("bfc import-tf-log: " + log + " line " + (target + 1)
                + ": cannot use 'Allocated memory at 0xffffffffffffffff to 0x");
        assertThat(cli.err).endsWith("(expected: Allocated memory at <start> to <end> with 0 < start < end)\n");
        assertThat(out).doesNotExist();
    }

    @Test
    void unusableLinesAreNamed() throws IOException {
        String good = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 40).log.toString();
        List<String> lines = good.lines().toList();
        int target = allocateRawResultLines(lines).get(0);
        assertThat(target).isPositive();
        // A malformed byte count.
        String bad = replaceLine(lines, target, lines.get(target).replaceFirst("  (\\d+) ", "  12x "));
        Path log = dir.resolve("bad.log");
        Files.writeString(log, bad);
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"), "--memory-limit",
                "64MiB")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc import-tf-log: " + log + " line " + (target + 1) + ": cannot use"
                + " 'AllocateRaw GPU_0_bfc  12x 0x");
        assertThat(cli.err).endsWith("(expected: AllocateRaw <name>  <bytes> <ptr>, with a number of the digits 0 to"
                + " 9 in place of '12x')\n");
        // A free of an address never allocated.
        int free = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("[mem-debug] DeallocateRaw,GPU_0_bfc,") && !lines.get(i).contains(",0,0,")) {
                free = i;
                break;
            }
        }
        assertThat(free).isPositive();
        Files.writeString(log, replaceLine(lines, free, lines.get(free).replaceFirst(",0x[0-9a-f]+,", ",0xdead00,")));
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"), "--memory-limit",
                "64MiB")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + log + " line " + (free + 1)
                + ": DeallocateRaw of 0xdead00, which no earlier AllocateRaw result line of 'GPU_0_bfc' returned (is"
                + " the log cut at its start, or were lines of several threads interleaved?)");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    /**
     * A log cut while it was written ends inside a line, whose numbers may be cut too (an
     * address of 0x7f3a0 for 0x7f3a00012300): that line is not used, and a warning names it.
     */
    @Test
    void aLastLineWithoutALineBreakIsNotUsedAndNamed() throws IOException {
        String good = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 40).log.toString();
        List<String> lines = good.lines().toList();
        List<Integer> results = allocateRawResultLines(lines);
        int target = results.get(results.size() - 1);
        assertThat(target).isPositive();
        String before = String.join("\n", lines.subList(0, target)) + "\n";
        String cutLine = lines.get(target).substring(0, lines.get(target).lastIndexOf("0x") + 7);
        Path whole = Files.writeString(dir.resolve("before.log"), before);
        Path cut = Files.writeString(dir.resolve("cut.log"), before + cutLine);
        assertThat(cli.run("import-tf-log", whole, "--allocator", "GPU_0_bfc", "-o", dir.resolve("a.bfctrace"),
                "--memory-limit", "64MiB")).isZero();
        String wrote = cli.out.lines().findFirst().orElseThrow();
        assertThat(cli.err).isEmpty();
        assertThat(cli.run("import-tf-log", cut, "--allocator", "GPU_0_bfc", "-o", dir.resolve("b.bfctrace"),
                "--memory-limit", "64MiB")).isZero();
        assertThat(cli.out.lines().findFirst().orElseThrow()).isEqualTo(wrote.replace("a.bfctrace", "b.bfctrace"));
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: warning: " + cut + " line " + (target + 1)
                + ": the last line has no line break after it: the log may be truncated (that line was not used)");
    }

    @Test
    void aLogWithoutMemDebugLinesOrLimitIsRefused() throws IOException {
        String good = SyntheticTfLog.generate("GPU_0_bfc", 64L << 20, 0x7f3a00000000L, 0, SEED, 40).log.toString();
        Path log = dir.resolve("level3.log");
        Files.writeString(log, good.lines().filter(l -> !l.contains("[mem-debug]")).reduce("", (a, b) -> a + b + "\n"));
        assertThat(cli.run("import-tf-log", log, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"), "--memory-limit",
                "64MiB")).isEqualTo(2);
        assertThat(cli.err).contains("DeallocateRaw lines without addresses; write the log with"
                + " TF_CPP_VMODULE=bfc_allocator=4");
        Path full = dir.resolve("full.log");
        Files.writeString(full, good);
        assertThat(cli.run("import-tf-log", full, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: --memory-limit is needed: " + full
                + " does not state the memory limit of 'GPU_0_bfc' (give the device's memory given to TensorFlow,"
                + " e.g. --memory-limit=14GiB)");
        assertThat(cli.run("import-tf-log", dir.resolve("none.log"), "--allocator", "a", "-o", dir.resolve("x")))
                .isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + dir.resolve("none.log") + ": no such file");
        assertThat(cli.run("import-tf-log", dir, "--allocator", "a", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + dir + ": is a directory (expected: a file)");
        assertThat(cli.run("import-tf-log", full, "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err).contains("Missing required option: '--allocator=NAME'");

        // A limit past what the trace's simulated space can hold: refused, not an internal error.
        assertThat(cli.run("import-tf-log", full, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"),
                "--memory-limit", Long.toString(Long.MAX_VALUE))).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc import-tf-log: memory limit 9223372036854775807 (from --memory-limit) is"
                + " too large (expected: at most ");
        // A name that would break the trace's header: refused before the log is read.
        assertThat(cli.run("import-tf-log", full, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"),
                "--memory-limit", "64MiB", "--name", "x\nsource evil")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: --name='x\\x0asource evil' (expected: text"
                + " that is not blank, without line breaks, tabs or other control characters: the trace's name"
                + " line)");
        // Other control characters, which serve --name refuses too, and a blank name: refused alike.
        String[][] badAndShown = {
            {"a\u001b[31mred", "a\\x1b[31mred"}, {"a\tb", "a\\x09b"}, {"a\u0000b", "a\\x00b"},
            {"a\u007fb", "a\\x7fb"}, {"   ", "   "},
        };
        for (String[] c : badAndShown) {
            assertThat(cli.run("import-tf-log", full, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"),
                    "--memory-limit", "64MiB", "--name", c[0])).as(c[1]).isEqualTo(2);
            assertThat(cli.err.lines()).as(c[1]).containsExactly("bfc import-tf-log: --name='" + c[1]
                    + "' (expected: text that is not blank, without line breaks, tabs or other control characters:"
                    + " the trace's name line)");
            assertThat(cli.err).doesNotContain("\u001b", "\t", "\u0000", "\u007f");
        }
        // A file that is no log: a line without end fails at 1 MiB, not with the heap.
        Path zeros = dir.resolve("zeros.log");
        Files.write(zeros, new byte[(1 << 20) + 10]);
        assertThat(cli.run("import-tf-log", zeros, "--allocator", "a", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + zeros + " line 1: longer than 1048576"
                + " characters (expected: a TensorFlow log written with TF_CPP_VMODULE=bfc_allocator=4)");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    /** A stated limit past what a long holds is no limit: the import asks for one. */
    @Test
    void aStatedLimitThatOverflowsIsIgnored() throws IOException {
        String p = "I0000 00:00:1.0 1 ";
        String log = p + "process_state.cc:90] Using BFCAllocator with memory limit of 17592186044417 MB for"
                + " ProcessState CPU allocator\n"
                + p + "bfc_allocator.cc:76] Creating new BFCAllocator named: bfc_cpu_allocator_for_gpu\n"
                + p + "bfc_allocator.cc:276] AllocateRaw bfc_cpu_allocator_for_gpu  1000 0x7f0000001000\n";
        Path f = dir.resolve("huge-limit.log");
        Files.writeString(f, log);
        assertThat(cli.run("import-tf-log", f, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", dir.resolve("y")))
                .isEqualTo(2);
        assertThat(cli.err).contains("--memory-limit is needed");
    }

    @Test
    void aRegionOfMoreThan2Pow63MinusOneBytesIsRefused() throws IOException {
        // 0x1000 to 0xffffffffffffff00 rises, but its size does not fit a long (it was -4352 bytes).
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        String log = p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.\n"
                + p + "181] Allocated memory at 0x1000 to 0xffffffffffffff00\n"
                + p + "323] AllocateRaw GPU_0_bfc  1000 0x1000\n";
        Path in = dir.resolve("huge.log");
        Files.writeString(in, log);
        Path out = dir.resolve("huge.bfctrace");
        for (boolean expectations : new boolean[] {false, true}) {
            List<Object> args = new java.util.ArrayList<>(List.of("import-tf-log", in, "--allocator", "GPU_0_bfc",
                    "-o", out, "--memory-limit", "1GiB"));
            if (expectations) {
                args.add("--with-expectations");
            }
            assertThat(cli.run(args.toArray())).as(cli.err).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + in + " line 2: cannot use 'Allocated"
                    + " memory at 0x1000 to 0xffffffffffffff00' (expected: Allocated memory at <start> to <end> with"
                    + " end - start of at most 9223372036854775807 bytes (8 EiB - 1), the largest region an allocator"
                    + " can hold)");
            assertThat(out).doesNotExist();
        }
    }

    @Test
    void regionsAbove2Pow63RiseAsUnsignedAddresses() throws IOException {
        // Addresses from 2^63 up are negative as signed longs: 0x9000000000000000 was said to lie below
        // 0x7f0000001000, and an address in a region across 2^63 in no region at all.
        for (long first : new long[] {0x7f0000001000L, 0x7fffffffffff0000L}) {
            String a = "0x" + Long.toHexString(first);
            String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
            String log = p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.\n"
                    + p + "181] Allocated memory at " + a + " to 0x" + Long.toHexString(first + (2 << 20)) + "\n"
                    + p + "323] AllocateRaw GPU_0_bfc  1048576 " + a + "\n"
                    + p + "171] Extending allocation by 4.00MiB bytes for GPU_0_bfc.\n"
                    + p + "181] Allocated memory at 0x9000000000000000 to 0x9000000000400000\n"
                    + p + "323] AllocateRaw GPU_0_bfc  2097152 0x9000000000000000\n"
                    + p + "323] AllocateRaw GPU_0_bfc  1048576 0x" + Long.toHexString(first + (1 << 20)) + "\n"
                    + p + "698] [mem-debug] DeallocateRaw,GPU_0_bfc,2097152,0x9000000000000000,*** Begin stack"
                    + " trace ***\n"
                    + "\tframe\n*** End stack trace ***\n";
            Path in = dir.resolve("high.log");
            Files.writeString(in, log);
            Path out = dir.resolve("high.bfctrace");
            assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB",
                    "--with-expectations")).as(a + ": " + cli.err).isEqualTo(0);
            List<String> body = Files.readAllLines(out).stream().filter(l -> !l.startsWith("#")).skip(5).toList();
            // The second region follows the first in the sim, after its 4096-byte gap.
            assertThat(body).as(a).containsExactly(
                    "alloc 1 1048576 => 0x100000000",
                    "sub alloc 2097152 => 0x100000000",
                    "alloc 2 2097152 => 0x100201000",
                    "sub alloc 4194304 => 0x100201000",
                    "alloc 3 1048576 => 0x100100000",
                    "free 2");
            assertThat(cli.run("verify", out)).as(a + ": " + cli.out).isEqualTo(0);
        }
    }

    @Test
    void aMemoryLimitTooLargeForTheSimIsRefusedSayingWhatToGive() throws IOException {
        // From --memory-limit itself, it said 'give --memory-limit', which was given.
        Path out = dir.resolve("x.bfctrace");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", out,
                "--memory-limit", Long.MAX_VALUE)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: memory limit 9223372036854775807 (from"
                + " --memory-limit) is too large (expected: at most 9223372032543031295 bytes, so that the trace's"
                + " simulated space fits; give a smaller --memory-limit)");
        // From the log: give one.
        Path log = dir.resolve("huge.log");
        Files.writeString(log, "I0000 00:00:1.0 1 process_state.cc:1] Using BFCAllocator with memory limit of"
                + " 8796093022207 MB for ProcessState CPU allocator\n"
                + "I0000 00:00:1.0 1 bfc_allocator.cc:323] AllocateRaw bfc_cpu_allocator_for_gpu  1000 0\n");
        assertThat(cli.run("import-tf-log", log, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", out)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: memory limit 9223372036853727232 (from log"
                + " line 1, ProcessState CPU allocator) is too large (expected: at most 9223372032543031295 bytes, so"
                + " that the trace's simulated space fits; give --memory-limit)");
        assertThat(out).doesNotExist();
    }

    /**
     * A size, alignment or address of the log is read as a trace's numbers are, in the ASCII
     * digits alone: {@code +1000} and other scripts' digits ({@code ١٠٠٠}, {@code １０００})
     * were read as 1000 by Long.parseLong, and an address {@code 0x+7f...} by
     * Long.parseUnsignedLong. Each stops the import, naming the line; nothing is written.
     */
    @Test
    void numbersOfTheLogAreReadInAsciiDigitsOnly() throws IOException {
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        String[] lines = {
            p + "276] AllocateRaw GPU_0_bfc 1000 alignment=4096",
            p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.",
            p + "181] Allocated memory at 0x7f0000000000 to 0x7f0000200000",
            p + "323] AllocateRaw GPU_0_bfc  1000 0x7f0000000000",
        };
        Path in = dir.resolve("digits.log");
        Path out = dir.resolve("digits.bfctrace");
        Files.writeString(in, String.join("\n", lines) + "\n");
        assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB"))
                .as(cli.err).isZero();
        assertThat(Files.readAllLines(out)).contains("alloc 1 1000 align=4096");
        Files.delete(out);
        // {line index, text replaced, its replacement, what the line is expected to be}
        String[][] cases = {
            {"3", "  1000 ", "  +1000 ", "AllocateRaw <name>  <bytes> <ptr>"},
            {"3", "  1000 ", "  \u0661\u0660\u0660\u0660 ", "AllocateRaw <name>  <bytes> <ptr>"},
            {"3", "  1000 ", "  \uff11\uff10\uff10\uff10 ", "AllocateRaw <name>  <bytes> <ptr>"},
            {"0", " 1000 ", " +1000 ", "AllocateRaw <name>  <bytes> <ptr>"},
            {"0", "=4096", "=+4096", "AllocateRaw <name> <bytes> alignment=<n>"},
            {"0", "=4096", "=\u0664\u0660\u0669\u0666", "AllocateRaw <name> <bytes> alignment=<n>"},
        };
        for (String[] c : cases) {
            int k = Integer.parseInt(c[0]);
            String[] bad = lines.clone();
            bad[k] = bad[k].replace(c[1], c[2]);
            Files.writeString(in, String.join("\n", bad) + "\n");
            assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB"))
                    .as(c[2]).isEqualTo(2);
            String msg = bad[k].substring(bad[k].indexOf("] ") + 2);
            String token = c[2].trim().replace("=", "");
            assertThat(cli.err.lines()).as(c[2]).containsExactly("bfc import-tf-log: " + in + " line " + (k + 1)
                    + ": cannot use '" + msg + "' (expected: " + c[3] + ", with a number of the digits 0 to 9 in"
                    + " place of '" + token + "')");
            assertThat(out).doesNotExist();
        }
        // Digits past a long's range: the number is too large, not of the wrong digits.
        String[] big = lines.clone();
        big[3] = big[3].replace("  1000 ", "  99999999999999999999 ");
        Files.writeString(in, String.join("\n", big) + "\n");
        assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB"))
                .isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + in + " line 4: cannot use 'AllocateRaw"
                + " GPU_0_bfc  99999999999999999999 0x7f0000000000' (expected: AllocateRaw <name>  <bytes> <ptr>, with a"
                + " number of at most 9223372036854775807 in place of '99999999999999999999')");
        assertThat(out).doesNotExist();
        // Addresses: hex digits in ASCII after 0x, no sign.
        for (String address : new String[] {"0x+7f0000000000", "0x\uff17f0000000000"}) {
            String[] bad = lines.clone();
            bad[3] = bad[3].replace("0x7f0000000000", address);
            Files.writeString(in, String.join("\n", bad) + "\n");
            assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB"))
                    .as(address).isEqualTo(2);
            assertThat(cli.err.lines()).as(address).containsExactly("bfc import-tf-log: " + in + " line 4: cannot use"
                    + " 'AllocateRaw GPU_0_bfc  1000 " + address + "' (expected: an address like 0x7f19f8135040, or 0"
                    + " for null, in place of '" + address + "')");
            assertThat(out).doesNotExist();
        }
    }

    /**
     * A region the simulated space can hold only where the alignment of the call that obtained
     * it would not put it is said to fail for that alignment, naming both lines, with exit
     * status 1 (expected answers impossible for this log) and nothing written: it was 'the
     * simulated space cannot hold region 1 (log line 3); give a larger --memory-limit', exit 2.
     * A region past the space is still said to need a larger limit.
     */
    @Test
    void aRegionThatOnlyItsCallsAlignmentKeepsOffTheSimIsSaidToFailForIt() throws IOException {
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        String log = p + "276] AllocateRaw g 1000 alignment=4611686018427387904\n"
                + p + "171] Extending allocation by 2.00MiB bytes for g.\n"
                + p + "181] Allocated memory at 0x7f0000000000 to 0x7f0000200000\n"
                + p + "323] AllocateRaw g  1000 0x7f0000000000\n";
        Path in = Files.writeString(dir.resolve("aligned.log"), log);
        Path out = dir.resolve("aligned.bfctrace");
        assertThat(cli.run("import-tf-log", in, "--allocator", "g", "--memory-limit", "1GiB", "-o", out,
                "--with-expectations")).as(cli.err).isEqualTo(1);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: cannot write expectations: region 1 of 'g' (log"
                + " line 3, 2MiB) was obtained during an AllocateRaw of alignment=4611686018427387904 (log line 1),"
                + " and the simulated space (0x100000000 to 0x141000000) has no address that is a multiple of it"
                + " with room for the region, where the replay would place it (a region is aligned to the alignment"
                + " of the call that obtains it); check that line's alignment, or import without"
                + " --with-expectations for a workload trace");
        assertThat(cli.out).isEmpty();
        assertThat(out).doesNotExist();
        // An alignment the space has room for: imported, and the trace verifies.
        Files.writeString(in, log.replace("alignment=4611686018427387904", "alignment=4294967296"));
        assertThat(cli.run("import-tf-log", in, "--allocator", "g", "--memory-limit", "1GiB", "-o", out,
                "--with-expectations")).as(cli.err).isZero();
        assertThat(cli.run("verify", out)).as(cli.out).isZero();
        Files.delete(out);
        // A region larger than the space (1 MiB and 16 MiB of gaps): the limit is the cause.
        Files.writeString(in, log.replace("alignment=4611686018427387904", "alignment=64")
                .replace("to 0x7f0000200000", "to 0x7f0004000000"));
        assertThat(cli.run("import-tf-log", in, "--allocator", "g", "--memory-limit", "1MiB", "-o", out,
                "--with-expectations")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: the simulated space cannot hold region 1 (log"
                + " line 3); give a larger --memory-limit");
        assertThat(out).doesNotExist();
    }

    @Test
    void newerLogsGiveTheAlignment() throws IOException {
        // Newer bfc_allocator.cc logs "AllocateRaw <name> <bytes> alignment=<n>" before the call.
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        String log = p + "276] AllocateRaw GPU_0_bfc 1000 alignment=4096\n"
                + p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.\n"
                + p + "181] Allocated memory at 0x7f0000001000 to 0x7f0000201000\n"
                + p + "323] AllocateRaw GPU_0_bfc  1000 0x7f0000001000\n"
                + p + "276] AllocateRaw GPU_0_bfc 2000 alignment=64\n"
                + p + "323] AllocateRaw GPU_0_bfc  2000 0x7f0000001400\n"
                + p + "698] [mem-debug] DeallocateRaw,GPU_0_bfc,1000,0x7f0000001000,*** Begin stack trace ***\n"
                + "\tframe\n*** End stack trace ***\n";
        Path in = dir.resolve("new.log");
        Files.writeString(in, log);
        Path out = dir.resolve("new.bfctrace");
        assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB",
                "--with-expectations")).as(cli.err).isEqualTo(0);
        List<String> body = Files.readAllLines(out).stream().filter(l -> !l.startsWith("#")).skip(5).toList();
        assertThat(body).containsExactly(
                "alloc 1 1000 align=4096 => 0x100000000",
                "sub alloc 2097152 => 0x100000000",
                "alloc 2 2000 => 0x100000400",
                "free 1");
        assertThat(cli.run("verify", out)).isEqualTo(0);
    }

    @Test
    void opNamesAndStepsOfAMemDebugBuildGoWithTheirAllocations() throws IOException {
        // A TENSORFLOW_MEM_DEBUG build names each chunk's op and step in its memory dumps, and
        // the op of a failing request in its out-of-memory warning.
        String p = "I0000 00:00:1.0 1 bfc_allocator.cc:";
        String log = p + "171] Extending allocation by 2.00MiB bytes for GPU_0_bfc.\n"
                + p + "181] Allocated memory at 0x7f0000001000 to 0x7f0000201000\n"
                + p + "323] AllocateRaw GPU_0_bfc  1000 0x7f0000001000\n"
                + p + "324] [mem-debug] AllocateRaw,GPU_0_bfc,1000,0x7f0000001000,*** Begin stack trace ***\n"
                + "\ttsl::CurrentStackTrace[abi:cxx11]()\n"
                + "\ttsl::BFCAllocator::AllocateRaw(unsigned long, unsigned long, tsl::AllocationAttributes const&)\n"
                + "\ttensorflow::MatMulOp::Compute(tensorflow::OpKernelContext*)\n"
                + "\t\n"
                + "*** End stack trace ***\n"
                + p + "323] AllocateRaw GPU_0_bfc  2000 0x7f0000001400\n"
                + p + "1090] InUse at 7f0000001000 of size 1024 by op dense/MatMul action_count 1 step 7 next 2\n"
                + p + "1090] InUse at 7f0000001400 of size 2048 by op dense/BiasAdd action_count 2 step 7 next 3\n"
                + p + "480] Allocator (GPU_0_bfc) ran out of memory trying to allocate 4.00GiB (rounded to"
                + " 4294967296)requested by op dense_1/MatMul\n"
                + p + "323] AllocateRaw GPU_0_bfc  4294967296 0\n"
                + p + "698] [mem-debug] DeallocateRaw,GPU_0_bfc,1000,0x7f0000001000,*** Begin stack trace ***\n"
                + "\tframe\n*** End stack trace ***\n";
        Path in = dir.resolve("memdebug.log");
        Files.writeString(in, log);
        Path out = dir.resolve("memdebug.bfctrace");
        assertThat(cli.run("import-tf-log", in, "--allocator", "GPU_0_bfc", "-o", out, "--memory-limit", "1GiB"))
                .as(cli.err).isEqualTo(0);
        assertThat(cli.out).contains("provenance: 1 alloc with its stack trace, 3 with their op name");
        List<Provenance> got = new java.util.ArrayList<>();
        try (TraceReader r = TraceReader.open(out)) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    got.add(e.provenance());
                }
            }
        }
        assertThat(got).hasSize(3);
        assertThat(got.get(0).annotation()).isEqualTo("dense/MatMul");
        assertThat(got.get(0).step()).isEqualTo(7);
        assertThat(got.get(0).stack()).extracting(StackFrame::methodName)
                .containsExactly("tensorflow::MatMulOp::Compute(tensorflow::OpKernelContext*)");
        assertThat(got.get(1)).isEqualTo(new Provenance(-1, null, "dense/BiasAdd", 7, List.of()));
        assertThat(got.get(2)).isEqualTo(new Provenance(-1, null, "dense_1/MatMul", -1, List.of()));
    }

    /**
     * A gzip log of two members ({@code gzip -c >> log.gz}, as a log is appended to) is read to
     * its end from a pipe that has nothing available between them, and one cut inside its second
     * member's header is said to end early: both were imported from the first member's lines
     * alone (98 of 232 calls), exit 0.
     */
    @Test
    void aGzipLogOfTwoMembersIsReadToItsEnd() throws IOException {
        List<String> lines;
        try (var in = new java.util.zip.GZIPInputStream(Files.newInputStream(Cli.TF_LOG))) {
            lines = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).lines().toList();
        }
        byte[] first = gzipLines(lines.subList(0, 3000));
        byte[] second = gzipLines(lines.subList(3000, lines.size()));
        byte[] both = java.util.Arrays.copyOf(first, first.length + second.length);
        System.arraycopy(second, 0, both, first.length, second.length);
        java.io.InputStream pipe = new java.io.InputStream() {
            private int at;

            @Override
            public int read() {
                return at == both.length ? -1 : both[at++] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                int n = Math.min(len, (at < first.length ? first.length : both.length) - at);
                if (n <= 0) {
                    return -1;
                }
                System.arraycopy(both, at, b, off, n);
                at += n;
                return n;
            }

            @Override
            public int available() {
                return 0;
            }
        };
        Path out = dir.resolve("two.bfctrace");
        assertThat(cli.runWithStdin(pipe, "import-tf-log", "-", "--allocator", "bfc_cpu_allocator_for_gpu", "-o", out))
                .as(cli.err).isEqualTo(0);
        assertThat(cli.out).startsWith("wrote " + out + ": workload trace, 232 calls (116 allocs, 116 frees)");
        Path cut = dir.resolve("cut.log.gz");
        Files.write(cut, java.util.Arrays.copyOf(both, first.length + 5));
        assertThat(cli.run("import-tf-log", cut, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", dir.resolve("x")))
                .isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + cut + " line 3001: the gzip data ends"
                + " early: the file is truncated (or still being written); check it with 'gzip -t'");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    private static byte[] gzipLines(List<String> lines) throws IOException {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (var gz = new java.util.zip.GZIPOutputStream(bytes)) {
            gz.write((String.join("\n", lines) + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        return bytes.toByteArray();
    }

    @Test
    void anEmptyLogIsNamedNotTheAllocator() throws IOException {
        // It blamed --allocator ("expected: an allocator of empty.log: it names none").
        Path empty = Files.createFile(dir.resolve("empty.log"));
        assertThat(cli.run("import-tf-log", empty, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + empty + " is empty (expected: a TensorFlow"
                + " log written with TF_CPP_VMODULE=bfc_allocator=4)");
        Path other = dir.resolve("other.log");
        Files.writeString(other, "I0000 00:00:1.0 1 some_other.cc:1] hello\nworld\n");
        assertThat(cli.run("import-tf-log", other, "--allocator", "GPU_0_bfc", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + other + ": none of its 2 lines names a BFC"
                + " allocator (expected: a TensorFlow log written with TF_CPP_VMODULE=bfc_allocator=4, which names each"
                + " allocator in a 'Creating new BFCAllocator named: <name>' line)");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    @Test
    void aTruncatedGzipLogIsNamedWithItsLine() throws IOException {
        byte[] gz = Files.readAllBytes(Cli.TF_LOG);
        Path cut = dir.resolve("cut.log.gz");
        Files.write(cut, java.util.Arrays.copyOf(gz, gz.length / 2));
        assertThat(cli.run("import-tf-log", cut, "--allocator", "mklcpu", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).singleElement().asString().matches("bfc import-tf-log: \\Q" + cut + "\\E line"
                + " \\d+: the gzip data ends early: the file is truncated \\(or still being written\\); check it with"
                + " 'gzip -t'");
        Path small = dir.resolve("small.log.gz");
        Files.write(small, java.util.Arrays.copyOf(gz, 5));
        assertThat(cli.run("import-tf-log", small, "--allocator", "mklcpu", "-o", dir.resolve("x"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: " + small + ": the gzip header is cut short"
                + " (the file is truncated or empty); check it with 'gzip -t'");
    }

    /**
     * The line a truncated gzip log is said to end in is the line after the last whole line its
     * data holds, as gzip itself decompresses it, not one read tens of kilobytes before the end
     * (which would send the user looking for damage where there is none).
     */
    @Test
    void aTruncatedGzipLogIsNamedWithTheLineWhereItsDataEnds() throws IOException {
        byte[] gz = Files.readAllBytes(Cli.TF_LOG);
        for (int length : new int[] {3000, 12_000, gz.length / 2, gz.length - 100}) {
            byte[] cut = java.util.Arrays.copyOf(gz, length);
            long wholeLines = 0;
            try (java.io.InputStream in = new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(cut))) {
                for (int b = in.read(); b >= 0; b = in.read()) {
                    wholeLines += b == '\n' ? 1 : 0;
                }
                throw new AssertionError("the cut data decompressed whole");
            } catch (java.io.EOFException expected) {
                // where the data ends
            }
            Path log = dir.resolve("cut-" + length + ".log.gz");
            Files.write(log, cut);
            assertThat(cli.run("import-tf-log", log, "--allocator", "bfc_cpu_allocator_for_gpu", "-o",
                    dir.resolve("x"))).as("%d bytes", length).isEqualTo(2);
            assertThat(cli.err.lines()).as("%d bytes", length).containsExactly("bfc import-tf-log: " + log + " line "
                    + (wholeLines + 1) + ": the gzip data ends early: the file is truncated (or still being written);"
                    + " check it with 'gzip -t'");
        }
    }

    @Test
    void theTraceIsWrittenAsOtherToolsWriteTheirFiles() throws IOException {
        Path subdir = Files.createDirectory(dir.resolve("d"));
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o", subdir)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc import-tf-log: -o=" + subdir + " is a directory (expected:"
                + " the file to write, e.g. " + subdir.resolve("trace.bfctrace") + ")");
        assertThat(subdir).isEmptyDirectory();
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Set<PosixFilePermission> umasked = Files.getPosixFilePermissions(Files.createFile(dir.resolve("plain")));
        Path out = dir.resolve("mlp.bfctrace");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o", out)).as(cli.err).isZero();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(out)))
                .isEqualTo(PosixFilePermissions.toString(umasked));
        // From standard input too.
        Path fromStdin = dir.resolve("stdin.bfctrace");
        assertThat(cli.runWithStdin(Files.readAllBytes(Cli.TF_LOG), "import-tf-log", "-", "--allocator", "mklcpu",
                "-o", fromStdin)).as(cli.err).isZero();
        assertThat(Files.readString(fromStdin).replace("<stdin>", Cli.TF_LOG.getFileName().toString()))
                .isEqualTo(Files.readString(out));
    }

    private static String replaceLine(List<String> lines, int i, String replacement) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < lines.size(); k++) {
            sb.append(k == i ? replacement : lines.get(k)).append('\n');
        }
        return sb.toString();
    }
}
