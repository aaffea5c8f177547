/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.io.File;
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

/**
 * A file a command writes ({@code report -o}, {@code import-tf-log -o}), written as other tools
 * write theirs: created with the permissions the umask leaves (no attributes are forced on it),
 * or, replacing a file, with that file's permissions; refused when it names a directory (or ends
 * with a slash), a file that may not be written or one in a directory that may not be written;
 * and never left half written: the content goes to a temporary file beside it, moved over it only
 * when complete (so the file is a new one: owned by the user, and other hard links to the old
 * file keep the old content).
 */
final class OutputFile {

    /** The symbolic links followed before giving up, as Linux's path resolution (ELOOP). */
    private static final int MAX_LINK_HOPS = 40;

    /** Writes the content to a fresh file. */
    interface Content {
        /**
         * Writes everything.
         *
         * @param file an empty file, to be opened and written (its permissions are kept)
         * @throws IOException if writing fails; the output is then left as it was
         */
        void writeTo(Path file) throws IOException;
    }

    private OutputFile() {
    }

    /**
     * The file an output option names, refusing a name that ends with a slash ({@code -o x.html/}):
     * as a path it would lose the slash and write {@code x.html}, a file where a directory was
     * named. An existing directory is left to {@link #check}, which says so and suggests a file in it.
     *
     * @param option the option's name, for the message
     * @param text the option's value
     * @return the path
     * @throws UsageException {@code -o=x.html/ ends with '/', so it names a directory (expected: the
     *     file to write, e.g. x.html)}
     */
    static Path path(String option, String text) {
        Path path = Path.of(text);
        String trimmed = text;
        while (trimmed.length() > 1 && (trimmed.endsWith("/") || trimmed.endsWith(File.separator))) {
            trimmed = trimmed.substring(0, trimmed.length() - 1);
        }
        if (trimmed.length() < text.length() && !Files.isDirectory(path)) {
            throw new UsageException(option + "=" + shown(text) + " ends with '" + text.charAt(text.length() - 1)
                    + "', so it names a directory (expected: the file to write, e.g. " + shown(trimmed) + ")");
        }
        return path;
    }

