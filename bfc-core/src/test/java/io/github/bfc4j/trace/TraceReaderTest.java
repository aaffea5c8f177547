/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.ChildProcess;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class TraceReaderTest {

    static final String NAME = "bfctrace 1\nname t: a test trace\n";
    static final String SOURCE = "source test\n";
    static final String OPTIONS = "options memory_limit=1048576 allow_growth=true garbage_collection=false"
            + " fragmentation_fraction=0 timing_counter=false\n";
    static final String SUBALLOCATOR = "suballocator sim base=0x7f0000000000 capacity=69206016 gap=0 coalescing=true\n";
    /** Five lines: body lines start at line 6. */
    static final String HEADER = NAME + SOURCE + OPTIONS + SUBALLOCATOR;
    static final String WORKLOAD_HEADER = NAME + "source workload: a test\n" + OPTIONS + SUBALLOCATOR;

    static TraceReader open(String text) throws IOException {
        return TraceReader.open(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "t.bfctrace");
    }

    /** Reads every body line back as text. */
    static List<String> lines(String text) throws IOException {
        List<String> out = new ArrayList<>();
        try (TraceReader r = open(text)) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                out.add(e.lineNumber() + ": " + e);
            }
        }
        return out;
    }

    static TraceFormatException failure(String text) {
        return catchThrowableOfType(() -> lines(text), TraceFormatException.class);
    }

    @Test
    void readsHeader() throws IOException {
        try (TraceReader r = open("# leading comment\n\n" + NAME + "# between\n" + SOURCE
                + "options memory_limit=1000 allow_growth=false garbage_collection=true"
                + " fragmentation_fraction=0.000001 timing_counter=true\n"
                + "suballocator sim base=0x100000000 capacity=4096 gap=256 coalescing=false\n")) {
            TraceHeader h = r.header();
            assertThat(h.name()).isEqualTo("t: a test trace");
            assertThat(h.source()).isEqualTo("test");
            assertThat(h.isWorkload()).isFalse();
            assertThat(h.memoryLimit()).isEqualTo(1000);
            assertThat(h.allowGrowth()).isFalse();
            assertThat(h.garbageCollection()).isTrue();
            assertThat(h.fragmentationFraction()).isEqualTo(0.000001);
            assertThat(h.timingCounter()).isTrue();
            assertThat(h.simBase()).isEqualTo(0x100000000L);
            assertThat(h.simCapacity()).isEqualTo(4096);
            assertThat(h.simGap()).isEqualTo(256);
            assertThat(h.simCoalescing()).isFalse();
            assertThat(r.optionsLine()).isEqualTo(7);
            assertThat(r.suballocatorLine()).isEqualTo(8);
            assertThat(r.next()).isNull();
            assertThat(r.next()).isNull();
        }
    }

    /** A decimal number may be as large as a long holds: 9223372036854775807 is read, not refused. */
    @Test
    void theLargestLongIsANumber() throws IOException {
        try (TraceReader r = open(NAME + SOURCE + OPTIONS.replace("memory_limit=1048576",
                "memory_limit=9223372036854775807") + SUBALLOCATOR)) {
            assertThat(r.header().memoryLimit()).isEqualTo(Long.MAX_VALUE);
        }
        try (TraceReader r = open(NAME + SOURCE + OPTIONS.replace("memory_limit=1048576",
                "memory_limit=9223372036854775800") + SUBALLOCATOR)) {
            assertThat(r.header().memoryLimit()).isEqualTo(Long.MAX_VALUE - 7);
        }
    }

    @Test
    void headerKeysMayComeInAnyOrder() throws IOException {
        try (TraceReader r = open(NAME + SOURCE
                + "options timing_counter=false fragmentation_fraction=0.01 garbage_collection=false"
                + " allow_growth=true memory_limit=256\n"
                + "suballocator sim coalescing=true gap=0 capacity=512 base=0x1000\n")) {
            assertThat(r.header().fragmentationFraction()).isEqualTo(0.01);
            assertThat(r.header().simBase()).isEqualTo(0x1000);
        }
    }

    @Test
    void readsEveryBodyLineKind() throws IOException {
        String body = "alloc 1 100 => 0x7f0000000000\n"
                + "sub alloc 1048576 => 0x7f0000000000\n"
                + "sub alloc 2097152 => null\n"
                + "sub free 0x7f0000100000 4096\n"
                + "chunk 1 size=256 requested=100 allocation_id=1\n"
                + "# a comment\n"
                + "\n"
                + "stats bytes_in_use=256 num_allocs=1\n"
                + "alloc 2 0 align=4096 freed_before=3 => null\n"
                + "alloc 3 7 freed_before=0 align=64 => 0x7f0000000100\n"
                + "free 2\n"
                + "frontier 12\n"
                + "clear_stats\n";
        try (TraceReader r = open(HEADER + body)) {
            TraceEvent e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.ALLOC);
            assertThat(e.kind().isCall()).isTrue();
            assertThat(e.lineNumber()).isEqualTo(6);
            assertThat(e.id()).isEqualTo(1);
            assertThat(e.bytes()).isEqualTo(100);
            assertThat(e.alignment()).isEqualTo(64);
            assertThat(e.alignmentGiven()).isFalse();
            assertThat(e.freedBefore()).isZero();
            assertThat(e.answered()).isTrue();
            assertThat(e.address()).isEqualTo(0x7f0000000000L);

            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.SUB_ALLOC);
            assertThat(e.kind().isCall()).isFalse();
            assertThat(e.bytes()).isEqualTo(1048576);
            assertThat(e.address()).isEqualTo(0x7f0000000000L);
            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.SUB_ALLOC);
            assertThat(e.address()).isZero();
            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.SUB_FREE);
            assertThat(e.address()).isEqualTo(0x7f0000100000L);
            assertThat(e.bytes()).isEqualTo(4096);

            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.CHUNK);
            assertThat(e.id()).isEqualTo(1);
            assertThat(e.size()).isEqualTo(256);
            assertThat(e.requested()).isEqualTo(100);
            assertThat(e.allocationId()).isEqualTo(1);

            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.STATS);
            assertThat(e.lineNumber()).isEqualTo(13);
            assertThat(e.statCount()).isEqualTo(2);
            assertThat(e.statKey(0)).isEqualTo(StatKey.BYTES_IN_USE);
            assertThat(e.statValue(0)).isEqualTo(256);
            assertThat(e.statKey(1)).isEqualTo(StatKey.NUM_ALLOCS);
            assertThat(e.statValue(1)).isEqualTo(1);
            TraceEvent stats = e;
            assertThatThrownBy(() -> stats.statKey(2)).isInstanceOf(IndexOutOfBoundsException.class);

            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.ALLOC);
            assertThat(e.alignment()).isEqualTo(4096);
            assertThat(e.alignmentGiven()).isTrue();
            assertThat(e.freedBefore()).isEqualTo(3);
            assertThat(e.freedBeforeGiven()).isTrue();
            assertThat(e.address()).isZero();
            assertThat(e.answered()).isTrue();

            e = r.next();
            assertThat(e.alignment()).isEqualTo(64);
            assertThat(e.alignmentGiven()).isTrue();
            assertThat(e.freedBefore()).isZero();
            assertThat(e.freedBeforeGiven()).isTrue();
            assertThat(e.toString()).isEqualTo("alloc 3 7 align=64 freed_before=0 => 0x7f0000000100");

            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.FREE);
            assertThat(e.id()).isEqualTo(2);
            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.FRONTIER);
            assertThat(e.count()).isEqualTo(12);
            e = r.next();
            assertThat(e.kind()).isEqualTo(TraceEvent.Kind.CLEAR_STATS);
            assertThat(e.lineNumber()).isEqualTo(18);
            assertThat(r.next()).isNull();
        }
    }

    @Test
    void numbersMayBeHex() throws IOException {
        assertThat(lines(HEADER + "alloc 0x10 0x100 align=0x100 => 0x7f0000000000\nfree 16\n"))
                .containsExactly("6: alloc 16 256 align=256 => 0x7f0000000000", "7: free 16");
    }

    @Test
    void lastLineNeedsNoLineBreak() throws IOException {
        assertThat(lines(HEADER + "alloc 1 1 => 0x7f0000000000\nfree 1")).containsExactly(
                "6: alloc 1 1 => 0x7f0000000000", "7: free 1");
    }

    @Test
    void aLastLineWithoutLineBreakIsReportedAsPossiblyTruncated() throws IOException {
        // "free 648" cut to "free 6": a valid line, so only the missing '\n' tells.
        String whole = HEADER + "alloc 6 1 => 0x7f0000000000\nalloc 648 1 => 0x7f0000000100\nfree 648\n";
        String cut = whole.substring(0, whole.length() - "48\n".length());
        try (TraceReader r = open(cut)) {
            assertThat(r.next().toString()).isEqualTo("alloc 6 1 => 0x7f0000000000");
            assertThat(r.next().toString()).isEqualTo("alloc 648 1 => 0x7f0000000100");
            assertThat(r.lastLineUnterminated()).isFalse();
            assertThat(r.next().toString()).isEqualTo("free 6");
            assertThat(r.lastLineUnterminated()).isTrue();
            assertThat(r.next()).isNull();
            assertThat(r.lastLineUnterminated()).isTrue();
        }
        try (TraceReader r = open(whole)) {
            while (r.next() != null) {
                // read to the end
            }
            assertThat(r.lastLineUnterminated()).isFalse();
        }
        // A comment after the last call, without a line break, is the last line too.
        try (TraceReader r = open(whole + "# the end")) {
            while (r.next() != null) {
                // read to the end
            }
            assertThat(r.lastLineUnterminated()).isTrue();
        }
    }

    @Test
    void anErrorOnALastLineWithoutLineBreakSaysTheFileMayBeTruncated() {
        // "free 648" cut to "free 6", with id 6 never allocated.
        TraceFormatException e = failure(HEADER + "alloc 648 1 => 0x7f0000000000\nfree 6");
        assertThat(e.lineNumber()).isEqualTo(7);
        assertThat(e.found()).isEqualTo("free of id 6, which no earlier alloc line has on the last line, which has"
                + " no line break after it (the file may be truncated)");
        // The same error with the line break says nothing of truncation.
        assertThat(failure(HEADER + "alloc 648 1 => 0x7f0000000000\nfree 6\n").found())
                .isEqualTo("free of id 6, which no earlier alloc line has");
        // A header cut short: the end of the file is not that line.
        assertThat(failure(NAME + "source te").getMessage()).isEqualTo("t.bfctrace line 4: found end of file,"
                + " expected " + failure(NAME + SOURCE).expected());
    }

    /** What a terminal would not show is quoted as escapes: a byte-order mark, control characters. */
    @Test
    void messagesShowHiddenCharactersAsEscapes() {
        assertThat(failure("\uFEFFbfctrace 1\n" + SOURCE).getMessage())
                .isEqualTo("t.bfctrace line 1: found '\\uFEFFbfctrace 1', expected 'bfctrace 1' (the first line of a"
                        + " trace, without the byte-order mark \\uFEFF before it: save the file as UTF-8 without one)");
        assertThat(failure("bfc\u001b[31mtrace 1\n").getMessage())
                .isEqualTo("t.bfctrace line 1: found 'bfc\\x1b[31mtrace 1', expected 'bfctrace 1' (the first line of a"
                        + " trace)");
        assertThat(failure(HEADER + "alloc 1 1\u0007\n").getMessage()).contains("'1\\x07'");
    }

    @Test
    void linesUpToOneMebibyteAreRead() throws IOException {
        String longName = "x".repeat(TraceReader.MAX_LINE_BYTES - "name ".length());
        String text = "bfctrace 1\nname " + longName + "\n" + SOURCE + OPTIONS + SUBALLOCATOR + "alloc 1 1 => null\n";
        try (TraceReader r = open(text)) {
            assertThat(r.header().name()).hasSize(TraceReader.MAX_LINE_BYTES - "name ".length());
            assertThat(r.next().lineNumber()).isEqualTo(6);
        }
        // One byte more, and without any line break at all.
        TraceFormatException e = failure(text.replace(longName, longName + "x"));
        assertThat(e.lineNumber()).isEqualTo(2);
        assertThat(e.getMessage()).isEqualTo("t.bfctrace line 2: found a line longer than 1048576 bytes (1 MiB),"
                + " expected lines of at most 1 MiB (is this a trace?)");
        assertThat(failure("x".repeat(3 << 20)).lineNumber()).isEqualTo(1);
    }

    @Test
    void aLongTokenIsQuotedCutAsALongLineIs() {
        // A size of 500,000 digits: the message quotes its first 200 bytes, not the whole token.
        String digits = "9".repeat(500_000);
        TraceFormatException e = failure(HEADER + "alloc 1 " + digits + " => null\n");
        assertThat(e.getMessage()).isEqualTo("t.bfctrace line 6: found '" + "9".repeat(200) + "...' (too large),"
                + " expected a number of bytes of at most 9223372036854775807");
        e = failure(HEADER + "x".repeat(500_000) + " 1\n");
        assertThat(e.getMessage()).startsWith("t.bfctrace line 6: found '" + "x".repeat(200) + "...', expected a line"
                + " kind");
        // A token of 200 bytes is quoted whole.
        e = failure(HEADER + "alloc 1 " + "9".repeat(200) + " => null\n");
        assertThat(e.getMessage()).contains("found '" + "9".repeat(200) + "' (too large)");
    }

    @Test
    void aGzipFileTooShortForItsHeaderIsNamed() {
        // Ten bytes make a gzip header; three are the magic bytes and the method.
        EOFException e = catchThrowableOfType(() -> TraceReader.open(new ByteArrayInputStream(
                new byte[] {0x1f, (byte) 0x8b, 8}), "small.bfctrace.gz"), EOFException.class);
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).isEqualTo("small.bfctrace.gz: the gzip header is cut short (the file is truncated"
                + " or empty); check it with 'gzip -t'");
        ZipException z = catchThrowableOfType(() -> TraceReader.open(new ByteArrayInputStream(
                new byte[] {0x1f, (byte) 0x8b, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0}), "bad.bfctrace.gz"), ZipException.class);
        assertThat(z).isNotNull();
        assertThat(z.getMessage()).startsWith("bad.bfctrace.gz: not a valid gzip file (").endsWith("gzip -t'");
    }

    @Test
    void freeOfANullAllocationIsAllowedOnce() throws IOException {
        assertThat(lines(HEADER + "alloc 1 0 => null\nfree 1\n")).hasSize(2);
        assertThat(failure(HEADER + "alloc 1 0 => null\nfree 1\nfree 1\n").lineNumber()).isEqualTo(8);
    }

    @Test
    void readsAWorkloadTrace() throws IOException {
        try (TraceReader r = open(WORKLOAD_HEADER + "alloc 1 100\nalloc 2 5 align=128 freed_before=2\nfree 1\n"
                + "frontier 3\nclear_stats\nfree 2\n")) {
            assertThat(r.header().isWorkload()).isTrue();
            TraceEvent e = r.next();
            assertThat(e.answered()).isFalse();
            assertThat(e.toString()).isEqualTo("alloc 1 100");
            assertThat(r.next().toString()).isEqualTo("alloc 2 5 align=128 freed_before=2");
            int n = 2;
            while (r.next() != null) {
                n++;
            }
            assertThat(n).isEqualTo(6);
        }
    }

    @Test
    void detectsGzipByMagicBytesNotName(@TempDir Path dir) throws IOException {
        String text = HEADER + "alloc 1 1 => 0x7f0000000000\nfree 1\n";
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            gz.write(text.getBytes(StandardCharsets.UTF_8));
        }
        Path gzipNamedPlain = dir.resolve("gzip.bfctrace");
        Files.write(gzipNamedPlain, bytes.toByteArray());
        Path plainNamedGz = dir.resolve("plain.bfctrace.gz");
        Files.writeString(plainNamedGz, text);
        for (Path p : new Path[] {gzipNamedPlain, plainNamedGz}) {
            try (TraceReader r = TraceReader.open(p)) {
                assertThat(r.file()).isEqualTo(p.toString());
                assertThat(r.header().name()).isEqualTo("t: a test trace");
                assertThat(r.next().kind()).isEqualTo(TraceEvent.Kind.ALLOC);
                assertThat(r.next().kind()).isEqualTo(TraceEvent.Kind.FREE);
                assertThat(r.next()).isNull();
            }
        }
    }

    @Test
    void truncatedGzipNamesTheFileAndLine() throws IOException {
        StringBuilder text = new StringBuilder(HEADER);
        for (int i = 1; i <= 20000; i++) {
            text.append("alloc ").append(i).append(" 1 => null\n");
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            gz.write(text.toString().getBytes(StandardCharsets.UTF_8));
        }
        byte[] truncated = Arrays.copyOf(bytes.toByteArray(), bytes.size() / 2);
        IOException e = catchThrowableOfType(() -> {
            try (TraceReader r = TraceReader.open(new ByteArrayInputStream(truncated), "cut.bfctrace.gz")) {
                while (r.next() != null) {
                    // read to the end
                }
            }
        }, IOException.class);
        assertThat(e).isNotNull().isNotInstanceOf(TraceFormatException.class);
        assertThat(e.getMessage()).startsWith("cut.bfctrace.gz line ").endsWith(": the gzip data ends early: the file"
                + " is truncated (or still being written); check it with 'gzip -t'");
    }

    private static byte[] gzip(String text) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            gz.write(text.getBytes(StandardCharsets.UTF_8));
        }
        return bytes.toByteArray();
    }

    private static List<String> lines(InputStream in) throws IOException {
        List<String> out = new ArrayList<>();
        try (TraceReader r = TraceReader.open(in, "two.bfctrace.gz")) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                out.add(e.lineNumber() + ": " + e);
            }
        }
        return out;
    }

    /**
     * A gzip trace of two members ({@code cat a.gz b.gz}) is read to the end of the stream: also
     * from a stream that has no byte available when the first member ends (a pipe whose writer
     * is slower), and one cut inside its second member's header ends early. Both were read as a
     * whole trace of the first member's lines ({@code GZIPInputStream} looks for a next member
     * only where bytes are available, and takes one it cannot read for the end).
     */
    @Test
    void aTraceOfTwoGzipMembersIsReadToTheEndOfTheStream() throws IOException {
        byte[] first = gzip(HEADER + "alloc 1 100 => 0x7f0000000000\n");
        byte[] second = gzip("free 1\nalloc 2 200 => null\n");
        byte[] both = Arrays.copyOf(first, first.length + second.length);
        System.arraycopy(second, 0, both, first.length, second.length);
        List<String> whole = List.of("6: alloc 1 100 => 0x7f0000000000", "7: free 1", "8: alloc 2 200 => null");
        assertThat(lines(new ByteArrayInputStream(both))).containsExactlyElementsOf(whole);
        // A pipe: the first member in one read, nothing available then, the second member later.
        InputStream pipe = new InputStream() {
            private int at;

            @Override
            public int read() {
                return at == both.length ? -1 : both[at++] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                int end = at < first.length ? first.length : both.length;
                int n = Math.min(len, end - at);
                if (n <= 0) {
                    return -1;
                }
                System.arraycopy(both, at, b, off, n);
                at += n;
                return n;
            }

            @Override
            public int available() {
                return 0;
            }
        };
        assertThat(lines(pipe)).containsExactlyElementsOf(whole);
        for (int keep = 1; keep < second.length; keep++) {
            IOException e = readFailure(new ByteArrayInputStream(Arrays.copyOf(both, first.length + keep)),
                    "two.bfctrace.gz");
            assertThat(e).as("%d bytes of the second member", keep).isNotNull()
                    .isNotInstanceOf(TraceFormatException.class);
            assertThat(e.getMessage()).as("%d bytes of the second member", keep).startsWith("two.bfctrace.gz line ")
                    .endsWith(": the gzip data ends early: the file is truncated (or still being written); check it"
                            + " with 'gzip -t'");
        }
        // Bytes after the last member that are no member: not taken for the end of the trace.
        byte[] garbage = Arrays.copyOf(both, both.length + 3);
        IOException e = readFailure(new ByteArrayInputStream(garbage), "two.bfctrace.gz");
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).isEqualTo("two.bfctrace.gz line 9: corrupt gzip data (Not in GZIP format); check"
                + " it with 'gzip -t'");
    }

    /** Reads {@code in} as a trace to its end; returns the failure. */
    private static IOException readFailure(InputStream in, String file) {
        return catchThrowableOfType(() -> {
            try (TraceReader r = TraceReader.open(in, file)) {
                while (r.next() != null) {
                    // read to the end
                }
            }
        }, IOException.class);
    }

    /**
     * The header and line 6 (an alloc line) and the start of line 7, compressed and flushed so
     * that they can be decompressed whole from the bytes written so far.
     */
    private static byte[] gzipWithLine6Whole() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        GZIPOutputStream gz = new GZIPOutputStream(bytes, true);
        gz.write((HEADER + "alloc 1 100 => 0x7f0000000000\nfree").getBytes(StandardCharsets.UTF_8));
        gz.flush(); // a sync flush: everything written so far can be decompressed
        return bytes.toByteArray();
    }

    /**
     * A stream that fails while line 7 is being read (lines 1 to 6 were read whole): the
     * message names the file and line 7, the line being read, as the class description says,
     * for a read error, gzip data that ends early and corrupt gzip data alike.
     */
    @Test
    void aDamagedStreamNamesTheLineBeingRead() throws IOException {
        byte[] sixLines = (HEADER + "alloc 1 100 => 0x7f0000000000\nfree").getBytes(StandardCharsets.UTF_8);
        InputStream failing = new InputStream() {
            private int at;

            @Override
            public int read() throws IOException {
                if (at == sixLines.length) {
                    throw new IOException("Input/output error");
                }
                return sixLines[at++] & 0xff;
            }
        };
        IOException e = readFailure(failing, "t.bfctrace");
        assertThat(e).isNotNull().isNotInstanceOf(TraceFormatException.class);
        assertThat(e.getMessage()).isEqualTo("t.bfctrace line 7: Input/output error");

        e = readFailure(new ByteArrayInputStream(gzipWithLine6Whole()), "cut.bfctrace.gz");
        assertThat(e).isNotNull().isNotInstanceOf(TraceFormatException.class);
        assertThat(e.getMessage()).isEqualTo("cut.bfctrace.gz line 7: the gzip data ends early: the file is"
                + " truncated (or still being written); check it with 'gzip -t'");

        // Then, read apart from them, 0x07: a final deflate block of the reserved type 3, which no
        // deflate stream has.
        e = readFailure(new java.io.SequenceInputStream(new ByteArrayInputStream(gzipWithLine6Whole()),
                new ByteArrayInputStream(new byte[] {7, 0, 0, 0, 0, 0, 0, 0})), "bad.bfctrace.gz");
        assertThat(e).isNotNull().isNotInstanceOf(TraceFormatException.class);
        assertThat(e.getMessage()).startsWith("bad.bfctrace.gz line 7: corrupt gzip data (")
                .endsWith("); check it with 'gzip -t'");
    }

    /** The format's shortest numbers and addresses: 0x0 is the number 0, 0x1 the address 1. */
    @Test
    void readsTheShortestHexNumberAndAddress() throws IOException {
        assertThat(lines(HEADER + "frontier 0x0\nalloc 1 1 => 0x1\n"))
                .containsExactly("6: frontier 0", "7: alloc 1 1 => 0x1");
    }

    /** Reads a trace expecting a failure on {@code line}: what was found and what was expected. */
    private static void assertRefused(String text, long line, String found, String expected) {
        TraceFormatException e = failure(text);
        assertThat(e).as(text).isNotNull();
        assertThat(e.lineNumber()).as(e.getMessage()).isEqualTo(line);
        assertThat(e.found()).as(e.getMessage()).isEqualTo(found);
        assertThat(e.expected()).as(e.getMessage()).isEqualTo(expected);
    }

    /**
     * What a number or an address must be, said as the format says it: an address where null
     * is allowed (an alloc's answer) and where it is not (a sub free), never 0, and {@code 0x}
     * without digits is no number.
     */
    @Test
    void aBadNumberOrAddressIsRefusedSayingWhatWasExpectedThere() {
        String a1 = "alloc 1 100 => 0x7f0000000000\n";
        assertRefused(HEADER + "frontier 0x\n", 6, "'0x'", "a count (a number)");
        assertRefused(HEADER + "alloc 1 100 => 0x\n", 6, "'0x'", "an address (lower-case hex after 0x) or null");
        assertRefused(HEADER + "alloc 1 100 => 0x0\n", 6, "'0x0'", "a non-zero address, or null");
        assertRefused(HEADER + a1 + "sub free null 4096\n", 7, "'null'", "an address (lower-case hex after 0x)");
        assertRefused(HEADER + a1 + "sub free 0x0 4096\n", 7, "'0x0'", "a non-zero address");
    }

    /**
     * {@code fragmentation_fraction} is a decimal such as 0, 0.01 or 0.9; an empty value or one
     * with two points is refused on the options line as such, not read as some other number.
     */
    @Test
    void fragmentationFractionIsADecimal() throws IOException {
        try (TraceReader r = open(NAME + SOURCE + OPTIONS.replace("fragmentation_fraction=0",
                "fragmentation_fraction=0.9") + SUBALLOCATOR)) {
            assertThat(r.header().fragmentationFraction()).isEqualTo(0.9);
        }
        for (String bad : new String[] {"fragmentation_fraction=", "fragmentation_fraction=0.1.2"}) {
            assertRefused(NAME + SOURCE + OPTIONS.replace("fragmentation_fraction=0", bad) + SUBALLOCATOR, 4,
                    "'" + bad + "'", "fragmentation_fraction=<a decimal such as 0 or 0.01>");
        }
    }

    /**
     * A file with Windows line ends is refused at its first line, saying how to convert it (the
     * message said only that lines are separated by '\n').
     */
    @Test
    void windowsLineEndsAreRefusedSayingHowToConvertThem() {
        String expected = "lines separated by '\\n' only (Windows line ends, '\\r\\n', can be converted, e.g. with"
                + " dos2unix or sed -i 's/\\r$//')";
        assertRefused(HEADER.replace("\n", "\r\n"), 1, "a carriage return at the end of the line", expected);
        assertRefused(HEADER + "alloc 1 100 => null\r\n", 6, "a carriage return at the end of the line", expected);
    }

    /**
     * A trace saved as UTF-16 or UTF-32 (with a byte-order mark, or without one: NUL bytes
     * between the characters) is refused saying so and how to convert it; the message quoted
     * the line's bytes (0xff 0xfe as two replacement characters, then {@code b\x00f\x00...}).
     */
    @Test
    void aTraceInUtf16OrUtf32IsRefusedSayingHowToConvertIt() throws IOException {
        String text = HEADER + "alloc 1 100 => null\n";
        java.nio.charset.Charset utf32le = java.nio.charset.Charset.forName("UTF-32LE");
        java.nio.charset.Charset utf32be = java.nio.charset.Charset.forName("UTF-32BE");
        Object[][] cases = {
            // {bytes, found, iconv's name of the encoding}
            {concat(new byte[] {(byte) 0xFF, (byte) 0xFE}, text.getBytes(StandardCharsets.UTF_16LE)),
                "a UTF-16 byte-order mark (bytes ff fe)", "utf-16"},
            {text.getBytes(StandardCharsets.UTF_16), "a UTF-16 byte-order mark (bytes fe ff)", "utf-16"},
            {concat(new byte[] {(byte) 0xFF, (byte) 0xFE, 0, 0}, text.getBytes(utf32le)),
                "a UTF-32 byte-order mark (bytes ff fe 00 00)", "utf-32"},
            {concat(new byte[] {0, 0, (byte) 0xFE, (byte) 0xFF}, text.getBytes(utf32be)),
                "a UTF-32 byte-order mark (bytes 00 00 fe ff)", "utf-32"},
            {text.getBytes(StandardCharsets.UTF_16LE), "NUL bytes between the characters (bytes 62 00 66 00, as in"
                + " UTF-16)", "utf-16le"},
            {text.getBytes(StandardCharsets.UTF_16BE), "NUL bytes between the characters (bytes 00 62 00 66, as in"
                + " UTF-16)", "utf-16be"},
            {text.getBytes(utf32le), "NUL bytes between the characters (bytes 62 00 00 00, as in UTF-32)", "utf-32le"},
            {text.getBytes(utf32be), "NUL bytes between the characters (bytes 00 00 00 62, as in UTF-32)", "utf-32be"},
        };
        for (Object[] c : cases) {
            TraceFormatException e = catchThrowableOfType(() -> {
                try (TraceReader r = TraceReader.open(new ByteArrayInputStream((byte[]) c[0]), "t.bfctrace")) {
                    r.next();
                }
            }, TraceFormatException.class);
            assertThat(e).as("%s", c[2]).isNotNull();
            assertThat(e.getMessage()).isEqualTo("t.bfctrace line 1: found " + c[1] + ", expected a trace in UTF-8, the"
                    + " format's encoding: 'bfctrace 1' (convert the file, e.g. with iconv -f " + c[2] + " -t utf-8)");
        }
        // After a comment line (a '#' and its NUL): the byte order cannot be told from the line.
        byte[] commented = ("#\n" + text).getBytes(StandardCharsets.UTF_16LE);
        TraceFormatException e = catchThrowableOfType(() -> {
            try (TraceReader r = TraceReader.open(new ByteArrayInputStream(commented), "t.bfctrace")) {
                r.next();
            }
        }, TraceFormatException.class);
        assertThat(e).isNotNull();
        assertThat(e.lineNumber()).isEqualTo(2);
        assertThat(e.found()).isEqualTo("NUL bytes between the characters (bytes 00 62 00 66, as in UTF-16)");
        assertThat(e.expected()).endsWith("e.g. with iconv -f utf-16le (or utf-16be) -t utf-8)");
        // UTF-8 is read as before.
        assertThat(lines(text)).containsExactly("6: alloc 1 100 => null");
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** A header token that is no key=value is refused as such, not as an unknown key. */
    @Test
    void aHeaderTokenWithoutEqualsSignIsRefusedAsNoKeyValue() {
        TraceFormatException e = failure(NAME + SOURCE + OPTIONS.replace("options ", "options x ") + SUBALLOCATOR);
        assertThat(e).isNotNull();
        assertThat(e.lineNumber()).isEqualTo(4);
        assertThat(e.found()).isEqualTo("'x'");
        assertThat(e.expected()).startsWith("key=value ('options memory_limit=<bytes>");
    }

    /** Blank lines are comments, a line of spaces and tabs too. */
    @Test
    void aLineOfSpacesAndTabsIsBlank() throws IOException {
        assertThat(lines(HEADER + "alloc 1 100 => null\n \t \n\t\nfree 1\n"))
                .containsExactly("6: alloc 1 100 => null", "9: free 1");
    }

    /** lineNumber() counts every line read, comments and blank lines too. */
    @Test
    void lineNumberCountsCommentsAndBlankLines() throws IOException {
        try (TraceReader r = open("# a comment\n" + HEADER + "\n# another\nfrontier 1\n# last\n")) {
            assertThat(r.lineNumber()).as("after the header").isEqualTo(6);
            assertThat(r.next().lineNumber()).isEqualTo(9);
            assertThat(r.lineNumber()).isEqualTo(9);
            assertThat(r.next()).isNull();
            assertThat(r.lineNumber()).isEqualTo(10);
        }
    }

    /** A stream that records its close, and fails it if told to. */
    private static final class ClosingStream extends ByteArrayInputStream {
        final boolean failClose;
        boolean closed;

        ClosingStream(String text, boolean failClose) {
            super(text.getBytes(StandardCharsets.UTF_8));
            this.failClose = failClose;
        }

        @Override
        public void close() throws IOException {
            closed = true;
            if (failClose) {
                throw new IOException("close failed");
            }
        }
    }

    /**
     * The reader owns its stream: closing it closes the stream, and so does a failed open, whose
     * exception keeps a failure of that close as suppressed, not lost.
     */
    @Test
    void theReaderClosesItsStreamAndKeepsAFailedClose() throws IOException {
        ClosingStream in = new ClosingStream(HEADER, false);
        TraceReader r = TraceReader.open(in, "t.bfctrace");
        assertThat(in.closed).isFalse();
        r.close();
        assertThat(in.closed).isTrue();

        ClosingStream bad = new ClosingStream("bfctrace 2\n", true);
        TraceFormatException e = catchThrowableOfType(() -> TraceReader.open(bad, "t.bfctrace"),
                TraceFormatException.class);
        assertThat(e).isNotNull();
        assertThat(bad.closed).isTrue();
        assertThat(e.getSuppressed()).singleElement()
                .satisfies(s -> assertThat(s).isInstanceOf(IOException.class).hasMessage("close failed"));
    }

    /** A line of more tokens than a line kind has (20) is read whole and refused for what it holds. */
    @Test
    void aLineOfManyTokensIsRefusedForItsContent() {
        assertRefused(HEADER + "stats" + " pool_bytes=0".repeat(19) + "\n", 6, "a second 'pool_bytes=0'",
                "each stats key at most once");
    }

    /**
     * What a malformed header line is refused as: the line or the token at fault, and the
     * syntax of the line expected there.
     */
    @Test
    void aMalformedHeaderLineIsRefusedNamingWhatIsWrongWithIt() {
        String simSyntax = "'suballocator sim base=<hex> capacity=<bytes> gap=<bytes> coalescing=<true|false>'";
        assertRefused("bfctrace 1\nname\n", 2, "'name' without text", "'name <text>'");
        assertRefused("bfctrace 1\nnamex t\n", 2, "'namex t'", "'name <text>'");
        assertRefused(NAME + "source\n", 3, "'source' without text", "'source <text>'");
        assertRefused(NAME + SOURCE + OPTIONS + "suballocator sim\n", 5,
                "'suballocator sim' without base=, capacity=, gap=, coalescing=", simSyntax);
        assertRefused(NAME + SOURCE + OPTIONS + "suballocator cuda\n", 5, "sub-allocator kind 'cuda'",
                "sim (the only sub-allocator of format version 1)");
        assertRefused(NAME + SOURCE + OPTIONS + "suballocator\n", 5, "'suballocator'",
                "sim (the only sub-allocator of format version 1)");
        // base + capacity is at most 2^63 - 1: 0x7fffffffffff0000 + 65536 is 2^63.
        assertRefused(NAME + SOURCE + OPTIONS + SUBALLOCATOR.replace("base=0x7f0000000000", "base=0x7fffffffffff0000")
                .replace("capacity=69206016", "capacity=65536"), 5, "base + capacity past 2^63",
                "an address space that ends below 0x8000000000000000");
    }

    /** The message of TraceFormatException's class description is the reader's, word for word. */
    @Test
    void theDocumentedExampleMessageIsTheReaders() throws IOException {
        String text = HEADER + "frontier 1\n".repeat(6) + "alloc 1 64 algn=64 => null\n";
        TraceFormatException e = catchThrowableOfType(() -> {
            try (TraceReader r = TraceReader.open(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)),
                    "tiny.bfctrace")) {
                while (r.next() != null) {
                    // read to the end
                }
            }
        }, TraceFormatException.class);
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).isEqualTo(
                "tiny.bfctrace line 12: found unknown key 'algn=64', expected align=<n> or freed_before=<n>");
    }

    /** A byte-order mark alone on the first line is refused with the hint to save without one. */
    @Test
    void aByteOrderMarkAloneOnTheFirstLineGetsTheHint() {
        TraceFormatException e = failure("\uFEFF\n" + HEADER);
        assertThat(e).isNotNull();
        assertThat(e.lineNumber()).isEqualTo(1);
        assertThat(e.expected()).contains("without the byte-order mark \\uFEFF before it");
    }

    /**
     * What a malformed body line is refused as: the syntax expected is that of the trace's kind
     * (answers in a conformance trace, none in a workload trace), and a line named in the
     * message is the line it names.
     */
    @Test
    void aMalformedBodyLineIsRefusedNamingWhatIsWrongWithIt() {
        String a1 = "alloc 1 100 => 0x7f0000000000\n";
        assertRefused(HEADER + "alloc 1\n", 6, "'alloc 1'",
                "'alloc <id> <bytes> [align=<n>] [freed_before=<n>] => <hex|null>'");
        assertRefused(WORKLOAD_HEADER + "alloc 1\n", 6, "'alloc 1'", "'alloc <id> <bytes> [align=<n>] [freed_before=<n>]'");
        assertRefused(HEADER + "alloc 1 100 x => null\n", 6, "'x'", "align=<n>, freed_before=<n> or '=> <hex|null>'");
        assertRefused(WORKLOAD_HEADER + "alloc 1 100 x\n", 6, "'x'", "align=<n> or freed_before=<n>");
        assertRefused(HEADER + "# a comment\n\nalloc 1 100 => null\nchunk 1 size=256 requested=100 allocation_id=1\n",
                9, "chunk of id 1, whose alloc (line 8) returned null", "an id whose alloc returned an address");
        assertRefused(HEADER + a1 + "sub alloc\n", 7, "'sub alloc'", "'sub alloc <bytes> => <hex|null>'");
        assertRefused(HEADER + a1 + "sub free\n", 7, "'sub free'", "'sub free <hex> <bytes>'");
        assertRefused(HEADER + a1 + "sub realloc\n", 7, "'realloc'",
                "'sub alloc <bytes> => <hex|null>' or 'sub free <hex> <bytes>'");
        assertRefused(HEADER + a1 + "sub\n", 7, "'sub'",
                "'sub alloc <bytes> => <hex|null>' or 'sub free <hex> <bytes>'");
    }

    @Test
    void readsANamedPipe(@TempDir Path dir) throws Exception {
        // Files.newInputStream's available() seeks, and a pipe refuses that ("Illegal seek").
        Path fifo = dir.resolve("t.fifo");
        ChildProcess.Result mkfifo;
        try {
            mkfifo = ChildProcess.run(List.of("mkfifo", fifo.toString()), Duration.ofSeconds(30));
        } catch (IOException e) {
            assumeTrue(false, "no mkfifo here: " + e.getMessage());
            return;
        }
        assumeTrue(mkfifo.status() == 0 && Files.exists(fifo), "mkfifo failed: " + mkfifo.output());
        byte[] text = (HEADER + "alloc 1 1 => 0x7f0000000000\nfree 1\n").getBytes(StandardCharsets.UTF_8);
        Thread writer = new Thread(() -> {
            try {
                Files.write(fifo, text);
            } catch (IOException e) {
                // the reader failed; its assertion says why
            }
        });
        writer.setDaemon(true);
        writer.start();
        try (TraceReader r = TraceReader.open(fifo)) {
            assertThat(r.next().kind()).isEqualTo(TraceEvent.Kind.ALLOC);
            assertThat(r.next().kind()).isEqualTo(TraceEvent.Kind.FREE);
            assertThat(r.next()).isNull();
        }
        writer.join(10_000);
    }

    @Test
    void missingFile(@TempDir Path dir) {
        assertThatThrownBy(() -> TraceReader.open(dir.resolve("nope.bfctrace")))
                .isInstanceOf(NoSuchFileException.class);
    }

    @Test
    void closesTheStreamWhenTheHeaderIsBad() {
        boolean[] closed = {false};
        InputStream in = new ByteArrayInputStream("bfctrace 2\n".getBytes(StandardCharsets.UTF_8)) {
            @Override
            public void close() {
                closed[0] = true;
            }
        };
        assertThatThrownBy(() -> TraceReader.open(in, "x")).isInstanceOf(TraceFormatException.class);
        assertThat(closed[0]).isTrue();
    }

    @Test
    void nextAfterCloseFails() throws IOException {
        TraceReader r = open(HEADER);
        r.close();
        r.close();
        assertThatThrownBy(r::next).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void messageNamesFileLineFoundAndExpected() {
        TraceFormatException e = failure(HEADER + "alloc 1 100 => 0x7f0000000000\nalloc 2 100 algn=64 => null\n");
        assertThat(e.file()).isEqualTo("t.bfctrace");
        assertThat(e.lineNumber()).isEqualTo(7);
        assertThat(e.found()).isEqualTo("unknown key 'algn=64'");
        assertThat(e.expected()).isEqualTo("align=<n> or freed_before=<n>");
        assertThat(e.getMessage()).isEqualTo(
                "t.bfctrace line 7: found unknown key 'algn=64', expected align=<n> or freed_before=<n>");
        assertThat(e.detail()).isEqualTo("line 7: found unknown key 'algn=64', expected align=<n> or freed_before=<n>");
    }

    static Stream<Arguments> malformedHeaders() {
        return Stream.of(
                Arguments.of("empty file", "", 1, "end of file"),
                Arguments.of("only comments", "# x\n\n", 3, "end of file"),
                Arguments.of("not a trace", "hello\n", 1, "'hello'"),
                Arguments.of("version 2", "bfctrace 2\n", 1, "version '2'"),
                Arguments.of("extra token on first line", "bfctrace 1 x\n", 1, "'bfctrace 1 x'"),
                Arguments.of("missing name", "bfctrace 1\n" + SOURCE, 2, "'source test'"),
                Arguments.of("name without text", "bfctrace 1\nname \n", 2, "without text"),
                Arguments.of("name glued to text", "bfctrace 1\nnamex\n", 2, "'namex'"),
                Arguments.of("truncated after name", NAME, 3, "end of file"),
                Arguments.of("options before source", NAME + OPTIONS, 3, "'options memory_limit"),
                Arguments.of("missing options", NAME + SOURCE + SUBALLOCATOR, 4, "'suballocator sim"),
                Arguments.of("options key missing", NAME + SOURCE
                        + "options memory_limit=1 allow_growth=true garbage_collection=false fragmentation_fraction=0\n",
                        4, "without timing_counter="),
                Arguments.of("options unknown key", NAME + SOURCE + OPTIONS.replace("\n", " retry=false\n"), 4,
                        "unknown key 'retry=false'"),
                Arguments.of("options key twice", NAME + SOURCE + OPTIONS.replace("\n", " allow_growth=true\n"), 4,
                        "a second 'allow_growth=true'"),
                Arguments.of("options bad boolean", NAME + SOURCE + OPTIONS.replace("allow_growth=true",
                        "allow_growth=yes"), 4, "'allow_growth=yes'"),
                Arguments.of("options exponent fraction", NAME + SOURCE + OPTIONS.replace("fragmentation_fraction=0",
                        "fragmentation_fraction=1e-6"), 4, "'fragmentation_fraction=1e-6'"),
                Arguments.of("options zero limit", NAME + SOURCE + OPTIONS.replace("memory_limit=1048576",
                        "memory_limit=0"), 4, "'memory_limit=0'"),
                Arguments.of("options token without =", NAME + SOURCE + OPTIONS.replace("\n", " x\n"), 4, "'x'"),
                Arguments.of("truncated before suballocator", NAME + SOURCE + OPTIONS, 5, "end of file"),
                Arguments.of("other sub-allocator", NAME + SOURCE + OPTIONS + "suballocator cuda device=0\n", 5,
                        "sub-allocator kind 'cuda'"),
                Arguments.of("base not a multiple of 256", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("base=0x7f0000000000", "base=0x7f0000000010"), 5,
                        "'base=0x7f0000000010'"),
                Arguments.of("base past 2^63", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("base=0x7f0000000000", "base=0xffffffffffffff00"), 5,
                        "'base=0xffffffffffffff00'"),
                Arguments.of("base 0", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("base=0x7f0000000000", "base=0x0"), 5, "'base=0x0'"),
                Arguments.of("base in decimal", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("base=0x7f0000000000", "base=4096"), 5, "'base=4096'"),
                Arguments.of("capacity 0", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("capacity=69206016", "capacity=0"), 5, "'capacity=0'"),
                Arguments.of("suballocator key missing", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace(" gap=0", ""), 5, "without gap="),
                Arguments.of("suballocator unknown key", NAME + SOURCE + OPTIONS
                        + SUBALLOCATOR.replace("gap=0", "gap=0 seed=1"), 5, "unknown key 'seed=1'"),
                Arguments.of("carriage return", "bfctrace 1\r\n", 1, "carriage return"),
                Arguments.of("carriage return after the name", "bfctrace 1\nname t\r\n" + SOURCE + OPTIONS
                        + SUBALLOCATOR, 2, "carriage return"),
                Arguments.of("carriage return after the source", NAME + "source test\r\n" + OPTIONS
                        + SUBALLOCATOR, 3, "carriage return"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedHeaders")
    void rejectsMalformedHeader(String what, String text, long line, String found) {
        TraceFormatException e = catchThrowableOfType(() -> open(text), TraceFormatException.class);
        assertThat(e).as(what).isNotNull();
        assertThat(e.lineNumber()).as(e.getMessage()).isEqualTo(line);
        assertThat(e.found()).as(e.getMessage()).contains(found);
        assertThat(e.getMessage()).startsWith("t.bfctrace line " + line + ": found ").contains(", expected ");
    }

    static Stream<Arguments> malformedBodies() {
        String a1 = "alloc 1 100 => 0x7f0000000000\n";
        return Stream.of(
                // Unknown things.
                Arguments.of("unknown line kind", "realloc 1 2\n", 6, "'realloc'"),
                Arguments.of("header line in the body", "bfctrace 1\n", 6, "'bfctrace'"),
                Arguments.of("unknown alloc key", "alloc 1 100 algn=64 => null\n", 6, "unknown key 'algn=64'"),
                Arguments.of("unknown chunk key", a1 + "chunk 1 size=256 requested=100 id=1\n", 7, "unknown key 'id=1'"),
                Arguments.of("unknown stats key", "stats num_allocs=0 bytes_free=0\n", 6, "unknown key 'bytes_free=0'"),
                Arguments.of("unknown sub kind", a1 + "sub realloc 5 => null\n", 7, "'realloc'"),
                // Token counts.
                Arguments.of("alloc too short", "alloc 1\n", 6, "'alloc 1'"),
                Arguments.of("alloc answer not last", "alloc 1 100 => 0x7f0000000000 align=64\n", 6, "'alloc 1 100 =>"),
                Arguments.of("alloc arrow without address", "alloc 1 100 =>\n", 6, "'alloc 1 100 =>'"),
                Arguments.of("alloc without arrow", "alloc 1 100 0x7f0000000000\n", 6, "'0x7f0000000000'"),
                Arguments.of("free without id", a1 + "free\n", 7, "'free'"),
                Arguments.of("free with two ids", a1 + "free 1 1\n", 7, "'free 1 1'"),
                Arguments.of("frontier without count", "frontier\n", 6, "'frontier'"),
                Arguments.of("clear_stats with argument", "clear_stats now\n", 6, "'clear_stats now'"),
                Arguments.of("chunk with a key missing", a1 + "chunk 1 size=256 requested=100\n", 7, "'chunk 1 size"),
                Arguments.of("chunk with a key twice", a1 + "chunk 1 size=256 size=256 allocation_id=1\n", 7,
                        "a second 'size=256'"),
                Arguments.of("stats without keys", "stats\n", 6, "without keys"),
                Arguments.of("stats key twice", "stats pool_bytes=0 pool_bytes=0\n", 6, "a second 'pool_bytes=0'"),
                Arguments.of("sub alloc without answer", a1 + "sub alloc 1048576\n", 7, "'sub alloc 1048576'"),
                Arguments.of("sub free without bytes", a1 + "sub free 0x7f0000000000\n", 7, "'sub free 0x7f0000000000'"),
                Arguments.of("sub alone", a1 + "sub\n", 7, "'sub'"),
                // Spacing.
                Arguments.of("two spaces", "alloc 1  100 => null\n", 6, "two spaces in a row"),
                Arguments.of("trailing space", "alloc 1 100 => null \n", 6, "a space at the end of the line"),
                Arguments.of("leading space", " alloc 1 100 => null\n", 6, "a space at the start of the line"),
                Arguments.of("tab separator", "alloc 1\t100 => null\n", 6, "'1\t100'"),
                Arguments.of("carriage return", "alloc 1 100 => null\r\n", 6, "carriage return"),
                // Numbers.
                Arguments.of("negative bytes", "alloc 1 -5 => null\n", 6, "'-5'"),
                Arguments.of("letters in a number", "alloc 1 12a => null\n", 6, "'12a'"),
                Arguments.of("number too large", "alloc 1 99999999999999999999 => null\n", 6, "too large"),
                Arguments.of("hex number too large", "alloc 0xffffffffffffffff 1 => null\n", 6, "too large"),
                Arguments.of("upper-case hex address", "alloc 1 100 => 0x7F0000000000\n", 6, "'0x7F0000000000'"),
                Arguments.of("address without 0x", "alloc 1 100 => 7f0000000000\n", 6, "'7f0000000000'"),
                Arguments.of("address 0x0", "alloc 1 100 => 0x0\n", 6, "'0x0'"),
                Arguments.of("address too long", "alloc 1 100 => 0x17f0000000000000f\n", 6, "more than 16 hex digits"),
                Arguments.of("null sub free", a1 + "sub free null 4096\n", 7, "'null'"),
                Arguments.of("bad stats value", "stats num_allocs=x\n", 6, "'num_allocs=x'"),
                Arguments.of("empty chunk value", a1 + "chunk 1 size= requested=100 allocation_id=1\n", 7,
                        "empty value in 'size='"),
                Arguments.of("alignment not a power of two", "alloc 1 100 align=48 => null\n", 6, "'align=48'"),
                Arguments.of("alignment 0", "alloc 1 100 align=0 => null\n", 6, "'align=0'"),
                Arguments.of("align twice", "alloc 1 100 align=64 align=64 => null\n", 6, "a second 'align=64'"),
                Arguments.of("freed_before twice", "alloc 1 100 freed_before=1 freed_before=1 => null\n", 6,
                        "a second 'freed_before=1'"),
                Arguments.of("bad frontier", "frontier -1\n", 6, "'-1'"),
                // Ids.
                Arguments.of("id reused", a1 + "alloc 1 200 => null\n", 7, "id 1 again (allocated on line 6)"),
                Arguments.of("id reused after free", a1 + "free 1\nalloc 1 200 => null\n", 8,
                        "id 1 again (allocated earlier and freed on line 7)"),
                Arguments.of("free of unknown id", a1 + "free 2\n", 7, "free of id 2"),
                Arguments.of("second free", a1 + "free 1\n# gap\nfree 1\n", 9,
                        "a second free of id 1 (first freed on line 7)"),
                Arguments.of("chunk of unknown id", "chunk 9 size=256 requested=1 allocation_id=1\n", 6, "chunk of id 9"),
                Arguments.of("chunk of freed id", a1 + "free 1\nchunk 1 size=256 requested=100 allocation_id=1\n", 8,
                        "freed on line 7"),
                Arguments.of("chunk of null allocation", "alloc 1 0 => null\nchunk 1 size=0 requested=0 allocation_id=0\n",
                        7, "returned null"),
                // Answered and unanswered.
                Arguments.of("unanswered alloc in a conformance trace", "alloc 1 100\n", 6, "without '=> <hex|null>'"),
                Arguments.of("mixing answered and unanswered", a1 + "alloc 2 100\n", 7, "without '=> <hex|null>'"),
                // Sub lines out of place.
                Arguments.of("sub line first", "sub alloc 1048576 => 0x7f0000000000\n", 6, "a sub line here"),
                Arguments.of("sub line after free", a1 + "free 1\nsub free 0x7f0000000000 1048576\n", 8,
                        "a sub line here"),
                Arguments.of("sub line after frontier", "frontier 1\nsub alloc 256 => null\n", 7, "a sub line here"),
                Arguments.of("sub line after chunk", a1 + "chunk 1 size=256 requested=100 allocation_id=1\n"
                        + "sub alloc 256 => null\n", 8, "a sub line here"),
                Arguments.of("sub line after stats", a1 + "stats num_allocs=1\nsub alloc 256 => null\n", 8,
                        "a sub line here"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedBodies")
    void rejectsMalformedBody(String what, String body, long line, String found) {
        TraceFormatException e = failure(HEADER + body);
        assertThat(e).as(what).isNotNull();
        assertThat(e.lineNumber()).as(e.getMessage()).isEqualTo(line);
        assertThat(e.found()).as(e.getMessage()).contains(found);
        assertThat(e.expected()).isNotBlank();
        assertThat(e.getMessage()).startsWith("t.bfctrace line " + line + ": found ").contains(", expected ");
    }

    static Stream<Arguments> malformedWorkloads() {
        return Stream.of(
                Arguments.of("answered alloc", "alloc 1 100 => null\n", 6, "an answer '=> null' in a workload trace"),
                Arguments.of("mixing unanswered and answered", "alloc 1 100\nalloc 2 100 => 0x7f0000000000\n", 7,
                        "an answer"),
                Arguments.of("sub line", "alloc 1 100\nsub alloc 1048576 => 0x7f0000000000\n", 7,
                        "a 'sub' line in a workload trace"),
                Arguments.of("chunk line", "alloc 1 100\nchunk 1 size=256 requested=100 allocation_id=1\n", 7,
                        "a 'chunk' line in a workload trace"),
                Arguments.of("stats line", "stats num_allocs=0\n", 6, "a 'stats' line in a workload trace"),
                Arguments.of("free of unknown id", "alloc 1 100\nfree 3\n", 7, "free of id 3"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedWorkloads")
    void rejectsMalformedWorkload(String what, String body, long line, String found) {
        TraceFormatException e = failure(WORKLOAD_HEADER + body);
        assertThat(e).as(what).isNotNull();
        assertThat(e.lineNumber()).as(e.getMessage()).isEqualTo(line);
        assertThat(e.found()).as(e.getMessage()).contains(found);
        assertThat(e.getMessage()).startsWith("t.bfctrace line " + line + ": found ");
    }

    @Test
    void readsLongTracesWithoutHoldingThem() throws IOException {
        // 300,000 lines through a stream that is never fully buffered: ids beyond the dense
        // table's first size, sparse ids, and lines split across buffer refills.
        StringBuilder sb = new StringBuilder(HEADER);
        int n = 100_000;
        for (int i = 1; i <= n; i++) {
            long id = i % 1000 == 0 ? (1L << 40) + i : i;
            sb.append("alloc ").append(id).append(' ').append(i).append(" => 0x").append(Long.toHexString(0x7f0000000000L + 256L * i))
                    .append('\n');
            sb.append("chunk ").append(id).append(" size=256 requested=").append(i).append(" allocation_id=").append(i)
                    .append('\n');
            sb.append("free ").append(id).append('\n');
        }
        long lines = 0;
        long lastLine = 0;
        try (TraceReader r = open(sb.toString())) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                lines++;
                lastLine = e.lineNumber();
            }
        }
        assertThat(lines).isEqualTo(3L * n);
        assertThat(lastLine).isEqualTo(5 + 3L * n);
    }
}
