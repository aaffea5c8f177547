/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcInvariantViolation;
import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.WorkloadException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Runs the body of a subcommand with the CLI's error rules: every error is one line on standard
 * error, {@code bfc <command>: <what was wrong>}, and an exit status (2 for bad options and
 * unreadable or malformed input, 1 for a failure of the run itself, 3 for a broken invariant of
 * the allocator); the stack trace only with {@code --debug}. The allocator's own log (e.g. its
 * out-of-memory warnings) is silenced unless {@code --verbose}.
 */
final class CommandRunner {

    /** The exit status for success. */
    static final int EXIT_OK = 0;
    /** The exit status for a failure result (e.g. out of memory, an allocator exception). */
    static final int EXIT_FAILED = 1;
    /** The exit status for a usage error or unreadable input. */
    static final int EXIT_USAGE = 2;
    /**
     * The exit status for a broken invariant of the allocator ({@code --check-invariants}, or
     * {@code -Dbfc4j.checkInvariants=true}): a bug in the allocator, not in the input.
     */
    static final int EXIT_INVARIANT_VIOLATION = 3;

    /** The body of a subcommand. */
    interface Body {
        /**
         * Does the work.
         *
         * @return the exit status
         * @throws Exception anything; reported as one line
         */
        int call() throws Exception;
    }

    /** What a command says when the Java heap runs out. */
    static final String HEAP_TOO_SMALL = "the Java heap is too small for this input; give more with"
            + " BFC_JAVA_OPTS=-Xmx4g";

    private CommandRunner() {
    }

    /**
     * Runs a body.
     *
     * @param spec the subcommand, for its name and output streams
     * @param debug whether to print stack traces
     * @param verbose whether to keep the allocator's log
     * @param body the work
     * @return the exit status
     */
    static int run(CommandSpec spec, boolean debug, boolean verbose, Body body) {
        PrintWriter err = spec.commandLine().getErr();
        String prefix = "bfc " + spec.name() + ": ";
        Logger bfcLogger = Logger.getLogger("io.github.bfc4j");
        Level previousLevel = bfcLogger.getLevel();
        if (!verbose) {
            bfcLogger.setLevel(Level.SEVERE);
        }
        try {
            return body.call();
        } catch (UsageException e) {
            return fail(err, prefix + e.getMessage(), debug, e, EXIT_USAGE);
        } catch (TraceFormatException e) {
            return fail(err, prefix + e.getMessage(), debug, e, EXIT_USAGE);
        } catch (NoSuchFileException e) {
            return fail(err, prefix + visible(String.valueOf(e.getFile())) + ": no such file", debug, e,
                    EXIT_USAGE);
        } catch (AccessDeniedException e) {
            return fail(err, prefix + visible(String.valueOf(e.getFile())) + ": permission denied", debug, e,
                    EXIT_USAGE);
        } catch (FileSystemException e) {
            return fail(err, prefix + visible(String.valueOf(e.getFile())) + ": "
                    + (e.getReason() == null ? e : e.getReason()), debug, e, EXIT_USAGE);
        } catch (IOException | UncheckedIOException e) {
            return fail(err, prefix + e.getMessage(), debug, e, EXIT_USAGE);
        } catch (WorkloadException e) {
            return fail(err, prefix + e.getMessage(), debug, e,
                    invariantViolation(e) ? EXIT_INVARIANT_VIOLATION : EXIT_FAILED);
        } catch (OutOfMemoryError e) {
            return fail(err, prefix + HEAP_TOO_SMALL, debug, e, EXIT_FAILED);
        } catch (HostMemory.Unavailable e) {
            // The environment, not a bug: said as the heap's size is, with what to add.
            return fail(err, prefix + e.getMessage(), debug, e, EXIT_FAILED);
        } catch (Exception e) {
            return fail(err, prefix + "internal error: " + e + " (run with --debug for the stack trace)", debug, e,
                    EXIT_FAILED);
        } finally {
            bfcLogger.setLevel(previousLevel);
            spec.commandLine().getOut().flush();
            err.flush();
        }
    }

    /**
     * Prints a warning, {@code bfc <command>: warning: <text>}, on standard error.
     *
     * @param spec the subcommand
     * @param text the warning, or null for none
     */
    static void warn(CommandSpec spec, String text) {
        if (text != null) {
            PrintWriter err = spec.commandLine().getErr();
            err.println("bfc " + spec.name() + ": warning: " + text);
            err.flush();
        }
    }

    /**
     * {@code text} with its control characters written as escapes, {@code \x0a}, as messages
     * quote words: for text from a file or an argument that goes to the terminal.
     *
     * @param text any text
     * @return the text, each control character (tab included) as {@code \xNN}
     */
    static String visible(String text) {
        return visible(text, false);
    }

    /**
     * {@link #visible(String)}, but a tab may stay as it is (a log line's tabs, quoted).
     *
     * @param text any text
     * @param keepTabs whether a tab stays a tab
     * @return the text, each other control character as {@code \xNN}
     */
    static String visible(String text, boolean keepTabs) {
        StringBuilder sb = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x20 && !(keepTabs && c == '\t') || c == 0x7f) {
                sb.append(String.format(java.util.Locale.ROOT, "\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    private static boolean invariantViolation(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BfcInvariantViolation) {
                return true;
            }
        }
        return false;
    }

    private static int fail(PrintWriter err, String line, boolean debug, Throwable e, int status) {
        err.println(line);
        if (debug) {
            e.printStackTrace(err);
        }
        err.flush();
        return status;
    }
}
