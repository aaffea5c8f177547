/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SourceTree;
import io.github.bfc4j.docs.DocSnippets;
import io.github.bfc4j.docs.DocSnippets.Snippet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java snippet of README.md and docs/ compiles as shown ({@link DocSnippets}): here those
 * that name no module (bfc-cli's class path holds bfc-core, bfc-cpu, bfc-cuda and
 * bfc-micrometer), in bfc-onnxruntime and bfc-tensorflow those that name them. The dependency
 * coordinates README.md gives name real modules at the project's version.
 */
class DocSnippetsTest {

    private static final Path ROOT = SourceTree.root();

    /** The modules whose tests compile the snippets that name them, and the test that does. */
    private static final Map<String, String> COMPILED_BY = Map.of(
            DocSnippets.DEFAULT_MODULE, "bfc-cli/src/test/java/io/github/bfc4j/cli/DocSnippetsTest.java",
            "bfc-onnxruntime", "bfc-onnxruntime/src/test/java/io/github/bfc4j/onnxruntime/DocSnippetsTest.java",
            "bfc-tensorflow", "bfc-tensorflow/src/test/java/io/github/bfc4j/tensorflow/DocSnippetsTest.java");

    @Test
    void everySnippetNamesAModuleWhoseTestsCompileIt() throws IOException {
        List<Snippet> all = DocSnippets.all(ROOT);
        assertThat(all.stream().filter(s -> s.file().equals("README.md")).count()).as("snippets of README.md")
                .isGreaterThanOrEqualTo(5);
        assertThat(all.stream().filter(s -> s.file().startsWith("docs/")).count()).as("snippets of docs/")
                .isGreaterThanOrEqualTo(12);
        for (Snippet s : all) {
            assertThat(COMPILED_BY).as("%s names module %s; the modules whose tests compile snippets",
                    s.where(), s.module()).containsKey(s.module());
        }
        for (String test : COMPILED_BY.values()) {
            assertThat(ROOT.resolve(test)).exists();
        }
    }

    @Test
    void theSnippetsThatNameNoModuleCompile(@TempDir Path classes) throws IOException {
        List<Snippet> mine = DocSnippets.of(ROOT, DocSnippets.DEFAULT_MODULE);
        assertThat(mine).hasSizeGreaterThanOrEqualTo(10);
        assertThat(DocSnippets.compile(mine, classes))
                .as("compile errors (what a snippet may use: the javadoc of DocSnippets, in bfc-core's tests)").isEmpty();
    }

    @Test
    void theDependencyCoordinatesNameRealModulesAtTheProjectsVersion() throws IOException {
        String md = Files.readString(ROOT.resolve("README.md"));
        Matcher parent = Pattern.compile("<artifactId>bfc4j-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(ROOT.resolve("pom.xml")));
        assertThat(parent.find()).isTrue();
        String version = parent.group(1);
        Matcher xml = Pattern.compile("```xml\n(.*?)```", Pattern.DOTALL).matcher(md);
        int blocks = 0;
        while (xml.find()) {
            blocks++;
            String s = xml.group(1);
            assertThat(s).contains("<groupId>io.github.bfc4j</groupId>").contains("<version>" + version + "</version>");
            Matcher artifact = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(s);
            while (artifact.find()) {
                assertThat(ROOT.resolve(artifact.group(1)).resolve("pom.xml")).as("module %s", artifact.group(1))
                        .exists();
            }
        }
        assertThat(blocks).as("dependency snippets in README.md").isPositive();
        assertThat(md).contains("`" + version + "`");
    }
}
