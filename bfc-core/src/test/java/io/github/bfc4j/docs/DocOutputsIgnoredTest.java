/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SourceTree;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every file that a shell command of README.md or docs/ writes into the repository's root
 * ({@code -o report.html}, {@code > wrong.bfctrace}) is one that .gitignore ignores, so that a
 * reader who runs the documented commands from the root, as the docs say they were run, finds
 * {@code git status} clean afterwards. So is the directory that {@code bfc-bench/measure.sh DIR}
 * writes its figures into, and the one it writes them into without DIR.
 */
class DocOutputsIgnoredTest {

    private static final Path ROOT = SourceTree.root();
    private static final Pattern FENCE = Pattern.compile("\\s*(```|~~~)(\\w*).*");
    /** A quoted word: its {@code >} or {@code -o} is not the shell's. */
    private static final Pattern QUOTED = Pattern.compile("'[^']*'|\"[^\"]*\"");
    /** An output named by {@code -o}/{@code --output} or a redirection of standard output. */
    private static final Pattern OUTPUT = Pattern.compile("(?:(?<=\\s)(?:-o|--output)[ =]|(?<![\\d>&])>\\s*)(\\S+)");
    /** bfc-bench/measure.sh and the directory it writes into, if given. */
    private static final Pattern MEASURE = Pattern.compile("(?:^|\\s)bfc-bench/measure\\.sh(?:\\s+([^\\s>|;&]+))?");
    /** measure.sh's directory when it is given none: {@code OUT=${1:-DIR}}. */
    private static final Pattern MEASURE_DEFAULT = Pattern.compile("(?m)^OUT=\\$\\{1:-([^}]+)}$");

    @Test
    void everyFileTheDocumentedCommandsWriteIntoTheRootIsIgnored() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> files = Files.list(ROOT.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        Set<String> outputs = new LinkedHashSet<>();
        for (Path doc : docs) {
            outputs.addAll(outputs(Files.readAllLines(doc, StandardCharsets.UTF_8)));
        }
        assertThat(outputs).as("outputs found").contains("report.html", "wrong.bfctrace", "cut.bfctrace", "results/");
        Matcher measureDefault = MEASURE_DEFAULT.matcher(Files.readString(ROOT.resolve("bfc-bench/measure.sh")));
        assertThat(measureDefault.find()).as("measure.sh's default directory, OUT=${1:-DIR}").isTrue();
        outputs.add(measureDefault.group(1) + "/");
        List<String> ignore = Files.readAllLines(ROOT.resolve(".gitignore"), StandardCharsets.UTF_8);
        assertThat(outputs.stream().filter(o -> !ignored(ignore, o)).toList())
                .as("written into the root by documented commands, not in .gitignore").isEmpty();
    }

    @Test
    void findsOutputsOnlyInShellCommands() {
        List<String> md = List.of(
                "Text: bin/bfc report T -o prose.html is not a command.",
                "```sh",
                "bin/bfc report T -o a.html    # a comment > not-a-file",
                "head -c -3 t.bfctrace > b.bfctrace",
                "sed 's/=> 0x1/=> 0x2/' t > c.bfctrace 2> err.txt",
                "bin/bfc generate --seed 1 --output=d.bfctrace",
                "bin/bfc report T -o /tmp/elsewhere.html -o sub/dir.html > /dev/null",
                "TF_SRC=/x bfc-bench/measure.sh out/   # into out/",
                "bfc-bench/measure.sh /tmp/elsewhere",
                "```",
                "  ```",
                "  $ bin/bfc export-snapshot T -o e.pickle",
                "wrote e.pickle (21.70KiB): ... > not.output",
                "```",
                "```java",
                "x -o f.html",
                "```");
        assertThat(outputs(md)).containsExactly("a.html", "b.bfctrace", "c.bfctrace", "d.bfctrace", "out/", "e.pickle");
    }

    /**
     * The plain names (no directory) that the shell commands of a Markdown text write: every
     * line of a {@code sh} block, and the {@code $ } lines of a plain block (its other lines are
     * a command's output).
     */
    private static List<String> outputs(List<String> lines) {
        List<String> out = new ArrayList<>();
        String block = null;
        for (String line : lines) {
            Matcher fence = FENCE.matcher(line);
            if (fence.matches()) {
                block = block == null ? fence.group(2) : null;
                continue;
            }
            // A block in a list item is indented as the item is.
            String command = line.stripLeading();
            if ("sh".equals(block) || "bash".equals(block)) {
                // every line a command
            } else if ("".equals(block) && command.startsWith("$ ")) {
                command = command.substring(2);
            } else {
                continue;
            }
            int comment = command.indexOf(" #");
            if (comment >= 0) {
                command = command.substring(0, comment);
            }
            Matcher m = OUTPUT.matcher(QUOTED.matcher(command).replaceAll("''"));
            while (m.find()) {
                String name = m.group(1);
                if (!name.contains("/") && !name.startsWith("$") && !name.startsWith("&")) {
                    out.add(name);
                }
            }
            // A directory, named with a / at its end: "results/".
            Matcher measure = MEASURE.matcher(command);
            if (measure.find() && measure.group(1) != null) {
                String dir = measure.group(1).endsWith("/") ? measure.group(1) : measure.group(1) + "/";
                if (dir.indexOf('/') == dir.length() - 1 && !dir.startsWith("$")) {
                    out.add(dir);
                }
            }
        }
        return out;
    }

    /**
     * Whether a .gitignore of those lines ignores {@code name} in the root: a file, or a directory
     * where it ends with {@code /} (which rules ending with {@code /} match too).
     */
    private static boolean ignored(List<String> gitignore, String name) {
        boolean directory = name.endsWith("/");
        if (directory) {
            name = name.substring(0, name.length() - 1);
        }
        for (String rule : gitignore) {
            String r = rule.strip();
            if (r.isEmpty() || r.startsWith("#") || r.startsWith("!")) {
                continue;
            }
            if (r.endsWith("/")) {
                if (!directory) {
                    continue;
                }
                r = r.substring(0, r.length() - 1);
            }
            if (r.startsWith("/")) {
                r = r.substring(1);
            }
            if (FileSystems.getDefault().getPathMatcher("glob:" + r).matches(Path.of(name))) {
                return true;
            }
        }
        return false;
    }
}
