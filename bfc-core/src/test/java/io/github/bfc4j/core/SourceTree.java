/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the repository's files are, for the tests that read them (sources, docs, traces,
 * {@code bin/bfc}), whatever the working directory: Maven runs a module's tests in the module's
 * directory, an IDE or the JUnit console launcher often in the repository's root.
 *
 * <p>The root is found, in this order: from {@code -Dbfc4j.moduleDir} (set by surefire to the
 * module's {@code ${project.basedir}}, see the parent pom) and its parents; else from the
 * location of the calling test's classes ({@code <module>/target/test-classes}) and its parents;
 * else from the working directory and its parents. A root is a directory holding {@code pom.xml},
 * {@code bin/bfc} and {@code bfc-core/src/main/java}. A property that names no directory inside a
 * checkout fails at once rather than falling back, and no root at all fails saying where it
 * looked: a test that cannot find its files must not pass for having read none.
 */
public final class SourceTree {

    /** The system property surefire sets to the module's directory. */
    public static final String MODULE_DIR_PROPERTY = "bfc4j.moduleDir";

    private static volatile Path root;

    private SourceTree() {
    }

    /**
     * The repository's root, absolute and normalised.
     *
     * @return the root directory
     * @throws IllegalStateException if it cannot be found, saying where it was looked for
     */
    public static Path root() {
        Path r = root;
        if (r == null) {
            r = find(System.getProperty(MODULE_DIR_PROPERTY), codeSource(caller()),
                    Path.of(System.getProperty("user.dir")));
            root = r;
        }
        return r;
    }

    /**
     * A path inside the repository, which must exist.
     *
     * @param relative a path relative to the root, e.g. {@code "bfc-core/src/main/java"}
     * @return the absolute path
     * @throws IllegalStateException if the root cannot be found or nothing is at the path
     */
    public static Path resolve(String relative) {
        Path p = root().resolve(relative);
        if (!Files.exists(p)) {
            throw new IllegalStateException(relative + " is not in the repository at " + root()
                    + " (expected: a checkout with all its files)");
        }
        return p;
    }

    /**
     * The root, searched for from a module directory named by a property, then from a directory
     * of classes, then from a working directory; package-private for its test.
     *
     * @param moduleDirProperty the value of {@code -Dbfc4j.moduleDir}, or null if unset
     * @param classes where the calling test's classes were loaded from, or null if unknown
     * @param workingDir the working directory
     * @return the root, absolute and normalised
     * @throws IllegalStateException if none is found, or the property names no checkout
     */
    static Path find(String moduleDirProperty, Path classes, Path workingDir) {
        if (moduleDirProperty != null && !moduleDirProperty.isBlank()) {
            Path r = upwards(Path.of(moduleDirProperty));
            if (r == null) {
                throw new IllegalStateException("-D" + MODULE_DIR_PROPERTY + "=" + moduleDirProperty
                        + " is not inside a bfc4j checkout (expected: a module's directory, whose parent"
                        + " holds pom.xml, bin/bfc and bfc-core/src/main/java; unset it to search from"
                        + " the test classes and the working directory)");
            }
            return r;
        }
        List<String> tried = new ArrayList<>();
        for (Path start : new Path[] {classes, workingDir}) {
            if (start == null) {
                continue;
            }
            Path r = upwards(start);
            if (r != null) {
                return r;
            }
            tried.add(start.toAbsolutePath().normalize().toString());
        }
        throw new IllegalStateException("cannot find the bfc4j repository (a directory holding pom.xml, bin/bfc and"
                + " bfc-core/src/main/java) above " + String.join(" or above ", tried)
                + "; run the tests with Maven, from inside the checkout, or with -D" + MODULE_DIR_PROPERTY
                + "=<checkout>/<module>");
    }

    private static Path upwards(Path start) {
        for (Path d = start.toAbsolutePath().normalize(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("pom.xml")) && Files.isRegularFile(d.resolve("bin/bfc"))
                    && Files.isDirectory(d.resolve("bfc-core/src/main/java"))) {
                return d;
            }
        }
        return null;
    }

    private static Class<?> caller() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
                .walk(s -> s.map(StackWalker.StackFrame::getDeclaringClass)
                        .filter(c -> c != SourceTree.class).findFirst().orElse(SourceTree.class));
    }

    private static Path codeSource(Class<?> c) {
        CodeSource cs = c.getProtectionDomain().getCodeSource();
        if (cs == null || cs.getLocation() == null) {
            return null;
        }
        try {
            return Path.of(cs.getLocation().toURI());
        } catch (URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }
}
