/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes a file whole or not at all: into a new file beside it, moved over it once complete, so
 * that a write that fails part way (an exception of the writer, a full disk) leaves the file as
 * it was and nothing cut short behind (the pickles and traces that bfc-core writes). As a shell's
 * {@code >} does, a symbolic link is followed (the file it names is replaced, the link stays), a
 * device or named pipe ({@code /dev/null}, a FIFO) is written to, never replaced by a file, and
 * an existing file that may not be written (read-only, for a user other than root) is refused.
 * A file replaced keeps its POSIX permissions (where the file system has them); a new one gets
 * what the umask gives. Being a new file, the one moved into place is owned by the writer, and
 * other hard links to the old file (its other names) keep the old content, where a shell's
 * {@code >}, which writes the file in place, would change them too.
 */
public final class ReplacingFile {

    /** The symbolic links followed before giving up, as Linux's path resolution (ELOOP). */
    private static final int MAX_LINK_HOPS = 40;

    private ReplacingFile() {
    }

    /** Writes the new content into the file it is given. */
    @FunctionalInterface
    public interface Body {
        /**
         * @param tmp the file to write the whole content into: an empty file beside the target,
         *     or the target itself where it is a device or named pipe
         * @throws IOException if writing fails (a file target is then left as it was)
         */
        void writeTo(Path tmp) throws IOException;
    }

    /**
     * Writes {@code file} through {@code body}.
     *
     * @param file the file to create or replace
     * @param body what writes its content
     * @throws AccessDeniedException if {@code file} exists and may not be written (read-only,
     *     as a shell's {@code >} refuses it): named as {@code file}, with the reason (nothing is
     *     written)
     * @throws FileSystemException if {@code file} names a directory, or no file can be created
     *     beside it (its directory missing, or not writable): named as {@code file}, with the
     *     reason (nothing is written)
     * @throws IOException if {@code body} fails or the move fails; {@code file} is then as it
     *     was, and the file beside it is deleted
     */
    public static void write(Path file, Body body) throws IOException {
        Path target = file.toAbsolutePath();
        if (Files.isDirectory(target)) {
            // Else the file beside it would be made in the directory's parent, and the move fail.
            throw new FileSystemException(file.toString(), null, "is a directory (expected: the path of a"
                    + " file to create or replace, e.g. a file name inside that directory); nothing was written");
        }
        if (Files.isSymbolicLink(target)) {
            // Moving the new file over the link would replace the link, not the file it names.
            target = linkTarget(file, target);
        }
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            // A device or a named pipe: moving a file over it would replace the device itself
            // (where its directory may be written: root's /dev/null), and write nothing to it.
            body.writeTo(target);
            return;
        }
        Set<PosixFilePermission> kept = null;
        if (Files.isRegularFile(target)) {
            // access(2), as a shell's '>' asks: root may write a read-only file, others may not.
            if (!Files.isWritable(target)) {
                String linked = target.equals(file.toAbsolutePath()) ? "" : " (the file it links to, " + target + ")";
                throw new AccessDeniedException(file.toString(), null, "permission denied: the file exists and may"
                        + " not be written" + linked + " (expected: a file you may write to: make it writable,"
                        + " e.g. chmod u+w, or write another file); nothing was written");
            }
            if (target.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                kept = Files.getPosixFilePermissions(target);
            }
        }
        Path tmp;
        try {
            tmp = newFileBeside(target);
        } catch (IOException e) {
            // The file beside it is ours: its name would tell the caller nothing.
            Path dir = target.getParent();
            String why = !Files.exists(dir) ? "no such directory: " + dir
                    : !Files.isDirectory(dir) ? "not a directory: " + dir
                    : "no file can be created in " + dir + " (" + reason(e) + ")";
            FileSystemException named = new FileSystemException(file.toString(), null, why + "; nothing was written");
            named.initCause(e);
            throw named;
        }
        try {
            if (kept != null) {
                // Before any content, so that no one reads it whom the old file kept out; the
                // owner may write it meanwhile (a file of another owner that its group may write).
                Set<PosixFilePermission> whileWritten = EnumSet.noneOf(PosixFilePermission.class);
                whileWritten.addAll(kept);
                whileWritten.add(PosixFilePermission.OWNER_READ);
                whileWritten.add(PosixFilePermission.OWNER_WRITE);
                Files.setPosixFilePermissions(tmp, whileWritten);
            }
            body.writeTo(tmp);
            if (kept != null) {
                Files.setPosixFilePermissions(tmp, kept);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Why a file could not be created, in words ("permission denied", the system's reason). */
    private static String reason(IOException e) {
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        return e instanceof FileSystemException f && f.getReason() != null ? f.getReason() : e.toString();
    }

    /**
     * The file a symbolic link names, followed to the end as the system follows it (a dangling
     * link's last target): each link's target is read from the real directory the link lies in,
     * so that a {@code ..} in it, or a linked directory on the way, leads where the system's
     * own resolution leads, not where the path's words would.
     *
     * @param file the path as the caller gave it, for the message
     * @throws FileSystemException if the links name each other (more than the system's 40 hops),
     *     as the system refuses them; nothing is written then
     */
    private static Path linkTarget(Path file, Path link) throws IOException {
        if (Files.exists(link)) {
            return link.toRealPath();
        }
        Path p = link;
        for (int hops = 0; Files.isSymbolicLink(p); hops++) {
            if (hops == MAX_LINK_HOPS) {
                throw new FileSystemException(file.toString(), null, "too many levels of symbolic links (links"
                        + " that name each other; expected: a link that ends at a file or names none);"
                        + " nothing was written");
            }
            p = inRealDirectory(p.getParent().toRealPath().resolve(Files.readSymbolicLink(p)));
        }
        return p;
    }

    /** {@code p} in its directory's real path, or as it is where that directory does not exist. */
    private static Path inRealDirectory(Path p) {
        Path parent = p.getParent();
        Path name = p.getFileName();
        if (parent == null || name == null) {
            return p;
        }
        try {
            return parent.toRealPath().resolve(name);
        } catch (IOException e) {
            return p; // no such directory: the file cannot be created, which the caller says
        }
    }

    /**
     * A new empty file beside {@code file}, created without attributes so that the umask gives
     * its permissions, as for a file written directly ({@code Files.createTempFile} would make
     * it readable by its owner only); the caller gives it a replaced file's permissions.
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
