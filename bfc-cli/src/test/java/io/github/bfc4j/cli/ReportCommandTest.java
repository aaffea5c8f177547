/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.PipeLinks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report's content (its rendering in a browser: {@link ReportChromiumTest}). */
class ReportCommandTest {
    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    private static final Path OOM = Cli.TRACES.resolve("oom-gc-random-256mib-s15.bfctrace");

    /** The numbers of a JSON array that follows {@code key} in the page's data. */
    static long[] array(String html, String key) {
        int at = html.indexOf(key);
        assertThat(at).as(key).isNotNegative();
        int open = html.indexOf('[', at);
        int close = html.indexOf(']', open);
        String body = html.substring(open + 1, close).trim();
        if (body.isEmpty()) {
            return new long[0];
        }
        String[] parts = body.split(",");
        long[] v = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            v[i] = Long.parseLong(parts[i]);
        }
        return v;
    }

    @Test
    void everyOutOfMemoryFailureIsMarkedAndMapsAreTaken() throws IOException {
        Path html = dir.resolve("r.html");
        assertThat(cli.run("report", OOM, "-o", html)).isEqualTo(0);
        assertThat(cli.err).isEmpty();
        assertThat(cli.out).startsWith("wrote " + html + " (")
                .contains("7724 calls").contains("21 occupancy maps").contains("279 out-of-memory failures marked");
        String page = Files.readString(html);
        // Self-contained: nothing is fetched at view time.
        assertThat(page).doesNotContain("src=").doesNotContain("href=").doesNotContain("http://")
                .doesNotContain("https://").doesNotContain("@import");
        // The same failures, at the same lines, as bfc replay lists.
        long[] oomLines = array(page, "\"ooms\":{\"calls\":[");
        assertThat(oomLines).hasSize(279);
        long[] lines = array(page.substring(page.indexOf("\"ooms\":")), "\"lines\":");
        assertThat(lines).hasSize(279);
        assertThat(cli.run("replay", OOM)).isEqualTo(1);
        assertThat(cli.out).contains("279: line " + lines[0] + " (").contains(", line " + lines[19] + " (");
        // The peak map comes first and shows the peak's bytes in use.
        Matcher m = Pattern.compile("\"maps\":\\[\\{\"label\":\"peak in use\",\"call\":(\\d+),\"line\":(\\d+),"
                + "\"inUse\":(\\d+)").matcher(page);
        assertThat(m.find()).isTrue();
        assertThat(m.group(2)).isEqualTo("3567");
        assertThat(m.group(3)).isEqualTo("268430080");
        assertThat(page).contains("\"label\":\"out of memory 1 of 279: 68.15MiB requested\"");
        assertThat(page).contains("<td>peak in use</td><td>255.99MiB (268430080 bytes) at line 3567</td>");
        assertThat(page).contains("<th>bin</th>");
    }

    @Test
    void chunksInUseNameTheLineOfTheirAllocation() throws IOException {
        // tiny-single: the peak map's chunks in use were allocated on alloc lines of the trace.
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path html = dir.resolve("tiny.html");
        assertThat(cli.run("report", t, "-o", html)).isEqualTo(0);
        String page = Files.readString(html);
        String map = page.substring(page.indexOf("\"maps\":"));
        long[] ids = array(map, "\"id\":");
        long[] chunkLines = array(map, "\"line\":[");
        long[] size = array(map, "\"size\":");
        assertThat(ids).hasSameSizeAs(chunkLines).hasSameSizeAs(size);
        java.util.List<String> trace = Files.readAllLines(t);
        int inUse = 0;
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] >= 0) {
                inUse++;
                assertThat(trace.get((int) chunkLines[i] - 1)).startsWith("alloc ");
            } else {
                assertThat(chunkLines[i]).isZero();
            }
        }
        assertThat(inUse).isPositive();
    }

    @Test
    void theLargestHoldersAreWhoTheTraceSaysMadeTheCallsNotTheReplay() throws IOException {
        // As SnapshotTraces writes a program recorded without stacks: every call names its
        // thread, some an annotation; one call says nothing.
        Path t = dir.resolve("recorded.bfctrace");
        Files.writeString(t, "bfctrace 1\nname recorded: three threads\nsource workload: a test\n"
                + "options memory_limit=67108864 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\nsuballocator sim base=0x7f0000000000 capacity=134217728 gap=0 coalescing=false\n"
                + "#@ alloc 1 thread=worker-1 time_us=1000 annotation=weights\nalloc 1 1048576\n"
                + "#@ alloc 2 thread=worker-2 time_us=2000\nalloc 2 4194304\n"
                + "#@ alloc 3 thread=worker-3 time_us=3000\nalloc 3 2097152\n"
                + "#@ alloc 4 thread=worker-2 time_us=4000\nalloc 4 512\nfree 4\n"
                + "alloc 5 768\n"
                + "#@ alloc 6 thread=worker-3 time_us=6000 annotation=weights\nalloc 6 1024\n");
        Path html = dir.resolve("recorded.html");
        assertThat(cli.run("report", t, "-o", html)).isEqualTo(0);
        String page = Files.readString(html);
        assertThat(page).contains("\"holders\":[[\"thread 'worker-2'\",4194304,4194304,1],"
                + "[\"thread 'worker-3'\",2097152,2097152,1],[\"weights\",1049600,1049600,2],"
                + "[\"(unknown)\",768,768,1]]");
        // The tooltip text of the two 'weights' chunks (made on two threads at two times) is written once.
        assertThat(page).contains("\"provenance\":[\"\\u000a  weights\"]}");
    }

    @Test
    void aTooltipNamesTheAnnotationsStepAsTheSummaryDoes() throws IOException {
        // Step 0 is a step (printed); a missing step prints nothing after the name.
        Path t = dir.resolve("steps.bfctrace");
        Files.writeString(t, "bfctrace 1\nname steps\nsource workload: a test\n"
                + "options memory_limit=67108864 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\nsuballocator sim base=0x7f0000000000 capacity=134217728 gap=0 coalescing=false\n"
                + "#@ alloc 1 annotation=decode step=0\nalloc 1 1048576\n"
                + "#@ alloc 2 annotation=decode step=12\nalloc 2 2048\n"
                + "#@ alloc 3 annotation=weights\nalloc 3 4096\n"
                + "#@ alloc 4 step=5\nalloc 4 8192\n");
        Path html = dir.resolve("steps.html");
        assertThat(cli.run("report", t, "-o", html)).isEqualTo(0);
        String page = Files.readString(html);
        // A step given without a name: its holder is "step 5", and so is its tooltip (it had none).
        assertThat(page).contains("\"\\u000a  decode (step 0)\"", "\"\\u000a  decode (step 12)\"",
                "\"\\u000a  weights\"", "\"\\u000a  step 5\"", "[\"step 5\",8192,8192,1]");
        assertThat(page).doesNotContain("weights (step");
    }

    @Test
    void timelineIsDownsampledButKeepsThePeaks() throws IOException {
        Path t = Cli.TRACES.resolve("random-growth-1gib-s3.bfctrace");
        Path html = dir.resolve("t.html");
        assertThat(cli.run("report", t, "-o", html, "--points", "50")).isEqualTo(0);
        String page = Files.readString(html);
        long[] max = array(page, "\"max\":");
        long[] pool = array(page, "\"pool\":[");
        assertThat(max.length).isBetween(50, 100);
        assertThat(cli.run("replay", t)).isIn(0, 1);
        long peakInUse = Long.parseLong(cli.out.replaceAll("(?s).*peak in use    \\S+ \\((\\d+) bytes\\).*", "$1"));
        long peakReserved = Long.parseLong(cli.out.replaceAll("(?s).*peak reserved  \\S+ \\((\\d+) bytes\\).*", "$1"));
        assertThat(java.util.Arrays.stream(max).max().orElseThrow()).isEqualTo(peakInUse);
        assertThat(java.util.Arrays.stream(pool).max().orElseThrow()).isEqualTo(peakReserved);
    }

    @Test
    void aMillionCallTraceGivesAFileUnder20MiBWithEveryFailureMarked() throws IOException {
        // 1,050,000 calls; at 1 GiB instead of 4 GiB about twenty thousand allocations fail.
        // (How long it takes is measured in docs/cli.md, not asserted here.)
        Path t = Cli.TRACES.resolve("big-random-1m-s71.bfctrace.gz");
        Path html = dir.resolve("big.html");
        assertThat(cli.run("report", t, "-o", html, "--memory-limit", "1GiB")).isEqualTo(0);
        assertThat(Files.size(html)).isLessThan(20L << 20);
        String page = Files.readString(html);
        long[] max = array(page, "\"max\":");
        assertThat(max.length).isBetween(2000, 4000);
        long[] ooms = array(page, "\"ooms\":{\"calls\":[");
        assertThat(ooms.length).isGreaterThan(10_000);
        assertThat(page).contains("<td>out of memory</td><td>" + ooms.length + ": line ");
        for (int i = 1; i < ooms.length; i++) {
            assertThat(ooms[i]).isGreaterThan(ooms[i - 1]);
        }
    }

    @Test
    void errors() {
        assertThat(cli.run("report", OOM)).isEqualTo(2);
        assertThat(cli.err).contains("Missing required option: '--output=HTML'");
        assertThat(cli.run("report", OOM, "-o", dir.resolve("x.html"), "--points", "3")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: --points=3 (expected: 10 to 1000000)");
        assertThat(cli.run("report", OOM, "-o", dir.resolve("no/such/dir/x.html"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + dir.resolve("no/such/dir/x.html")
                + " (expected: a file in an existing directory)");
        assertThat(dir.resolve("x.html")).doesNotExist();
        assertThat(cli.run("report", OOM, "-o", "")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o is empty (expected: the file to write, e.g."
                + " report.html)");
        // Not a file named '-' in the working directory.
        assertThat(cli.run("report", OOM, "-o", "-")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=- : standard output is not an output here"
                + " (expected: the file to write, e.g. report.html)");
        assertThat(Path.of("-")).as("a file named - in the working directory").doesNotExist();
    }

    /**
     * An output name that ends with a slash names a directory: every command that writes a file
     * refuses it before its work, and neither writes the name without the slash nor touches a
     * file of that name.
     */
    @Test
    void anOutputNameEndingWithASlashIsRefusedBeforeTheWork() throws IOException {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path kept = Files.writeString(dir.resolve("kept.html"), "kept");
        String[][] commands = {
            {"report", t.toString()},
            {"export-snapshot", t.toString()},
            {"import-tf-log", Cli.TF_LOG.toString(), "--allocator", "bfc_cpu_allocator_for_gpu"},
            {"generate", "--seed", "1", "--calls", "10"},
        };
        for (String[] command : commands) {
            for (Path named : new Path[] {dir.resolve("new.html"), kept}) {
                for (String slashes : new String[] {"/", "//"}) {
                    String o = named + slashes;
                    Object[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(command),
                            java.util.stream.Stream.of("-o", o)).toArray();
                    assertThat(cli.run(args)).as("%s -o %s", command[0], o).isEqualTo(2);
                    assertThat(cli.err.lines()).containsExactly("bfc " + command[0] + ": -o=" + o + " ends with '/',"
                            + " so it names a directory (expected: the file to write, e.g. " + named + ")");
                    assertThat(cli.out).isEmpty();
                }
            }
        }
        assertThat(dir.resolve("new.html")).doesNotExist();
        assertThat(kept).hasContent("kept");
        try (java.util.stream.Stream<Path> left = Files.list(dir)) {
            assertThat(left).containsExactly(kept); // no temporary file either
        }
        // Before the work: the trace is not even read.
        assertThat(cli.run("report", dir.resolve("no-such.bfctrace"), "-o", dir + "/x.html/")).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc report: -o=" + dir + "/x.html/ ends with '/'");
        // An existing directory, with or without the slash, is named as one.
        assertThat(cli.run("report", t, "-o", dir + "/")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + dir + " is a directory (expected: the file"
                + " to write, e.g. " + dir.resolve("report.html") + ")");
    }

    @Test
    void aDirectoryIsNeverReplacedByTheReport() throws IOException {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path empty = Files.createDirectory(dir.resolve("empty"));
        assertThat(cli.run("report", t, "-o", empty)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + empty + " is a directory (expected: the file"
                + " to write, e.g. " + empty.resolve("report.html") + ")");
        assertThat(empty).isEmptyDirectory();
        // A directory with files in it (it was a raw DirectoryNotEmptyException).
        Files.writeString(empty.resolve("keep.txt"), "kept");
        assertThat(cli.run("report", t, "-o", empty)).isEqualTo(2);
        assertThat(cli.err).startsWith("bfc report: -o=" + empty + " is a directory");
        assertThat(empty.resolve("keep.txt")).hasContent("kept");
        assertThat(cli.out).isEmpty();
        try (java.util.stream.Stream<Path> left = Files.list(empty)) {
            assertThat(left).containsExactly(empty.resolve("keep.txt")); // no temporary file left either
        }
    }

    /**
     * A dangling link in a linked directory is followed as the system follows it: its relative
     * target ('../latest.html') is read from where the link really lies. It was read from the
     * path as given ('work/../latest.html'): the report replaced an unrelated 'latest.html'
     * beside 'work', and the file the link names was never written. Links that name each other
     * are refused before the work, both staying links; one was replaced by the report.
     */
    @Test
    void aDanglingLinkIsFollowedWhereItLiesAndALoopOfLinksIsRefused() throws Exception {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path real = Files.createDirectories(dir.resolve("data").resolve("a"));
        Path work = Files.createSymbolicLink(dir.resolve("work"), Path.of("data", "a"));
        Files.createSymbolicLink(real.resolve("out.html"), Path.of("..", "latest.html"));
        Path unrelated = Files.writeString(dir.resolve("latest.html"), "keep me");
        Path out = work.resolve("out.html");
        assertThat(cli.run("report", t, "-o", out)).as(cli.err).isZero();
        assertThat(Files.isSymbolicLink(out)).as("still a link").isTrue();
        assertThat(unrelated).as("a file the link does not name").hasContent("keep me");
        assertThat(Files.readString(dir.resolve("data").resolve("latest.html"))).startsWith("<!DOCTYPE html>");

        Path a = Files.createSymbolicLink(dir.resolve("a.html"), Path.of("b.html"));
        Path b = Files.createSymbolicLink(dir.resolve("b.html"), Path.of("a.html"));
        assertThat(cli.run("report", t, "-o", a)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + a + ": too many levels of symbolic links"
                + " (links that name each other; expected: a link that ends at a file or names none)");
        assertThat(Files.isSymbolicLink(a) && Files.isSymbolicLink(b)).as("both still links").isTrue();
    }

    /**
     * A link is followed (the file it names is replaced, the link stays), a named pipe is
     * written to (not replaced by a file), and the input itself is refused: nothing of the
     * user's is destroyed.
     */
    @Test
    void linksPipesAndTheInputItselfAreNeverReplaced() throws Exception {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path target = Files.writeString(dir.resolve("target.html"), "old");
        Path link = Files.createSymbolicLink(dir.resolve("link.html"), target.getFileName());
        assertThat(cli.run("report", t, "-o", link)).as(cli.err).isZero();
        assertThat(Files.isSymbolicLink(link)).as("the link stays a link").isTrue();
        assertThat(Files.readString(target)).startsWith("<!DOCTYPE html>");

        Path fifo = Fifo.create(dir, "out.fifo");
        assertThat(reportInto(t, fifo)).startsWith("<!DOCTYPE html>");
        assertThat(Files.isRegularFile(fifo, java.nio.file.LinkOption.NOFOLLOW_LINKS)).as("still a pipe").isFalse();

        Path input = Files.copy(t, dir.resolve("in.bfctrace"));
        assertThat(cli.run("report", input, "-o", input)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + input + " is the input " + input
                + " (expected: another file: writing it would destroy the input)");
        assertThat(input).hasSameBinaryContentAs(t);
        Path toInput = Files.createSymbolicLink(dir.resolve("in-link.bfctrace"), input.getFileName());
        assertThat(cli.run("export-snapshot", input, "-o", toInput)).isEqualTo(2);
        assertThat(input).hasSameBinaryContentAs(t);
    }

    @Test
    void anOutputInADirectoryThatTakesNoNewFileIsRefusedSayingWhy() throws IOException {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path locked = Files.createDirectory(dir.resolve("locked"));
        try {
            // A user may not create files in a directory without write permission; root may, but
            // not in /sys, whose files only the kernel makes.
            Path noNewFile = locked.toFile().setWritable(false, false) && !Files.isWritable(locked)
                    ? locked : Path.of("/sys");
            Path probe = noNewFile.resolve("probe");
            boolean refused;
            try {
                Files.delete(Files.createFile(probe));
                refused = false;
            } catch (java.nio.file.AccessDeniedException e) {
                refused = true;
            }
            assumeTrue(refused, "a file can be created in " + noNewFile);
            Object[][] commands = {
                {"report", t, "-o"},
                {"export-snapshot", t, "-o"},
                {"generate", "--seed", "1", "--calls", "100", "-o"},
                {"import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o"},
            };
            for (Object[] c : commands) {
                Path out = noNewFile.resolve("out.file");
                Object[] args = java.util.Arrays.copyOf(c, c.length + 1);
                args[c.length] = out;
                assertThat(cli.run(args)).as(cli.err).isEqualTo(2);
                // The temporary file's name is the command's own business, not the message's.
                assertThat(cli.err.lines()).containsExactly("bfc " + c[0] + ": -o=" + out + ": permission denied: no"
                        + " file can be created in " + noNewFile + " (expected: a file in a directory you may write to)");
                assertThat(cli.out).isEmpty();
                assertThat(out).doesNotExist();
            }
            // Through a symbolic link, the directory named is the one its target is in.
            Path link = Files.createSymbolicLink(dir.resolve("link.html"), noNewFile.resolve("r.html"));
            assertThat(cli.run("report", t, "-o", link)).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + link + ": permission denied: no file can"
                    + " be created in " + noNewFile + " (expected: a file in a directory you may write to)");
        } finally {
            locked.toFile().setWritable(true, false);
        }
    }

    /** The commands that write an {@code -o} file, each but for the name to write. */
    private static Object[][] outputCommands() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        return new Object[][] {
            {"report", t, "-o"},
            {"export-snapshot", t, "-o"},
            {"generate", "--seed", "1", "--calls", "100", "-o"},
            {"import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o"},
        };
    }

    private static Object[] with(Object[] command, Object output) {
        Object[] args = java.util.Arrays.copyOf(command, command.length + 1);
        args[command.length] = output;
        return args;
    }

    /**
     * {@code -o /dev/stdout} (or {@code /dev/fd/1}, {@code /proc/self/fd/1}) is refused as
     * {@code -o -} is, whatever standard output is: it carries the command's summary. Run in a
     * JVM of its own whose standard output is a pipe: the file was written there, followed by
     * the summary, where the name reached the pipe (a file or a terminal), and where it did not
     * (a pipe: {@code pipe:[N]}, no path) the command failed with {@code -o=/dev/stdout:
     * /dev/stdout}.
     */
    @Test
    void standardOutputNamedAsAFileIsRefusedAsDashIs() throws Exception {
        assumeTrue(Files.isSymbolicLink(Path.of("/proc/self/fd/1")), "no /proc/self/fd here");
        java.util.List<Object[]> cases = new java.util.ArrayList<>();
        for (Object[] c : outputCommands()) {
            cases.add(with(c, "/dev/stdout"));
        }
        cases.add(with(outputCommands()[0], "/proc/self/fd/1"));
        if (Files.exists(Path.of("/dev/fd/1"))) {
            cases.add(with(outputCommands()[0], "/dev/fd/1"));
        }
        String[] examples = {"report.html", "snapshot.pickle", "trace.bfctrace", "trace.bfctrace"};
        for (Object[] args : cases) {
            java.util.List<String> words = new java.util.ArrayList<>(java.util.List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand"));
            for (Object a : args) {
                words.add(String.valueOf(a));
            }
            ChildProcess.Apart r = ChildProcess.runApart(words, ChildProcess.Pipe.READ, Duration.ofSeconds(120));
            String err = r.error();
            String name = String.valueOf(args[args.length - 1]);
            assertThat(r.status()).as("%s: %s", name, err).isEqualTo(2);
            int k = java.util.Arrays.asList("report", "export-snapshot", "generate", "import-tf-log").indexOf(args[0]);
            assertThat(err.lines()).as(name).containsExactly("bfc " + args[0] + ": -o=" + name + ": standard output is"
                    + " not an output here, as for -o -: it carries the command's summary (expected: the file to"
                    + " write, e.g. " + examples[k] + ")");
            assertThat(r.output()).as(name).isEmpty();
        }
    }

    /**
     * A pipe that is not standard output, reached through a link of /proc/self/fd as a shell's
     * {@code -o >(gzip > x.gz)} reaches one ({@code /dev/fd/63}), is written to, as a named pipe
     * is, by every command that writes a file; it was refused, {@code -o=/dev/fd/63:
     * /dev/fd/63} (the link names {@code pipe:[N]}, no path).
     */
    @Test
    void aPipeReachedThroughProcSelfFdIsWrittenTo() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "no /proc/self/fd here");
        String[] starts = {"<!DOCTYPE html>", "\u0080", "bfctrace 1\n", "bfctrace 1\n"};
        Object[][] commands = outputCommands();
        for (int k = 0; k < commands.length; k++) {
            byte[] got = runIntoAPipe(commands[k]);
            assertThat(new String(got, java.nio.charset.StandardCharsets.ISO_8859_1)).as("%s", commands[k][0])
                    .startsWith(starts[k]);
            assertThat(cli.out).startsWith("wrote /proc/self/fd/");
        }
    }

    /**
     * The size that {@code report} and {@code export-snapshot} say they wrote is the bytes
     * written, to a device or pipe too: it was the size of the file after the write, {@code
     * wrote /dev/null (0B)}.
     */
    @Test
    void theSizeSaidIsTheBytesWrittenToADeviceOrPipeToo() throws Exception {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path file = dir.resolve("r.html");
        assertThat(cli.run("report", t, "-o", file)).isZero();
        String size = "(" + Sizes.format(Files.size(file)) + ")";
        assertThat(cli.out).startsWith("wrote " + file + " " + size + ": ");
        Path devNull = Path.of("/dev/null");
        assumeTrue(Files.isWritable(devNull), "no /dev/null here");
        assertThat(cli.run("report", t, "-o", devNull)).isZero();
        assertThat(cli.out).startsWith("wrote /dev/null " + size + ": ");
        assertThat(cli.run("export-snapshot", t, "-o", devNull)).isZero();
        assertThat(cli.out).startsWith("wrote /dev/null (").doesNotStartWith("wrote /dev/null (0B)");

        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "no /proc/self/fd here");
        for (Object[] command : java.util.Arrays.copyOf(outputCommands(), 2)) {
            byte[] got = runIntoAPipe(command);
            assertThat(got.length).isPositive();
            assertThat(cli.out).as("%s", command[0]).matches("(?s)wrote /proc/self/fd/\\d+ \\("
                    + Pattern.quote(Sizes.format(got.length)) + "\\): .*");
        }
    }

    /**
     * Runs the command with {@code -o} a new pipe, named by its link in /proc/self/fd, which it
     * must write without error.
     *
     * @return what a reader of the pipe got
     */
    private byte[] runIntoAPipe(Object[] command) throws Exception {
        Path fds = Path.of("/proc/self/fd");
        java.util.Set<Path> before = PipeLinks.in(fds);
        java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
        try (java.nio.channels.Pipe.SourceChannel source = pipe.source()) {
            java.util.Set<Path> opened = PipeLinks.in(fds);
            opened.removeAll(before);
            assumeFalse(opened.isEmpty(), "the new pipe is not among /proc/self/fd's links");
            Path link = opened.iterator().next();
            java.util.concurrent.CompletableFuture<byte[]> read = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return java.nio.channels.Channels.newInputStream(source).readAllBytes();
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            Object[] args = with(command, link);
            int status = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> cli.run(args));
            pipe.sink().close();
            assertThat(status).as("%s: %s", command[0], cli.err).isZero();
            return read.get(30, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    /** Runs {@code report t -o fifo}, which must succeed, and answers what a reader of the pipe got. */
    private String reportInto(Path t, Path fifo) throws Exception {
        java.util.concurrent.CompletableFuture<byte[]> read = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return Files.readAllBytes(fifo);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(30), () -> cli.run("report", t, "-o", fifo)))
                .as(cli.err).isZero();
        return new String(read.get(30, java.util.concurrent.TimeUnit.SECONDS), java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * A named pipe in a directory that takes no new file is written to, as a shell's {@code >}
     * writes it (and as {@code -o /dev/null} is, {@code /dev} taking no file of a user's): no
     * file is made beside it. It was refused ("no file can be created in DIR").
     */
    @Test
    void aPipeInADirectoryThatTakesNoNewFileIsWrittenTo() throws Exception {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path locked = Files.createDirectory(dir.resolve("locked"));
        Path fifo = Fifo.create(locked, "out.fifo");
        try {
            assumeTrue(locked.toFile().setWritable(false, false) && !Files.isWritable(locked),
                    "run as root, who may create files in any directory");
            assertThat(reportInto(t, fifo)).startsWith("<!DOCTYPE html>");
            try (var left = Files.list(locked)) {
                assertThat(left).containsExactly(fifo);
            }
        } finally {
            locked.toFile().setWritable(true, false);
        }
    }

    /**
     * A long output name the file system takes, with a character of two UTF-16 units (an emoji)
     * where the temporary file's name cuts it, is written; the character was cut in two, a name
     * no path takes, and the command failed with an internal error (InvalidPathException).
     */
    @Test
    void aLongOutputNameIsWrittenWhateverItsCharacters() throws IOException {
        Path out = dir.resolve("x".repeat(49) + "\uD83D\uDE00" + "y".repeat(190) + ".html");
        try {
            Files.delete(Files.createFile(out));
        } catch (java.nio.file.FileSystemException e) {
            assumeTrue(false, "this file system does not take the name " + out + ": " + e.getReason());
        }
        assertThat(cli.run("report", Cli.TRACES.resolve("tiny-single.bfctrace"), "-o", out)).as(cli.err).isZero();
        assertThat(Files.readString(out)).startsWith("<!DOCTYPE html>");
        try (var left = Files.list(dir)) {
            assertThat(left).containsExactly(out);
        }
    }

    @Test
    void aNameTheFileSystemRefusesIsNamedAsGiven() throws IOException {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path tooLong = dir.resolve("r".repeat(300) + ".html");
        String reason;
        try {
            Files.createFile(tooLong);
            reason = null;
        } catch (java.nio.file.FileSystemException e) {
            reason = e.getReason();
        }
        assumeTrue(reason != null, "this file system takes names of 305 bytes");
        assertThat(cli.run("report", t, "-o", tooLong)).isEqualTo(2);
        // Not the temporary file's name, which the user never gave.
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + tooLong + ": " + reason);
        try (var left = Files.list(dir)) {
            assertThat(left).isEmpty();
        }
    }

    @Test
    void theReportIsCreatedWithThePermissionsTheUmaskGives() throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        // Any new file here gets what the process's umask leaves of rw-rw-rw-.
        Set<PosixFilePermission> umasked = Files.getPosixFilePermissions(Files.createFile(dir.resolve("plain")));
        System.out.println("a new file gets " + PosixFilePermissions.toString(umasked));
        Path html = dir.resolve("r.html");
        assertThat(cli.run("report", Cli.TRACES.resolve("tiny-single.bfctrace"), "-o", html)).isZero();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(html)))
                .isEqualTo(PosixFilePermissions.toString(umasked));
    }

    /**
     * An existing output that may not be written is refused before the work, as a shell's
     * {@code >} refuses it, saying what to do (it said only that the file may not be written).
     */
    @Test
    void aReadOnlyOutputIsRefusedAndKept() throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Path out = Files.writeString(dir.resolve("r.html"), "keep me\n");
        Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("r--r--r--"));
        assumeFalse(Files.isWritable(out), "run as root, who may write a read-only file (a shell's > writes it too)");
        assertThat(cli.run("report", Cli.TRACES.resolve("tiny-single.bfctrace"), "-o", out)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + out + ": permission denied: the file exists"
                + " and may not be written (expected: a file you may write to: make it writable, e.g. chmod u+w, or"
                + " write another file)");
        assertThat(out).hasContent("keep me");
        try (var left = Files.list(dir)) {
            assertThat(left).containsExactly(out);
        }
    }

    /**
     * An output that replaces a file keeps that file's permissions (a private report stays
     * private), through a symbolic link too; it got what the umask gives, as a new file does.
     */
    @Test
    void aReplacedOutputKeepsItsPermissions() throws IOException {
        assumeTrue(dir.getFileSystem().supportedFileAttributeViews().contains("posix"), "no POSIX permissions");
        Set<PosixFilePermission> umasked = Files.getPosixFilePermissions(Files.createFile(dir.resolve("plain")));
        System.out.println("a new file gets " + PosixFilePermissions.toString(umasked));
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Object[][] commands = {
            {"report", t, "-o"},
            {"export-snapshot", t, "-o"},
            {"generate", "--seed", "1", "--calls", "100", "-o"},
            {"import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o"},
        };
        // Two of them differ from what any umask gives.
        for (String perms : new String[] {"rw-------", "rw-rw-rw-", "rwxr-x---"}) {
            for (Object[] c : commands) {
                Path out = Files.writeString(dir.resolve(c[0] + "-" + perms), "old\n");
                Path real = Files.writeString(dir.resolve(c[0] + "-" + perms + "-real"), "old\n");
                Path link = Files.createSymbolicLink(dir.resolve(c[0] + "-" + perms + "-link"), real.getFileName());
                for (Path p : new Path[] {out, real}) {
                    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
                }
                for (Path o : new Path[] {out, link}) {
                    Object[] args = java.util.Arrays.copyOf(c, c.length + 1);
                    args[c.length] = o;
                    assertThat(cli.run(args)).as(cli.err).isZero();
                }
                for (Path p : new Path[] {out, real}) {
                    assertThat(Files.readAllBytes(p)).as("%s replaced", p)
                            .isNotEqualTo("old\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).as("%s", p)
                            .isEqualTo(perms);
                }
            }
        }
    }

    @Test
    void aTraceFromAPipeIsReadForBothPasses() throws Exception {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path fromFile = dir.resolve("file.html");
        assertThat(cli.run("report", t, "-o", fromFile)).isZero();
        Path fromStdin = dir.resolve("stdin.html");
        assertThat(cli.runWithStdin(Files.readAllBytes(t), "report", "-", "-o", fromStdin)).isZero();
        assertThat(cli.err).isEmpty();
        // The same report, but for the names.
        String file = Files.readString(fromFile);
        String stdin = Files.readString(fromStdin);
        assertThat(stdin.substring(stdin.indexOf("<table class=\"summary\">")))
                .isEqualTo(file.substring(file.indexOf("<table class=\"summary\">")));
        assertThat(stdin).contains("<h1>bfc report: &lt;stdin&gt;</h1>");
        Path fifo = Fifo.create(dir, "trace.fifo");
        Path fromFifo = dir.resolve("fifo.html");
        Thread writer = Fifo.write(fifo, Files.readAllBytes(t));
        assertThat(assertTimeoutPreemptively(Duration.ofSeconds(30), () -> cli.run("report", fifo, "-o", fromFifo)))
                .as(cli.err).isZero();
        writer.join(10_000);
        assertThat(cli.out).contains("13 calls");
    }

    @Test
    void aTraceCutInsideItsLastLineIsReported() throws IOException {
        Path[] traces = Cli.wholeAndCutTraces(dir);
        assertThat(cli.run("report", traces[1], "-o", dir.resolve("cut.html"))).isZero();
        assertThat(cli.err.lines()).containsExactly("bfc report: warning: " + traces[1] + " line 8: the last line"
                + " has no line break after it: the file may be truncated (the report covers the lines read)");
    }

    /**
     * {@code --maps} beyond what the file keeps: the maps past the 250,000 chunk records were
     * all taken in the second pass (each with room for 256 chunks) and dropped only at its end,
     * so 150,000 failures of a region of nine chunks, with {@code --maps 1000000}, filled a heap
     * of 256 MiB ('the Java heap is too small', exit 1) to write the 27,777 maps the budget keeps
     * (the peak's and 27,776). In a child JVM with that heap.
     */
    @Test
    void mapsBeyondTheBudgetAreNotTakenSoManyFailuresFitASmallHeap() throws Exception {
        int failures = 150_000;
        StringBuilder b = new StringBuilder("bfctrace 1\nname many-ooms: nine chunks, then failures\n"
                + "source workload: a test\noptions memory_limit=1048576 allow_growth=false garbage_collection=false"
                + " fragmentation_fraction=0 timing_counter=false\n"
                + "suballocator sim base=0x7f0000000000 capacity=69206016 gap=0 coalescing=true\n");
        for (int i = 1; i <= 8; i++) {
            b.append("alloc ").append(i).append(" 65536\n"); // eight chunks in use and the free rest
        }
        for (int i = 9; i < 9 + failures; i++) {
            b.append("alloc ").append(i).append(" 1048576\n");
        }
        Path t = Files.writeString(dir.resolve("many-ooms.bfctrace"), b);
        Path out = dir.resolve("many-ooms.html");
        ChildProcess.Result r = ChildProcess.run(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx256m", "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand",
                "report", t.toString(), "--maps", "1000000", "-o", out.toString()), Duration.ofSeconds(120));
        assertThat(r.status()).as(r.output()).isZero();
        // The peak's map and 27,776 out-of-memory maps, of 9 chunk records each, fit in 250,000.
        assertThat(r.output()).contains(": " + (8 + failures) + " calls, ").contains(", 27777 occupancy maps, "
                + failures + " out-of-memory failures marked");
        assertThat(Files.readString(out)).contains("at the peak and at the first 27776 of " + failures
                + " out-of-memory failures (more would make the file too large)");
    }

    /**
     * A trace whose path holds the template's data marker, {@code /*BFC_DATA*}{@code /null} (a
     * directory named {@code *BFC_DATA*}, a file {@code null.bfctrace}): the data went into the
     * page's subtitle, where the path is shown, and the script got {@code null}, so the page drew
     * no chart, though the command said it wrote the report.
     */
    @Test
    void aPathHoldingTheDataMarkerIsShownAsAName() throws IOException {
        Path marked = Files.createDirectory(dir.resolve("*BFC_DATA*"));
        Path t = Files.copy(Cli.TRACES.resolve("tiny-single.bfctrace"), marked.resolve("null.bfctrace"));
        Path out = dir.resolve("marked.html");
        assertThat(cli.run("report", t, "-o", out)).as(cli.err).isZero();
        String html = Files.readString(out);
        assertThat(html).contains("<div class=\"sub\">" + t + " \u2014 13 calls</div>")
                .contains("const DATA = {\"calls\":13,");
    }
}
