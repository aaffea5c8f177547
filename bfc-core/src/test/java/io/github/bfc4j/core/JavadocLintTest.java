/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.DocumentationTool;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The javadoc of every class, internal ones included, passes {@code javadoc -Xdoclint}: an
 * unescaped {@code <<} in a {@code <pre>} block, or a {@code <text>} read as an HTML tag, made
 * the javadoc tool fail with "malformed HTML" and "unknown tag".
 */
class JavadocLintTest {

    @Test
    void everyClassPassesDoclint(@TempDir Path out) throws IOException {
        DocumentationTool javadoc = ToolProvider.getSystemDocumentationTool();
        List<Path> sources;
        try (Stream<Path> s = Files.walk(SourceTree.resolve("bfc-core/src/main/java"))) {
            sources = s.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        assertThat(sources).isNotEmpty();
        StringWriter messages = new StringWriter();
        try (StandardJavaFileManager files = javadoc.getStandardFileManager(null, null, null)) {
            Boolean ok = javadoc.getTask(messages, files, null, null,
                    List.of("-quiet", "-private", "-Xdoclint:all,-missing", "-d", out.toString(),
                            "-classpath", System.getProperty("java.class.path")),
                    files.getJavaFileObjectsFromPaths(sources)).call();
            String errors = messages.toString();
            assertThat(errors).as(errors).doesNotContain("error:");
            assertThat(ok).as(errors).isTrue();
        }
    }
}
