/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tests find the repository's files whatever the working directory. They read
 * {@code src/main/java}, {@code ../docs}, {@code ../bin/bfc} and the bundled traces relative to
 * it, so they passed under Maven (which runs them in the module's directory) and failed from the
 * repository's root (an IDE, the JUnit console launcher).
 */
class SourceTreeTest {

    /** A path built from a literal that is not absolute: resolved against the working directory. */
    private static final Pattern RELATIVE_LITERAL =
            Pattern.compile("(?:Path\\.of|Paths\\.get|new File)\\(\\s*\"(?!/)([^\"]*)\"");

    @TempDir
    Path tmp;

    @Test
    void findsTheRootFromTheModuleDirectoryTheClassesOrTheWorkingDirectory() {
        Path root = SourceTree.root();
        assertThat(root).isAbsolute();
        assertThat(root.resolve("bin/bfc")).isRegularFile();
        assertThat(SourceTree.find(root.resolve("bfc-cli").toString(), tmp, tmp)).isEqualTo(root);
        assertThat(SourceTree.find(null, root.resolve("bfc-core/target/test-classes"), tmp)).isEqualTo(root);
        assertThat(SourceTree.find(null, tmp, root.resolve("bfc-cli/src/test"))).isEqualTo(root);
        assertThat(SourceTree.find(null, null, root)).isEqualTo(root);
        assertThat(SourceTree.find("", null, root.resolve("docs"))).isEqualTo(root);
        assertThat(SourceTree.resolve("bfc-core/src/main/java")).isDirectory();
    }

    @Test
    void aModuleDirectoryOutsideACheckoutFailsRatherThanFallingBack() {
        Path root = SourceTree.root();
        assertThatThrownBy(() -> SourceTree.find(tmp.toString(), root, root))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("-Dbfc4j.moduleDir=" + tmp + " is not inside a bfc4j checkout (expected: ");
    }

    @Test
    void noCheckoutAnywhereFailsSayingWhereItLooked() throws IOException {
        Path classes = Files.createDirectories(tmp.resolve("classes"));
        Path work = Files.createDirectories(tmp.resolve("work"));
        // A pom.xml alone is not a checkout.
        Files.writeString(tmp.resolve("pom.xml"), "<project/>");
        assertThatThrownBy(() -> SourceTree.find(null, classes, work))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("cannot find the bfc4j repository (a directory holding pom.xml, bin/bfc and"
                        + " bfc-core/src/main/java) above " + classes + " or above " + work
                        + "; run the tests with Maven, from inside the checkout, or with"
                        + " -Dbfc4j.moduleDir=<checkout>/<module>");
        assertThatThrownBy(() -> SourceTree.resolve("no/such/file"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("no/such/file is not in the repository at " + SourceTree.root()
                        + " (expected: a checkout with all its files)");
    }

    @Test
    void noTestReadsARepositoryFileRelativeToTheWorkingDirectory() throws IOException {
        Path root = SourceTree.root();
        List<Path> sources = new ArrayList<>();
        try (Stream<Path> modules = Files.list(root)) {
            for (Path m : modules.sorted().toList()) {
                Path tests = m.resolve("src/test/java");
                if (Files.isDirectory(tests)) {
                    try (Stream<Path> s = Files.walk(tests)) {
                        s.filter(p -> p.toString().endsWith(".java")).sorted().forEach(sources::add);
                    }
                }
            }
        }
        assertThat(sources).as("test sources under %s", root).hasSizeGreaterThan(100);
        List<String> found = new ArrayList<>();
        for (Path f : sources) {
            List<String> lines = Files.readAllLines(f);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = RELATIVE_LITERAL.matcher(lines.get(i));
                // A test may mean the working directory itself (a command must not write there):
                // it says so on the line or the line before.
                boolean meant = lines.get(i).contains("working directory")
                        || i > 0 && lines.get(i - 1).contains("working directory")
                        // A symbolic link's relative target is resolved from the link's directory.
                        || lines.get(i).contains("createSymbolicLink(");
                if (m.find() && !meant) {
                    found.add(root.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).trim());
                }
            }
        }
        assertThat(found).as("paths relative to the working directory (use SourceTree.resolve(...))").isEmpty();
    }
}
