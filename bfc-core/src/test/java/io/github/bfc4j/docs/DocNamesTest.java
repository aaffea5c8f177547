/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SourceTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code Class.member} that the repository's Markdown names in a code span, where
 * {@code Class} is a class of this repository (main or test sources, any module), names a
 * member declared in that class's source file: a method, a field, a record component, a nested
 * type or an enum constant. A renamed or removed member leaves the docs naming something that
 * is not there; upstream's names ({@code BFCAllocator::Extend}) and the JDK's are not checked.
 */
class DocNamesTest {

    private static final Path ROOT = SourceTree.root();
    private static final Pattern FENCED = Pattern.compile("(?ms)^```.*?^```");
    private static final Pattern CODE_SPAN = Pattern.compile("(`+)(.*?)\\1");
    /** {@code Class.member}, optionally after a package ({@code core.internal.ChunkTable.ptr}). */
    private static final Pattern NAME = Pattern.compile("(?<![\\w.])(?:[a-z]\\w*\\.)*([A-Z]\\w*)\\.([a-zA-Z_]\\w*)");

    @Test
    void everyClassMemberTheDocsNameIsDeclared() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("bfc-bench/src/cpp/README.md")));
        try (Stream<Path> files = Files.list(ROOT.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        Map<String, String> sources = new HashMap<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            files.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/"))
                    .forEach(p -> sources.merge(p.getFileName().toString().replace(".java", ""), read(p), String::concat));
        }
        List<String> checked = new ArrayList<>();
        assertThat(undeclared(docs, sources, checked)).isEmpty();
        assertThat(checked).as("names checked").hasSizeGreaterThan(100);
    }

    @Test
    void aRemovedMemberIsFound(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("a.md"), "`Pool.take(n)`, `core.Pool.size`, `Pool.Slot`, `Pool.KEEP`, `Pool.LAST`,"
                + " `Pool.put` and `Pool.gone()`; `Other.thing`, `Pool.java`, `BFCAllocator::Extend`.\n"
                + "```\nPool.notChecked();\n```\n");
        String pool = """
                enum Pool {
                    KEEP,
                    LAST;
                    private int size = 0;
                    record Slot(long put) {}
                    int take(int n) { return n; }
                }
                """;
        List<String> checked = new ArrayList<>();
        assertThat(undeclared(List.of(dir.resolve("a.md")), Map.of("Pool", pool), checked))
                .containsExactly("a.md: Pool.gone (no member gone in Pool)");
        assertThat(checked).hasSize(7);
    }

    /**
     * The names of {@code docs} that name a class of {@code sources} (simple name to source
     * text) and a member it does not declare, as {@code "<file>: Class.member (why)"}; every name
     * checked goes into {@code checked}.
     */
    private static List<String> undeclared(List<Path> docs, Map<String, String> sources, List<String> checked) {
        List<String> out = new ArrayList<>();
        for (Path doc : docs) {
            Matcher span = CODE_SPAN.matcher(FENCED.matcher(read(doc)).replaceAll(""));
            while (span.find()) {
                Matcher name = NAME.matcher(span.group(2));
                while (name.find()) {
                    String type = name.group(1);
                    String member = name.group(2);
                    String source = sources.get(type);
                    if (source == null || member.equals("java")) {
                        continue;
                    }
                    checked.add(type + "." + member);
                    if (!declares(source, member)) {
                        out.add(doc.getFileName() + ": " + type + "." + member + " (no member " + member + " in " + type + ")");
                    }
                }
            }
        }
        return out;
    }

    /** Whether {@code source} declares {@code member}: a type, a method, a field or component, an enum constant. */
    private static boolean declares(String source, String member) {
        String m = Pattern.quote(member);
        return Pattern.compile("\\b(class|record|interface|enum)\\s+" + m + "\\b").matcher(source).find()
                || Pattern.compile("[\\w\\]>]\\s+" + m + "\\s*[(=;,)]").matcher(source).find()
                || Pattern.compile("(?m)^\\s*" + m + "\\s*([,;(]|$)").matcher(source).find();
    }

    private static String read(Path f) {
        try {
            return Files.readString(f, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
