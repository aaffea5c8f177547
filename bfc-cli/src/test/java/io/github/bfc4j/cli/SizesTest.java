/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SizesTest {

    @Test
    void parsesBinaryUnitsAndPlainBytes() {
        assertThat(Sizes.parse("--x", "1048576")).isEqualTo(1L << 20);
        assertThat(Sizes.parse("--x", "16GiB")).isEqualTo(16L << 30);
        assertThat(Sizes.parse("--x", "16gb")).isEqualTo(16L << 30);
        assertThat(Sizes.parse("--x", "16G")).isEqualTo(16L << 30);
        assertThat(Sizes.parse("--x", "512MiB")).isEqualTo(512L << 20);
        assertThat(Sizes.parse("--x", "64K")).isEqualTo(64L << 10);
        assertThat(Sizes.parse("--x", "1.5GiB")).isEqualTo(3L << 29);
        assertThat(Sizes.parse("--x", "2TiB")).isEqualTo(2L << 40);
        assertThat(Sizes.parse("--x", "300B")).isEqualTo(300);
        assertThat(Sizes.parse("--x", " 8GiB ")).isEqualTo(8L << 30);
    }

    @Test
    void badSizesNameTheOptionAndWhatItExpects() {
        for (String bad : new String[] {"12XB", "", "GiB", "1.2.3G", "-5", "1.5", "0x10", "1ZiB"}) {
            assertThatThrownBy(() -> Sizes.parse("--memory-limit", bad)).as(bad)
                    .isInstanceOf(UsageException.class)
                    .hasMessage("--memory-limit=" + bad + " (expected: a size like 16GiB, 512MiB or 1048576)");
        }
        // .5M was 512KiB, where --fragmentation-fraction refuses .5 and 5.
        for (String bad : new String[] {".5M", "5.M", ".5", "5.", "1.5.G"}) {
            assertThatThrownBy(() -> Sizes.parse("--memory-limit", bad)).as(bad)
                    .isInstanceOf(UsageException.class)
                    .hasMessageStartingWith("--memory-limit=" + bad + " (expected: ");
        }
        assertThatThrownBy(() -> Sizes.parse("--memory-limit", ".5M"))
                .hasMessage("--memory-limit=.5M (expected: digits on both sides of the point, like 0.5MiB or 5MiB)");
        assertThatThrownBy(() -> Sizes.parse("--memory-limit", "5.MiB"))
                .hasMessage("--memory-limit=5.MiB (expected: digits on both sides of the point, like 0.5MiB or"
                        + " 5MiB)");
        assertThat(Sizes.parse("--x", "0.5M")).isEqualTo(1L << 19);
        assertThatThrownBy(() -> Sizes.parse("--memory-limit", "0GiB"))
                .hasMessage("--memory-limit=0GiB (expected: a size of at least 1 byte, like 16GiB)");
        for (String big : new String[] {"8EiB", "8192PiB", "9223372036854775808", "99999999PiB",
            "99999999999999999999"}) {
            assertThatThrownBy(() -> Sizes.parse("--memory-limit", big)).as(big)
                    .hasMessage("--memory-limit=" + big + " (expected: a size of at most 8EiB - 1 byte = "
                            + Long.MAX_VALUE + " bytes)");
        }
    }

    @Test
    void theRangeIsOneByteToTheLargestLongInAnyUnit() {
        // 1EiB was refused while 4096PiB, four times as much, was accepted.
        assertThat(Sizes.parse("--x", "1EiB")).isEqualTo(1L << 60);
        assertThat(Sizes.parse("--x", "1e")).isEqualTo(1L << 60);
        assertThat(Sizes.parse("--x", "4096PiB")).isEqualTo(4L << 60);
        assertThat(Sizes.parse("--x", "7EiB")).isEqualTo(7L << 60);
        assertThat(Sizes.parse("--x", "9223372036854775807")).isEqualTo(Long.MAX_VALUE);
        assertThat(Sizes.parse("--x", "8191.5PiB")).isEqualTo(8191L << 50 | 1L << 49);
        assertThat(Sizes.parse("--x", "1.5EiB")).isEqualTo(3L << 59);
        assertThat(Sizes.parse("--x", "1B")).isEqualTo(1);
        assertThat(Sizes.format(1L << 60)).isEqualTo("1EiB");
        assertThat(Sizes.format(Long.MAX_VALUE)).isEqualTo("8.00EiB");
    }

    @Test
    void formatsExactUnitsShortAndOthersWithTwoDecimals() {
        assertThat(Sizes.format(0)).isEqualTo("0B");
        assertThat(Sizes.format(1023)).isEqualTo("1023B");
        assertThat(Sizes.format(1024)).isEqualTo("1KiB");
        assertThat(Sizes.format(16L << 30)).isEqualTo("16GiB");
        assertThat(Sizes.format(3L << 29)).isEqualTo("1.50GiB");
        assertThat(Sizes.format(268430080)).isEqualTo("255.99MiB");
        for (String s : new String[] {"16GiB", "512MiB", "1KiB", "300B"}) {
            assertThat(Sizes.format(Sizes.parse("--x", s))).isEqualTo(s);
        }
    }

    @Test
    void exactSizesReadBackAsTheSameBytes() {
        assertThat(Sizes.exact(1)).isEqualTo("1B");
        assertThat(Sizes.exact(3L << 29)).isEqualTo("1536MiB");
        assertThat(Sizes.exact(44566656)).isEqualTo("44566656B");
        assertThat(Sizes.exact(Long.MAX_VALUE)).isEqualTo("9223372036854775807B");
        for (long v : new long[] {1, 1023, 1024, 1049000, 3L << 29, (1L << 40) + 256, 8191L << 50, Long.MAX_VALUE}) {
            assertThat(Sizes.parse("--x", Sizes.exact(v))).as(Sizes.exact(v)).isEqualTo(v);
        }
    }
}
