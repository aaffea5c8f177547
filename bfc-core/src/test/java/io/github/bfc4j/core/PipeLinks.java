/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Stream;

/** For tests that hand out a pipe by its {@code /proc/self/fd} link: finds those links. */
public final class PipeLinks {

    private PipeLinks() {
    }

    /**
     * @param fds a process's descriptor directory, e.g. {@code /proc/self/fd}
     * @return the links in it that name a pipe
     * @throws IOException if the directory cannot be listed
     */
    public static Set<Path> in(Path fds) throws IOException {
        Set<Path> pipes = new HashSet<>();
        try (Stream<Path> links = Files.list(fds)) {
            for (Path link : (Iterable<Path>) links::iterator) {
                try {
                    if (Files.readSymbolicLink(link).toString().startsWith("pipe:")) {
                        pipes.add(link);
                    }
                } catch (IOException e) {
                    // closed meanwhile (the listing's own descriptor)
                }
            }
        }
        return pipes;
    }
}
