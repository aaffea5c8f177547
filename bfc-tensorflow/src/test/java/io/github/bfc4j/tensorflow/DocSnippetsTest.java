/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.SourceTree;
import io.github.bfc4j.docs.DocSnippets;
import io.github.bfc4j.docs.DocSnippets.Snippet;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java snippets of README.md and docs/ that name bfc-tensorflow compile as shown ({@link DocSnippets}). */
class DocSnippetsTest {

    @Test
    void theSnippetsThatNameThisModuleCompile(@TempDir Path classes) throws IOException {
        List<Snippet> mine = DocSnippets.of(SourceTree.root(), "bfc-tensorflow");
        assertThat(mine).isNotEmpty();
        assertThat(DocSnippets.compile(mine, classes))
                .as("compile errors (what a snippet may use: the javadoc of DocSnippets, in bfc-core's tests)").isEmpty();
    }
}
