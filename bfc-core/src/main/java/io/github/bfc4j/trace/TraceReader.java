/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.internal.GzipMembers;
import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;
import java.util.zip.ZipException;

/**
 * Reads a trace, format version 1 ({@code docs/trace-format.md}), plain or gzip-compressed
 * (recognised by its magic bytes, whatever the file's name), as a stream of lines: the header
 * is read and checked when the reader is opened, then {@link #next()} returns one body line at a
 * time. Nothing but the current line is held in memory, and reading creates no garbage per
 * line (the returned {@link TraceEvent} is reused).
 *
 * <p>Parsing is strict. Each of the following fails with a {@link TraceFormatException} naming
 * the file, the 1-based line, what was found and what was expected: a header line missing or out
 * of order, a version other than 1, an unknown line kind, a wrong number of tokens, an empty
 * token (two spaces in a row, a leading or trailing space), a carriage return, an unknown,
 * repeated or missing {@code key=value} token, a malformed number (decimal, or lower-case hex
 * after {@code 0x}; never negative), an address not in lower-case hex, an alignment that is not a
 * power of two, an id on a second {@code alloc} line, a {@code free} of an id no earlier
 * {@code alloc} line has or a second {@code free} of one, a {@code chunk} line about an id that
 * is not live (or whose allocation returned null), a {@code sub} line that does not follow an
 * {@code alloc} line or its other {@code sub} lines, and answers in a workload trace or their
 * absence in a conformance trace (so answered and unanswered {@code alloc} lines never mix).
 *
 * <p>A line holds at most {@value #MAX_LINE_BYTES} bytes (1 MiB), its {@code '\n'} not
 * counted; a longer one fails with a {@link TraceFormatException}, so that a file that is not a
 * trace (no line breaks) cannot make the reader hold it whole.
 *
 * <p>Every line should end with {@code '\n'}, the last one too. A last line without one is
 * read, since a file written by hand may lack it, but it is also what a file cut short looks
 * like ({@code free 648} cut to {@code free 6} is a valid line): {@link #lastLineUnterminated()}
 * says so once it has been read, and an error about that line says the file may be truncated.
 * Tools that must not take a cut file for a whole one (a conformance check) refuse it.
 *
 * <p>A damaged gzip stream fails with an {@link IOException} that names the file and, past the
 * gzip header, the line being read: a header cut short ({@link EOFException}) or invalid
 * ({@link ZipException}) when the reader is opened, data that ends early or is corrupt while
 * reading. A gzip stream of several members ({@code cat a.gz b.gz}) is read to the end of the
 * stream, member after member, however slowly they arrive; a member cut short ends early there
 * too, and bytes after the last member that are no gzip member are corrupt data.
 *
 * <p>A trace is a workload trace exactly when its {@code source} starts with
 * {@value TraceHeader#WORKLOAD_SOURCE_PREFIX} ({@link TraceHeader#isWorkload()}).
 *
 * <p>Not thread-safe.
 *
 * <pre>{@code
 * try (TraceReader r = TraceReader.open(path)) {
 *     TraceHeader h = r.header();
 *     for (TraceEvent e = r.next(); e != null; e = r.next()) {
 *         switch (e.kind()) { ... }
 *     }
 * }
 * }</pre>
 */
public final class TraceReader implements Closeable {
    private static final int BUFFER_BYTES = 1 << 16;
    /** The longest line read, in bytes, its {@code '\n'} not counted: 1 MiB. */
    public static final int MAX_LINE_BYTES = 1 << 20;
    private static final String GZIP_HINT = "check it with 'gzip -t'";

    // Per-id state in IdTable: (line of the last alloc/free << 2) | state; 0 = never seen.
    private static final long STATE_LIVE = 1;
    private static final long STATE_LIVE_NULL = 2;
    private static final long STATE_FREED = 3;

    private static final byte[] BFCTRACE = ascii("bfctrace");
    private static final byte[] VERSION_1 = ascii("1");
    private static final byte[] OPTIONS = ascii("options");
    private static final byte[] SUBALLOCATOR = ascii("suballocator");
    private static final byte[] SIM = ascii("sim");
    private static final byte[] ALLOC = ascii("alloc");
    private static final byte[] FREE = ascii("free");
    private static final byte[] FRONTIER = ascii("frontier");
    private static final byte[] CLEAR_STATS = ascii("clear_stats");
    private static final byte[] SUB = ascii("sub");
    private static final byte[] CHUNK = ascii("chunk");
    private static final byte[] STATS = ascii("stats");
    private static final byte[] ARROW = ascii("=>");
    private static final byte[] NULL = ascii("null");
    private static final byte[] TRUE = ascii("true");
    private static final byte[] FALSE = ascii("false");
    private static final byte[] ALIGN = ascii("align");
    private static final byte[] FREED_BEFORE = ascii("freed_before");
    private static final byte[] SIZE = ascii("size");
    private static final byte[] REQUESTED = ascii("requested");
    private static final byte[] ALLOCATION_ID = ascii("allocation_id");
    private static final byte[] MEMORY_LIMIT = ascii("memory_limit");
    private static final byte[] ALLOW_GROWTH = ascii("allow_growth");
    private static final byte[] GARBAGE_COLLECTION = ascii("garbage_collection");
    private static final byte[] FRAGMENTATION_FRACTION = ascii("fragmentation_fraction");
    private static final byte[] TIMING_COUNTER = ascii("timing_counter");
    private static final byte[] BASE = ascii("base");
    private static final byte[] CAPACITY = ascii("capacity");
    private static final byte[] GAP = ascii("gap");
    private static final byte[] COALESCING = ascii("coalescing");

