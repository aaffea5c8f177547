/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Locale;

/**
 * Byte sizes on the command line: {@code 16GiB}, {@code 512MiB}, {@code 1048576}, and back. A size
 * is from 1 byte to {@value #MAX} bytes (8 EiB minus one byte, the largest a Java {@code long}
 * holds), in any unit up to EiB.
 */
final class Sizes {
    /** The largest size: 2^63 - 1 bytes. */
    static final long MAX = Long.MAX_VALUE;
    private static final String EXPECTED = "a size like 16GiB, 512MiB or 1048576";
    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    private Sizes() {
    }

    /**
     * Parses a size: a whole number of bytes, or a number (decimals allowed) with a unit
     * {@code B}, {@code K}/{@code KB}/{@code KiB}, {@code M}/{@code MB}/{@code MiB}, {@code G},
     * {@code T}, {@code P}, {@code E} (all binary: 1K = 1024 bytes), any case; decimals (digits
     * on both sides of the point: {@code 0.5M}, not {@code .5M} or {@code 5.M}) are rounded down
     * to whole bytes. Digits are ASCII only, and only spaces around the number and the unit are
     * ignored ({@link Words#strip}).
     *
     * @param option the option's name, for the message
     * @param text the value
     * @return the bytes, from 1 to {@link #MAX}
     * @throws UsageException {@code option=text (expected: a size like ...)}, or for a size of 0
     *     or above {@link #MAX}
     */
    static long parse(String option, String text) {
        String t = Words.strip(text);
        int end = 0;
        while (end < t.length() && (Words.isDigit(t.charAt(end)) || t.charAt(end) == '.')) {
            end++;
        }
        String number = t.substring(0, end);
        String unit = Words.strip(t.substring(end)).toLowerCase(Locale.ROOT);
        int shift;
        switch (unit) {
            case "":
            case "b":
                shift = 0;
                break;
            case "k": case "kb": case "kib":
                shift = 10;
                break;
            case "m": case "mb": case "mib":
                shift = 20;
                break;
            case "g": case "gb": case "gib":
                shift = 30;
                break;
            case "t": case "tb": case "tib":
                shift = 40;
                break;
            case "p": case "pb": case "pib":
                shift = 50;
                break;
            case "e": case "eb": case "eib":
                shift = 60;
                break;
            default:
                throw bad(option, text);
        }
        if (number.isEmpty() || number.chars().filter(c -> c == '.').count() > 1 || number.equals(".")) {
            throw bad(option, text);
        }
        if (number.indexOf('.') >= 0 && shift == 0) {
            throw bad(option, text);
        }
        if (number.startsWith(".") || number.endsWith(".")) {
            // .5M and 5.M: a decimal as the other options read one (--fragmentation-fraction).
            throw new UsageException(option + "=" + Words.shown(text) + " (expected: digits on both sides of the point,"
                    + " like 0.5MiB or 5MiB)");
        }
        // Exact arithmetic: 7.9999999999EiB and 8191.99PiB are within the range, 8EiB is not.
        BigInteger whole = new BigDecimal(number).multiply(new BigDecimal(BigInteger.ONE.shiftLeft(shift)))
                .toBigInteger();
        if (whole.bitLength() > 63) {
            throw new UsageException(option + "=" + Words.shown(text) + " (expected: a size of at most 8EiB - 1 byte = "
                    + MAX + " bytes)");
        }
        long bytes = whole.longValue();
        if (bytes <= 0) {
            throw new UsageException(option + "=" + Words.shown(text) + " (expected: a size of at least 1 byte, like"
                    + " 16GiB)");
        }
        return bytes;
    }

    private static UsageException bad(String option, String text) {
        return new UsageException(option + "=" + Words.shown(text) + " (expected: " + EXPECTED + ")");
    }

    /**
     * Formats a size exactly, as it can be given back to an option: in the largest unit that
     * divides it ({@code 16GiB}, {@code 1536MiB}), else in bytes ({@code 1049000B}). For the
     * sizes a user chose (memory limits), where {@link #format}'s {@code 1.00MiB} could be any of
     * several.
     *
     * @param bytes a byte count, not negative
     * @return the size, exact
     */
    static String exact(long bytes) {
        for (int u = UNITS.length - 1; u > 0; u--) {
            long unit = 1L << (10 * u);
            if (bytes >= unit && bytes % unit == 0) {
                return (bytes / unit) + UNITS[u];
            }
        }
        return bytes + "B";
    }

    /**
     * Formats a size the short way: {@code 16GiB}, {@code 1.50GiB}, {@code 512MiB}, {@code 300B}.
     *
     * @param bytes a byte count
     * @return the size with a binary unit, exact when it is a whole number of that unit
     */
    static String format(long bytes) {
        if (bytes < 0) {
            return "-" + format(-bytes);
        }
        int u = 0;
        while (u + 1 < UNITS.length && bytes >= (1L << (10 * (u + 1)))) {
            u++;
        }
        if (u == 0) {
            return bytes + "B";
        }
        long unit = 1L << (10 * u);
        if (bytes % unit == 0) {
            return (bytes / unit) + UNITS[u];
        }
        return String.format(Locale.ROOT, "%.2f%s", (double) bytes / unit, UNITS[u]);
    }
}
