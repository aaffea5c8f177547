/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * File names from the command line as paths. {@code Path.of} refuses a name that the file system
 * cannot be given: one holding a NUL character (possible only from Java code calling
 * {@link BfcCommand#main}), or, under a locale whose file name encoding is not UTF-8
 * ({@code LANG=C}: ASCII), one with other characters ({@code é.html}). Its
 * {@code InvalidPathException} said neither which word it was nor what to do.
 */
final class FileNames implements ITypeConverter<Path> {

    /** What an empty name is told (an unset shell variable: {@code bfc replay "$TRACE"}). */
    static final String EMPTY = "'' is an empty name (expected: the file to read; is a shell variable unset?)";

    /**
     * A name as a path (picocli's converter for the commands' file arguments and options).
     *
     * @param text the word of the command line
     * @return the path
     * @throws TypeConversionException if no file can have this name here, saying why and what to do
     */
    @Override
    public Path convert(String text) {
        if (text.isEmpty()) {
            // Path.of("") is the working directory: "bfc replay \"$TRACE\"" with TRACE unset was
            // refused as ': is a directory'.
            throw new TypeConversionException(EMPTY);
        }
        try {
            return Path.of(text);
        } catch (InvalidPathException e) {
            throw new TypeConversionException("'" + Words.shown(text) + "' " + why(text));
        }
    }

    /**
     * A name as a path, for an option read as text ({@code -o}).
     *
     * @param option the option, for the message
     * @param text its value
     * @return the path
     * @throws UsageException if no file can have this name here, saying why and what to do
     */
    static Path of(String option, String text) {
        try {
            return Path.of(text);
        } catch (InvalidPathException e) {
            throw new UsageException(option + "=" + Words.shown(text) + " " + why(text));
        }
    }

    /**
     * What keeps a name from being a file name here.
     *
     * @param text a word of the command line
     * @return why no file can have this name (an empty one either), and what to do; null if it is a
     *     name a file can have
     */
    static String problem(String text) {
        if (text.isEmpty()) {
            return EMPTY;
        }
        try {
            Path.of(text);
            return null;
        } catch (InvalidPathException e) {
            return why(text);
        }
    }

    private static String why(String text) {
        if (text.indexOf('\0') >= 0) {
            return "holds a NUL character, which no file name can (expected: a file name without one)";
        }
        return "cannot be a file name here: the locale's file name encoding, " + System.getProperty("sun.jnu.encoding")
                + ", has no bytes for some of its characters (expected: a name of ASCII characters, or a UTF-8 locale:"
                + " LANG=C.UTF-8)";
    }
}
