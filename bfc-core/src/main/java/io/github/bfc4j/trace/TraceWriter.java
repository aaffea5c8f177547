/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.internal.ReplacingFile;
import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.zip.GZIPOutputStream;

/**
 * Writes a trace, format version 1 ({@code docs/trace-format.md}), plain or gzip-compressed, in
 * the canonical line format: single spaces, decimal numbers, addresses in lower-case hex after
 * {@code 0x} ({@code null} for 0), {@code align=} only when not 64 and {@code freed_before=}
 * only when not 0 (except that {@link #write(TraceEvent)} keeps what the line it copies spelled
 * out), header lines in their fixed order. Reading a trace and writing each event back
 * reproduces its non-comment lines exactly.
 *
 * <p>The header must be written first, exactly once. In a workload trace (the header's
 * {@code source} starts with {@value TraceHeader#WORKLOAD_SOURCE_PREFIX}) only unanswered
 * {@code alloc} lines and {@code free}, {@code frontier} and {@code clear_stats} lines may be
 * written; in a conformance trace {@code alloc} lines carry the answer. Beyond that the writer
 * does not check that the lines make sense together ({@link TraceReader} does).
 *
 * <p>Lines are formatted into a reused buffer, so writing creates no garbage per line. Not
 * thread-safe.
 */
public final class TraceWriter implements Closeable, Flushable {
    private static final int FLUSH_BYTES = 1 << 16;

    private final OutputStream out;
    private final GZIPOutputStream gzip;
    private final LineBuffer buffer = new LineBuffer(FLUSH_BYTES + 4096);
    private final TraceProvenance.Definitions definitions = new TraceProvenance.Definitions();
    /** The latest time a provenance written gave, -1 before any: times never go back. */
    private long lastTimeMicros = -1;
    private TraceHeader header;
    private boolean workload;
    private boolean closed;

