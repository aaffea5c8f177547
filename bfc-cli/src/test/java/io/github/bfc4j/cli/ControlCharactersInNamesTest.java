/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file name or argument with control characters (an escape sequence, a line break) is shown
 * with them escaped, {@code \x1b}, {@code \x0a}, as docs/cli.md says messages show quoted words:
 * an error stays one line, and a name cannot write to the terminal or forge a line of output
 * (a name made by someone else, met through {@code bfc verify dir/*}).
 */
class ControlCharactersInNamesTest {

    /** An escape sequence that would turn the terminal red, and a line break with a forged line. */
    private static final String EVIL = "e\u001b[31mx\nPASS forged";
    private static final String SHOWN = "e\\x1b[31mx\\x0aPASS forged";

    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void aTraceNamedWithControlCharactersIsNamedEscaped() throws IOException {
        Path empty = Files.createFile(dir.resolve(EVIL + ".bfctrace"));
        String shown = dir.resolve(SHOWN + ".bfctrace").toString();
        for (String command : new String[] {"replay", "whatif", "demo", "verify"}) {
            int status = command.equals("demo") ? cli.run(command, "--trace", empty) : cli.run(command, empty);
            assertThat(status).as(command).isEqualTo(2);
            String expected = (command.equals("verify") ? "ERROR " : "bfc " + command + ": ") + shown
                    + " line 1: found end of file, expected 'bfctrace 1' (the first line of a trace)";
            assertThat(cli.err.lines()).as(command).containsExactly(expected);
        }
        assertThat(cli.run("report", empty, "-o", dir.resolve("r.html"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: " + shown
                + " line 1: found end of file, expected 'bfctrace 1' (the first line of a trace)");
    }

    @Test
    void aMissingFileOrADirectoryNamedWithControlCharactersIsNamedEscaped() throws IOException {
        Path missing = dir.resolve(EVIL);
        String shown = dir.resolve(SHOWN).toString();
        assertThat(cli.run("replay", missing)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + shown + ": no such file");
        assertThat(cli.run("verify", missing)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR " + shown + ": no such file");
        Path directory = Files.createDirectory(missing);
        assertThat(cli.run("replay", directory)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc replay: " + shown + ": is a directory (expected: a file)");
        assertThat(cli.run("verify", directory)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("ERROR " + shown + ": is a directory (expected: a file)");
    }

    @Test
    void anOutputNamedWithControlCharactersIsNamedEscaped() {
        Path trace = Cli.TRACES.resolve("tiny-single.bfctrace");
        assertThat(cli.run("report", trace, "-o", dir.resolve(EVIL).resolve("x.html"))).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc report: -o=" + dir.resolve(SHOWN).resolve("x.html")
                + " (expected: a file in an existing directory)");
        // generate --count refuses a name without {seed}: it wrote the name raw.
        assertThat(cli.run("generate", "--seed", "1", "--count", "2", "-o", EVIL)).isEqualTo(2);
        assertThat(cli.err.lines()).containsExactly("bfc generate: -o=" + SHOWN + " (expected with --count: a name"
                + " holding {seed}, e.g. traces/g{seed}.bfctrace)");
    }

    @Test
    void wordsOfTheCommandLineWithControlCharactersAreShownEscaped() {
        assertThat(cli.run("rep\u001blay")).isEqualTo(2);
        assertThat(cli.err).doesNotContain("\u001b").contains("'rep\\x1blay'");
        assertThat(cli.run("replay", Cli.TRACES.resolve("tiny-single.bfctrace"), "x\u001by")).isEqualTo(2);
        assertThat(cli.err).doesNotContain("\u001b").contains("'x\\x1by'");
        assertThat(cli.run("replay", Cli.TRACES.resolve("tiny-single.bfctrace"), "--allow-growth", "m\u001b"))
                .isEqualTo(2);
        assertThat(cli.err).doesNotContain("\u001b").contains("m\\x1b");
    }
}
