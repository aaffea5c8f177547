/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes a file whole or not at all: into a new file beside it, moved over it once complete, so
 * that a write that fails part way (an exception of the writer, a full disk) leaves the file as
 * it was and nothing cut short behind (the pickles and traces that bfc-core writes).
 */
public final class ReplacingFile {

    private ReplacingFile() {
    }

    /** Writes the new content into the file it is given. */
    @FunctionalInterface
    public interface Body {
        /**
         * @param tmp an empty file beside the target, to write the whole content into
         * @throws IOException if writing fails (the target is then left as it was)
         */
        void writeTo(Path tmp) throws IOException;
    }

    /**
     * Writes {@code file} through {@code body}.
     *
     * @param file the file to create or replace
     * @param body what writes its content
     * @throws FileSystemException if {@code file} names a directory (nothing is written)
     * @throws IOException if the file beside it cannot be made, {@code body} fails or the move
     *     fails; {@code file} is then as it was, and the file beside it is deleted
     */
    public static void write(Path file, Body body) throws IOException {
        Path target = file.toAbsolutePath();
        if (Files.isDirectory(target)) {
            // Else the file beside it would be made in the directory's parent, and the move fail.
            throw new FileSystemException(file.toString(), null, "is a directory (expected: the path of a"
                    + " file to create or replace, e.g. a file name inside that directory); nothing was written");
        }
        Path tmp = newFileBeside(target);
        try {
            body.writeTo(tmp);
            try {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * A new empty file beside {@code file}, created without attributes so that the umask gives
     * its permissions, as for a file written directly ({@code Files.createTempFile} would make
     * it readable by its owner only).
     */
    private static Path newFileBeside(Path file) throws IOException {
        for (int attempt = 0; ; attempt++) {
            Path tmp = file.resolveSibling("." + file.getFileName() + "."
                    + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36) + ".tmp");
            try {
                return Files.createFile(tmp);
            } catch (FileAlreadyExistsException e) {
                if (attempt == 100) {
                    throw e;
                }
            }
        }
    }
}
