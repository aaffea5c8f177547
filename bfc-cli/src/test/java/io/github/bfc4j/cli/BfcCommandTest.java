/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.SourceTree;
import io.github.bfc4j.core.TestThreads;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code bfc} command itself: its version and its launcher. */
class BfcCommandTest {
    /** How long a child JVM running one command may take before it is ended and the test fails. */
    private static final Duration CHILD_LIMIT = Duration.ofSeconds(120);
    private static final String JAVA = Path.of(System.getProperty("java.home"), "bin", "java").toString();

    private final Cli cli = new Cli();

    @Test
    void versionIsTheBuildsVersion() {
        // It printed "bfc (development build)" wherever the jar's manifest had no version.
        String version = System.getProperty("bfc4j.projectVersion");
        assertThat(version).as("surefire passes the pom's version").isNotBlank().doesNotStartWith("${");
        for (String flag : new String[] {"-V", "--version"}) {
            assertThat(cli.run(flag)).isZero();
            assertThat(cli.out.lines()).containsExactly("bfc " + version);
        }
    }

    @Test
    void aMisspeltCommandGetsTheNearestName() {
        assertThat(cli.run("repaly", "x")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc: unknown command 'repaly' (did you mean replay?)"
                + " (see 'bfc --help')");
        assertThat(cli.run("Verfy")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc: unknown command 'Verfy' (did you mean verify?)"
                + " (see 'bfc --help')");
        assertThat(cli.run("xyzzy")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc: unknown command 'xyzzy' (see 'bfc --help')");
    }

    @Test
    void helpCommandPrintsThatCommandsHelp() {
        // "bfc help replay" was read as "replay" without its TRACE: a usage error about a trace.
        assertThat(cli.run("replay", "--help")).isZero();
        String replayHelp = cli.out;
        assertThat(cli.run("help", "replay")).as(cli.err).isZero();
        assertThat(cli.out).isEqualTo(replayHelp).startsWith("Usage: bfc replay ");
        assertThat(cli.run("help")).isZero();
        assertThat(cli.out).startsWith("Usage: bfc ").contains("  replay ");
    }

    @Test
    void helpOfAnUnknownCommandSaysSoAsAnUnknownCommandIsSaid() {
        // It said picocli's "bfc: Unknown subcommand 'repaly'." with no nearest name.
        assertThat(cli.run("help", "repaly")).isEqualTo(2);
        assertThat(cli.out).isEmpty();
        assertThat(cli.err.lines()).containsExactly("bfc help: unknown command 'repaly' (did you mean replay?)"
                + " (see 'bfc --help')");
        assertThat(cli.run("help", "nosuch")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc help: unknown command 'nosuch' (see 'bfc --help')");
    }

    @Test
    void anArgumentTooManyIsNamedWithWhatTheCommandTakes() {
        assertThat(cli.run("replay", "a.bfctrace", "b.bfctrace")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: unexpected argument 'b.bfctrace' (expected: TRACE"
                + " only) (see 'bfc replay --help')");
    }

    @Test
    void aFileWhoseNameStartsWithADashIsToldHowToGiveIt() {
        assertThat(cli.run("verify", "-x.bfctrace")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc verify: Missing required parameter: 'FILE' ('-x.bfctrace' was"
                + " read as an option: give a file whose name starts with '-' as ./-x.bfctrace, or after --) (see 'bfc"
                + " verify --help')");
        assertThat(cli.run("replay", "-x.bfctrace", "--memory-limit=1GiB")).isEqualTo(2);
        assertThat(cli.err).contains("('-x.bfctrace' was read as an option");
    }

    /**
     * A word after '--' that starts with '-' is an argument, and one too many is said as such:
     * 'bfc replay -- T --debug' said 'Unknown option: '--debug' (did you mean --debug?)'.
     */
    @Test
    void anArgumentTooManyAfterTheEndOfOptionsIsNamedAsAnArgument() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        assertThat(cli.run("replay", "--", t, "--debug")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: unexpected argument '--debug' (expected: TRACE only)"
                + " (see 'bfc replay --help')");
        assertThat(cli.run("cuda-info", "--", "-x")).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc cuda-info: unexpected argument '-x' (expected: options only)"
                + " (see 'bfc cuda-info --help')");
    }

    /**
     * A file whose name starts with '@' is read as the file it names: picocli took '@t.bfctrace'
     * as an argument file, t.bfctrace, and ran its words, so 'bfc verify @t.bfctrace' beside a
     * t.bfctrace verified 192 files named 'bfctrace', 'alloc', '=>' ... (exit 2), and 'bfc replay
     * @t.bfctrace' said 'unexpected argument '1''. In a child JVM, in the files' directory.
     */
    @Test
    void aFileWhoseNameStartsWithAnAtSignIsThatFile(@TempDir Path dir) throws Exception {
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        Files.copy(tiny, dir.resolve("@t.bfctrace"));
        Files.copy(tiny, dir.resolve("t.bfctrace"));
        String[][] cases = {{"verify", "0"}, {"replay", "1"}}; // replay: the trace's last allocation fails
        for (String[] c : cases) {
            ChildProcess.Result r = ChildProcess.runIn(dir, List.of(JAVA, "-cp", System.getProperty("java.class.path"),
                    "io.github.bfc4j.cli.BfcCommand", c[0], "@t.bfctrace"), CHILD_LIMIT);
            String output = r.output();
            assertThat(r.status()).as(output).isEqualTo(Integer.parseInt(c[1]));
            assertThat(output).as(c[0]).startsWith(c[0].equals("verify") ? "PASS @t.bfctrace 13 calls\n"
                    : "trace          @t.bfctrace (13 calls)\n");
        }
    }

    @Test
    void anArgumentToACommandThatTakesNoneIsNamed() {
        for (String command : new String[] {"demo", "cuda-info"}) {
            assertThat(cli.run(command, "extra")).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly("bfc " + command + ": unexpected argument 'extra' (expected:"
                    + " options only) (see 'bfc " + command + " --help')");
        }
    }

    @Test
    void anOptionValueOfTheWrongTypeIsNamedWithWhatItTakes() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Object[][] cases = {
            {new Object[] {"replay", t, "--allow-growth=maybe"}, "bfc replay: --allow-growth=maybe (expected: true or"
                    + " false) (see 'bfc replay --help')"},
            {new Object[] {"report", t, "-o", "r.html", "--garbage-collection=1"}, "bfc report:"
                    + " --garbage-collection=1 (expected: true or false) (see 'bfc report --help')"},
            {new Object[] {"serve", "--port", "abc"}, "bfc serve: --port=abc (expected: a whole number) (see 'bfc"
                    + " serve --help')"},
            {new Object[] {"export-snapshot", t, "-o", "s.pickle", "--max-entries", "1.5"}, "bfc export-snapshot:"
                    + " --max-entries=1.5 (expected: a whole number) (see 'bfc export-snapshot --help')"},
            {new Object[] {"generate", "--seed", "99999999999999999999", "-o", "g.bfctrace"}, "bfc generate:"
                    + " --seed=99999999999999999999 (expected: a number from -9223372036854775808 to"
                    + " 9223372036854775807) (see 'bfc generate --help')"},
        };
        for (Object[] c : cases) {
            assertThat(cli.run((Object[]) c[0])).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
    }

    /**
     * A whole number past an int gets the option's own range, not int's: the option takes far less
     * than int's range (and no negative number), and a value within int's range got that range.
     */
    @Test
    void aNumberPastAnIntGetsTheOptionsOwnRange() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        Object[][] cases = {
            {new Object[] {"report", t, "-o", "r.html", "--points", "99999999999"}, "bfc report: --points=99999999999"
                    + " (expected: 10 to 1000000)"},
            {new Object[] {"report", t, "-o", "r.html", "--maps", "-99999999999"}, "bfc report: --maps=-99999999999"
                    + " (expected: >= 0)"},
            {new Object[] {"export-snapshot", t, "-o", "s.pickle", "--max-entries", "99999999999"}, "bfc"
                    + " export-snapshot: --max-entries=99999999999 (expected: 1 to 16777216)"},
            {new Object[] {"serve", "--port", "99999999999"}, "bfc serve: --port=99999999999 (expected: 0 to 65535)"},
            {new Object[] {"generate", "--seed", "1", "-o", "g{seed}.bfctrace", "--count", "99999999999"}, "bfc generate:"
                    + " --count=99999999999 (expected: 1 to 2147483647)"},
        };
        for (Object[] c : cases) {
            assertThat(cli.run((Object[]) c[0])).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
    }

    /**
     * A whole number past a long gets the option's own range too, not a long's (which the option
     * does not take: no negative number, and far less than 2^63).
     */
    @Test
    void aNumberPastALongGetsTheOptionsOwnRange() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String big = "99999999999999999999";
        Object[][] cases = {
            {new Object[] {"report", t, "-o", "r.html", "--points", big}, "bfc report: --points=" + big
                    + " (expected: 10 to 1000000)"},
            {new Object[] {"report", t, "-o", "r.html", "--maps", big}, "bfc report: --maps=" + big
                    + " (expected: 0 to 9223372036854775807)"},
            {new Object[] {"report", t, "-o", "r.html", "--maps", "-" + big}, "bfc report: --maps=-" + big
                    + " (expected: >= 0)"},
            {new Object[] {"export-snapshot", t, "-o", "s.pickle", "--max-entries", big}, "bfc export-snapshot:"
                    + " --max-entries=" + big + " (expected: 1 to 16777216)"},
            {new Object[] {"serve", "--port", big}, "bfc serve: --port=" + big + " (expected: 0 to 65535)"},
            {new Object[] {"serve", "--port", "0", "--rate", big}, "bfc serve: --rate=" + big
                    + " (expected: 0 to 9223372036854775807)"},
            {new Object[] {"generate", "--seed", "1", "-o", "g{seed}.bfctrace", "--count", big}, "bfc generate:"
                    + " --count=" + big + " (expected: 1 to 2147483647)"},
            {new Object[] {"generate", "--seed", "1", "-o", "g.bfctrace", "--calls", big}, "bfc generate:"
                    + " --calls=" + big + " (expected: 1 to 100000000)"},
            {new Object[] {"report", t, "-o", "r.html", "--points", "1.5"}, "bfc report: --points=1.5 (expected: a"
                    + " whole number) (see 'bfc report --help')"},
        };
        for (Object[] c : cases) {
            assertThat(cli.run((Object[]) c[0])).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
    }

    /**
     * Numbers and sizes take ASCII digits only, and ignore only the spaces around them: '١MiB'
     * (Arabic-Indic) and '１MiB' (fullwidth) were read as 1 MiB, and '1<ESC>' as 1 byte, since
     * Java's parsers take any script's digits and trim() takes control characters for spaces.
     * Each is now refused with the option's message, its control characters shown escaped.
     */
    @Test
    void numbersAndSizesTakeAsciiDigitsOnly() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String size = " (expected: a size like 16GiB, 512MiB or 1048576)";
        String fraction = " (expected: a fraction from 0 to 1, a decimal like 0.01 as a trace's header writes it; 0"
                + " means upstream's 128 MiB threshold)";
        Object[][] cases = {
            {new Object[] {"replay", t, "--memory-limit", "\u0661MiB"}, "bfc replay: --memory-limit=\u0661MiB" + size},
            {new Object[] {"replay", t, "--memory-limit", "\uFF11MiB"}, "bfc replay: --memory-limit=\uFF11MiB" + size},
            {new Object[] {"replay", t, "--memory-limit", "1\u001b"}, "bfc replay: --memory-limit=1\\x1b" + size},
            {new Object[] {"replay", t, "--memory-limit", "\u001f1MiB"}, "bfc replay: --memory-limit=\\x1f1MiB"
                    + size},
            {new Object[] {"replay", t, "--memory-limit", "1\tMiB"}, "bfc replay: --memory-limit=1\\x09MiB" + size},
            {new Object[] {"report", t, "-o", "r.html", "--memory-limit", "1\u0662MiB"}, "bfc report:"
                    + " --memory-limit=1\u0662MiB" + size},
            {new Object[] {"whatif", t, "--memory-limit", "1MiB,\u0661MiB"}, "bfc whatif: --memory-limit=\u0661MiB"
                    + size},
            {new Object[] {"replay", t, "--fragmentation-fraction", "0.5\u001b"}, "bfc replay:"
                    + " --fragmentation-fraction=0.5\\x1b" + fraction},
            {new Object[] {"whatif", t, "--allow-growth", "true\u001b"}, "bfc whatif: --allow-growth=true\\x1b"
                    + " (expected: true or false)"},
            {new Object[] {"generate", "--seed", "\u0661", "-o", "g.bfctrace"}, "bfc generate: --seed=\u0661"
                    + " (expected: a whole number) (see 'bfc generate --help')"},
            {new Object[] {"generate", "--seed", "1", "-o", "g.bfctrace", "--calls", "\uFF15000"}, "bfc generate:"
                    + " --calls=\uFF15000 (expected: a whole number) (see 'bfc generate --help')"},
            {new Object[] {"generate", "--seed", "1", "-o", "g.bfctrace", "--gap", "0\u001b"}, "bfc generate:"
                    + " --gap=0\\x1b" + size},
            {new Object[] {"generate", "--seed", "1", "-o", "g.bfctrace", "--capacity", "\u0661GiB"}, "bfc generate:"
                    + " --capacity=\u0661GiB" + size},
            {new Object[] {"generate", "--seed", "1", "-o", "g.bfctrace", "--release-rate", "0.5\u001b"},
                "bfc generate: --release-rate=0.5\\x1b (expected: a chance from 0 to 1, a decimal like 0.3)"},
            {new Object[] {"report", t, "-o", "r.html", "--points", "\u0661\u0660\u0660"}, "bfc report:"
                    + " --points=\u0661\u0660\u0660 (expected: a whole number) (see 'bfc report --help')"},
            {new Object[] {"export-snapshot", t, "-o", "s.pickle", "--max-entries", "\uFF11"}, "bfc export-snapshot:"
                    + " --max-entries=\uFF11 (expected: a whole number) (see 'bfc export-snapshot --help')"},
            {new Object[] {"serve", "--port", "\uFF10"}, "bfc serve: --port=\uFF10 (expected: a whole number)"
                    + " (see 'bfc serve --help')"},
            {new Object[] {"serve", "--port", "0", "--client-timeout", "1\u001b"}, "bfc serve: --client-timeout="
                    + "1\\x1b (expected: seconds from 0.1 to 3600, a decimal like 10 or 2.5)"},
            {new Object[] {"serve", "--port", "0", "--memory-limit", "\u0661GiB"}, "bfc serve: --memory-limit="
                    + "\u0661GiB" + size},
        };
        for (Object[] c : cases) {
            assertThat(cli.run((Object[]) c[0])).as("%s", List.of((Object[]) c[0])).isEqualTo(2);
            assertThat(cli.err.lines()).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
        // Spaces around a value are still ignored, and ASCII digits still read.
        assertThat(cli.run("replay", t, "--memory-limit", " 1MiB ", "--fragmentation-fraction", " 0.5 ")).isOne();
        assertThat(cli.out).contains("memory_limit=1MiB").contains("fragmentation_fraction=0.5");
    }

    /**
     * A file name that no file can have (a NUL character, from Java code calling {@code main}; under
     * a locale whose file names are ASCII, any other character) is a usage error naming the word.
     * As an -o it was 'internal error: java.nio.file.InvalidPathException: Nul character not
     * allowed' (exit 1, the NUL sent to the terminal); as a file to read, picocli's 'cannot convert
     * ... to interface java.nio.file.Path'.
     */
    @Test
    void aFileNameNoFileCanHaveIsAUsageError() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String bad = "x\0.b";
        String why = " holds a NUL character, which no file name can (expected: a file name without one)";
        Object[][] cases = {
            {new Object[] {"report", t, "-o", bad}, "bfc report: -o=x\\x00.b" + why},
            {new Object[] {"export-snapshot", t, "-o", bad}, "bfc export-snapshot: -o=x\\x00.b" + why},
            {new Object[] {"generate", "--seed", "1", "-o", bad}, "bfc generate: -o=x\\x00.b" + why},
            {new Object[] {"generate", "--seed", "1", "--count", "2", "-o", "x\0{seed}.b"},
                "bfc generate: -o=x\\x001.b" + why},
            {new Object[] {"import-tf-log", Cli.TF_LOG, "--allocator", "mklcpu", "-o", bad},
                "bfc import-tf-log: -o=x\\x00.b" + why},
            {new Object[] {"replay", bad}, "bfc replay: Invalid value for positional parameter at index 0 (TRACE):"
                    + " 'x\\x00.b'" + why + " (see 'bfc replay --help')"},
            {new Object[] {"import-tf-log", bad, "--allocator", "mklcpu", "-o", "t.bfctrace"}, "bfc import-tf-log:"
                    + " Invalid value for positional parameter at index 0 (LOG): 'x\\x00.b'" + why
                    + " (see 'bfc import-tf-log --help')"},
            {new Object[] {"demo", "--trace", bad}, "bfc demo: Invalid value for option '--trace': 'x\\x00.b'" + why
                    + " (see 'bfc demo --help')"},
        };
        for (Object[] c : cases) {
            Object[] args = (Object[]) c[0];
            assertThat(cli.run(args)).as("%s: %s", args[0], cli.err).isEqualTo(2);
            assertThat(cli.err.lines()).as("%s", args[0]).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
        // bfc verify says it of that file, as of a missing one, and verifies the others (picocli
        // took a second FILE that it could not convert for an argument too many: 'unexpected
        // argument ... (expected: FILE... only)').
        assertThat(cli.run("verify", t, bad, t)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR x\\x00.b:" + why);
        assertThat(cli.out.lines()).containsExactly("PASS " + t + " 13 calls", "PASS " + t + " 13 calls",
                "2 passed, 1 failed");
    }

    /**
     * An empty file name ({@code bfc replay "$TRACE"} with TRACE unset) is said to be empty: as a
     * path it is the working directory, and was refused as {@code ': is a directory'}.
     */
    @Test
    void anEmptyFileNameIsSaidToBeEmpty() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String empty = "'' is an empty name (expected: the file to read; is a shell variable unset?)";
        Object[][] cases = {
            {new Object[] {"replay", ""}, "bfc replay: Invalid value for positional parameter at index 0 (TRACE): "
                    + empty + " (see 'bfc replay --help')"},
            {new Object[] {"report", "", "-o", "r.html"}, "bfc report: Invalid value for positional parameter at"
                    + " index 0 (TRACE): " + empty + " (see 'bfc report --help')"},
            {new Object[] {"import-tf-log", "", "--allocator", "mklcpu", "-o", "t.bfctrace"}, "bfc import-tf-log:"
                    + " Invalid value for positional parameter at index 0 (LOG): " + empty
                    + " (see 'bfc import-tf-log --help')"},
            {new Object[] {"serve", "--port", "0", "--trace", ""}, "bfc serve: Invalid value for option '--trace': "
                    + empty + " (see 'bfc serve --help')"},
        };
        for (Object[] c : cases) {
            Object[] args = (Object[]) c[0];
            assertThat(cli.run(args)).as("%s: %s", args[0], cli.err).isEqualTo(2);
            assertThat(cli.err.lines()).as("%s", args[0]).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
        assertThat(cli.run("verify", "", t)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR " + empty);
        assertThat(cli.out.lines()).containsExactly("PASS " + t + " 13 calls", "1 passed, 1 failed");
    }

    /**
     * A long word of the command line is shown cut in a message, as a quoted line of a file is:
     * its first 200 bytes, then '...'. A 120,000-character word made a 120 KB error line.
     */
    @Test
    void aLongWordOfTheCommandLineIsCutInMessages() {
        Path t = Cli.TRACES.resolve("tiny-single.bfctrace");
        String x = "x".repeat(120_000);
        String x200 = "x".repeat(200) + "...";
        String size = " (expected: a size like 16GiB, 512MiB or 1048576)";
        Object[][] cases = {
            {new Object[] {"replay", t, "--memory-limit", x}, "bfc replay: --memory-limit=" + x200 + size},
            {new Object[] {"replay", t, "--memory-limit=" + x}, "bfc replay: --memory-limit=" + x200 + size},
            {new Object[] {"whatif", t, "--memory-limit", "1MiB," + x}, "bfc whatif: --memory-limit=" + x200 + size},
            {new Object[] {"whatif", t, "--allow-growth", x}, "bfc whatif: --allow-growth=" + x200
                    + " (expected: true or false)"},
            {new Object[] {"replay", t, "--sub", x}, "bfc replay: --sub=" + x200 + " (expected: sim or host)"},
            {new Object[] {"export-snapshot", t, "-o", "s.pickle", "--at", x}, "bfc export-snapshot: --at=" + x200
                    + " (expected: end or peak)"},
            {new Object[] {"report", t, "-o", "r.html", "--points", "9".repeat(120_000)}, "bfc report: --points="
                    + "9".repeat(200) + "... (expected: 10 to 1000000)"},
            {new Object[] {"report", t, "-o", "r.html", "--points", x}, "bfc report: --points=" + x200
                    + " (expected: a whole number) (see 'bfc report --help')"},
            {new Object[] {"replay", t, x}, "bfc replay: unexpected argument '" + x200 + "' (expected: TRACE only)"
                    + " (see 'bfc replay --help')"},
            {new Object[] {x}, "bfc: unknown command '" + x200 + "' (see 'bfc --help')"},
            {new Object[] {"help", x}, "bfc help: unknown command '" + x200 + "' (see 'bfc --help')"},
            {new Object[] {"replay", t, "-" + x}, "bfc replay: Unknown option: '-" + "x".repeat(199) + "...'"
                    + " (see 'bfc replay --help')"},
            {new Object[] {"replay", t, "--allow-growth", x}, "bfc replay: --allow-growth " + x200 + " (expected:"
                    + " true or false, or nothing for true: --allow-growth, --allow-growth=false) (see 'bfc replay"
                    + " --help')"},
            {new Object[] {"serve", "--port", "0", "--name", "\u001b" + x}, "bfc serve: --name='\\x1b"
                    + "x".repeat(199) + "...' (expected: a name without line breaks, tabs or other control characters,"
                    + " the allocator.name tag, e.g. host_bfc)"},
            // 300 bytes of two-byte characters: the first 100 characters.
            {new Object[] {"replay", t, "--memory-limit", "\u00e9".repeat(150)}, "bfc replay: --memory-limit="
                    + "\u00e9".repeat(100) + "..." + size},
            // 200 bytes exactly: whole.
            {new Object[] {"replay", t, "--memory-limit", "x".repeat(200)}, "bfc replay: --memory-limit="
                    + "x".repeat(200) + size},
        };
        for (Object[] c : cases) {
            Object[] args = (Object[]) c[0];
            assertThat(cli.run(args)).as("%s", args[0]).isEqualTo(2);
            assertThat(cli.err.lines()).as("%s", args[0]).containsExactly((String) c[1]);
            assertThat(cli.out).isEmpty();
        }
        // A valid value, long: said cut where it takes part in an error.
        String tiny = "0." + "0".repeat(250) + "1"; // 1e-251
        assertThat(cli.run("whatif", t, "--memory-limit", "1MiB", "--fragmentation-fraction", tiny)).isEqualTo(2);
        assertThat(cli.err.lines()).singleElement().asString().startsWith("bfc whatif: --fragmentation-fraction=0."
                + "0".repeat(198) + "... with --memory-limit=1MiB gives a split threshold of 0 bytes (expected: ")
                .hasSizeLessThan(600);
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", x, "-o", "t.bfctrace")).isEqualTo(2);
        assertThat(cli.err.lines()).singleElement().asString().startsWith("bfc import-tf-log: --allocator=" + x200
                + " (expected: an allocator of ").hasSizeLessThan(1000);
    }

    /**
     * Every command answers bad options with exit status 2 (docs/cli.md): its help says so, as the
     * help of each says what its other statuses mean.
     */
    @Test
    void everyCommandsHelpSaysThatBadOptionsExitTwo() {
        for (String name : BfcCommand.commandLine().getSubcommands().keySet()) {
            if (name.equals("help")) {
                continue;
            }
            assertThat(cli.run(name, "--help")).isZero();
            String help = cli.out.replaceAll("\\s+", " "); // the help wraps its lines
            int at = help.indexOf("Exit status");
            String exit = at < 0 ? "" : help.substring(at, help.indexOf(". ", at) + 1);
            assertThat(exit).as("bfc %s --help: %s", name, cli.out).contains("2 bad options");
            assertThat(cli.run(name, "--no-such-option")).as(name).isEqualTo(2);
        }
    }

    @Test
    void theLaunchersUsageCommentNamesEverySubcommand() throws IOException {
        List<String> comment = Files.readAllLines(SourceTree.resolve("bin/bfc")).stream().skip(1)
                .takeWhile(l -> l.startsWith("#")).toList();
        String text = String.join("\n", comment);
        for (String name : BfcCommand.commandLine().getSubcommands().keySet()) {
            assertThat(text).as("bin/bfc's usage comment:%n%s", text).containsPattern("[ ,]" + name + "[ ,)\\n]");
        }
    }

    /**
     * A bad bfc4j system property is one line and exit 2 before any command runs. The JFR sample
     * period's was an internal error, and it broke BfcOptions's class for the rest of the JVM.
     */
    @Test
    void aBadSystemPropertyIsOneLineAndExitTwo() throws Exception {
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        String[][] cases = {
            {"-Dbfc4j.jfr.allocationSamplePeriod=x", "bfc: -Dbfc4j.jfr.allocationSamplePeriod=x (expected: an integer"
                    + " >= 0; 0 turns allocation samples off); change it or take it out of BFC_JAVA_OPTS"},
            {"-Dbfc4j.leakDetection=loud", "bfc: -Dbfc4j.leakDetection=loud (expected: disabled, simple or paranoid);"
                    + " change it or take it out of BFC_JAVA_OPTS"},
            // Boolean.getBoolean reads each as false: the run would check nothing, and not say so.
            {"-Dbfc4j.checkInvariants=yes", "bfc: -Dbfc4j.checkInvariants=yes (expected: true or false; true checks"
                    + " the allocator's invariants after every call); change it or take it out of BFC_JAVA_OPTS"},
            {"-Dbfc4j.checkInvariants", "bfc: -Dbfc4j.checkInvariants= (expected: true or false; true checks"
                    + " the allocator's invariants after every call); change it or take it out of BFC_JAVA_OPTS"},
            // A file where the dumps' directory should be: no dump could be written, and replay would
            // not say so (its failing calls answer null, without the message that tells).
            {"-Dbfc4j.dumpOnOom=" + tiny, "bfc: -Dbfc4j.dumpOnOom=" + tiny + " is not a directory (expected: a"
                    + " directory for the out-of-memory dumps, created if missing); change it or take it out of"
                    + " BFC_JAVA_OPTS"},
            // A directory that cannot be made, under that file: as silent as the file itself.
            {"-Dbfc4j.dumpOnOom=" + tiny.resolve("dumps"), "bfc: -Dbfc4j.dumpOnOom=" + tiny.resolve("dumps")
                    + " cannot be created: " + tiny + " is not a directory (expected: a directory for"
                    + " the out-of-memory dumps, created if missing); change it or take it out of BFC_JAVA_OPTS"},
        };
        for (String[] c : cases) {
            ChildProcess.Result r = ChildProcess.run(List.of(JAVA, c[0],
                    "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand", "replay",
                    tiny.toString()), CHILD_LIMIT);
            String output = r.output();
            assertThat(r.status()).as(output).isEqualTo(2);
            assertThat(output.lines()).as(output).containsExactly(c[1]);
        }
        // What Boolean.getBoolean reads, in any case, runs: replay's own status (1: the trace's last
        // allocation runs out of memory), its summary printed.
        for (String ok : new String[] {"-Dbfc4j.checkInvariants=TRUE", "-Dbfc4j.checkInvariants=false"}) {
            ChildProcess.Result r = ChildProcess.run(List.of(JAVA, ok,
                    "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand", "replay",
                    tiny.toString()), CHILD_LIMIT);
            String output = r.output();
            assertThat(r.status()).as(output).isEqualTo(1);
            assertThat(output).as(ok).startsWith("trace ").doesNotContain("BFC_JAVA_OPTS");
        }
    }

    /** A dump directory the user may not write to, or not create, is said at the start too. */
    @Test
    void aDumpDirectoryThatMayNotBeWrittenIsOneLineAndExitTwo(@TempDir Path dir) throws Exception {
        Path locked = Files.createDirectory(dir.resolve("locked"));
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            assumeFalse(Files.isWritable(locked), "a directory without write permission is writable here (root)");
            Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
            String[][] cases = {
                {locked.toString(), "bfc: -Dbfc4j.dumpOnOom=" + locked + " is not writable: permission denied"},
                {locked.resolve("a/b").toString(), "bfc: -Dbfc4j.dumpOnOom=" + locked.resolve("a/b")
                        + " cannot be created: permission denied in " + locked},
            };
            for (String[] c : cases) {
                ChildProcess.Result r = ChildProcess.run(List.of(JAVA,
                        "-Dbfc4j.dumpOnOom=" + c[0], "-cp", System.getProperty("java.class.path"),
                        "io.github.bfc4j.cli.BfcCommand", "replay", tiny.toString()), CHILD_LIMIT);
                String output = r.output();
                assertThat(r.status()).as(output).isEqualTo(2);
                assertThat(output.lines()).as(output).containsExactly(c[1] + " (expected: a directory for the"
                        + " out-of-memory dumps, created if missing); change it or take it out of BFC_JAVA_OPTS");
            }
        } finally {
            Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    /**
     * A dump directory where no file can be created is refused even where the permissions say
     * yes, as they do for root on /proc: the check asked Files.isWritable, which was true there
     * for root, and every dump then went missing without a word.
     */
    @Test
    void aDumpDirectoryWhereNoFileCanBeCreatedIsOneLineAndExitTwoEvenForRoot() throws Exception {
        Path proc = Path.of("/proc");
        assumeTrue(Files.isDirectory(proc.resolve("self")), "no /proc here");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        String[][] cases = {
            // As root: no file can be created in it (NoSuchFileException); as another user: permission denied.
            {proc.toString(), "bfc: -Dbfc4j.dumpOnOom=/proc is not writable: "},
            {proc.resolve("bfc-dumps").toString(), "bfc: -Dbfc4j.dumpOnOom=/proc/bfc-dumps cannot be created: "},
        };
        for (String[] c : cases) {
            ChildProcess.Result r = ChildProcess.run(List.of(JAVA,
                    "-Dbfc4j.dumpOnOom=" + c[0], "-cp", System.getProperty("java.class.path"),
                    "io.github.bfc4j.cli.BfcCommand", "replay", tiny.toString()), CHILD_LIMIT);
            String output = r.output();
            System.out.println(output);
            assertThat(r.status()).as(output).isEqualTo(2);
            assertThat(output.lines()).as(output).singleElement().asString().startsWith(c[1])
                    .endsWith(" (expected: a directory for the out-of-memory dumps, created if missing); change it or"
                            + " take it out of BFC_JAVA_OPTS");
        }
    }

    /**
     * A dump directory that can be written, or created, passes the check and gets the dumps, and
     * the check leaves nothing behind (it creates a file there, or a directory where it is
     * missing, and deletes it).
     */
    @Test
    void aDumpDirectoryThatCanBeWrittenGetsTheDumpsAndNothingElse(@TempDir Path dir) throws Exception {
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        Path existing = Files.createDirectory(dir.resolve("existing"));
        Path missing = dir.resolve("missing");
        for (Path dumps : List.of(existing, missing)) {
            ChildProcess.Result r = ChildProcess.run(List.of(JAVA,
                    "-Dbfc4j.dumpOnOom=" + dumps, "-cp", System.getProperty("java.class.path"),
                    "io.github.bfc4j.cli.BfcCommand", "replay", tiny.toString()), CHILD_LIMIT);
            String output = r.output();
            // replay's own status: the trace's last allocation runs out of memory, and is dumped.
            assertThat(r.status()).as(output).isEqualTo(1);
            try (java.util.stream.Stream<Path> files = Files.list(dumps)) {
                assertThat(files.map(f -> f.getFileName().toString())).as(output).isNotEmpty()
                        .allMatch(name -> name.endsWith(".json") || name.endsWith(".pickle"), "a dump's file");
            }
        }
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            assertThat(files).as("nothing left beside the dump directories").containsExactlyInAnyOrder(existing, missing);
        }
    }

    /** What bfc says when its standard output drops what it printed. */
    private static final String OUTPUT_LOST = "bfc: standard output could not be written (is the disk full?): what"
            + " the command printed is incomplete; write it where there is room";

    /**
     * A command whose output cannot be written (a full disk) says so and exits 2; it exited 0 with
     * its output gone, since System.out drops a failed write without a word. Run in a JVM of its
     * own, its standard output the kernel's full device.
     */
    @Test
    void aStandardOutputThatCannotBeWrittenIsOneLineAndExitTwo() throws Exception {
        File full = new File("/dev/full");
        assumeTrue(full.exists() && full.canWrite(), "no writable /dev/full (a device that is always full) here");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        String[][] commands = {{"replay", tiny.toString()}, {"verify", tiny.toString()}, {"--version"}};
        for (String[] command : commands) {
            List<String> words = new java.util.ArrayList<>(List.of(JAVA,
                    "-cp", System.getProperty("java.class.path"), "io.github.bfc4j.cli.BfcCommand"));
            words.addAll(List.of(command));
            ChildProcess.Apart r = ChildProcess.runApart(words, full, CHILD_LIMIT);
            String err = r.error();
            assertThat(r.status()).as("%s: %s", List.of(command), err).isEqualTo(2);
            assertThat(err.lines()).as("%s", List.of(command)).containsExactly(OUTPUT_LOST);
        }
    }

    /**
     * A pipe whose reader has gone ({@code bfc verify ... | head -1}) is no error: nothing said,
     * the command's own status. Its standard output a pipe the test closes before the command
     * writes.
     */
    @Test
    void aPipeClosedByItsReaderIsNoError() throws Exception {
        assumeTrue(Files.isSymbolicLink(Path.of("/proc/self/fd/1")), "no /proc/self/fd here to tell a pipe");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        ChildProcess.Apart r = ChildProcess.runApart(List.of(JAVA, "-cp", System.getProperty("java.class.path"),
                "io.github.bfc4j.cli.BfcCommand", "replay", tiny.toString()), ChildProcess.Pipe.CLOSED, CHILD_LIMIT);
        String err = r.error();
        assertThat(r.status()).as(err).isEqualTo(1); // replay's own: the trace runs out of memory
        assertThat(err).isEmpty();
    }

    /**
     * A command that prints line after line stops once its output can no longer be written,
     * where it went on to the end, printing into a pipe nobody read ({@code bfc verify
     * T...T missing | head -1} verified every trace, then said that missing was missing and exited
     * 2). Observed by the work done after the first line: {@code verify} of 200 traces and then a
     * missing file, its standard output a pipe closed at once, stops after the first trace (exit
     * 0, nothing said: the file never reached, no 'ERROR missing'), and with a full disk says that
     * alone, exit 2; {@code generate --count 50} writes one trace, not 50.
     */
    @Test
    void aCommandStopsPrintingOnceItsOutputCannotBeWritten(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isSymbolicLink(Path.of("/proc/self/fd/1")), "no /proc/self/fd here to tell a pipe");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        List<String> verify = new java.util.ArrayList<>(List.of(JAVA, "-cp", System.getProperty("java.class.path"),
                "io.github.bfc4j.cli.BfcCommand", "verify"));
        verify.addAll(java.util.Collections.nCopies(200, tiny.toString()));
        verify.add(dir.resolve("missing.bfctrace").toString());
        ChildProcess.Apart r = ChildProcess.runApart(verify, ChildProcess.Pipe.CLOSED, CHILD_LIMIT);
        assertThat(r.error()).as("the files after the first were not verified").isEmpty();
        assertThat(r.status()).as(r.error()).isZero(); // the first trace passed
        File full = new File("/dev/full");
        if (full.exists() && full.canWrite()) {
            r = ChildProcess.runApart(verify, full, CHILD_LIMIT);
            assertThat(r.error().lines()).as("a full disk is said, and nothing more").containsExactly(OUTPUT_LOST);
            assertThat(r.status()).isEqualTo(2);
        }
        Path traces = Files.createDirectory(dir.resolve("traces"));
        r = ChildProcess.runApart(List.of(JAVA, "-cp", System.getProperty("java.class.path"),
                "io.github.bfc4j.cli.BfcCommand", "generate", "--seed", "1", "--count", "50", "--calls", "1000",
                "-o", traces.resolve("g{seed}.bfctrace").toString()), ChildProcess.Pipe.CLOSED, CHILD_LIMIT);
        assertThat(r.status()).as(r.error()).isZero();
        assertThat(r.error()).isEmpty();
        try (java.util.stream.Stream<Path> written = Files.list(traces)) {
            assertThat(written.map(f -> f.getFileName().toString())).as("the trace whose line failed, and no other")
                    .containsExactly("g1.bfctrace");
        }
    }

    /**
     * A named pipe whose reader has gone ({@code bfc replay T > fifo} read by {@code head -1 <
     * fifo}) is no error either: it was said to be a full disk ('is the disk full?'), exit 2, as
     * only an anonymous pipe was known to be a pipe. Its standard output a named pipe whose
     * reader closes before the command writes.
     */
    @Test
    void aNamedPipeClosedByItsReaderIsNoError(@TempDir Path dir) throws Exception {
        Path fifo = Fifo.create(dir, "out.fifo");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        // Opening a named pipe waits for its other end: the reader opens it while the child is
        // started, and closes it at once, long before the child's JVM has started.
        Thread reader = new Thread(() -> {
            try {
                Files.newInputStream(fifo).close();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, "fifo-reader");
        reader.setDaemon(true);
        reader.start();
        ChildProcess.Apart r = ChildProcess.runApart(List.of(JAVA, "-cp", System.getProperty("java.class.path"),
                "io.github.bfc4j.cli.BfcCommand", "replay", tiny.toString()), fifo.toFile(), CHILD_LIMIT);
        TestThreads.joinOrFail(CHILD_LIMIT, reader);
        String err = r.error();
        assertThat(r.status()).as(err).isEqualTo(1); // replay's own: the trace runs out of memory
        assertThat(err).isEmpty();
    }

    /**
     * A standard output that is closed ({@code bfc replay T >&-}) says why it could not be
     * written: it was said to be a full disk. Run by sh, which closes it for the child JVM.
     */
    @Test
    void aClosedStandardOutputSaysWhy() throws Exception {
        Path sh = Path.of("/bin/sh");
        assumeTrue(Files.isExecutable(sh), "no /bin/sh here to close a command's standard output");
        Path tiny = Cli.TRACES.resolve("tiny-single.bfctrace");
        ChildProcess.Apart r = ChildProcess.runApart(List.of(sh.toString(), "-c", "exec \"$0\" -cp \"$1\""
                + " io.github.bfc4j.cli.BfcCommand replay \"$2\" >&-", JAVA, System.getProperty("java.class.path"),
                tiny.toString()), CHILD_LIMIT);
        assertThat(r.status()).as(r.error()).isEqualTo(2);
        assertThat(r.error().lines()).containsExactly("bfc: standard output could not be written (Bad file descriptor):"
                + " what the command printed is incomplete; write it where it can be");
    }

    /**
     * The status of a command whose output was lost: 2, but for a broken invariant (3); and what
     * is said: a full disk, the reason the write gave, or nothing for a pipe whose reader has gone.
     */
    @Test
    void aLostOutputTurnsEveryStatusButABrokenInvariantIntoTwo() {
        int[][] cases = {{0, 2}, {1, 2}, {2, 2}, {3, 3}};
        for (int[] c : cases) {
            StandardOutput failing = new StandardOutput(failing("No space left on device"));
            PrintStream out = new PrintStream(failing, true, StandardCharsets.UTF_8);
            out.print("peak in use    1MiB");
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = BfcCommand.standardOutputChecked(BfcCommand.commandLine(), c[0], out,
                    new PrintStream(err, true, StandardCharsets.UTF_8), failing.failure());
            assertThat(status).as("status %d", c[0]).isEqualTo(c[1]);
            assertThat(err.toString(StandardCharsets.UTF_8).lines()).containsExactly(OUTPUT_LOST);
        }
        String[][] reasons = {
            {"Disk quota exceeded", OUTPUT_LOST},
            {"Input/output error", "bfc: standard output could not be written (Input/output error): what the command"
                + " printed is incomplete; write it where it can be"},
            {"Broken pipe", null}};
        for (String[] r : reasons) {
            StandardOutput failing = new StandardOutput(failing(r[0]));
            PrintStream out = new PrintStream(failing, true, StandardCharsets.UTF_8);
            out.print("peak in use    1MiB");
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = BfcCommand.standardOutputChecked(BfcCommand.commandLine(), 1, out,
                    new PrintStream(err, true, StandardCharsets.UTF_8), failing.failure());
            assertThat(status).as(r[0]).isEqualTo(r[1] == null ? 1 : 2);
            assertThat(err.toString(StandardCharsets.UTF_8).lines()).as(r[0])
                    .containsExactlyElementsOf(r[1] == null ? List.of() : List.of(r[1]));
        }
        // Output that was written leaves the status as it was, and says nothing.
        for (int s = 0; s <= 3; s++) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            StandardOutput written = new StandardOutput(new ByteArrayOutputStream());
            PrintStream out = new PrintStream(written, true, StandardCharsets.UTF_8);
            out.print("peak in use    1MiB");
            assertThat(BfcCommand.standardOutputChecked(BfcCommand.commandLine(), s, out,
                    new PrintStream(err, true, StandardCharsets.UTF_8), written.failure())).isEqualTo(s);
            assertThat(err.size()).isZero();
        }
    }

    /** A stream whose every write fails with {@code reason}. */
    private static OutputStream failing(String reason) {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException(reason);
            }
        };
    }

    /**
     * main(args) called from code with a null word: a NullPointerException naming the word's
     * index, thrown before anything runs (picocli failed on it inside its parser with "Cannot
     * invoke String.equals(Object) because arg is null"). Run in a JVM of its own: main exits.
     */
    @Test
    void mainCalledWithANullWordNamesItsIndex() throws Exception {
        ChildProcess.Result r = ChildProcess.run(List.of(JAVA,
                "-cp", System.getProperty("java.class.path"), MainWithANullWord.class.getName()), CHILD_LIMIT);
        String output = r.output();
        assertThat(r.status()).as(output).isEqualTo(1);
        assertThat(output.lines().findFirst()).as(output).hasValue("Exception in thread \"main\""
                + " java.lang.NullPointerException: args[1]=null (expected: a word of the command line, e.g."
                + " \"verify\")");
        assertThat(output).doesNotContain("picocli");
    }

    /** Calls {@code BfcCommand.main} as code might, with a null word. */
    static final class MainWithANullWord {
        public static void main(String[] args) {
            BfcCommand.main(new String[] {"verify", null});
        }
    }
}
