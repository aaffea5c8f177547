/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * {@link AllocatorStats#debugString()} against the layout of upstream's
 * {@code AllocatorStats::DebugString} ({@code tsl/framework/allocator.cc}): for each field, in
 * upstream's order, its label padded to 18 characters and {@code %20lld}, then {@code '\n'}.
 */
class AllocatorStatsTest {

    /** Upstream's labels, in its order. */
    private static final String[] LABELS = {
        "Limit:", "InUse:", "MaxInUse:", "NumAllocs:", "MaxAllocSize:", "Reserved:", "PeakReserved:",
        "LargestFreeBlock:"
    };

    /** Every field a different value, some as wide as a {@code long} gets. */
    private static final AllocatorStats STATS = new AllocatorStats(4, 2, 3, 5, 1, 6, 7, Long.MAX_VALUE, 9, 10);

    @Test
    void debugStringHasUpstreamsLabelsWidthsOrderAndNewlines() {
        long[] inUpstreamsOrder = {
            STATS.bytesLimit(), STATS.bytesInUse(), STATS.peakBytesInUse(), STATS.numAllocs(),
            STATS.largestAllocSize(), STATS.bytesReserved(), STATS.peakBytesReserved(),
            STATS.largestFreeBlockBytes()
        };
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < LABELS.length; i++) {
            String value = Long.toString(inUpstreamsOrder[i]);
            expected.append(LABELS[i]).append(" ".repeat(18 - LABELS[i].length()))
                    .append(" ".repeat(20 - value.length())).append(value).append('\n');
        }
        assertThat(STATS.debugString()).isEqualTo(expected.toString());
    }

    @Test
    void debugStringWritesAsciiDigitsWhateverTheDefaultLocale() {
        Locale before = Locale.getDefault();
        try {
            Locale.setDefault(Locale.forLanguageTag("th-TH-u-nu-thai"));
            assertThat(STATS.debugString()).matches("(?s)[A-Za-z: 0-9\n]+")
                    .contains(Long.toString(Long.MAX_VALUE));
        } finally {
            Locale.setDefault(before);
        }
    }
}