    /**
     * Checks that a file can be written there: its directory exists and may be written, it is
     * not a directory, and if it exists it may be written. Commands check before their work, so
     * that a bad {@code -o} costs nothing.
     *
     * @param option the option's name, for the message
     * @param output the file
     * @param example a file name to suggest when {@code output} is a directory
     * @throws UsageException {@code -o=DIR is a directory (expected: ...)} and the like
     */
    static void check(String option, Path output, String example) {
        if (output.toString().isEmpty()) {
            throw new UsageException(option + " is empty (expected: the file to write, e.g. " + example + ")");
        }
        if (output.toString().equals("-")) {
            // Not standard output: the command's own summary goes there.
            throw new UsageException(option + "=- : standard output is not an output here (expected: the file to"
                    + " write, e.g. " + example + ")");
        }
        if (Files.isDirectory(output)) {
            throw new UsageException(option + "=" + shown(output) + " is a directory (expected: the file to write, e.g. "
                    + shown(output.resolve(example)) + ")");
        }
        Path parent = output.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            throw new UsageException(option + "=" + shown(output) + " (expected: a file in an existing directory)");
        }
        // The file is written beside the one it replaces: that directory must take a new file.
        Path dir = parent;
        if (Files.isSymbolicLink(output)) {
            try {
                dir = linkTarget(option, output).toAbsolutePath().getParent();
            } catch (IOException e) {
                dir = null; // said when it is written
            }
        }
        if (dir != null && Files.isDirectory(dir) && !Files.isWritable(dir)) {
            throw cannotCreate(option, output, dir, "permission denied");
        }
        if (Files.exists(output) && !Files.isWritable(output)) {
            throw new UsageException(option + "=" + shown(output) + ": permission denied (the file exists and may not be"
                    + " written)");
        }
    }

    /**
     * Writes a file: checks it ({@link #check}), writes the content to a new file in the same
     * directory, then moves that file over the output (atomically where the file system can).
     *
     * @param option the option's name, for messages
     * @param output the file
     * @param example a file name to suggest when {@code output} is a directory
     * @param content writes the bytes
     * @throws UsageException if the output cannot be written there
     * @throws IOException if writing fails (the output is then unchanged)
     */
    static void write(String option, Path output, String example, Content content) throws IOException {
        check(option, output, example);
        // A symbolic link is followed: the file it names is replaced and the link stays.
        Path target = Files.isSymbolicLink(output) ? linkTarget(option, output) : output;
        if (Files.exists(target) && !Files.isRegularFile(target)) {
            // A device or a pipe (/dev/null, a FIFO): written to, as a shell's '>' does, never
            // replaced by a file.
            writeNamed(option, output, content, target);
            return;
        }
        Set<PosixFilePermission> kept = Files.isRegularFile(target)
                && target.getFileSystem().supportedFileAttributeViews().contains("posix")
                ? Files.getPosixFilePermissions(target) : null;
        Path tmp;
        try {
            tmp = createTemp(target);
        } catch (FileAlreadyExistsException e) {
            throw named(option, output, e);
        } catch (IOException e) {
            // The file beside it is ours: its name would tell the user nothing.
            throw cannotCreate(option, output, target.toAbsolutePath().getParent(),
                    e instanceof AccessDeniedException ? "permission denied"
                    : e instanceof NoSuchFileException ? "no such file or directory"
                    : e instanceof FileSystemException f && f.getReason() != null ? f.getReason()
                    : e.getClass().getSimpleName());
        }
        tmp.toFile().deleteOnExit(); // also when the command is stopped (SIGTERM) part way
        try {
            if (kept != null) {
                // Before any content, so that no one reads it whom the old file kept out; the
                // owner may write it meanwhile (a file of another owner that its group may write).
                Set<PosixFilePermission> whileWritten = EnumSet.noneOf(PosixFilePermission.class);
                whileWritten.addAll(kept);
                whileWritten.add(PosixFilePermission.OWNER_READ);
                whileWritten.add(PosixFilePermission.OWNER_WRITE);
                setPermissions(option, output, tmp, whileWritten);
            }
            writeNamed(option, output, content, tmp);
            if (kept != null) {
                setPermissions(option, output, tmp, kept);
            }
            check(option, output, example);
            try {
                try {
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
            } catch (IOException e) {
                // A name the file system refuses ("File name too long") fails only here, with
                // the temporary file's name: the message names the output.
                throw named(option, output, e);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Also refuses an output that is the command's input (or a link to it): writing it would
     * destroy the input.
     *
     * @param input the input file, or {@code -} for standard input
     * @see #check(String, Path, String)
     */
    static void check(String option, Path output, String example, Path input) {
        check(option, output, example);
        if (!input.toString().equals("-") && Files.exists(output)) {
            boolean same;
            try {
                same = Files.isSameFile(input, output);
            } catch (IOException e) {
                same = false; // the input's own error comes when it is read
            }
            if (same) {
                throw new UsageException(option + "=" + shown(output) + " is the input " + shown(input) + " (expected: another"
                        + " file: writing it would destroy the input)");
            }
        }
    }

    /**
     * The directory {@code output} would be written in (for a symbolic link, its target's) takes
     * no new file: {@code -o=DIR/x.html: permission denied: no file can be created in DIR
     * (expected: a file in a directory you may write to)}.
     */
    private static UsageException cannotCreate(String option, Path output, Path dir, String why) {
        return new UsageException(option + "=" + shown(output) + ": " + why + ": no file can be created in " + shown(dir)
                + " (expected: a file in a directory you may write to)");
    }

    /** Sets the permissions of {@code file}, a failure named as {@code output} ({@link #named}). */
    private static void setPermissions(String option, Path output, Path file, Set<PosixFilePermission> permissions)
            throws IOException {
        try {
            Files.setPosixFilePermissions(file, permissions);
        } catch (IOException e) {
            throw named(option, output, e);
        }
    }

    /** Writes the content to {@code file}, a failure named as {@code output} ({@link #named}). */
    private static void writeNamed(String option, Path output, Content content, Path file) throws IOException {
        try {
            content.writeTo(file);
        } catch (IOException e) {
            throw named(option, output, e);
        }
    }

    /**
     * The failure to write {@code output}, named as the user gave it: "No space left on device"
     * names no file, and a failure of the temporary file names that file.
     */
    private static IOException named(String option, Path output, IOException e) {
        String why = e instanceof FileSystemException f && f.getReason() != null ? f.getReason() : e.getMessage();
        return new IOException(option + "=" + shown(output) + ": " + why, e);
    }

    /** A name as messages show it: its control characters escaped ({@code \x1b}, {@code \x0a}). */
    private static String shown(Object name) {
        return CommandRunner.visible(String.valueOf(name));
    }

    /**
     * The file a symbolic link names, followed to the end as the system follows it (a dangling
     * link's last target): each link's target is read from the real directory the link lies in,
     * so that a {@code ..} in it, or a linked directory on the way, leads where the system's own
     * resolution leads, not where the path's words would.
     *
     * @throws UsageException if the links name each other (more than the system's 40 hops)
     */
    private static Path linkTarget(String option, Path link) throws IOException {
        if (Files.exists(link)) {
            return link.toRealPath();
        }
        Path p = link.toAbsolutePath();
        for (int hops = 0; Files.isSymbolicLink(p); hops++) {
            if (hops == MAX_LINK_HOPS) {
                throw new UsageException(option + "=" + shown(link) + ": too many levels of symbolic links (links that"
                        + " name each other; expected: a link that ends at a file or names none)");
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
            return p; // no such directory: the file cannot be created, which is said then
        }
    }

    /**
     * A new empty file beside {@code output}, created without attributes, so the umask applies
     * (the caller gives it a replaced file's permissions).
     */
    private static Path createTemp(Path output) throws IOException {
        Path parent = output.toAbsolutePath().getParent();
        String name = output.getFileName().toString();
        // Within the file system's 255 bytes a name, whatever the output's own name's length.
        String base = "." + (name.length() > 50 ? name.substring(0, 50) : name) + ".";
        for (int attempt = 0; ; attempt++) {
            Path tmp = parent.resolve(base + Long.toUnsignedString(ThreadLocalRandom.current().nextLong(), 36)
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
