/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/** The test's class path, for tests that hand it to javac, jdeps or a module finder. */
final class TestClassPath {

    private TestClassPath() {
    }

    /**
     * The JVM's class path, with the manifest {@code Class-Path} of each jar on it expanded
     * (Surefire may put only a manifest jar there).
     *
     * @return the entries, in order, each once
     */
    static List<Path> entries() throws IOException {
        Set<Path> out = new LinkedHashSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            out.add(Path.of(entry));
            if (entry.endsWith(".jar") && new File(entry).isFile()) {
                try (JarFile jar = new JarFile(entry)) {
                    Manifest manifest = jar.getManifest();
                    String classPath = manifest == null ? null
                            : manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
                    if (classPath != null) {
                        for (String element : classPath.trim().split("\\s+")) {
                            out.add(Path.of(new File(entry).toURI().resolve(element)));
                        }
                    }
                }
            }
        }
        return new ArrayList<>(out);
    }
}
