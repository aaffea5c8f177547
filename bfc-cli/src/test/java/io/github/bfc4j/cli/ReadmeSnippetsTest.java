/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.StandardLocation;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java snippet of README.md compiles as shown, read from README.md itself: its imports,
 * then its statements as the body of a method (that may throw), against the published modules.
 * The dependency coordinates it gives name real modules at the project's version.
 */
class ReadmeSnippetsTest {

    private static final Path ROOT = Path.of("..");
    private static final Pattern JAVA = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL);
    private static final Pattern XML = Pattern.compile("```xml\n(.*?)```", Pattern.DOTALL);

    /** A snippet: its text and the README line of its first line. */
    private record Snippet(String text, int firstLine) {
    }

    private static List<Snippet> snippets(String md, Pattern fence) {
        List<Snippet> out = new ArrayList<>();
        Matcher m = fence.matcher(md);
        while (m.find()) {
            int line = 1 + (int) md.substring(0, m.start(1)).chars().filter(c -> c == '\n').count();
            out.add(new Snippet(m.group(1), line));
        }
        return out;
    }

    /**
     * The snippet as a class, line for line: import lines stay where they are (all come first in
     * the README), and the first statement's line opens the class and its method.
     */
    private static String asClass(String name, String snippet) {
        StringBuilder src = new StringBuilder();
        boolean opened = false;
        for (String line : snippet.split("\n", -1)) {
            if (!opened && !line.isBlank() && !line.startsWith("import ")) {
                src.append("class ").append(name).append(" { static void run() throws Exception { ");
                opened = true;
            }
            src.append(line).append('\n');
        }
        return src.append("} }\n").toString();
    }

    @Test
    void everyJavaSnippetCompilesAsShown(@TempDir Path classes) throws IOException {
        List<Snippet> snippets = snippets(Files.readString(ROOT.resolve("README.md")), JAVA);
        assertThat(snippets).as("Java snippets in README.md").hasSizeGreaterThanOrEqualTo(5);
        List<JavaFileObject> sources = new ArrayList<>();
        for (int i = 0; i < snippets.size(); i++) {
            String name = "ReadmeSnippet" + i;
            String src = asClass(name, snippets.get(i).text());
            sources.add(new SimpleJavaFileObject(URI.create("string:///" + name + ".java"), JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                    return src;
                }
            });
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            files.setLocationFromPaths(StandardLocation.CLASS_OUTPUT, List.of(classes));
            StringBuilder classPath = new StringBuilder();
            for (Path entry : TestClassPath.entries()) {
                classPath.append(classPath.length() == 0 ? "" : File.pathSeparator).append(entry);
            }
            List<String> options = List.of("-classpath", classPath.toString(),
                    "-proc:none", "--release", "17");
            boolean compiled = javac.getTask(null, files, diagnostics, options, null, sources).call();
            StringBuilder report = new StringBuilder();
            for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
                if (d.getKind() == Diagnostic.Kind.ERROR) {
                    int snippet = Integer.parseInt(d.getSource().getName().replaceAll("\\D", ""));
                    report.append("README.md line ").append(snippets.get(snippet).firstLine() + d.getLineNumber() - 1)
                            .append(": ").append(d.getMessage(null)).append('\n');
                }
            }
            assertThat(report).as("compile errors").isEmpty();
            assertThat(compiled).isTrue();
        }
    }

    @Test
    void theDependencyCoordinatesNameRealModulesAtTheProjectsVersion() throws IOException {
        String md = Files.readString(ROOT.resolve("README.md"));
        Matcher parent = Pattern.compile("<artifactId>bfc4j-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(ROOT.resolve("pom.xml")));
        assertThat(parent.find()).isTrue();
        String version = parent.group(1);
        List<Snippet> xml = snippets(md, XML);
        assertThat(xml).as("dependency snippets in README.md").isNotEmpty();
        for (Snippet s : xml) {
            assertThat(s.text()).contains("<groupId>io.github.bfc4j</groupId>")
                    .contains("<version>" + version + "</version>");
            Matcher artifact = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(s.text());
            while (artifact.find()) {
                assertThat(ROOT.resolve(artifact.group(1)).resolve("pom.xml")).as("module %s", artifact.group(1))
                        .exists();
            }
        }
        assertThat(md).contains("`" + version + "`");
    }
}