    private static final StatKey[] STAT_KEYS = StatKey.values();
    private static final byte[][] STAT_KEY_NAMES = new byte[STAT_KEYS.length][];

    static {
        for (int i = 0; i < STAT_KEYS.length; i++) {
            STAT_KEY_NAMES[i] = ascii(STAT_KEYS[i].traceName());
        }
    }

    private static final String ALLOC_SYNTAX =
            "'alloc <id> <bytes> [align=<n>] [freed_before=<n>] => <hex|null>'";
    private static final String WORKLOAD_ALLOC_SYNTAX =
            "'alloc <id> <bytes> [align=<n>] [freed_before=<n>]'";
    private static final String OPTIONS_SYNTAX = "'options memory_limit=<bytes> allow_growth=<true|false>"
            + " garbage_collection=<true|false> fragmentation_fraction=<double> timing_counter=<true|false>'";
    private static final String SUBALLOCATOR_SYNTAX =
            "'suballocator sim base=<hex> capacity=<bytes> gap=<bytes> coalescing=<true|false>'";
    private static final String LINE_KINDS =
            "a line kind (alloc, free, frontier, clear_stats, sub, chunk or stats) or a comment starting with '#'";
    private static final String STAT_KEY_LIST;

    static {
        StringBuilder sb = new StringBuilder();
        for (StatKey k : STAT_KEYS) {
            sb.append(sb.length() == 0 ? "" : ", ").append(k.traceName()).append("=<n>");
        }
        STAT_KEY_LIST = sb.toString();
    }

    private final String file;
    private final InputStream in;
    private byte[] buf = new byte[BUFFER_BYTES];
    private int pos;
    private int limit;
    private int scan;
    private boolean eof;
    private boolean closed;
    private final boolean gzip;
    /** The line that had no '\n' after it (the input ended inside it), or 0. */
    private long unterminatedLine;

    private long lineNumber;
    private int lineStart;
    private int lineEnd;
    private int[] tokStart = new int[16];
    private int[] tokEnd = new int[16];
    private int tokens;

    private final TraceHeader header;
    private final boolean workload;
    private long optionsLine;
    private long suballocatorLine;
    private final IdTable ids = new IdTable();
    private boolean subAllowed;
    private final TraceEvent event = new TraceEvent();
    private final TraceProvenance provenance;

    private TraceReader(InputStream in, String file, boolean gzip) throws IOException {
        this.in = in;
        this.file = file;
        this.provenance = new TraceProvenance(file);
        this.gzip = gzip;
        this.header = readHeader();
        this.workload = header.isWorkload();
    }

    /**
     * Opens a trace file and reads its header. The file is gzip-decompressed if it starts with
     * the gzip magic bytes. It is opened once and read from start to end, so a named pipe
     * works too.
     *
     * @param path the trace file
     * @return a reader positioned after the header
     * @throws TraceFormatException if the header does not follow format version 1
     * @throws java.nio.file.NoSuchFileException if the file does not exist
     * @throws IOException if the file cannot be read
     * @throws NullPointerException if {@code path} is null
     */
    public static TraceReader open(Path path) throws IOException {
        return open(newInputStream(path), path.toString());
    }

    /**
     * Opens a file to be read once from start to end: a regular file, a named pipe or a
     * device. ({@code Files.newInputStream}'s {@code available()} seeks, which a pipe refuses
     * with "Illegal seek"; a {@code FileInputStream} asks the pipe instead.)
     *
     * @param path the file
     * @return its bytes
     * @throws java.nio.file.NoSuchFileException if the file does not exist
     * @throws FileSystemException if it is a directory (its reason says so)
     * @throws IOException if the file cannot be opened
     * @throws NullPointerException if {@code path} is null
     */
    public static InputStream newInputStream(Path path) throws IOException {
        Objects.requireNonNull(path, "path=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        if (Files.isDirectory(path)) {
            // Reading one fails with a bare "Is a directory", which names no file.
            throw new FileSystemException(path.toString(), null,
                    "is a directory (expected: a file)");
        }
        if (Files.exists(path) && !Files.isRegularFile(path)) {
            return new FileInputStream(path.toFile());
        }
        return Files.newInputStream(path);
    }

