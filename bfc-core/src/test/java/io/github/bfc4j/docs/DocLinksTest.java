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
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every relative link of the repository's Markdown (README.md, docs/, bfc-bench's C++ README)
 * reaches a file that exists and, with an anchor, a heading of that file, as GitHub names its
 * headings' anchors. Links with a scheme ({@code https:}) are not followed.
 */
class DocLinksTest {

    private static final Path ROOT = SourceTree.root();
    private static final Pattern FENCED = Pattern.compile("(?ms)^```.*?^```");
    private static final Pattern CODE_SPAN = Pattern.compile("(`+).*?\\1");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("(?m)^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    @Test
    void everyRelativeLinkReachesAFileAndAHeading() throws IOException {
        List<Path> files = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("bfc-bench/src/cpp/README.md")));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        }
        List<String> links = new ArrayList<>();
        assertThat(brokenLinks(files, links)).isEmpty();
        assertThat(links).as("relative links checked").hasSizeGreaterThan(40);
    }

    @Test
    void anchorsAreGitHubs() {
        assertThat(anchor("CUDA: `BfcCudaProvider`")).isEqualTo("cuda-bfccudaprovider");
        assertThat(anchor("Many allocating threads: ShardedBfcAllocator"))
                .isEqualTo("many-allocating-threads-shardedbfcallocator");
        assertThat(anchor("Provenance (optional extension)")).isEqualTo("provenance-optional-extension");
        assertThat(anchor("A model server's memory (ONNX Runtime, serving a real model)"))
                .isEqualTo("a-model-servers-memory-onnx-runtime-serving-a-real-model");
        assertThat(anchor("snake_case and 2 words")).isEqualTo("snake_case-and-2-words");
    }

    @Test
    void aMissingFileAndAMissingHeadingAreFound(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("b.md"), "# Title\n\n## Part two\n\n## Part two\n");
        Files.writeString(dir.resolve("a.md"), "See [b](b.md#part-two), [again](b.md#part-two-1), [top](#here),"
                + " [web](https://example.com/x.md), `[code](nowhere.md)`, [gone](c.md), [bad](b.md#part-three).\n"
                + "```\n[in a block](nowhere.md)\n```\n# Here\n");
        List<String> links = new ArrayList<>();
        assertThat(brokenLinks(List.of(dir.resolve("a.md")), links)).containsExactly(
                "a.md: c.md (no such file)", "a.md: b.md#part-three (no such heading in b.md)");
        assertThat(links).hasSize(5);
    }

    /**
     * The broken relative links of {@code files}, as {@code "<file>: <link> (why)"}; every
     * relative link checked goes into {@code checked}.
     */
    private static List<String> brokenLinks(List<Path> files, List<String> checked) {
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> broken = new ArrayList<>();
        for (Path f : files) {
            Matcher m = LINK.matcher(prose(f));
            while (m.find()) {
                String link = m.group(1);
                if (link.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue;
                }
                checked.add(link);
                int hash = link.indexOf('#');
                String path = hash < 0 ? link : link.substring(0, hash);
                Path target = path.isEmpty() ? f : f.getParent().resolve(path).normalize();
                if (!Files.exists(target)) {
                    broken.add(f.getFileName() + ": " + link + " (no such file)");
                } else if (hash >= 0 && target.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(target, DocLinksTest::headings).contains(link.substring(hash + 1))) {
                    broken.add(f.getFileName() + ": " + link + " (no such heading in " + target.getFileName() + ")");
                }
            }
        }
        return broken;
    }

    /** A Markdown file without its fenced blocks and code spans. */
    private static String prose(Path f) {
        return CODE_SPAN.matcher(FENCED.matcher(read(f)).replaceAll("")).replaceAll("");
    }

    /** The anchors of a file's headings; a repeated one gets -1, -2, ... as on GitHub. */
    private static Set<String> headings(Path f) {
        Set<String> out = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        Matcher m = HEADING.matcher(FENCED.matcher(read(f)).replaceAll(""));
        while (m.find()) {
            String a = anchor(m.group(1));
            Integer n = seen.merge(a, 1, Integer::sum) - 1;
            out.add(n == 0 ? a : a + "-" + n);
        }
        return out;
    }

    private static String read(Path f) {
        try {
            return Files.readString(f, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped, spaces to hyphens. */
    static String anchor(String heading) {
        return heading.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N}_\\- ]", "").replace(' ', '-');
    }
}
