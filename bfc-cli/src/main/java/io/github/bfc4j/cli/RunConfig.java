/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * What a trace is run under: the allocator's memory limit and options, and its sub-allocator.
 * Each value defaults to the trace header's.
 *
 * @param memoryLimit the allocator's total memory
 * @param allowGrowth {@code allow_growth}
 * @param garbageCollection {@code garbage_collection}
 * @param fragmentationFraction {@code fragmentation_fraction}
 * @param sub {@code sim} (the header's simulated space, enlarged to fit the limit) or
 *     {@code host} (real memory)
 */
record RunConfig(long memoryLimit, boolean allowGrowth, boolean garbageCollection, double fragmentationFraction,
        String sub) {

    /** The sub-allocators {@code --sub} accepts. */
    static final String SUB_VALUES = "sim or host";
    /** The smallest fraction {@link #fraction} writes as a plain decimal: under 1 / 2^63. */
    private static final double PLAIN_FROM = 1e-20;
    /** A decimal as a trace's header writes one: {@code 0}, {@code 0.01}. */
    private static final Pattern DECIMAL = Pattern.compile("[0-9]+(\\.[0-9]+)?");

    /**
     * Parses {@code --sub}.
     *
     * @param value the option's value
     * @return {@code sim} or {@code host}
     * @throws UsageException for another value
     */
    static String parseSub(String value) {
        String v = value.toLowerCase(Locale.ROOT);
        if (!v.equals("sim") && !v.equals("host")) {
            throw new UsageException("--sub=" + Words.shown(value) + " (expected: " + SUB_VALUES + ")");
        }
        return v;
    }

    /**
     * Parses a decimal as a trace's header writes one ({@code fragmentation_fraction=0.01}):
     * digits with at most one point between them. Not what else Java's parser takes: a sign, an
     * exponent ({@code 1e-3}), hexadecimal ({@code 0x1p-3}), a type suffix ({@code 1f}),
     * {@code .5}, {@code 5.}, {@code NaN}, {@code Infinity}.
     *
     * @param text the option's value, surrounding spaces (U+0020) ignored; ASCII digits only
     * @return the value, or NaN if it is not such a decimal
     */
    static double parseDecimal(String text) {
        String t = Words.strip(text);
        return DECIMAL.matcher(t).matches() ? Double.parseDouble(t) : Double.NaN;
    }

    /**
     * Parses a fragmentation fraction.
     *
     * @param option the option's name
     * @param value a decimal in [0, 1] ({@link #parseDecimal})
     * @return the fraction
     * @throws UsageException if it is not a decimal in [0, 1]
     */
    static double parseFraction(String option, String value) {
        double f = parseDecimal(value);
        if (!(f >= 0 && f <= 1)) {
            throw new UsageException(option + "=" + Words.shown(value) + " (expected: a fraction from 0 to 1, a decimal"
                    + " like 0.01 as a trace's header writes it; 0 means upstream's 128 MiB threshold)");
        }
        return f;
    }

    /**
     * Parses a boolean option value.
     *
     * @param option the option's name
     * @param value {@code true} or {@code false}
     * @return the value
     * @throws UsageException for anything else
     */
    static boolean parseBoolean(String option, String value) {
        String v = Words.strip(value).toLowerCase(Locale.ROOT);
        if (v.equals("true")) {
            return true;
        }
        if (v.equals("false")) {
            return false;
        }
        throw new UsageException(option + "=" + Words.shown(value) + " (expected: true or false)");
    }

    /**
     * The header's own settings.
     *
     * @param h a trace header
     * @return its memory limit and options, on the sim
     */
    static RunConfig of(TraceHeader h) {
        return new RunConfig(h.memoryLimit(), h.allowGrowth(), h.garbageCollection(), h.fragmentationFraction(),
                "sim");
    }

    /** The allocator options. */
    BfcOptions bfcOptions() {
        return BfcOptions.builder()
                .allowGrowth(allowGrowth)
                .garbageCollection(garbageCollection)
                .fragmentationFraction(fragmentationFraction)
                .allowRetryOnFailure(false)
                .build();
    }

    /** One line: {@code memory_limit=16GiB allow_growth=true ... sub=sim}. */
    String describe() {
        return "memory_limit=" + Sizes.exact(memoryLimit) + " allow_growth=" + allowGrowth + " garbage_collection="
                + garbageCollection + " fragmentation_fraction=" + fraction(fragmentationFraction) + " sub=" + sub;
    }

    /**
     * A fraction as short as it reads: {@code 0}, {@code 0.01}; one below {@value #PLAIN_FROM},
     * which no trace can use (its threshold truncates to 0 bytes at any memory limit up to 2^63),
     * as Java writes it ({@code 1.0E-300}) rather than in hundreds of digits.
     */
    static String fraction(double f) {
        if (f == 0) {
            return "0";
        }
        if (Math.abs(f) < PLAIN_FROM) {
            return Double.toString(f);
        }
        return java.math.BigDecimal.valueOf(f).stripTrailingZeros().toPlainString();
    }

    /**
     * The sub-allocator for a run of a trace with this header.
     *
     * @param h the trace's header
     * @return a fresh sub-allocator
     */
    SubAllocator subAllocator(TraceHeader h) {
        if (sub.equals("host")) {
            return HostMemory.subAllocator();
        }
        return WorkloadRunner.simFor(h, memoryLimit);
    }

    /**
     * Runs the calls of an open trace under this configuration, from the reader's position
     * (right after the header) to the end.
     *
     * @param reader the trace, its header read
     * @param listener sees every call, or null
     * @return what was measured
     * @throws IOException if the trace cannot be read or is malformed
     */
    WorkloadResult run(TraceReader reader, WorkloadListener listener) throws IOException {
        TraceHeader h = reader.header();
        return new WorkloadRunner(memoryLimit, bfcOptions(), subAllocator(h))
                .timingCounter(h.timingCounter())
                .name(allocatorName(h.name()))
                .listener(listener)
                .run(reader);
    }

    /**
     * Opens a trace and runs it under this configuration.
     *
     * @param input the trace
     * @param listener sees every call, or null
     * @param progressLabel what the progress bar says
     * @return what was measured
     * @throws IOException if the trace cannot be read or is malformed
     */
    WorkloadResult run(TraceInput input, WorkloadListener listener, String progressLabel) throws IOException {
        try (TraceReader reader = input.open(progressLabel)) {
            return run(reader, listener);
        }
    }

    /** The trace's name up to the first ':' or space, as {@code bfc verify} names its allocator. */
    /**
     * The allocator's name for a trace: its name up to the first colon, space or control
     * character (a name line may hold any byte but a line break; an escape sequence in it must
     * not reach a summary or the terminal), {@code replay} if that leaves nothing.
     */
    static String allocatorName(String traceName) {
        int end = 0;
        while (end < traceName.length() && traceName.charAt(end) != ':' && traceName.charAt(end) > ' '
                && traceName.charAt(end) != 0x7f) {
            end++;
        }
        return end == 0 ? "replay" : traceName.substring(0, end);
    }

    /**
     * Refuses a fragmentation fraction whose split threshold, {@code (long) (fraction * limit)},
     * is 0 bytes: the allocator cannot be created with it (docs/trace-format.md: traces never
     * use one). The message says where each value came from.
     *
     * @param fraction the fraction
     * @param fractionFrom where it came from, e.g. {@code --fragmentation-fraction=1e-9}, or
     *     null if from the trace's header
     * @param limit the memory limit
     * @param limitFrom where it came from, e.g. {@code --memory-limit=1MiB}, or null if from the
     *     trace's header
     * @param reader the trace, for its name and options line
     * @throws UsageException if an option takes part
     * @throws TraceFormatException if both values are the header's
     */
    static void checkThreshold(double fraction, String fractionFrom, long limit, String limitFrom,
            TraceReader reader) throws TraceFormatException {
        if (!(fraction > 0) || (long) (fraction * limit) > 0) {
            return;
        }
        String least = new BigDecimal(1.0 / limit).round(new MathContext(2, RoundingMode.UP)).toPlainString();
        String expected = "a split threshold fragmentation_fraction * memory_limit of at least 1 byte: a fraction"
                + " of at least " + least + " at this limit, or 0 for upstream's 128 MiB threshold";
        if (fractionFrom == null && limitFrom == null) {
            throw new TraceFormatException(reader.file(), reader.optionsLine(), "fragmentation_fraction="
                    + fraction(fraction) + " with memory_limit=" + limit + ", a split threshold of 0 bytes", expected);
        }
        String f = fractionFrom != null ? fractionFrom : "fragmentation_fraction=" + fraction(fraction) + " (from "
                + reader.file() + " line " + reader.optionsLine() + ")";
        String l = limitFrom != null ? limitFrom : "memory_limit=" + Sizes.exact(limit) + " (from the trace)";
        throw new UsageException(f + " with " + l + " gives a split threshold of 0 bytes (expected: " + expected
                + ")");
    }
}
