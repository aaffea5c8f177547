/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.internal.ReplacingFile;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A file a command writes ({@code report -o}, {@code import-tf-log -o}), written as bfc-core
 * writes its traces and pickles ({@link ReplacingFile}, which says how): created with the
 * permissions the umask leaves, or, replacing a file, with that file's permissions; a symbolic
 * link followed, a device or pipe written to; never left half written. This class adds what a
 * command needs: the refusals said before the command's work, in the option's words
 * ({@code -o=FILE: why}), a name that ends with a slash and an output that is the command's own
 * input refused too, and the file beside it deleted when the command is stopped part way.
 */
final class OutputFile {

    /** Writes the content to a fresh file. */
    interface Content {
        /**
         * Writes everything.
         *
         * @param file an empty file, to be opened and written (its permissions are kept), or the
         *     output itself where it is a device or named pipe
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
     *     file to write, e.g. x.html)}, or for a name no file can have here ({@link FileNames#of})
     */
    static Path path(String option, String text) {
        Path path = FileNames.of(option, text);
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
        if (isStandardOutput(output)) {
            // The same, named as a file (/dev/stdout): the file and the summary would be mixed.
            throw new UsageException(option + "=" + shown(output) + ": standard output is not an output here, as for "
                    + option + " -: it carries the command's summary (expected: the file to write, e.g. " + example
                    + ")");
        }
        if (Files.isDirectory(output)) {
            throw new UsageException(option + "=" + shown(output) + " is a directory (expected: the file to write, e.g. "
                    + shown(output.resolve(example)) + ")");
        }
        Path parent = output.toAbsolutePath().getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            throw new UsageException(option + "=" + shown(output) + " (expected: a file in an existing directory)");
        }
        // What the writing refuses before any content (links that name each other, a file that
        // may not be written, a directory that takes no new file) is refused before the work.
        try {
            ReplacingFile.check(output);
        } catch (IOException e) {
            throw new UsageException(option + "=" + shown(output) + ": " + shown(ReplacingFile.why(e)));
        }
    }

    /**
     * Writes a file: checks it ({@link #check}), then writes it through {@link ReplacingFile}: the
     * content to a new file in the same directory, moved over the output (atomically where the
     * file system can) once complete.
     *
     * @param option the option's name, for messages
     * @param output the file
     * @param example a file name to suggest when {@code output} is a directory
     * @param content writes the bytes
     * @throws UsageException if the output cannot be written there
     * @throws IOException if writing fails ({@code -o=FILE: why}; the output is then unchanged)
     */
    static void write(String option, Path output, String example, Content content) throws IOException {
        check(option, output, example);
        try {
            // Deleted also when the command is stopped (SIGTERM) part way.
            ReplacingFile.writeDeletingOnExit(output, content::writeTo);
        } catch (IOException e) {
            // Named as the user gave it: "No space left on device" names no file, and a failure
            // of the file beside it names that file.
            throw new IOException(option + "=" + shown(output) + ": " + shown(ReplacingFile.why(e)), e);
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
     * Whether {@code output} names this process's standard output: {@code /dev/stdout},
     * {@code /dev/fd/1}, {@code /proc/self/fd/1}, or a link to one of them, whatever standard
     * output is (a pipe, a terminal, a file). Followed link by link, each in its real directory,
     * as the system follows them; false where there is no {@code /proc}.
     */
    static boolean isStandardOutput(Path output) {
        Path fd1;
        try {
            fd1 = Path.of("/proc/self/fd").toRealPath().resolve("1");
        } catch (IOException e) {
            return false;
        }
        Path p = ReplacingFile.inRealDirectory(output.toAbsolutePath());
        for (int hops = 0; hops <= ReplacingFile.MAX_LINK_HOPS; hops++) {
            if (p.equals(fd1)) {
                return true;
            }
            if (!Files.isSymbolicLink(p)) {
                return false;
            }
            try {
                p = ReplacingFile.inRealDirectory(p.getParent().resolve(Files.readSymbolicLink(p)));
            } catch (IOException e) {
                return false;
            }
        }
        return false;
    }

    /**
     * An output stream that counts the bytes that pass through it: what a command says it
     * wrote, which {@code Files.size} is not where the output is a device or pipe (0 bytes for
     * {@code /dev/null}).
     */
    static final class Counting extends java.io.FilterOutputStream {
        private final long[] count;

        /**
         * @param out the stream written to
         * @param count its element 0 is added every byte written
         */
        Counting(java.io.OutputStream out, long[] count) {
            super(out);
            this.count = count;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count[0]++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count[0] += len;
        }
    }

    /** A name as messages show it: its control characters escaped ({@code \x1b}, {@code \x0a}). */
    private static String shown(Object name) {
        return CommandRunner.visible(String.valueOf(name));
    }
}
