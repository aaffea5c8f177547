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
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Predicate;

/**
 * Writes a file whole or not at all: into a new file beside it, moved over it once complete, so
 * that a write that fails part way (an exception of the writer, a full disk) leaves the file as
 * it was and nothing cut short behind (the pickles and traces that bfc-core writes, and the
 * files of bfc's {@code -o}). As a shell's {@code >} does, a symbolic link is followed (the file
 * it names is replaced, the link stays), a device or pipe ({@code /dev/null}, a FIFO, a pipe
 * reached through {@code /proc/self/fd} as a shell's {@code >(...)} gives one) is written to,
 * never replaced by a file, and an existing file that may not be written (read-only,
 * for a user other than root) is refused, before the content is written and again just before
 * the move. A file replaced keeps its POSIX permissions (where the file system has them); a new
 * one gets what the umask gives. Being a new file, the one moved into place is owned by the
 * writer, and other hard links to the old file (its other names) keep the old content, where a
 * shell's {@code >}, which writes the file in place, would change them too.
 *
 * <p>Every failure of its own is a {@link FileSystemException} (an {@link AccessDeniedException}
 * for a file that may not be written) named as the caller gave the file, never as the file
 * beside it, whose reason ends with {@value #NOTHING_WRITTEN}; {@link #why} gives the reason
 * alone, for a caller that names the file its own way ({@code bfc}'s {@code -o=FILE: why}).
 */
public final class ReplacingFile {

    /** The end of the reason of every failure of this class's own: the file is as it was. */
    public static final String NOTHING_WRITTEN = "; nothing was written";

    /** The symbolic links followed before giving up, as Linux's path resolution (ELOOP). */
    public static final int MAX_LINK_HOPS = 40;

