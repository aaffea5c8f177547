/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The files of a directory of the class path, read from where a class was loaded: a directory
 * ({@code target/classes}) or a jar, whatever the working directory. Tests use it for what they
 * would otherwise list from {@code src/...} or {@code target/...} relative to the module.
 */
public final class ClassPathDirectory {

    private ClassPathDirectory() {
    }

    /**
     * The files directly in a directory of the class-path root (directory or jar) that
     * {@code anchor} was loaded from, not those of its subdirectories, in name order.
     *
     * @param anchor a class of that root
     * @param dir the directory, {@code /}-separated, relative to the root (e.g.
     *     {@code io/github/bfc4j/core})
     * @return each file's name and contents
     * @throws IllegalStateException if the root cannot be found or has no such directory
     * @throws UncheckedIOException if it cannot be read
     */
    public static Map<String, byte[]> files(Class<?> anchor, String dir) {
        CodeSource source = anchor.getProtectionDomain().getCodeSource();
        URL where = source == null ? null : source.getLocation();
        if (where == null) {
            throw new IllegalStateException(anchor.getName() + " has no code source to list " + dir + " from");
        }
        try {
            Path root = Path.of(where.toURI());
            if (Files.isDirectory(root)) {
                return read(root.resolve(dir), dir, root);
            }
            try (FileSystem jar = FileSystems.newFileSystem(root, (ClassLoader) null)) {
                return read(jar.getPath(dir), dir, root);
            }
        } catch (URISyntaxException e) {
            throw new IllegalStateException("the code source of " + anchor.getName() + " is no path: " + where, e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Map<String, byte[]> read(Path d, String dir, Path root) throws IOException {
        if (!Files.isDirectory(d)) {
            throw new IllegalStateException("no directory " + dir + " in " + root);
        }
        Map<String, byte[]> out = new LinkedHashMap<>();
        List<Path> files;
        try (Stream<Path> s = Files.list(d)) {
            files = s.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        for (Path f : files) {
            out.put(f.getFileName().toString(), Files.readAllBytes(f));
        }
        return out;
    }
}