    /**
     * Reads a trace's header from a stream. The stream is gzip-decompressed if it starts with
     * the gzip magic bytes. The reader owns the stream: closing the reader closes it, and so does
     * a failure of this method.
     *
     * @param in the trace's bytes
     * @param file the trace's name, for error messages
     * @return a reader positioned after the header
     * @throws TraceFormatException if the header does not follow format version 1
     * @throws IOException if the stream cannot be read
     * @throws NullPointerException if {@code in} or {@code file} is null (the stream is then
     *     neither read nor closed)
     */
    public static TraceReader open(InputStream in, String file) throws IOException {
        // A BufferedInputStream over null says "Stream closed": the caller's stream was not.
        Objects.requireNonNull(in, "in=null (expected: the trace's bytes, e.g. Files.newInputStream(path))");
        Objects.requireNonNull(file, "file=null (expected: the trace's name for messages, e.g. \"my.bfctrace\")");
        InputStream stream = in;
        try {
            BufferedInputStream buffered = new BufferedInputStream(in, BUFFER_BYTES);
            stream = buffered;
            buffered.mark(2);
            int b0 = buffered.read();
            int b1 = buffered.read();
            buffered.reset();
            boolean gzip = b0 == 0x1f && b1 == 0x8b;
            if (gzip) {
                stream = gunzip(buffered, file);
            }
            return new TraceReader(stream, file, gzip);
        } catch (IOException | RuntimeException e) {
            try {
                stream.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** A gzip stream over {@code in}, whose header is read now: a damaged one is named as such. */
    private static InputStream gunzip(InputStream in, String file) throws IOException {
        try {
            return new GzipMembers(in, BUFFER_BYTES);
        } catch (EOFException e) {
            EOFException named = new EOFException(file + ": the gzip header is cut short (the file is truncated"
                    + " or empty); " + GZIP_HINT);
            named.initCause(e);
            throw named;
        } catch (ZipException e) {
            ZipException named = new ZipException(file + ": not a valid gzip file (" + e.getMessage() + "); "
                    + GZIP_HINT);
            named.initCause(e);
            throw named;
        }
    }

    /**
     * The trace's name, as used in error messages.
     *
     * @return the path or name the reader was opened with
     */
    public String file() {
        return file;
    }

    /**
     * The trace's header.
     *
     * @return the header, read when the reader was opened
     */
    public TraceHeader header() {
        return header;
    }

    /**
     * The number of the last line read (comments included).
     *
     * @return a 1-based line number, 0 before the first line
     */
    public long lineNumber() {
        return lineNumber;
    }

    /**
     * The line of the {@code options} header line, for reports about the allocator's setup.
     *
     * @return its 1-based line number (comments before it counted)
     */
    public long optionsLine() {
        return optionsLine;
    }

    /**
     * Whether the last line read had no {@code '\n'} after it: the input ended inside that
     * line, as it does when a file was cut short (or written without a final line break). Only
     * the last line of a trace can be such a line, so once {@link #next()} has returned
     * {@code null} this says whether the trace as a whole ends without one.
     *
     * @return true if the input ended inside the line read last
     */
    public boolean lastLineUnterminated() {
        return unterminatedLine != 0;
    }

    /** The line of the {@code suballocator} header line. */
    long suballocatorLine() {
        return suballocatorLine;
    }

    /**
     * Reads the next body line, skipping comments and blank lines.
     *
     * @return the line, valid until the next call (the same object is reused), or {@code null}
     *     at the end of the trace
     * @throws TraceFormatException if the line does not follow the format, or contradicts the
     *     lines before it
     * @throws IOException if the trace cannot be read
     * @throws IllegalStateException if the reader is closed
     */
    public TraceEvent next() throws IOException {
        if (closed) {
            throw new IllegalStateException("reader of " + file + " is closed");
        }
        while (readLine()) {
            if (isBlankOrComment()) {
                if (TraceProvenance.isProvenanceLine(buf, lineStart, lineEnd)) {
                    provenance.parse(text(lineStart, lineEnd), lineNumber);
                }
                continue;
            }
            tokenize();
            parseBodyLine();
            event.provenance = event.kind == TraceEvent.Kind.ALLOC ? provenance.takeFor(event.id) : null;
            if (event.kind != TraceEvent.Kind.ALLOC) {
                provenance.clearPending();
            }
            return event;
        }
        return null;
    }

    /**
     * Closes the underlying stream.
     *
     * @throws IOException if closing the stream fails
     */
    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            in.close();
        }
    }

    // ---------------------------------------------------------------------------------------
    // Lines and tokens

    /** Reads the next line into [lineStart, lineEnd); false at the end of the input. */
    private boolean readLine() throws IOException {
        while (true) {
            final byte[] b = buf;
            for (int i = scan; i < limit; i++) {
                if (b[i] == '\n') {
                    lineStart = pos;
                    lineEnd = i;
                    pos = i + 1;
                    scan = pos;
                    lineNumber++;
                    return true;
                }
            }
            scan = limit;
            if (eof) {
                if (pos < limit) {
                    // The last line has no '\n': whole, or the file was cut short.
                    lineStart = pos;
                    lineEnd = limit;
                    pos = limit;
                    lineNumber++;
                    unterminatedLine = lineNumber;
                    return true;
                }
                return false;
            }
            fill();
        }
    }

    private void fill() throws IOException {
        if (pos > 0) {
            System.arraycopy(buf, pos, buf, 0, limit - pos);
            limit -= pos;
            scan -= pos;
            pos = 0;
        }
        if (limit == buf.length) {
            // The buffer holds a line of at most MAX_LINE_BYTES and its '\n'.
            if (buf.length > MAX_LINE_BYTES) {
                lineNumber++;
                throw error("a line longer than " + MAX_LINE_BYTES + " bytes (1 MiB)",
                        "lines of at most 1 MiB (is this a trace?)");
            }
            buf = Arrays.copyOf(buf, Math.min(buf.length * 2, MAX_LINE_BYTES + 1));
        }
        int n;
        try {
            n = in.read(buf, limit, buf.length - limit);
        } catch (EOFException e) {
            throw new IOException(file + " line " + (lineNumber + 1) + ": " + (gzip
                    ? "the gzip data ends early: the file is truncated (or still being written); " + GZIP_HINT
                    : e.getMessage()), e);
        } catch (ZipException e) {
            throw new IOException(file + " line " + (lineNumber + 1) + ": corrupt gzip data (" + e.getMessage()
                    + "); " + GZIP_HINT, e);
        } catch (IOException e) {
            throw new IOException(file + " line " + (lineNumber + 1) + ": " + e.getMessage(), e);
        }
        if (n < 0) {
            eof = true;
        } else {
            limit += n;
        }
    }

    private boolean isBlankOrComment() {
        if (lineStart == lineEnd || buf[lineStart] == '#') {
            return true;
        }
        for (int i = lineStart; i < lineEnd; i++) {
            if (buf[i] != ' ' && buf[i] != '\t') {
                return false;
            }
        }
        return true;
    }

    /** Reads lines until one that is not a comment; fails at the end of the input. */
    private void nextContentLine(String expected) throws IOException {
        while (readLine()) {
            if (!isBlankOrComment()) {
                return;
            }
        }
        lineNumber++;
        throw error("end of file", expected);
    }

    private void checkNoCarriageReturn() throws TraceFormatException {
        if (lineEnd > lineStart && buf[lineEnd - 1] == '\r') {
            // A file saved with Windows line ends: say how to convert it.
            throw error("a carriage return at the end of the line", "lines separated by '\\n' only (Windows"
                    + " line ends, '\\r\\n', can be converted, e.g. with dos2unix or sed -i 's/\\r$//')");
        }
    }

    private void tokenize() throws TraceFormatException {
        checkNoCarriageReturn();
        final byte[] b = buf;
        final int end = lineEnd;
        tokens = 0;
        int s = lineStart;
        for (int i = lineStart; i <= end; i++) {
            if (i == end || b[i] == ' ') {
                if (i == s) {
                    throw emptyToken(i);
                }
                if (tokens == tokStart.length) {
                    tokStart = Arrays.copyOf(tokStart, tokens * 2);
                    tokEnd = Arrays.copyOf(tokEnd, tokens * 2);
                }
                tokStart[tokens] = s;
                tokEnd[tokens] = i;
                tokens++;
                s = i + 1;
            }
        }
    }

    private TraceFormatException emptyToken(int at) {
        String what;
        if (at == lineStart) {
            what = "a space at the start of the line";
        } else if (at == lineEnd) {
            what = "a space at the end of the line";
        } else {
            what = "two spaces in a row";
        }
        return error(what + " in " + quoteLine(), "tokens separated by single spaces");
    }

    private boolean tokenIs(int t, byte[] word) {
        return rangeIs(tokStart[t], tokEnd[t], word);
    }

    private boolean rangeIs(int s, int e, byte[] word) {
        if (e - s != word.length) {
            return false;
        }
        final byte[] b = buf;
        for (int i = 0; i < word.length; i++) {
            if (b[s + i] != word[i]) {
                return false;
            }
        }
        return true;
    }

    /** The index of the first '=' in token t, or -1. */
    private int equalsSign(int t) {
        for (int i = tokStart[t]; i < tokEnd[t]; i++) {
            if (buf[i] == '=') {
                return i;
            }
        }
        return -1;
    }

    private String text(int s, int e) {
        return new String(buf, s, e - s, StandardCharsets.UTF_8);
    }

    /** The most bytes of a token or line that a message quotes; a longer one is cut, {@code ...'}. */
    private static final int QUOTE_BYTES = 200;

    private String quote(int t) {
        return quote(tokStart[t], tokEnd[t]);
    }

    private String quoteLine() {
        return quote(lineStart, lineEnd);
    }

    /** Bytes {@code [s, e)} quoted for a message: at most {@link #QUOTE_BYTES}, shown visibly. */
    private String quote(int s, int e) {
        int cut = Math.min(e, s + QUOTE_BYTES);
        return "'" + visible(text(s, cut)) + (cut < e ? "...'" : "'");
    }

    /**
     * {@code text} with what a terminal would not show as it is (control characters but tab, a
     * byte-order mark) written as escapes: a message quotes the line, and the line may be any
     * bytes.
     */
    static String visible(String text) {
        StringBuilder sb = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean hidden = c < 0x20 && c != '\t' || c == 0x7f || c == '\uFEFF';
            if (hidden && sb == null) {
                sb = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            if (sb != null) {
                if (hidden) {
                    sb.append(c == '\uFEFF' ? "\\uFEFF" : String.format("\\x%02x", (int) c));
                } else {
                    sb.append(c);
                }
            }
        }
        return sb == null ? text : sb.toString();
    }

    private TraceFormatException error(String found, String expected) {
        if (lineNumber == unterminatedLine) {
            found += " on the last line, which has no line break after it (the file may be truncated)";
        }
        return new TraceFormatException(file, lineNumber, found, expected);
    }

    // ---------------------------------------------------------------------------------------
    // Numbers

    /** A number token: decimal, or lower-case hex after 0x; never negative. */
    private long number(int t, String what) throws TraceFormatException {
        return number(tokStart[t], tokEnd[t], t, what);
    }

    private long number(int s, int e, int t, String what) throws TraceFormatException {
        final byte[] b = buf;
        if (e - s > 2 && b[s] == '0' && b[s + 1] == 'x') {
            long v = hexDigits(s + 2, e, t, what);
            if (v < 0) {
                throw error(quote(t) + " (too large)", what + " of at most " + Long.MAX_VALUE);
            }
            return v;
        }
        if (s == e) {
            throw error("an empty value in " + quote(t), what);
        }
        long v = 0;
        for (int i = s; i < e; i++) {
            int d = b[i] - '0';
            if (d < 0 || d > 9) {
                throw error(quote(t), what);
            }
            if (v > (Long.MAX_VALUE - d) / 10) {
                throw error(quote(t) + " (too large)", what + " of at most " + Long.MAX_VALUE);
            }
            v = v * 10 + d;
        }
        return v;
    }

    private long hexDigits(int s, int e, int t, String what) throws TraceFormatException {
        if (e - s > 16) {
            throw error(quote(t) + " (more than 16 hex digits)", what);
        }
        final byte[] b = buf;
        long v = 0;
        for (int i = s; i < e; i++) {
            int c = b[i];
            int d;
            if (c >= '0' && c <= '9') {
                d = c - '0';
            } else if (c >= 'a' && c <= 'f') {
                d = c - 'a' + 10;
            } else {
                throw error(quote(t), what + " (hex digits in lower case)");
            }
            v = (v << 4) | d;
        }
        return v;
    }

    /** An address token: lower-case hex after 0x, not 0; or null (0) where allowed. */
    private long address(int t, boolean nullAllowed) throws TraceFormatException {
        return address(tokStart[t], tokEnd[t], t, nullAllowed);
    }

    private long address(int s, int e, int t, boolean nullAllowed) throws TraceFormatException {
        String what = nullAllowed ? "an address (lower-case hex after 0x) or null"
                : "an address (lower-case hex after 0x)";
        if (nullAllowed && rangeIs(s, e, NULL)) {
            return 0;
        }
        if (e - s < 3 || buf[s] != '0' || buf[s + 1] != 'x') {
            throw error(quote(t), what);
        }
        long v = hexDigits(s + 2, e, t, what);
        if (v == 0) {
            throw error(quote(t), nullAllowed ? "a non-zero address, or null" : "a non-zero address");
        }
        return v;
    }

    private boolean bool(int s, int e, int t) throws TraceFormatException {
        if (rangeIs(s, e, TRUE)) {
            return true;
        }
        if (rangeIs(s, e, FALSE)) {
            return false;
        }
        throw error(quote(t), "true or false");
    }

    /** A plain decimal: digits, optionally a '.' and more digits. */
    private double decimal(int s, int e, int t, String what) throws TraceFormatException {
        int dots = 0;
        boolean ok = e > s && buf[s] != '.' && buf[e - 1] != '.';
        for (int i = s; ok && i < e; i++) {
            if (buf[i] == '.') {
                dots++;
            } else if (buf[i] < '0' || buf[i] > '9') {
                ok = false;
            }
        }
        if (!ok || dots > 1) {
            throw error(quote(t), what);
        }
        return Double.parseDouble(text(s, e));
    }

    // ---------------------------------------------------------------------------------------
    // Header

    /**
     * Refuses a first line in UTF-16 or UTF-32, which the format is not (it is UTF-8): a
     * byte-order mark of either at the start of the file, or NUL bytes between the characters,
     * saying how to convert the file, where the line quoted would show bytes no one can read.
     */
    private void refuseWideText() throws TraceFormatException {
        final byte[] b = buf;
        int s = lineStart;
        int n = lineEnd - s;
        boolean first = lineNumber == 1;
        String found = null;
        String from = null;
        if (first && n >= 4 && (b[s] == (byte) 0xFF && b[s + 1] == (byte) 0xFE && b[s + 2] == 0 && b[s + 3] == 0
                || b[s] == 0 && b[s + 1] == 0 && b[s + 2] == (byte) 0xFE && b[s + 3] == (byte) 0xFF)) {
            found = "a UTF-32 byte-order mark (" + hexBytes(s, 4) + ")";
            from = "utf-32";
        } else if (first && n >= 2 && (b[s] == (byte) 0xFF && b[s + 1] == (byte) 0xFE
                || b[s] == (byte) 0xFE && b[s + 1] == (byte) 0xFF)) {
            found = "a UTF-16 byte-order mark (" + hexBytes(s, 2) + ")";
            from = "utf-16";
        } else if (n >= 4 && b[s + 1] == 0 && b[s + 2] == 0 && (b[s] == 0) != (b[s + 3] == 0)) {
            // x 00 00 00 or 00 00 00 x: a character of UTF-32.
            found = "NUL bytes between the characters (" + hexBytes(s, 4) + ", as in UTF-32)";
            from = !first ? "utf-32le (or utf-32be)" : b[s] != 0 ? "utf-32le" : "utf-32be";
        } else if (n >= 4 && (b[s] == 0) != (b[s + 1] == 0) && (b[s + 2] == 0) == (b[s] == 0)
                && (b[s + 3] == 0) == (b[s + 1] == 0)) {
            // x 00 y 00 or 00 x 00 y: characters of UTF-16 (after a first line, the line break's
            // NUL starts the line, whichever the byte order).
            found = "NUL bytes between the characters (" + hexBytes(s, 4) + ", as in UTF-16)";
            from = !first ? "utf-16le (or utf-16be)" : b[s] != 0 ? "utf-16le" : "utf-16be";
        }
        if (found != null) {
            throw error(found, "a trace in UTF-8, the format's encoding: 'bfctrace 1' (convert the file, e.g. with"
                    + " iconv -f " + from + " -t utf-8)");
        }
    }

    /** The {@code n} bytes from {@code s}, as {@code bytes ff fe}. */
    private String hexBytes(int s, int n) {
        StringBuilder sb = new StringBuilder("bytes");
        for (int i = s; i < s + n; i++) {
            sb.append(' ').append(String.format("%02x", buf[i] & 0xFF));
        }
        return sb.toString();
    }

    private TraceHeader readHeader() throws IOException {
        nextContentLine("'bfctrace 1' (the first line of a trace)");
        refuseWideText();
        tokenize();
        if (!tokenIs(0, BFCTRACE)) {
            boolean bom = lineEnd - lineStart >= 3 && buf[lineStart] == (byte) 0xEF && buf[lineStart + 1] == (byte) 0xBB
                    && buf[lineStart + 2] == (byte) 0xBF;
            throw error(quoteLine(), "'bfctrace 1' (the first line of a trace"
                    + (bom ? ", without the byte-order mark \\uFEFF before it: save the file as UTF-8 without one)"
                            : ")"));
        }
        if (tokens != 2) {
            throw error(quoteLine(), "'bfctrace 1'");
        }
        if (!tokenIs(1, VERSION_1)) {
            throw error("version " + quote(1), "version 1 (the only version this reader supports)");
        }
        String name = readTextLine("name");
        String source = readTextLine("source");

        nextContentLine(OPTIONS_SYNTAX);
        optionsLine = lineNumber;
        tokenize();
        if (!tokenIs(0, OPTIONS)) {
            throw error(quoteLine(), OPTIONS_SYNTAX);
        }
        long memoryLimit = 0;
        boolean allowGrowth = false;
        boolean garbageCollection = false;
        double fragmentationFraction = 0;
        boolean timingCounter = false;
        int seen = 0;
        for (int t = 1; t < tokens; t++) {
            int eq = equalsSign(t);
            if (eq < 0) {
                throw error(quote(t), "key=value (" + OPTIONS_SYNTAX + ")");
            }
            int s = tokStart[t];
            int v = eq + 1;
            int e = tokEnd[t];
            int bit;
            if (rangeIs(s, eq, MEMORY_LIMIT)) {
                bit = 1;
                memoryLimit = number(v, e, t, "memory_limit=<bytes>");
                if (memoryLimit <= 0) {
                    throw error(quote(t), "memory_limit=<bytes> greater than 0");
                }
            } else if (rangeIs(s, eq, ALLOW_GROWTH)) {
                bit = 2;
                allowGrowth = bool(v, e, t);
            } else if (rangeIs(s, eq, GARBAGE_COLLECTION)) {
                bit = 4;
                garbageCollection = bool(v, e, t);
            } else if (rangeIs(s, eq, FRAGMENTATION_FRACTION)) {
                bit = 8;
                fragmentationFraction = decimal(v, e, t, "fragmentation_fraction=<a decimal such as 0 or 0.01>");
            } else if (rangeIs(s, eq, TIMING_COUNTER)) {
                bit = 16;
                timingCounter = bool(v, e, t);
            } else {
                throw error("unknown key " + quote(t), "one of memory_limit, allow_growth, garbage_collection,"
                        + " fragmentation_fraction, timing_counter");
            }
            if ((seen & bit) != 0) {
                throw error("a second " + quote(t), "each options key once");
            }
            seen |= bit;
        }
        if (seen != 31) {
            throw error(quoteLine() + " without " + missing(seen,
                    "memory_limit=", "allow_growth=", "garbage_collection=", "fragmentation_fraction=",
                    "timing_counter="), OPTIONS_SYNTAX);
        }

        nextContentLine(SUBALLOCATOR_SYNTAX);
        suballocatorLine = lineNumber;
        tokenize();
        if (!tokenIs(0, SUBALLOCATOR)) {
            throw error(quoteLine(), SUBALLOCATOR_SYNTAX);
        }
        if (tokens < 2 || !tokenIs(1, SIM)) {
            throw error(tokens < 2 ? quoteLine() : "sub-allocator kind " + quote(1),
                    "sim (the only sub-allocator of format version 1)");
        }
        long base = 0;
        long capacity = 0;
        long gap = 0;
        boolean coalescing = false;
        seen = 0;
        for (int t = 2; t < tokens; t++) {
            int eq = equalsSign(t);
            if (eq < 0) {
                throw error(quote(t), "key=value (" + SUBALLOCATOR_SYNTAX + ")");
            }
            int s = tokStart[t];
            int v = eq + 1;
            int e = tokEnd[t];
            int bit;
            if (rangeIs(s, eq, BASE)) {
                bit = 1;
                base = address(v, e, t, false);
                if ((base & 255) != 0 || base <= 0) {
                    throw error(quote(t), "base=<hex>, a positive multiple of 256 below 2^63");
                }
            } else if (rangeIs(s, eq, CAPACITY)) {
                bit = 2;
                capacity = number(v, e, t, "capacity=<bytes>");
                if (capacity <= 0) {
                    throw error(quote(t), "capacity=<bytes> greater than 0");
                }
            } else if (rangeIs(s, eq, GAP)) {
                bit = 4;
                gap = number(v, e, t, "gap=<bytes>");
            } else if (rangeIs(s, eq, COALESCING)) {
                bit = 8;
                coalescing = bool(v, e, t);
            } else {
                throw error("unknown key " + quote(t), "one of base, capacity, gap, coalescing");
            }
            if ((seen & bit) != 0) {
                throw error("a second " + quote(t), "each suballocator key once");
            }
            seen |= bit;
        }
        if (seen != 15) {
            throw error(quoteLine() + " without " + missing(seen, "base=", "capacity=", "gap=", "coalescing="),
                    SUBALLOCATOR_SYNTAX);
        }
        if (base + capacity < 0) {
            throw error("base + capacity past 2^63", "an address space that ends below 0x8000000000000000");
        }
        try {
            return new TraceHeader(name, source, memoryLimit, allowGrowth, garbageCollection,
                    fragmentationFraction, timingCounter, base, capacity, gap, coalescing);
        } catch (IllegalArgumentException e) {
            throw error(e.getMessage(), "a valid header");
        }
    }

    private static String missing(int seen, String... keys) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < keys.length; i++) {
            if ((seen & (1 << i)) == 0) {
                sb.append(sb.length() == 0 ? "" : ", ").append(keys[i]);
            }
        }
        return sb.toString();
    }

    /** Reads a {@code "keyword <free text>"} header line and returns the text. */
    private String readTextLine(String keyword) throws IOException {
        String expected = "'" + keyword + " <text>'";
        nextContentLine(expected);
        checkNoCarriageReturn();
        int n = keyword.length();
        int s = lineStart;
        boolean keywordMatches = lineEnd - s >= n && rangeIs(s, s + n, ascii(keyword));
        if (!keywordMatches || (lineEnd - s > n && buf[s + n] != ' ')) {
            throw error(quoteLine(), expected);
        }
        if (lineEnd - s <= n + 1) {
            throw error(quoteLine() + " without text", expected);
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(buf, s + n + 1, lineEnd - s - n - 1))
                    .toString();
        } catch (CharacterCodingException e) {
            throw error("bytes that are not UTF-8", expected + " in UTF-8");
        }
    }

    // ---------------------------------------------------------------------------------------
    // Body

    private void parseBodyLine() throws TraceFormatException {
        final TraceEvent e = event;
        e.lineNumber = lineNumber;
        if (tokenIs(0, ALLOC)) {
            parseAlloc(e);
            subAllowed = true;
            return;
        }
        if (tokenIs(0, FREE)) {
            parseFree(e);
        } else if (tokenIs(0, SUB)) {
            parseSub(e);
            return; // a sub line keeps further sub lines allowed
        } else if (tokenIs(0, CHUNK)) {
            parseChunk(e);
        } else if (tokenIs(0, STATS)) {
            parseStats(e);
        } else if (tokenIs(0, FRONTIER)) {
            if (tokens != 2) {
                throw error(quoteLine(), "'frontier <n>'");
            }
            e.kind = TraceEvent.Kind.FRONTIER;
            e.count = number(1, "a count (a number)");
        } else if (tokenIs(0, CLEAR_STATS)) {
            if (tokens != 1) {
                throw error(quoteLine(), "'clear_stats' alone");
            }
            e.kind = TraceEvent.Kind.CLEAR_STATS;
        } else {
            throw error(quote(0), LINE_KINDS);
        }
        subAllowed = false;
    }

    private void parseAlloc(TraceEvent e) throws TraceFormatException {
        String syntax = workload ? WORKLOAD_ALLOC_SYNTAX : ALLOC_SYNTAX;
        if (tokens < 3) {
            throw error(quoteLine(), syntax);
        }
        long id = number(1, "an allocation id (a number)");
        long bytes = number(2, "a number of bytes");
        boolean answered = tokens >= 5 && tokenIs(tokens - 2, ARROW);
        int keysEnd = answered ? tokens - 2 : tokens;
        long alignment = TraceEvent.DEFAULT_ALIGNMENT;
        boolean alignmentGiven = false;
        long freedBefore = 0;
        boolean freedBeforeGiven = false;
        for (int t = 3; t < keysEnd; t++) {
            if (tokenIs(t, ARROW)) {
                throw error(quoteLine(), "'=>' followed by one token, <hex|null>, at the end of the line");
            }
            int eq = equalsSign(t);
            if (eq < 0) {
                throw error(quote(t), workload ? "align=<n> or freed_before=<n>"
                        : "align=<n>, freed_before=<n> or '=> <hex|null>'");
            }
            int s = tokStart[t];
            if (rangeIs(s, eq, ALIGN)) {
                if (alignmentGiven) {
                    throw error("a second " + quote(t), "align= at most once");
                }
                alignmentGiven = true;
                alignment = number(eq + 1, tokEnd[t], t, "align=<n>");
                if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
                    throw error(quote(t), "align=<a power of two>");
                }
            } else if (rangeIs(s, eq, FREED_BEFORE)) {
                if (freedBeforeGiven) {
                    throw error("a second " + quote(t), "freed_before= at most once");
                }
                freedBeforeGiven = true;
                freedBefore = number(eq + 1, tokEnd[t], t, "freed_before=<n>");
            } else {
                throw error("unknown key " + quote(t), "align=<n> or freed_before=<n>");
            }
        }
        long result = answered ? address(tokens - 1, true) : 0;
        if (workload && answered) {
            throw error("an answer '=> " + text(tokStart[tokens - 1], tokEnd[tokens - 1]) + "' in a workload trace",
                    WORKLOAD_ALLOC_SYNTAX + " (the source starts with '" + TraceHeader.WORKLOAD_SOURCE_PREFIX
                            + "'; answered and unanswered alloc lines must not mix)");
        }
        if (!workload && !answered) {
            throw error(quoteLine() + " without '=> <hex|null>'", ALLOC_SYNTAX + " (the source does not start with '"
                    + TraceHeader.WORKLOAD_SOURCE_PREFIX + "', so this is not a workload trace; answered and"
                    + " unanswered alloc lines must not mix)");
        }
        long state = ids.get(id);
        if (state != 0) {
            String earlier = (state & 3) == STATE_FREED
                    ? "allocated earlier and freed on line " + (state >>> 2)
                    : "allocated on line " + (state >>> 2);
            throw error("id " + id + " again (" + earlier + ")", "an id not used on an earlier alloc line");
        }
        ids.put(id, (lineNumber << 2) | (answered && result == 0 ? STATE_LIVE_NULL : STATE_LIVE));
        e.kind = TraceEvent.Kind.ALLOC;
        e.id = id;
        e.bytes = bytes;
        e.alignment = alignment;
        e.alignmentGiven = alignmentGiven;
        e.freedBefore = freedBefore;
        e.freedBeforeGiven = freedBeforeGiven;
        e.answered = answered;
        e.address = result;
    }

    private void parseFree(TraceEvent e) throws TraceFormatException {
        if (tokens != 2) {
            throw error(quoteLine(), "'free <id>'");
        }
        long id = number(1, "an allocation id (a number)");
        long state = ids.get(id);
        if (state == 0) {
            throw error("free of id " + id + ", which no earlier alloc line has", "an id from an earlier alloc line");
        }
        if ((state & 3) == STATE_FREED) {
            throw error("a second free of id " + id + " (first freed on line " + (state >>> 2) + ")",
                    "at most one free per id");
        }
        ids.put(id, (lineNumber << 2) | STATE_FREED);
        e.kind = TraceEvent.Kind.FREE;
        e.id = id;
    }

    private void checkNotWorkload() throws TraceFormatException {
        if (workload) {
            throw error("a " + quote(0) + " line in a workload trace", "only alloc, free, frontier and clear_stats"
                    + " lines (the source starts with '" + TraceHeader.WORKLOAD_SOURCE_PREFIX + "')");
        }
    }

    private void parseSub(TraceEvent e) throws TraceFormatException {
        checkNotWorkload();
        if (!subAllowed) {
            throw error("a sub line here", "sub lines only right after an alloc line (or its other sub lines),"
                    + " before any chunk or stats line");
        }
        if (tokens >= 2 && tokenIs(1, ALLOC)) {
            if (tokens != 5 || !tokenIs(3, ARROW)) {
                throw error(quoteLine(), "'sub alloc <bytes> => <hex|null>'");
            }
            e.kind = TraceEvent.Kind.SUB_ALLOC;
            e.bytes = number(2, "a number of bytes");
            e.address = address(4, true);
        } else if (tokens >= 2 && tokenIs(1, FREE)) {
            if (tokens != 4) {
                throw error(quoteLine(), "'sub free <hex> <bytes>'");
            }
            e.kind = TraceEvent.Kind.SUB_FREE;
            e.address = address(2, false);
            e.bytes = number(3, "a number of bytes");
        } else {
            throw error(tokens < 2 ? quoteLine() : quote(1),
                    "'sub alloc <bytes> => <hex|null>' or 'sub free <hex> <bytes>'");
        }
    }

    private void parseChunk(TraceEvent e) throws TraceFormatException {
        checkNotWorkload();
        String syntax = "'chunk <id> size=<n> requested=<n> allocation_id=<n>'";
        if (tokens != 5) {
            throw error(quoteLine(), syntax);
        }
        long id = number(1, "an allocation id (a number)");
        int seen = 0;
        for (int t = 2; t < 5; t++) {
            int eq = equalsSign(t);
            if (eq < 0) {
                throw error(quote(t), "size=<n>, requested=<n> or allocation_id=<n>");
            }
            int s = tokStart[t];
            int bit;
            if (rangeIs(s, eq, SIZE)) {
                bit = 1;
                e.size = number(eq + 1, tokEnd[t], t, "size=<n>");
            } else if (rangeIs(s, eq, REQUESTED)) {
                bit = 2;
                e.requested = number(eq + 1, tokEnd[t], t, "requested=<n>");
            } else if (rangeIs(s, eq, ALLOCATION_ID)) {
                bit = 4;
                e.allocationId = number(eq + 1, tokEnd[t], t, "allocation_id=<n>");
            } else {
                throw error("unknown key " + quote(t), "size=<n>, requested=<n> or allocation_id=<n>");
            }
            if ((seen & bit) != 0) {
                throw error("a second " + quote(t), syntax);
            }
            seen |= bit;
        }
        long state = ids.get(id);
        if (state == 0) {
            throw error("chunk of id " + id + ", which no earlier alloc line has", "a live id");
        }
        if ((state & 3) == STATE_FREED) {
            throw error("chunk of id " + id + ", freed on line " + (state >>> 2), "a live id");
        }
        if ((state & 3) == STATE_LIVE_NULL) {
            throw error("chunk of id " + id + ", whose alloc (line " + (state >>> 2) + ") returned null",
                    "an id whose alloc returned an address");
        }
        e.kind = TraceEvent.Kind.CHUNK;
        e.id = id;
    }

    private void parseStats(TraceEvent e) throws TraceFormatException {
        checkNotWorkload();
        if (tokens < 2) {
            throw error("'stats' without keys", "stats followed by one or more of " + STAT_KEY_LIST);
        }
        int seen = 0;
        int count = 0;
        for (int t = 1; t < tokens; t++) {
            int eq = equalsSign(t);
            if (eq < 0) {
                throw error(quote(t), "key=value, one of " + STAT_KEY_LIST);
            }
            int s = tokStart[t];
            int k = -1;
            for (int i = 0; i < STAT_KEY_NAMES.length; i++) {
                if (rangeIs(s, eq, STAT_KEY_NAMES[i])) {
                    k = i;
                    break;
                }
            }
            if (k < 0) {
                throw error("unknown key " + quote(t), "one of " + STAT_KEY_LIST);
            }
            if ((seen & (1 << k)) != 0) {
                throw error("a second " + quote(t), "each stats key at most once");
            }
            seen |= 1 << k;
            e.statKeys[count] = STAT_KEYS[k];
            e.statValues[count] = number(eq + 1, tokEnd[t], t, STAT_KEYS[k].traceName() + "=<n>");
            count++;
        }
        e.kind = TraceEvent.Kind.STATS;
        e.statCount = count;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
