/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.math.BigInteger;
import java.util.regex.Pattern;
import picocli.CommandLine.TypeConversionException;

/**
 * Whole-number options are read as any integer ({@link BigInteger}) and checked against their own
 * range here, so that a number past a {@code long}'s range is refused with the option's range, as
 * one within it is ({@code --points=99999999999999999999 (expected: 10 to 1000000)}), not with the
 * range of the type that holds it.
 */
final class WholeNumbers {
    /** A whole number as the options take one: ASCII digits, with a sign or not. */
    private static final Pattern WHOLE = Pattern.compile("[+-]?[0-9]+");

    private WholeNumbers() {
    }

    /**
     * Reads a whole-number option's value (picocli's converter for {@link BigInteger}): ASCII
     * digits only, where Java's own parsers also take other scripts' ({@code ١٢}, {@code １２}).
     *
     * @param text the word given
     * @return its value
     * @throws TypeConversionException if it is not a whole number (the usage error names the
     *     option: {@code --points=١٢ (expected: a whole number)})
     */
    static BigInteger parse(String text) {
        if (!WHOLE.matcher(text).matches()) {
            throw new TypeConversionException("'" + text + "' is not a whole number");
        }
        return new BigInteger(text);
    }

    /**
     * Reads a {@code long} option's value ({@code --seed}): {@link #parse}, within a
     * {@code long}'s range.
     *
     * @param text the word given
     * @return its value
     * @throws TypeConversionException if it is not a whole number, or past a {@code long}'s range
     */
    static Long parseLong(String text) {
        BigInteger v = parse(text);
        if (v.bitLength() > 63) {
            throw new TypeConversionException("'" + text + "' is past a long's range");
        }
        return v.longValue();
    }

    /**
     * The option's value, if it lies from {@code min} to {@code max}.
     *
     * @param option the option's name, e.g. {@code --points}
     * @param value the value given
     * @param min the smallest value it takes
     * @param max the largest value it takes
     * @param expected what it takes, for the message, e.g. {@code 10 to 1000000}
     * @return the value
     * @throws UsageException {@code --points=5 (expected: 10 to 1000000)} if it is out of range
     */
    static long inRange(String option, BigInteger value, long min, long max, String expected) {
        if (value.compareTo(BigInteger.valueOf(min)) < 0 || value.compareTo(BigInteger.valueOf(max)) > 0) {
            throw new UsageException(option + "=" + Words.shown(value.toString()) + " (expected: " + expected + ")");
        }
        return value.longValueExact();
    }

    /**
     * The value of an option that takes any number from 0 up: {@code >= 0}, and at most a
     * {@code long}'s largest.
     *
     * @param option the option's name
     * @param value the value given
     * @return the value
     * @throws UsageException if it is negative or past 9223372036854775807
     */
    static long notNegative(String option, BigInteger value) {
        return inRange(option, value, 0, Long.MAX_VALUE, value.signum() < 0 ? ">= 0" : "0 to " + Long.MAX_VALUE);
    }
}
