/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.LeakDetection;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigInteger;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Properties;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The {@code bfc} command (the main class of {@code bfc-cli/target/bfc.jar}). Each subcommand is
 * its own class: {@link VerifyCommand} ({@code bfc verify FILE...}), {@link CudaInfoCommand}
 * ({@code bfc cuda-info}); {@code bfc help COMMAND} is {@code bfc COMMAND --help}.
 */
@Command(
        name = "bfc",
        mixinStandardHelpOptions = true,
        versionProvider = BfcCommand.VersionProvider.class,
        description = "Tools for bfc4j, the Java port of TensorFlow's BFC allocator.",
        subcommands = {VerifyCommand.class, DemoCommand.class, CudaInfoCommand.class, ReplayCommand.class,
            WhatIfCommand.class, ImportTfLogCommand.class, ReportCommand.class, ExportSnapshotCommand.class,
            ServeCommand.class, GenerateCommand.class, HelpCommand.class})
public final class BfcCommand implements Runnable {

    @Spec
    private CommandSpec spec;

    /** Creates the command; picocli fills its fields. */
    public BfcCommand() {
    }

    /**
     * Runs {@code bfc} without a subcommand: a usage error.
     *
     * @throws ParameterException always, so that picocli prints the usage and exits with 2
     */
    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing required subcommand (try: bfc verify FILE...)");
    }

    /**
     * A command line for {@code bfc}, with its subcommands, ready to
     * {@link CommandLine#execute(String...) execute}.
     *
     * @return a new command line
     */
    public static CommandLine commandLine() {
        // Java's parsers take digits of every script (Long.parseLong("١٢") is 12): the options
        // take ASCII digits only, as the sizes and decimals do. A word starting with '@' is a
        // file's name like any other, not picocli's argument file (whose words it would run).
        return new CommandLine(new BfcCommand()).setExpandAtFiles(false)
                .setParameterExceptionHandler(new UsageErrorHandler())
                .registerConverter(BigInteger.class, WholeNumbers::parse)
                .registerConverter(Long.class, WholeNumbers::parseLong)
                .registerConverter(long.class, WholeNumbers::parseLong)
                .registerConverter(Path.class, new FileNames());
    }

    /**
     * Runs {@code bfc} and exits with its status: 0 on success, 1 if a trace failed (or the run
     * did), 2 for unreadable input or a usage error, 3 for a broken invariant of the allocator
     * (docs/cli.md).
     *
     * @param args the command-line arguments
     * @throws NullPointerException if {@code args} or one of them is null (a call from code, not
     *     from a command line); nothing runs then
     */
    public static void main(String[] args) {
        Objects.requireNonNull(args, "args=null (expected: the words of a command line, e.g."
                + " new String[] {\"verify\", \"my.bfctrace\"})");
        for (int i = 0; i < args.length; i++) {
            if (args[i] == null) {
                // picocli would fail on it inside its parser, printing its own stack trace.
                throw new NullPointerException("args[" + i + "]=null (expected: a word of the command line, e.g."
                        + " \"verify\")");
            }
        }
        String bad = badSystemProperty();
        if (bad != null) {
            System.err.println("bfc: " + bad);
            System.exit(CommandRunner.EXIT_USAGE);
        }
        StandardOutput stdout = StandardOutput.install();
        CommandLine commandLine = commandLine();
        int status = commandLine.execute(args);
        System.exit(standardOutputChecked(commandLine, status, System.out, System.err, stdout.failure()));
    }

    /**
     * The exit status once what the command printed has reached standard output. Java's
     * {@code System.out} drops a failed write without a word: the command's output would then be
     * lost while it exits 0. So a failed write is one line on standard error, saying why, and
     * exit status 2, as a failed {@code -o} file is (3, a broken invariant, is kept). A pipe whose
     * reader stopped reading ({@code | head -1}, {@code EPIPE}) is no error: its reader has what
     * it wanted, nothing is said, and the status is the command's own, so that a pipeline (even
     * under {@code set -o pipefail}) reads the command's result, not whether its reader read to
     * the end.
     *
     * @param commandLine the command line that ran, whose output is flushed first
     * @param status the command's own exit status
     * @param out standard output
     * @param err standard error
     * @param failure why a write to standard output failed ({@link StandardOutput#failure()}),
     *     or null if that is not known
     * @return {@code status}, or 2 where standard output could not be written
     */
    static int standardOutputChecked(CommandLine commandLine, int status, PrintStream out, PrintStream err,
            IOException failure) {
        commandLine.getOut().flush();
        if (!out.checkError() || StandardOutput.readerGone(failure)) {
            return status;
        }
        String why = StandardOutput.noRoom(failure) ? "is the disk full?"
                : failure != null && failure.getMessage() != null ? failure.getMessage() : "the reason is not known";
        err.println("bfc: standard output could not be written (" + why + "): what the command printed is"
                + " incomplete; write it where " + (StandardOutput.noRoom(failure) ? "there is room" : "it can be"));
        err.flush();
        return status == CommandRunner.EXIT_INVARIANT_VIOLATION ? status : CommandRunner.EXIT_USAGE;
    }

    /**
     * Checks the bfc4j system properties that every allocator reads ({@code bfc4j.dumpOnOom},
     * {@code bfc4j.jfr.allocationSamplePeriod}, {@code bfc4j.leakDetection},
     * {@code bfc4j.checkInvariants}), so that a bad one is
     * one line at the start instead of a failure in whichever command builds an allocator; a dump
     * directory that is a file, that may not be written, or that cannot be created (a file, or a
     * directory that may not be written, where it would go) is refused too, as no dump could go
     * there. Whether it may be written is tried, not asked of the permissions (which let root
     * write even to /proc): a file is created in it and deleted (where it is missing, a
     * directory in the nearest existing parent).
     *
     * @return what is wrong and where to fix it, or null if they are all usable
     */
    static String badSystemProperty() {
        try {
            Path dumps = BfcOptions.builder().build().dumpOnOomDirectory();
            LeakDetection.fromSystemProperty();
            // Read with Boolean.getBoolean, which takes anything but "true" (any case) for false:
            // -Dbfc4j.checkInvariants alone (an empty value), =1 or =yes would check nothing.
            String check = System.getProperty("bfc4j.checkInvariants");
            if (check != null && !check.equalsIgnoreCase("true") && !check.equalsIgnoreCase("false")) {
                return "-Dbfc4j.checkInvariants=" + Words.shown(check) + " (expected: true or false; true checks the"
                        + " allocator's invariants after every call); change it or take it out of BFC_JAVA_OPTS";
            }
            // The dumps are written from inside a failing call, whose message no command shows
            // (replay's calls answer null): a directory they cannot go to is said now.
            if (dumps == null) {
                return null;
            }
            String expected = " (expected: a directory for the out-of-memory dumps, created if missing); change it or"
                    + " take it out of BFC_JAVA_OPTS";
            // Tried, not asked: Files.isWritable (access(2)) says yes to root everywhere, even on
            // /proc or a read-only file system, where the dumps would then go missing unsaid.
            if (Files.exists(dumps)) {
                if (!Files.isDirectory(dumps)) {
                    return "-Dbfc4j.dumpOnOom=" + dumps + " is not a directory" + expected;
                }
                String refused = refusedNewEntry(dumps, false, " in it");
                return refused == null ? null : "-Dbfc4j.dumpOnOom=" + dumps + " is not writable: " + refused + expected;
            }
            // Created with the first dump: where it cannot be, no dump is written, and no command says so.
            Path existing = dumps.getParent();
            while (existing != null && !Files.exists(existing)) {
                existing = existing.getParent();
            }
            if (existing == null) {
                existing = dumps.isAbsolute() ? dumps.getRoot() : Path.of("").toAbsolutePath();
            }
            if (!Files.isDirectory(existing)) {
                return "-Dbfc4j.dumpOnOom=" + dumps + " cannot be created: " + existing + " is not a directory" + expected;
            }
            String refused = refusedNewEntry(existing, true, " in " + existing);
            return refused == null ? null : "-Dbfc4j.dumpOnOom=" + dumps + " cannot be created: " + refused + expected;
        } catch (IllegalArgumentException e) {
            return e.getMessage() + "; change it or take it out of BFC_JAVA_OPTS";
        }
    }

    /**
     * Creates a file (or a directory) in {@code dir} and deletes it again: what the first dump
     * does there.
     *
     * @param in how the refusal names {@code dir}: " in it", " in DIR"
     * @return null if both worked; else why not: "permission denied" (with {@code in} where
     *     {@code dir} is not the dump directory itself), or what could not be done there and why
     */
    private static String refusedNewEntry(Path dir, boolean directory, String in) {
        Path probe;
        try {
            probe = directory ? Files.createTempDirectory(dir, ".bfc-probe-")
                    : Files.createTempFile(dir, ".bfc-probe-", ".tmp");
        } catch (AccessDeniedException e) {
            return "permission denied" + (directory ? in : "");
        } catch (IOException | UnsupportedOperationException e) {
            return "no " + (directory ? "directory" : "file") + " can be created" + in + " (" + why(e) + ")";
        }
        try {
            Files.delete(probe);
            return null;
        } catch (IOException e) {
            return (directory ? "a directory" : "a file") + " created" + in + " to try it cannot be deleted: " + probe
                    + " (" + why(e) + ")";
        }
    }

    /** An exception's reason in words: the file system's, else its kind. */
    private static String why(Exception e) {
        String reason = e instanceof FileSystemException f ? f.getReason() : e.getMessage();
        return reason != null ? reason : e.getClass().getSimpleName();
    }

    /** The version, filled in by the build (version.properties, next to this class). */
    static final class VersionProvider implements IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            Properties p = new Properties();
            try (InputStream in = BfcCommand.class.getResourceAsStream("version.properties")) {
                if (in != null) {
                    p.load(in);
                }
            }
            String v = p.getProperty("version", "");
            if (v.isEmpty() || v.startsWith("${")) {
                // Classes compiled outside Maven (an IDE): no version was filled in.
                v = "(version unknown: built without Maven's resource filtering)";
            }
            return new String[] {"bfc " + v};
        }
    }
}