    private TraceWriter(OutputStream out, boolean gzip) throws IOException {
        if (gzip) {
            try {
                this.gzip = new GZIPOutputStream(out, FLUSH_BYTES);
            } catch (IOException e) {
                try {
                    out.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
            this.out = this.gzip;
        } else {
            this.gzip = null;
            this.out = out;
        }
    }

    /** What {@link #write(Path, Content)} writes: the whole trace, header first. */
    @FunctionalInterface
    public interface Content {
        /**
         * Writes the trace.
         *
         * @param w a writer whose header is not written yet; closed by the caller
         * @throws IOException if writing fails (the file is then left as it was)
         */
        void writeTo(TraceWriter w) throws IOException;
    }

    /**
     * Writes a trace file whole or not at all, gzip-compressed if its name ends with
     * {@code .gz}: into a new file beside it, moved over it once {@code content} has returned
     * and the writer is closed. If {@code content} throws (or writing fails: a full disk), the
     * file is left as it was, or not created, and the new file is deleted: nothing cut short is
     * left that could read as a whole trace (a trace has no end mark). A file replaced keeps its
     * POSIX permissions; a new one gets what the umask gives. As a shell's {@code >} does, a
     * symbolic link is followed (the file it names is replaced, the link stays), a device or named
     * pipe ({@code /dev/null}, a FIFO) is written to directly, never replaced by a file, and a
     * file that may not be written (read-only) is refused. Unlike {@code >}, the file is a new
     * one: owned by the writer, and other hard links to the old file keep the old content.
     *
     * @param file the trace file, created or replaced
     * @param content what writes the trace
     * @throws java.nio.file.AccessDeniedException if {@code file} exists and may not be written
     *     (read-only, for a user other than root): the message names {@code file} and why;
     *     nothing is written
     * @throws java.nio.file.FileSystemException if {@code file} is a directory, or no file can be
     *     created beside it (its directory missing or not writable): the message names
     *     {@code file} and why; nothing is written
     * @throws IOException if writing fails or the move fails; the file is then as it was
     * @throws RuntimeException what {@code content} throws (an {@link IllegalArgumentException}
     *     of this writer, say); the file is then as it was
     * @throws NullPointerException if {@code file} or {@code content} is null
     */
    public static void write(Path file, Content content) throws IOException {
        Objects.requireNonNull(file, "file=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        Objects.requireNonNull(content, "content=null (expected: what writes the trace,"
                + " e.g. w -> { w.header(h); ... })");
        Path fileName = file.getFileName();
        boolean gzip = fileName != null && fileName.toString().endsWith(".gz");
        ReplacingFile.write(file, tmp -> {
            try (TraceWriter w = create(tmp, gzip)) {
                content.writeTo(w);
            }
        });
    }

    /**
     * Creates (or truncates) a trace file, gzip-compressed if its name ends with {@code .gz}.
     * The file is written in place: a failure part way leaves it cut short, and a trace cut
     * after a whole line reads as a whole one (a trace has no end mark); to replace a file whole
     * or not at all, use {@link #write(Path, Content)}.
     *
     * @param path the file
     * @return a writer that owns the file
     * @throws IOException if the file cannot be created
     * @throws NullPointerException if {@code path} is null
     */
    public static TraceWriter create(Path path) throws IOException {
        Objects.requireNonNull(path, "path=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        Path fileName = path.getFileName();
        return create(path, fileName != null && fileName.toString().endsWith(".gz"));
    }

    /**
     * Creates (or truncates) a trace file, written in place as {@link #create(Path)} does.
     *
     * @param path the file
     * @param gzip whether to gzip-compress it
     * @return a writer that owns the file
     * @throws IOException if the file cannot be created
     * @throws NullPointerException if {@code path} is null
     */
    public static TraceWriter create(Path path, boolean gzip) throws IOException {
        Objects.requireNonNull(path, "path=null (expected: the trace file, e.g. Path.of(\"my.bfctrace\"))");
        return of(Files.newOutputStream(path), gzip);
    }

    /**
     * Writes a trace to a stream. The writer owns the stream: {@link #close()} closes it.
     *
     * @param out where the trace goes
     * @param gzip whether to gzip-compress it
     * @return the writer
     * @throws IOException if the gzip header cannot be written
     * @throws NullPointerException if {@code out} is null
     */
    public static TraceWriter of(OutputStream out, boolean gzip) throws IOException {
        Objects.requireNonNull(out, "out=null (expected: the stream to write the trace to)");
        return new TraceWriter(out, gzip);
    }

    /**
     * Writes the five header lines ({@code bfctrace 1}, {@code name}, {@code source},
     * {@code options}, {@code suballocator sim}).
     *
     * @param header the header
     * @throws NullPointerException if {@code header} is null
     * @throws IllegalStateException if a header was already written, or the writer is closed
     * @throws IOException if writing fails
     */
    public void header(TraceHeader header) throws IOException {
        Objects.requireNonNull(header, "header=null (expected: a TraceHeader, e.g. reader.header())");
        checkOpen();
        if (this.header != null) {
            throw new IllegalStateException("the header was already written");
        }
        this.header = header;
        this.workload = header.isWorkload();
        buffer.header(header);
        maybeFlush();
    }

    /**
     * Writes a comment line, {@code # <text>}.
     *
     * @param text the comment, without line breaks
     * @throws NullPointerException if {@code text} is null
     * @throws IllegalArgumentException if {@code text} holds a line break
     * @throws IllegalStateException if the header was not written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void comment(String text) throws IOException {
        Objects.requireNonNull(text, "text=null (expected: the comment, \"\" for an empty one)");
        if (text.indexOf('\n') >= 0 || text.indexOf('\r') >= 0) {
            throw new IllegalArgumentException("text=" + text + " (expected: no line breaks)");
        }
        checkBody();
        buffer.ascii("# ").text(text).nl();
        maybeFlush();
    }

    /**
     * Writes the provenance of the {@code alloc} line written next (docs/trace-format.md,
     * provenance extension): the {@code #@ frame} and {@code #@ stack} lines its stack needs
     * (each frame and stack is defined once per trace), then {@code #@ alloc <id> ...}. Readers
     * that do not know the extension skip these lines as comments.
     *
     * @param id the id of the {@code alloc} line that follows
     * @param provenance the call's thread, time, annotation and stack; nothing is written if
     *     it is {@code null} (as {@link TraceEvent#provenance()} is when a trace gives none) or
     *     nothing is known
     * @throws IllegalArgumentException if {@code id} is negative, the provenance's time is
     *     before the time of a provenance written earlier (a trace's times never go back, which
     *     a reader checks), or a line would be longer than {@link TraceReader#MAX_LINE_BYTES} (a
     *     thread name, annotation or frame of about a million characters): nothing is written
     * @throws IllegalStateException if the header was not written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void provenance(long id, Provenance provenance) throws IOException {
        checkBody();
        checkNotNegative("id", id);
        if (provenance == null || !provenance.isKnown()) {
            return;
        }
        final long time = provenance.timeMicros();
        if (time >= 0 && time < lastTimeMicros) {
            throw new IllegalArgumentException("provenance.timeMicros()=" + time + " of allocation " + id
                    + " (expected: no earlier than " + lastTimeMicros + ", the time written before it: a trace's"
                    + " times never go back, or a reader refuses the trace). Nothing was written.");
        }
        StringBuilder sb = new StringBuilder(128);
        definitions.lines(sb, id, provenance);
        buffer.text(sb.toString());
        if (time >= 0) {
            lastTimeMicros = time;
        }
        maybeFlush();
    }

    /**
     * Writes an answered {@code alloc} line: {@code alloc <id> <bytes> [align=<n>]
     * [freed_before=<n>] => <hex|null>}.
     *
     * @param id the allocation id, unique within the trace
     * @param bytes the requested bytes
     * @param alignment the requested alignment (written only if not 64)
     * @param freedBefore the timestamp constraint (written only if not 0)
     * @param result the address the allocator returned, 0 for null
     * @throws IllegalArgumentException if a number is negative or the alignment is not a power
     *     of two
     * @throws IllegalStateException if the trace is a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void alloc(long id, long bytes, long alignment, long freedBefore, long result) throws IOException {
        checkAnswers();
        checkAlloc(id, bytes, alignment, freedBefore);
        buffer.alloc(id, bytes, alignment, alignment != TraceEvent.DEFAULT_ALIGNMENT, freedBefore,
                freedBefore != 0, true, result).nl();
        maybeFlush();
    }

    /**
     * Writes an unanswered {@code alloc} line of a workload trace: {@code alloc <id> <bytes>
     * [align=<n>] [freed_before=<n>]}.
     *
     * @param id the allocation id, unique within the trace
     * @param bytes the requested bytes
     * @param alignment the requested alignment (written only if not 64)
     * @param freedBefore the timestamp constraint (written only if not 0)
     * @throws IllegalArgumentException if a number is negative or the alignment is not a power
     *     of two
     * @throws IllegalStateException if the trace is not a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void workloadAlloc(long id, long bytes, long alignment, long freedBefore) throws IOException {
        checkBody();
        if (!workload) {
            throw new IllegalStateException("an unanswered alloc line in a trace whose source does not start with '"
                    + TraceHeader.WORKLOAD_SOURCE_PREFIX + "'");
        }
        checkAlloc(id, bytes, alignment, freedBefore);
        buffer.alloc(id, bytes, alignment, alignment != TraceEvent.DEFAULT_ALIGNMENT, freedBefore,
                freedBefore != 0, false, 0).nl();
        maybeFlush();
    }

    /**
     * Writes {@code free <id>}.
     *
     * @param id the id of an earlier {@code alloc} line
     * @throws IllegalArgumentException if {@code id} is negative
     * @throws IllegalStateException if the header was not written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void free(long id) throws IOException {
        checkBody();
        checkNotNegative("id", id);
        buffer.free(id).nl();
        maybeFlush();
    }

    /**
     * Writes {@code frontier <n>}.
     *
     * @param count the safe frontier
     * @throws IllegalArgumentException if {@code count} is negative
     * @throws IllegalStateException if the header was not written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void frontier(long count) throws IOException {
        checkBody();
        checkNotNegative("count", count);
        buffer.frontier(count).nl();
        maybeFlush();
    }

    /**
     * Writes {@code clear_stats}.
     *
     * @throws IllegalStateException if the header was not written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void clearStats() throws IOException {
        checkBody();
        buffer.clearStats().nl();
        maybeFlush();
    }

    /**
     * Writes {@code sub alloc <bytes> => <hex|null>}.
     *
     * @param bytes the bytes asked of the sub-allocator
     * @param result the address it returned, 0 for null
     * @throws IllegalArgumentException if {@code bytes} is negative
     * @throws IllegalStateException if the trace is a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void subAlloc(long bytes, long result) throws IOException {
        checkAnswers();
        checkNotNegative("bytes", bytes);
        buffer.subAlloc(bytes, result).nl();
        maybeFlush();
    }

    /**
     * Writes {@code sub free <hex> <bytes>}.
     *
     * @param ptr the address returned to the sub-allocator
     * @param bytes the size of the range returned
     * @throws IllegalArgumentException if {@code ptr} is 0 or {@code bytes} is negative
     * @throws IllegalStateException if the trace is a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void subFree(long ptr, long bytes) throws IOException {
        checkAnswers();
        if (ptr == 0) {
            throw new IllegalArgumentException("ptr=0 (expected: a non-null address)");
        }
        checkNotNegative("bytes", bytes);
        buffer.subFree(ptr, bytes).nl();
        maybeFlush();
    }

    /**
     * Writes {@code chunk <id> size=<n> requested=<n> allocation_id=<n>}.
     *
     * @param id the id of a live allocation
     * @param size its {@code AllocatedSize}
     * @param requested its {@code RequestedSize}
     * @param allocationId its {@code AllocationId}
     * @throws IllegalArgumentException if a number is negative
     * @throws IllegalStateException if the trace is a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void chunk(long id, long size, long requested, long allocationId) throws IOException {
        checkAnswers();
        checkNotNegative("id", id);
        checkNotNegative("size", size);
        checkNotNegative("requested", requested);
        checkNotNegative("allocationId", allocationId);
        buffer.chunk(id, size, requested, allocationId).nl();
        maybeFlush();
    }

    /**
     * Writes a {@code stats} line with all ten keys, in canonical order.
     *
     * @param stats the values
     * @throws NullPointerException if {@code stats} is null
     * @throws IllegalArgumentException if a value is negative
     * @throws IllegalStateException if the trace is a workload trace, the header was not
     *     written yet, or the writer is closed
     * @throws IOException if writing fails
     */
    public void stats(AllocatorStats stats) throws IOException {
        Objects.requireNonNull(stats, "stats=null (expected: AllocatorStats, e.g. allocator.getStats())");
        checkAnswers();
        StatKey[] keys = StatKey.values();
        long[] values = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            values[i] = keys[i].valueIn(stats);
            checkNotNegative(keys[i].traceName(), values[i]);
        }
        buffer.stats(keys, values, keys.length).nl();
        maybeFlush();
    }

    /**
     * Writes the line an event was read from, in canonical form (keeping {@code align=} and
     * {@code freed_before=} tokens the line spelled out with default values, and the order of
     * a {@code stats} line's keys), preceded by its provenance lines when it has a
     * {@linkplain TraceEvent#provenance() provenance}.
     *
     * @param event a body line, e.g. from {@link TraceReader#next()}
     * @throws NullPointerException if {@code event} is null (as {@code next()} returns at the
     *     end of the trace)
     * @throws IllegalStateException if the line does not fit the trace (an answer in a workload
     *     trace or none in a conformance trace), the header was not written yet, or the writer
     *     is closed
     * @throws IOException if writing fails
     */
    public void write(TraceEvent event) throws IOException {
        Objects.requireNonNull(event, "event=null (expected: a body line, e.g. reader.next() before the end of the trace)");
        switch (event.kind()) {
            case ALLOC:
                if (event.answered()) {
                    checkAnswers();
                } else {
                    checkBody();
                    if (!workload) {
                        throw new IllegalStateException("an unanswered alloc line in a trace whose source does"
                                + " not start with '" + TraceHeader.WORKLOAD_SOURCE_PREFIX + "'");
                    }
                }
                break;
            case FREE:
            case FRONTIER:
            case CLEAR_STATS:
                checkBody();
                break;
            default:
                checkAnswers();
                break;
        }
        if (event.kind() == TraceEvent.Kind.ALLOC && event.provenance() != null) {
            provenance(event.id(), event.provenance());
        }
        buffer.event(event).nl();
        maybeFlush();
    }

    /**
     * Writes the buffered lines to the underlying stream and flushes it. A gzip stream is not
     * sync-flushed: what was compressed so far may stay in the compressor until {@link #close()}.
     *
     * @throws IOException if writing fails
     */
    @Override
    public void flush() throws IOException {
        if (closed) {
            return;
        }
        drain();
        out.flush();
    }

    /**
     * Writes the buffered lines, finishes the gzip stream if any, and closes the underlying
     * stream. Closing twice does nothing.
     *
     * @throws IOException if writing or closing fails
     */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            drain();
            if (gzip != null) {
                gzip.finish();
            }
        } finally {
            out.close();
        }
    }

    private void drain() throws IOException {
        if (buffer.length() > 0) {
            buffer.writeTo(out);
            buffer.clear();
        }
    }

    private void maybeFlush() throws IOException {
        if (buffer.length() >= FLUSH_BYTES) {
            drain();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the writer is closed");
        }
    }

    private void checkBody() {
        checkOpen();
        if (header == null) {
            throw new IllegalStateException("the header must be written first");
        }
    }

    private void checkAnswers() {
        checkBody();
        if (workload) {
            throw new IllegalStateException("a line with an expected answer in a workload trace (source '"
                    + header.source() + "')");
        }
    }

    private static void checkAlloc(long id, long bytes, long alignment, long freedBefore) {
        checkNotNegative("id", id);
        checkNotNegative("bytes", bytes);
        checkNotNegative("freedBefore", freedBefore);
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment=" + alignment + " (expected: a power of two)");
        }
    }

    private static void checkNotNegative(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + "=" + value + " (expected: >= 0)");
        }
    }
}
