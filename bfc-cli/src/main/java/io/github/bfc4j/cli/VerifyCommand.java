/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.trace.ReplayResult;
import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.TraceReplayer;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code bfc verify FILE...}: replays each trace on the allocator with the simulated address
 * space ({@link TraceReplayer}) and prints one line per file on standard output:
 * <pre>
 * PASS &lt;file&gt; &lt;calls&gt; calls
 * FAIL &lt;file&gt; line &lt;n&gt;: expected &lt;x&gt;, got &lt;y&gt;
 * </pre>
 * A file that cannot be read (missing, or not a valid trace) gets
 * {@code ERROR <file> line <n>: found <x>, expected <y>} (or {@code ERROR <file>: <reason>}) on
 * standard error instead, and the other files are still verified; so does a trace whose last
 * line has no line break after it (a file cut short: {@code free 648} cut to {@code free 6}
 * would otherwise pass), and one whose options give a split threshold of 0 bytes. {@code -}
 * reads a trace from standard input. The last line is {@code <n> passed, <m> failed}, where the
 * failed count includes unreadable files. Once standard output cannot be written (its reader has
 * gone, as {@code head -1}'s does), no further file is verified.
 *
 * <p>Exit status: 0 if every trace passed, 1 if one failed, 2 if one could not be read (2 wins
 * over 1), of the files verified.
 */
@Command(
        name = "verify",
        mixinStandardHelpOptions = true,
        description = {
            "Replays traces (format version 1, plain or gzip) on the allocator with the simulated address"
                    + " space, and compares every answer with the reference's.",
            "Prints PASS or FAIL per file, then '<n> passed, <m> failed'.",
            "Exit status: 0 all passed, 1 a trace failed, 2 bad options or a file could not be read."
        })
public final class VerifyCommand implements Callable<Integer> {

    /** The exit status when every trace passed. */
    public static final int EXIT_PASSED = 0;
    /** The exit status when a trace failed (and every file could be read). */
    public static final int EXIT_FAILED = 1;
    /** The exit status when a file could not be read. */
    public static final int EXIT_UNREADABLE = 2;

    @Spec
    private CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "FILE",
            description = "Trace files (.bfctrace or .bfctrace.gz), - for standard input.")
    private List<String> files; // words, not paths: a name no file can have is an error of its own file

    @Option(names = {"-v", "--verbose"},
            description = "Keep the allocator's log output (e.g. its out-of-memory warnings, expected in many traces).")
    private boolean verbose;

    /** Creates the command; picocli fills its fields. */
    public VerifyCommand() {
    }

    /**
     * Verifies the files.
     *
     * @return {@link #EXIT_PASSED}, {@link #EXIT_FAILED} or {@link #EXIT_UNREADABLE}
     */
    @Override
    public Integer call() {
        if (files.stream().filter(f -> f.equals(TraceInput.STDIN_ARG)).count() > 1) {
            throw new ParameterException(spec.commandLine(), "- given more than once (expected: standard input"
                    + " at most once: it can be read only once)");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        // The allocator logs through System.Logger, i.e. java.util.logging by default. Keep a
        // strong reference while the level is changed (JUL holds loggers weakly).
        Logger bfcLogger = Logger.getLogger("io.github.bfc4j");
        Level previousLevel = bfcLogger.getLevel();
        if (!verbose) {
            bfcLogger.setLevel(Level.SEVERE);
        }
        int passed = 0;
        int failed = 0;
        int unreadable = 0;
        boolean stopped = false;
        try {
            for (String word : files) {
                String badName = FileNames.problem(word);
                if (badName != null) {
                    unreadable++;
                    err.println("ERROR " + (word.isEmpty() ? badName : CommandRunner.visible(word) + ": " + badName));
                    continue;
                }
                TraceInput input = TraceInput.of(Path.of(word));
                String name = input.name();
                try (TraceReader reader = input.open("verify " + input.shortName())) {
                    TraceHeader h = reader.header();
                    RunConfig.checkThreshold(h.fragmentationFraction(), null, h.memoryLimit(), null, reader);
                    ReplayResult r = TraceReplayer.replay(reader);
                    String cut = TraceInput.cutWarning(reader, "a whole trace ends with one: add it if nothing is"
                            + " missing");
                    if (cut != null) {
                        unreadable++;
                        err.println("ERROR " + cut);
                    } else if (r.passed()) {
                        passed++;
                        out.println("PASS " + name + " " + Counts.of(r.calls(), "call")
                                + (h.isWorkload() ? " (a workload trace: no answers to compare, the calls ran)" : ""));
                    } else {
                        failed++;
                        out.println("FAIL " + name + " line " + r.failureLine() + ": expected " + r.expected()
                                + ", got " + r.actual());
                    }
                } catch (TraceFormatException e) {
                    unreadable++;
                    err.println("ERROR " + name + " " + e.detail());
                } catch (NoSuchFileException e) {
                    unreadable++;
                    err.println("ERROR " + name + ": no such file");
                } catch (AccessDeniedException e) {
                    unreadable++;
                    err.println("ERROR " + name + ": permission denied");
                } catch (FileSystemException e) {
                    // Its message names the file as given, control characters and all.
                    unreadable++;
                    err.println("ERROR " + name + ": " + (e.getReason() == null ? e.getMessage() : e.getReason()));
                } catch (IOException e) {
                    unreadable++;
                    err.println("ERROR " + name + withoutName(String.valueOf(e.getMessage()), name));
                } catch (OutOfMemoryError e) {
                    // One line, as from the other commands, and the other files still verified.
                    failed++;
                    err.println("ERROR " + name + ": " + CommandRunner.HEAP_TOO_SMALL);
                } catch (RuntimeException e) {
                    failed++;
                    err.println("ERROR " + name + ": internal error: " + e);
                }
                err.flush();
                if (StandardOutput.failed(out)) {
                    // Its reader has gone (| head -1), or it cannot be written: the other files'
                    // lines would reach no one, so they are not verified.
                    stopped = true;
                    break;
                }
            }
        } finally {
            bfcLogger.setLevel(previousLevel);
        }
        if (!stopped) {
            out.println(passed + " passed, " + (failed + unreadable) + " failed");
            out.flush();
        }
        if (unreadable > 0) {
            return EXIT_UNREADABLE;
        }
        return failed > 0 ? EXIT_FAILED : EXIT_PASSED;
    }

    /** A reader's message after the file's name ({@code " line 3: ..."}, {@code ": ..."}). */
    private static String withoutName(String message, String name) {
        if (message.startsWith(name + " line ") || message.startsWith(name + ": ")) {
            return message.substring(name.length());
        }
        return ": " + message;
    }
}