    /**
     * The characters of the file's name that the name of the file beside it keeps: with the
     * dots and the random part, within the 255 bytes a name that file systems take, however
     * long the file's own name (at most 4 bytes a character in UTF-8: 200 bytes and 20 more).
     */
    private static final int NAME_KEPT_CHARS = 50;

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
     *     as a shell's {@code >} refuses it), before {@code body} runs or when it has returned:
     *     named as {@code file}, with the reason (nothing is written)
     * @throws FileSystemException if {@code file} names a directory, links that name each other,
     *     or a file in a directory that is missing or takes no new file; or if the file beside
     *     it cannot be given {@code file}'s permissions, or the move fails (a name the file
     *     system refuses): named as {@code file}, with the reason (nothing is written)
     * @throws IOException what {@code body} throws; {@code file} is then as it was, and the
     *     file beside it is deleted (a failure to delete it is suppressed by this one, as it is by
     *     every failure above)
     */
    public static void write(Path file, Body body) throws IOException {
        write(file, false, body, Files::isWritable);
    }

    /**
     * Writes {@code file} through {@code body} as {@link #write(Path, Body)} does, and also
     * deletes the file beside it when the JVM exits part way (stopped by SIGTERM). For a
     * process that writes once and exits (a command): each call keeps the name of the file
     * beside it until the JVM exits ({@link java.io.File#deleteOnExit}), which a long-running
     * process writing often would pile up.
     *
     * @param file the file to create or replace
     * @param body what writes its content
     * @throws IOException as {@link #write(Path, Body)} throws
     */
    public static void writeDeletingOnExit(Path file, Body body) throws IOException {
        write(file, true, body, Files::isWritable);
    }

    /**
     * The file that {@link #write(Path, Body)} would write, checked as it checks it before any
     * content: for a caller that refuses a file before its own work. A symbolic link is
     * followed to the file it names; a device or named pipe is the file itself.
     *
     * @param file the file to create or replace
     * @return the file to be written: {@code file} absolute, or the file its links name
     * @throws AccessDeniedException if {@code file} exists and may not be written
     * @throws FileSystemException if {@code file} names a directory, links that name each other,
     *     or a file in a directory that is missing or takes no new file
     * @throws IOException if its links cannot be read
     */
    public static Path check(Path file) throws IOException {
        return check(file, Files::isWritable);
    }

    /**
     * The reason of a failure without the file's name and without {@value #NOTHING_WRITTEN}:
     * {@code permission denied: the file exists and may not be written (expected: ...)}; for an
     * exception of another kind (a writer's), its message.
     *
     * @param e a failure of {@link #write(Path, Body)}
     * @return why it failed, in words
     */
    public static String why(IOException e) {
        String why = e instanceof FileSystemException f && f.getReason() != null ? f.getReason()
                : e.getMessage() != null ? e.getMessage() : e.toString();
        return why.endsWith(NOTHING_WRITTEN) ? why.substring(0, why.length() - NOTHING_WRITTEN.length()) : why;
    }

    /**
     * {@link #write(Path, Body)}, asking {@code mayWrite} whether an existing file may be
     * written ({@code Files::isWritable}, access(2); a test gives its own answer, as root may
     * write every file).
     */
    static void write(Path file, boolean deleteOnExit, Body body, Predicate<Path> mayWrite) throws IOException {
        Path target = check(file, mayWrite);
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            // A device or a named pipe: moving a file over it would replace the device itself
            // (where its directory may be written: root's /dev/null), and write nothing to it.
            body.writeTo(target);
            return;
        }
        Set<PosixFilePermission> kept = Files.isRegularFile(target)
                && target.getFileSystem().supportedFileAttributeViews().contains("posix")
                ? Files.getPosixFilePermissions(target) : null;
        Path tmp;
        try {
            tmp = newFileBeside(target);
        } catch (IOException e) {
            // The file beside it is ours: its name would tell the caller nothing.
            throw named(file, noNewFile(target.getParent(), reason(e)), e);
        }
        if (deleteOnExit) {
            tmp.toFile().deleteOnExit();
        }
        try {
            if (kept != null) {
                // Before any content, so that no one reads it whom the old file kept out; the
                // owner may write it meanwhile (a file of another owner that its group may write).
                Set<PosixFilePermission> whileWritten = EnumSet.noneOf(PosixFilePermission.class);
                whileWritten.addAll(kept);
                whileWritten.add(PosixFilePermission.OWNER_READ);
                whileWritten.add(PosixFilePermission.OWNER_WRITE);
                setPermissions(file, tmp, whileWritten);
            }
            body.writeTo(tmp);
            if (kept != null) {
                setPermissions(file, tmp, kept);
            }
            // Again, as the content may have taken long: a file made read-only (or a directory)
            // meanwhile is refused as it would have been before, not replaced.
            refuseUnwritable(file, target, mayWrite);
            try {
                try {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            } catch (IOException e) {
                // A name the file system refuses ("File name too long") fails only here, with
                // the name of the file beside it: the failure names the file.
                throw named(file, reason(e), e);
            }
        } catch (Throwable t) {
            // Why the write failed stays the failure: a file beside it that cannot be deleted
            // too (its directory made read-only meanwhile) is said with it, not instead.
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException | RuntimeException e) {
                t.addSuppressed(e);
            }
            throw t;
        }
    }

    /** {@link #check(Path)}, asking {@code mayWrite} whether an existing file may be written. */
    static Path check(Path file, Predicate<Path> mayWrite) throws IOException {
        Path target = file.toAbsolutePath();
        if (Files.isSymbolicLink(target)) {
            // Moving the new file over the link would replace the link, not the file it names.
            target = linkTarget(file, target);
        }
        refuseUnwritable(file, target, mayWrite);
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            return target; // a device or a pipe, written in place: its directory is not written
        }
        // The file beside it is made in its directory: one that takes no new file is said now.
        Path dir = target.getParent();
        if (!Files.isDirectory(dir) || !mayWrite.test(dir)) {
            throw named(file, noNewFile(dir, "permission denied"), null);
        }
        return target;
    }

    /**
     * Refuses a target that is a directory (the file beside it would be made in the directory's
     * parent, and the move fail, or remove an empty directory) or that exists and may not be
     * written: access(2), as a shell's {@code >} asks, so root may write a read-only file, others
     * may not.
     */
    private static void refuseUnwritable(Path file, Path target, Predicate<Path> mayWrite) throws FileSystemException {
        if (Files.isDirectory(target)) {
            throw named(file, "is a directory (expected: the path of a file to create or replace, e.g. a file name"
                    + " inside that directory)", null);
        }
        if (Files.exists(target) && !mayWrite.test(target)) {
            String linked = target.equals(file.toAbsolutePath()) ? "" : " (the file it links to, " + target + ")";
            throw new AccessDeniedException(file.toString(), null, "permission denied: the file exists and may not be"
                    + " written" + linked + " (expected: a file you may write to: make it writable, e.g. chmod u+w,"
                    + " or write another file)" + NOTHING_WRITTEN);
        }
    }

    /**
     * Why no file can be made in {@code dir}: it is missing, not a directory, or takes none
     * ({@code reason}: "permission denied", the system's reason).
     */
    private static String noNewFile(Path dir, String reason) {
        return !Files.exists(dir) ? "no such directory: " + dir
                : !Files.isDirectory(dir) ? "not a directory: " + dir
                : reason + ": no file can be created in " + dir + " (expected: a file in a directory you may"
                        + " write to)";
    }

    /** The failure to write {@code file}, named as the caller gave it, with {@code why}. */
    private static FileSystemException named(Path file, String why, IOException cause) {
        FileSystemException named = new FileSystemException(file.toString(), null, why + NOTHING_WRITTEN);
        if (cause != null) {
            named.initCause(cause);
        }
        return named;
    }

    /** Sets the permissions of the file beside {@code file}, a failure named as {@code file}. */
    private static void setPermissions(Path file, Path tmp, Set<PosixFilePermission> permissions)
            throws FileSystemException {
        try {
            Files.setPosixFilePermissions(tmp, permissions);
        } catch (IOException e) {
            throw named(file, reason(e), e);
        }
    }

    /** Why a file operation failed, in words ("permission denied", the system's reason). */
    private static String reason(IOException e) {
        if (e instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof NoSuchFileException) {
            return "no such file or directory";
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
            try {
                return link.toRealPath();
            } catch (NoSuchFileException e) {
                // A link of /proc/PID/fd (/dev/stdout, /dev/fd/63 of a shell's >(...)) to a pipe or
                // socket names no path ("pipe:[4026]"), yet opening the link opens the pipe, as a
                // named pipe is opened: the link is the file, written in place.
                if (!Files.isRegularFile(link) && !Files.isDirectory(link)) {
                    return link;
                }
                throw e;
            }
        }
        Path p = link;
        for (int hops = 0; Files.isSymbolicLink(p); hops++) {
            if (hops == MAX_LINK_HOPS) {
                throw named(file, "too many levels of symbolic links (links that name each other; expected: a link"
                        + " that ends at a file or names none)", null);
            }
            p = inRealDirectory(p.getParent().toRealPath().resolve(Files.readSymbolicLink(p)));
        }
        return p;
    }

    /**
     * {@code p} in its directory's real path, or as it is where that directory does not exist:
     * where the system's own resolution of a link's target leads (also bfc-cli's test for a name
     * of standard output).
     *
     * @param p a path
     * @return {@code p}'s name in its directory's real path, or {@code p}
     */
    public static Path inRealDirectory(Path p) {
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
     * it readable by its owner only); the caller gives it a replaced file's permissions. Its
     * name keeps the start of {@code file}'s (whole characters: a pair of surrogates is not
     * cut), so that it is within the file system's limit whenever {@code file}'s is.
     */
    private static Path newFileBeside(Path file) throws IOException {
        String name = file.getFileName().toString();
        int kept = name.length() <= NAME_KEPT_CHARS ? name.length()
                : Character.isHighSurrogate(name.charAt(NAME_KEPT_CHARS - 1)) ? NAME_KEPT_CHARS - 1 : NAME_KEPT_CHARS;
        String base = "." + name.substring(0, kept) + ".";
        for (int attempt = 0; ; attempt++) {
            Path tmp = file.resolveSibling(base + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36)
                    + ".tmp");
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
