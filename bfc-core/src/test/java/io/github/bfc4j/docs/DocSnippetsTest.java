/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.docs.DocSnippets.Snippet;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How {@link DocSnippets} reads Markdown, and that its compiler reports the Markdown line of an error. */
class DocSnippetsTest {

    private static final List<String> PAGE = List.of(
            "# A page",                                           // 1
            "",                                                   // 2
            "```java",                                            // 3
            "import io.github.bfc4j.core.BfcAllocator;",          // 4
            "long limit = BfcAllocator.MAX_ALLOCATION_BYTES;",    // 5
            "```",                                                // 6
            "Text, then a snippet whose names come from its comment:", // 7
            "<!-- compiled in:",                                  // 8
            "import io.github.bfc4j.core.BfcAllocator;",          // 9
            "class Snippet {",                                    // 10
            "    void run(BfcAllocator allocator) {",             // 11
            "-->",                                                // 12
            "```java bfc-other",                                  // 13
            "long p = allocator.allocateRaw(256, 1024);",         // 14
            "allocator.deallocateRaw(p);",                        // 15
            "```",                                                // 16
            "```sh",                                              // 17
            "bin/bfc demo",                                       // 18
            "```");                                               // 19

    @Test
    void readsEachJavaBlockWithItsModuleAndTheCommentAboveIt() {
        List<Snippet> snippets = DocSnippets.parse("page.md", PAGE);
        assertThat(snippets).hasSize(2);
        Snippet first = snippets.get(0);
        assertThat(first.line()).isEqualTo(3);
        assertThat(first.module()).isEqualTo(DocSnippets.DEFAULT_MODULE);
        assertThat(first.context()).isEmpty();
        assertThat(first.code()).containsExactly(PAGE.get(3), PAGE.get(4));
        Snippet second = snippets.get(1);
        assertThat(second.where()).isEqualTo("page.md line 13");
        assertThat(second.module()).isEqualTo("bfc-other");
        assertThat(second.context()).containsExactly(PAGE.get(8), PAGE.get(9), PAGE.get(10));
        assertThat(second.contextLine()).isEqualTo(9);
        assertThat(second.code()).containsExactly(PAGE.get(13), PAGE.get(14));
    }

    @Test
    void aBlockIndentedInAListItemOrFencedOtherwiseIsASnippetToo() {
        List<String> page = List.of(
                "* In a list item:",                              // 1
                "",                                               // 2
                "  ```java",                                      // 3
                "  import io.github.bfc4j.core.BfcAllocator;",    // 4
                "  long limit = BfcAllocator.MAX_ALLOCATION_BYTES;", // 5
                "  ```",                                          // 6
                "~~~Java",                                        // 7
                "long one = 1;",                                  // 8
                "~~~",                                            // 9
                "``` java bfc-other",                             // 10
                "long two = 2;",                                  // 11
                "```",                                            // 12
                "```javascript",                                  // 13
                "let three = 3;",                                 // 14
                "```");                                           // 15
        List<Snippet> snippets = DocSnippets.parse("page.md", page);
        assertThat(snippets).extracting(Snippet::line).containsExactly(3, 7, 10);
        assertThat(snippets.get(0).code()).containsExactly("import io.github.bfc4j.core.BfcAllocator;",
                "long limit = BfcAllocator.MAX_ALLOCATION_BYTES;");
        assertThat(snippets.get(1).code()).containsExactly("long one = 1;");
        assertThat(snippets.get(2).module()).isEqualTo("bfc-other");
        assertThat(snippets.get(2).code()).containsExactly("long two = 2;");
    }

    @Test
    void anIndentedBlockCompilesWithItsImports(@TempDir Path classes) throws IOException {
        List<String> page = List.of("1. Step:", "   ```java", "   import io.github.bfc4j.core.BfcAllocator;",
                "   long limit = BfcAllocator.MAX_ALLOCATION_BYTES;", "   ```");
        List<Snippet> snippets = DocSnippets.parse("page.md", page);
        assertThat(snippets).hasSize(1);
        assertThat(DocSnippets.compile(snippets, classes)).isEmpty();
    }

    @Test
    void snippetsThatMatchTheApiCompile(@TempDir Path classes) throws IOException {
        assertThat(DocSnippets.compile(DocSnippets.parse("page.md", PAGE), classes)).isEmpty();
    }

    @Test
    void anErrorIsReportedAtItsMarkdownLine(@TempDir Path classes) throws IOException {
        List<String> page = new java.util.ArrayList<>(PAGE);
        page.set(14, "allocator.free(p);");
        page.set(10, "    void run(BfcAllocator allocatr) {");
        String report = DocSnippets.compile(DocSnippets.parse("page.md", page), classes);
        assertThat(report).contains("page.md line 14: ").contains("allocator").contains("page.md line 15: ");
        assertThat(report.lines().filter(l -> !l.startsWith(" ")))
                .allMatch(l -> l.startsWith("page.md line 14: ") || l.startsWith("page.md line 15: "));
    }

    @Test
    void aMissingImportIsAnError(@TempDir Path classes) throws IOException {
        List<String> page = new java.util.ArrayList<>(PAGE);
        page.set(3, "");
        assertThat(DocSnippets.compile(DocSnippets.parse("page.md", page.subList(0, 6)), classes))
                .startsWith("page.md line 5: ");
    }

    @Test
    void anUnclosedBlockOrCommentIsRefused() {
        assertThatThrownBy(() -> DocSnippets.parse("page.md", PAGE.subList(0, 5)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("page.md line 3");
        assertThatThrownBy(() -> DocSnippets.parse("page.md", PAGE.subList(8, 16)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("page.md line 5");
    }
}
