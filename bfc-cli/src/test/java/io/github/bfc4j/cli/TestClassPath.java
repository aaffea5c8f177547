/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.docs.DocSnippets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The test's class path, for tests that hand it to jdeps or a module finder. */
final class TestClassPath {

    private TestClassPath() {
    }

    /**
     * The JVM's class path, with the manifest {@code Class-Path} of each jar on it expanded
     * (Surefire may put only a manifest jar there): {@link DocSnippets#classPath()}.
     *
     * @return the entries, in order, each once
     */
    static List<Path> entries() throws IOException {
        List<Path> out = new ArrayList<>();
        for (String entry : DocSnippets.classPath()) {
            out.add(Path.of(entry));
        }
        return out;
    }
}
