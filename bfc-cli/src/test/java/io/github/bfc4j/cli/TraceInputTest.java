/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A regular file read pass after pass ({@link TraceInput#rereadable()}). */
class TraceInputTest {

    /**
     * A file truncated in place during a pass, or grown during one, fails that pass where it
     * notices, rather than end it early as if the file ended there (or read on into bytes the
     * earlier passes did not have).
     */
    @Test
    void aPassFailsWhenTheFileIsTruncatedOrGrownUnderIt(@TempDir Path dir) throws IOException {
        Path t = Files.write(dir.resolve("t.bfctrace"), new byte[10_000]);
        try (TraceInput input = TraceInput.of(t).rereadable()) {
            try (InputStream first = input.rawStream()) {
                assertThat(first.readAllBytes()).hasSize(10_000);
            }
            try (InputStream pass = input.rawStream()) {
                assertThat(pass.readNBytes(4_000)).hasSize(4_000);
                try (FileChannel c = FileChannel.open(t, StandardOpenOption.WRITE)) {
                    c.truncate(5_000);
                }
                assertThat(pass.readNBytes(1_000)).hasSize(1_000);
                assertThatThrownBy(() -> pass.readNBytes(1_000)).isInstanceOf(IOException.class)
                        .hasMessage("the file changed while it was read: 10000 bytes when the command opened it,"
                                + " 5000 now; it is read again for each pass (expected: a file that is not written"
                                + " while the command runs: copy it and read the copy)");
            }
        }
        Files.write(t, new byte[10_000]);
        try (TraceInput input = TraceInput.of(t).rereadable(); InputStream pass = input.rawStream()) {
            assertThat(pass.readNBytes(10_000)).hasSize(10_000);
            Files.write(t, new byte[1], StandardOpenOption.APPEND);
            assertThatThrownBy(pass::read).isInstanceOf(IOException.class)
                    .hasMessageStartingWith("the file changed while it was read: 10000 bytes when the command opened"
                            + " it, 10001 now;");
        }
    }

    /**
     * A regular file that says it is empty and is not, as /proc's files do, is read for what it
     * holds: held open with the size it gave, 0, every pass read nothing.
     */
    @Test
    void aFileThatSaysItIsEmptyIsReadForWhatItHolds() throws IOException {
        Path status = Path.of("/proc/self/status");
        assumeTrue(Files.isRegularFile(status) && Files.size(status) == 0, "no /proc here");
        // Copied as a trace is: the reader stops at its first line, which is no header.
        assertThatThrownBy(() -> TraceInput.of(status).rereadable()).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith("/proc/self/status line 1: found 'Name:");
    }

    /**
     * A regular file that gives a size larger than what it holds, as /sys's files do (4096), is
     * read for what it holds, pass after pass: its first line is refused as no header, where every
     * pass said the file had changed while it was read ("4096 bytes when the command opened it,
     * 4096 now").
     */
    @Test
    void aFileThatGivesMoreThanItHoldsIsReadForWhatItHolds() throws IOException {
        Path online = Path.of("/sys/devices/system/cpu/online");
        assumeTrue(Files.isRegularFile(online) && Files.size(online) > Files.readAllBytes(online).length,
                "no /sys file here that gives more than it holds");
        byte[] holds = Files.readAllBytes(online);
        String firstLine = new String(holds, StandardCharsets.US_ASCII).strip();
        try (TraceInput input = TraceInput.of(online).rereadable()) {
            for (int pass = 0; pass < 2; pass++) {
                try (InputStream in = input.rawStream()) {
                    assertThat(in.readAllBytes()).isEqualTo(holds);
                }
                assertThatThrownBy(() -> TraceReader.open(input.rawStream(), input.name()))
                        .isInstanceOf(TraceFormatException.class)
                        .hasMessageStartingWith(online + " line 1: found '" + firstLine + "', expected 'bfctrace 1'");
            }
        }
    }
}
