/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class WhatIfCommandTest {
    private final Cli cli = new Cli();

    private static final Path RESNET = Cli.RECORDED.resolve("tf-resnet-train-limit48mb.bfctrace");

    /**
     * Limits and fractions wider than their column's name (a limit of 8 EiB - 1 byte is written
     * as its 19 digits and a B) widen their column: every row lines up with the header.
     */
    @Test
    void wideLimitsAndFractionsKeepTheColumnsAligned() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String[][] cases = {
            {"9223372036854775807,1MiB", "0,0.5"},
            {"1MiB,1000000001", "0.00000123456789012345678,0.5"},
        };
        for (String[] c : cases) {
            assertThat(cli.run("whatif", t, "--memory-limit", c[0], "--fragmentation-fraction", c[1]))
                    .as(cli.err).isZero();
            List<String> table = cli.out.lines().filter(l -> !l.startsWith("smallest")).toList();
            assertThat(table).hasSize(5);
            String header = table.get(0);
            for (String row : table.subList(1, table.size())) {
                assertThat(row).as("%s%n%s", header, row).hasSameSizeAs(header);
                for (String column : new String[] {"allow_growth", "garbage_collection", "fragmentation_fraction",
                        "peak_in_use"}) {
                    int at = header.indexOf(column);
                    assertThat(row.charAt(at - 1)).as("%s%n%s", header, row).isEqualTo(' ');
                    assertThat(row.charAt(at)).as("%s%n%s", header, row).isNotEqualTo(' ');
                }
            }
        }
        assertThat(cli.out).contains("\n1000000001B   ");
    }

    /**
     * A million failed allocations, seven digits, do not fit the six of the ooms column's name
     * and its padding: the column widens, and the rows line up with the header.
     */
    @Test
    void aMillionOutOfMemoryFailuresKeepTheColumnsAligned(@TempDir Path dir) throws IOException {
        Path t = dir.resolve("million-ooms.bfctrace");
        StringBuilder b = new StringBuilder("bfctrace 1\nname a million requests of 2 MiB\nsource workload: a test\n"
                + "options memory_limit=1048576 allow_growth=false garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=1073741824 gap=0 coalescing=true\n");
        for (int id = 1; id <= 1_000_000; id++) {
            b.append("alloc ").append(id).append(" 2097152\n");
        }
        Files.writeString(t, b);
        // At 1 MiB every request fails; at 4 GiB, one region of the whole limit, 4 GiB / 2 MiB = 2048 fit.
        assertThat(cli.run("whatif", t, "--memory-limit", "1MiB,4GiB")).as(cli.err).isEqualTo(1);
        List<String> table = cli.out.lines().filter(l -> !l.startsWith("every")).toList();
        assertThat(table).hasSize(3);
        assertThat(table.get(1).split(" +")[6]).isEqualTo("1000000");
        assertThat(table.get(2).split(" +")[6]).isEqualTo(Long.toString(1_000_000 - (4L << 30) / (2 << 20)));
        String header = table.get(0);
        for (String row : table.subList(1, table.size())) {
            assertThat(row).as("%s%n%s", header, row).hasSameSizeAs(header);
            // ooms, first_oom_line and fragmentation are right-aligned under their names.
            for (String column : new String[] {"ooms", "first_oom_line", "fragmentation"}) {
                int end = header.indexOf(column + " ") + column.length();
                if (column.equals("fragmentation")) {
                    end = header.length();
                }
                assertThat(row.charAt(end - 1)).as("%s%n%s", header, row).isNotEqualTo(' ');
                assertThat(end == row.length() || row.charAt(end) == ' ').as("%s%n%s", header, row).isTrue();
            }
        }
    }

    @Test
    void oneRowPerCombinationAndTheSmallestLimitThatFits() {
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "32MiB,48MiB,64MiB", "--allow-growth", "true,false"))
                .isEqualTo(0);
        List<String> lines = cli.out.lines().toList();
        assertThat(lines).hasSize(1 + 6 + 1);
        assertThat(lines.get(0)).startsWith("memory_limit  allow_growth garbage_collection fragmentation_fraction"
                + " peak_in_use   peak_reserved   ooms first_oom_line fragmentation");
        assertThat(lines.get(1)).startsWith("32MiB         true ");
        assertThat(lines.get(2)).startsWith("32MiB         false ");
        assertThat(lines.get(3)).startsWith("48MiB         true ");
        assertThat(lines.get(6)).startsWith("64MiB         false ");
        // 32 MiB is too small (the trace recorded TensorFlow at 48 MiB without a failure).
        assertThat(lines.get(1).split(" +")[6]).isNotEqualTo("0");
        assertThat(lines.get(3).split(" +")[6]).isEqualTo("0");
        assertThat(lines.get(3).split(" +")[7]).isEqualTo("-");
        // The 48 MiB growth row is TensorFlow's own run: 48 MiB reserved.
        assertThat(lines.get(3).split(" +")[5]).isEqualTo("48MiB");
        assertThat(lines.get(7)).isEqualTo("smallest memory limit without running out of memory: 48MiB"
                + " (allow_growth=true garbage_collection=false fragmentation_fraction=0)");
        assertThat(cli.err).isEmpty();
    }

    @Test
    void limitsAreShownExactlyNotRoundedToOneAnother() {
        // 256 bytes apart, both 42.50 MiB to two decimals: one runs out of memory, one does not.
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "44566400,44566656,1536MiB")).isEqualTo(0);
        List<String> lines = cli.out.lines().toList();
        assertThat(lines.get(1)).startsWith("44566400B     true ");
        assertThat(lines.get(1).split(" +")[6]).isNotEqualTo("0");
        assertThat(lines.get(2)).startsWith("44566656B     true ");
        assertThat(lines.get(2).split(" +")[6]).isEqualTo("0");
        assertThat(lines.get(3)).startsWith("1536MiB       true ");
        assertThat(lines.get(4)).isEqualTo("smallest memory limit without running out of memory: 44566656B"
                + " (allow_growth=true garbage_collection=false fragmentation_fraction=0)");
        // What it names can be given back as it is.
        assertThat(cli.run("replay", RESNET, "--memory-limit", "44566656B")).isZero();
        assertThat(cli.out).contains("options        memory_limit=44566656B allow_growth=true");
    }

    @Test
    void theFirstOutOfMemoryLineMatchesReplay() {
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "32MiB")).isEqualTo(1);
        String row = cli.out.lines().toList().get(1);
        assertThat(cli.out).endsWith("every combination ran out of memory\n");
        String firstOom = row.split(" +")[7];
        assertThat(cli.run("replay", RESNET, "--memory-limit", "32MiB")).isEqualTo(1);
        assertThat(cli.out).contains("out of memory  " + row.split(" +")[6] + ": line " + firstOom + " (");
    }

    @Test
    void badValuesInAList() {
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "8GiB,lots")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly(
                "bfc whatif: --memory-limit=lots (expected: a size like 16GiB, 512MiB or 1048576)");
        assertThat(cli.run("whatif", RESNET, "--allow-growth", "true,maybe")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc whatif: --allow-growth=maybe (expected: true or false)");
        assertThat(cli.out).isEmpty();
    }

    @Test
    void anEmptyValueInAListIsAnError() {
        // "," used the header's limit without a word.
        assertThat(cli.run("whatif", RESNET, "--memory-limit", ",")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc whatif: --memory-limit=, (expected: values separated by single"
                + " commas, e.g. --memory-limit=8GiB,12GiB)");
        assertThat(cli.run("whatif", RESNET, "--fragmentation-fraction", "0,,0.01")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc whatif: --fragmentation-fraction=0,,0.01 (expected: values separated");
        assertThat(cli.run("whatif", RESNET, "--allow-growth", "true,")).isEqualTo(2);
        assertThat(cli.out).isEmpty();
        // Each combination must be possible before any runs.
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "48MiB,1KiB", "--fragmentation-fraction", "0.0001"))
                .isEqualTo(2);
        assertThat(cli.err).startsWith("bfc whatif: --fragmentation-fraction=0.0001 with --memory-limit=1KiB gives a"
                + " split threshold of 0 bytes");
        assertThat(cli.out).isEmpty();
    }

    @Test
    void aTraceFromStandardInputIsReadForEveryCombination() throws java.io.IOException {
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "32MiB,48MiB")).isZero();
        String fromFile = cli.out;
        assertThat(cli.runWithStdin(java.nio.file.Files.readAllBytes(RESNET), "whatif", "-", "--memory-limit",
                "32MiB,48MiB")).isZero();
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).isEqualTo(fromFile);
    }

    /**
     * An input that is no trace fails while it is copied, with the reader's message: /dev/zero
     * on standard input was copied to a temporary file until the disk was full.
     */
    @Test
    void standardInputThatIsNoTraceFailsAtOnce() throws java.io.IOException {
        // Zeros without end, as /dev/zero: how many were read says when the command stopped.
        long[] read = {0};
        java.io.InputStream zeros = new java.io.InputStream() {
            @Override
            public int read() {
                read[0]++;
                return 0;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                java.util.Arrays.fill(b, off, off + len, (byte) 0);
                read[0] += len;
                return len;
            }
        };
        assertThat(assertTimeoutPreemptively(java.time.Duration.ofSeconds(60),
                () -> cli.runWithStdin(zeros, "whatif", "-", "--memory-limit", "32MiB"))).isEqualTo(2);
        assertThat(cli.err).contains("<stdin> line 1: found a line longer than 1048576 bytes");
        assertThat(read[0]).as("bytes read before it stopped").isLessThan(16L << 20);
        byte[] noise = new byte[1 << 16];
        new java.util.Random(1).nextBytes(noise);
        assertThat(cli.runWithStdin(noise, "report", "-", "-o", java.nio.file.Files.createTempFile("r", ".html")))
                .isEqualTo(2);
        assertThat(cli.err).startsWith("bfc report: <stdin> line 1:");
        assertThat(cli.out).isEmpty();
    }

    /**
     * An option given twice is refused, as every other command refuses one: whatif took
     * '--allow-growth true --allow-growth false' as the list true,false, and
     * '--memory-limit 1MiB --memory-limit 2MiB' as 1MiB,2MiB. Lists are one word, comma-separated.
     */
    @Test
    void anOptionGivenTwiceIsRefusedAsByTheOtherCommands() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String[][] cases = {
            {"--allow-growth", "true", "false", "BOOL[,BOOL]"},
            {"--garbage-collection", "true", "false", "BOOL[,BOOL]"},
            {"--memory-limit", "1MiB", "2MiB", "SIZE[,SIZE...]"},
            {"--fragmentation-fraction", "0", "0.5", "F[,F...]"},
            {"--sub", "sim", "sim", "sim|host"},
        };
        for (String[] c : cases) {
            assertThat(cli.run("whatif", t, c[0], c[1], c[0], c[2])).as(c[0]).isEqualTo(2);
            assertThat(cli.err.lines()).as(c[0]).containsExactly("bfc whatif: option '" + c[0] + "' (" + c[3]
                    + ") should be specified only once (see 'bfc whatif --help')");
            assertThat(cli.out).isEmpty();
        }
        // replay words it the same way.
        assertThat(cli.run("replay", t, "--memory-limit", "1MiB", "--memory-limit", "2MiB")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: option '--memory-limit' (SIZE) should be specified"
                + " only once (see 'bfc replay --help')");
        // The list in one word still gives a row per value.
        assertThat(cli.run("whatif", t, "--allow-growth", "true,false")).isOne();
        assertThat(cli.out.lines().filter(l -> l.startsWith("1MiB "))).hasSize(2); // the header's limit
    }

    /**
     * A trace replaced while the rows run (another file moved over its name, as
     * SnapshotTraces.write and bfc generate replace theirs): every row replays the file the
     * command opened. Each row opened the name again, so the rows after the move were another
     * trace's, and so was the smallest limit that fits.
     */
    @Test
    void everyRowReplaysTheFileTheCommandOpenedThoughAnotherIsMovedOverIt(@TempDir Path dir) throws IOException {
        assertThat(cli.run("whatif", RESNET, "--memory-limit", "32MiB,48MiB")).isZero();
        String unchanged = cli.out;
        Path t = Files.copy(RESNET, dir.resolve("t.bfctrace"));
        Path other = Files.copy(Cli.TRACES.resolve("tiny-single.bfctrace"), dir.resolve("other.bfctrace"));
        String[] out = new String[1];
        assertThat(whatIfChangingTheFileAfterTheFirstRow(t, () -> Files.move(other, t,
                StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE), out)).isZero();
        assertThat(out[0]).isEqualTo(unchanged);
    }

    /**
     * A trace rewritten in place while the rows run (another trace written into it, as {@code cp}
     * does): the row that would replay other bytes than the first is not printed; the command
     * says so, exit status 2. The second row was the other trace's.
     */
    @Test
    void aTraceRewrittenInPlaceBetweenRowsIsRefused(@TempDir Path dir) throws IOException {
        Path t = Files.copy(RESNET, dir.resolve("t.bfctrace"));
        long bytes = Files.size(t);
        byte[] other = Files.readAllBytes(Cli.TRACES.resolve("tiny-single.bfctrace"));
        String[] out = new String[1];
        assertThat(whatIfChangingTheFileAfterTheFirstRow(t, () -> Files.write(t, other), out)).isEqualTo(2);
        assertThat(out[0].lines()).hasSize(2); // the header and the first row
        assertThat(cli.err.lines()).containsExactly("bfc whatif: " + t + ": the file changed while it was read: "
                + bytes + " bytes when the command opened it, " + other.length + " now; it is read again for each"
                + " pass (expected: a file that is not written while the command runs: copy it and read the copy)");
    }

    /** An action on a file. */
    private interface FileChange {
        void run() throws IOException;
    }

    /** Runs whatif at 32 and 48 MiB on {@code t}, making {@code change} once the first row is out. */
    private int whatIfChangingTheFileAfterTheFirstRow(Path t, FileChange change, String[] out) {
        StringWriter o = new StringWriter() {
            private boolean changed;

            @Override
            public void flush() {
                // Each row is flushed as it is printed: after the first, before the second pass.
                if (!changed && toString().lines().count() == 2) {
                    changed = true;
                    try {
                        change.run();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            }
        };
        StringWriter e = new StringWriter();
        CommandLine cmd = BfcCommand.commandLine();
        cmd.setOut(new PrintWriter(o));
        cmd.setErr(new PrintWriter(e));
        int status = cmd.execute("whatif", t.toString(), "--memory-limit", "32MiB,48MiB");
        out[0] = o.toString();
        cli.err = e.toString();
        return status;
    }

    /**
     * Once its output cannot be written (its reader has gone: {@code bfc whatif ... | head -2}),
     * no further combination is replayed: it replayed every one, printing each row into output
     * nobody read. Its output here fails at every write, and keeps what it was given: the header
     * and the first row, no other row and no last line; the status is that of the row replayed
     * (1MiB runs out of memory: 1).
     */
    @Test
    void noRowIsReplayedOnceTheOutputCannotBeWritten() {
        StringBuilder offered = new StringBuilder();
        Writer gone = new Writer() {
            @Override
            public void write(char[] chars, int off, int len) throws IOException {
                offered.append(chars, off, len);
                throw new IOException("Broken pipe");
            }

            @Override
            public void flush() throws IOException {
                throw new IOException("Broken pipe");
            }

            @Override
            public void close() {
            }
        };
        CommandLine cmd = BfcCommand.commandLine();
        cmd.setOut(new PrintWriter(gone, true));
        StringWriter err = new StringWriter();
        cmd.setErr(new PrintWriter(err));
        int status = cmd.execute("whatif", Cli.TRACES.resolve("tiny-single.bfctrace").toString(), "--memory-limit",
                "1MiB,2MiB,3MiB,4MiB,5MiB");
        assertThat(offered.toString().lines()).as(offered.toString()).hasSize(2)
                .satisfies(l -> assertThat(l.get(0)).startsWith("memory_limit "))
                .satisfies(l -> assertThat(l.get(1)).startsWith("1MiB "));
        assertThat(status).as(err.toString()).isEqualTo(1);
        assertThat(err.toString()).isEmpty();
    }
}
