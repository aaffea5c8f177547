/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.StackFrame;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The provenance extension of the trace format (docs/trace-format.md, "Provenance"): comment
 * lines starting with {@value #PREFIX} that give an {@code alloc} line its thread, time,
 * annotation and stack. A reader that does not know the extension skips them as comments.
 *
 * <pre>
 * #@ frame &lt;n&gt; &lt;class&gt; &lt;method&gt; &lt;file&gt; &lt;line&gt;
 * #@ stack &lt;s&gt; &lt;frame&gt; [&lt;frame&gt; ...]
 * #@ alloc &lt;id&gt; [thread=&lt;text&gt;] [time_us=&lt;n&gt;] [annotation=&lt;text&gt;] [step=&lt;n&gt;] [stack=&lt;s&gt;]
 * </pre>
 *
 * Text is percent-encoded ({@code %}, space, tab, CR, LF and {@code =} as {@code %XX} of their
 * UTF-8 bytes); {@code -} stands for an empty or unknown value (a literal {@code -} is
 * {@code %2D}); as the {@code thread} of {@code #@ alloc}, where an unknown thread's key is left
 * out, it is an empty name. A frame or stack is defined once, before its first use; an {@code #@ alloc} line
 * comes right before the {@code alloc} line of its id. Lines of other kinds after {@value #PREFIX}
 * are ignored (room for later extensions).
 *
 * <p>Reading keeps the frame and stack tables (bounded by the distinct frames and stacks) and the
 * one pending {@code #@ alloc} line; writing keeps the tables to define each frame and stack once.
 */
final class TraceProvenance {

    /** How every line of the extension starts. */
    static final String PREFIX = "#@ ";

    private final String file;
    private final Map<Long, StackFrame> frames = new HashMap<>();
    private final Map<Long, List<StackFrame>> stacks = new HashMap<>();
    private long pendingId = -1;
    private Provenance pending;
    /** The latest {@code time_us} read so far, and its line; -1 before any. */
    private long lastTime = -1;
    private long lastTimeLine;

    TraceProvenance(String file) {
        this.file = file;
    }

    /** Whether a comment line (as read, without its line break) belongs to the extension. */
    static boolean isProvenanceLine(byte[] buf, int start, int end) {
        return end - start >= 3 && buf[start] == '#' && buf[start + 1] == '@' && buf[start + 2] == ' ';
    }

    /** Parses one {@code #@} line. */
    void parse(String line, long lineNumber) throws TraceFormatException {
        String[] t = line.substring(PREFIX.length()).split(" ", -1);
        for (String s : t) {
            if (s.isEmpty()) {
                throw new TraceFormatException(file, lineNumber, "an empty token in " + quote(line),
                        "tokens separated by single spaces");
            }
        }
        switch (t[0]) {
            case "frame" -> {
                if (t.length != 6) {
                    throw new TraceFormatException(file, lineNumber, quote(line),
                            "'#@ frame <n> <class> <method> <file> <line>'");
                }
                long n = number(t[1], lineNumber, "a frame number");
                int ln = t[5].equals("-") ? -1 : (int) Math.min(Integer.MAX_VALUE, number(t[5], lineNumber,
                        "a line number or -"));
                String source = decode(t[4], lineNumber);
                StackFrame f = new StackFrame(orEmpty(decode(t[2], lineNumber)), orEmpty(decode(t[3], lineNumber)),
                        source, ln);
                if (frames.putIfAbsent(n, f) != null) {
                    throw new TraceFormatException(file, lineNumber, "a second definition of frame " + n,
                            "each frame defined once");
                }
            }
            case "stack" -> {
                if (t.length < 3) {
                    throw new TraceFormatException(this.file, lineNumber, quote(line),
                            "'#@ stack <s> <frame> [<frame> ...]'");
                }
                long s = number(t[1], lineNumber, "a stack number");
                List<StackFrame> list = new ArrayList<>(t.length - 2);
                for (int i = 2; i < t.length; i++) {
                    long n = number(t[i], lineNumber, "a frame number");
                    StackFrame f = frames.get(n);
                    if (f == null) {
                        throw new TraceFormatException(this.file, lineNumber, "frame " + n + ", which no earlier"
                                + " '#@ frame' line defines", "frames defined before the stacks that use them");
                    }
                    list.add(f);
                }
                if (stacks.putIfAbsent(s, List.copyOf(list)) != null) {
                    throw new TraceFormatException(this.file, lineNumber, "a second definition of stack " + s,
                            "each stack defined once");
                }
            }
            case "alloc" -> parseAlloc(t, line, lineNumber);
            default -> {
                // Another extension's line: ignored.
            }
        }
    }

    private void parseAlloc(String[] t, String line, long lineNumber) throws TraceFormatException {
        String syntax = "'#@ alloc <id> [thread=<text>] [time_us=<n>] [annotation=<text>] [step=<n>] [stack=<s>]'";
        if (t.length < 2) {
            throw new TraceFormatException(file, lineNumber, quote(line), syntax);
        }
        long id = number(t[1], lineNumber, "an allocation id");
        String thread = null;
        String annotation = null;
        long time = -1;
        long step = -1;
        List<StackFrame> stack = null;
        for (int i = 2; i < t.length; i++) {
            int eq = t[i].indexOf('=');
            if (eq <= 0) {
                throw new TraceFormatException(file, lineNumber, quote(t[i]), "key=value in " + syntax);
            }
            String k = t[i].substring(0, eq);
            String v = t[i].substring(eq + 1);
            switch (k) {
                // The key is there, so the thread is known: "-" is an empty name (new Thread(r, "");
                // a writer leaves an unknown thread out). An annotation is never empty or blank
                // (MemoryAnnotation refuses one): "-", or empty or blank text, is none (Provenance).
                case "thread" -> thread = orEmpty(decode(v, lineNumber));
                case "annotation" -> annotation = decode(v, lineNumber);
                case "time_us" -> time = number(v, lineNumber, "time_us=<n>");
                case "step" -> step = number(v, lineNumber, "step=<n>");
                case "stack" -> {
                    long s = number(v, lineNumber, "stack=<s>");
                    stack = stacks.get(s);
                    if (stack == null) {
                        throw new TraceFormatException(file, lineNumber, "stack " + s + ", which no earlier"
                                + " '#@ stack' line defines", "stacks defined before the lines that use them");
                    }
                }
                default -> throw new TraceFormatException(file, lineNumber, "the key " + quote(k),
                        "thread, time_us, annotation, step or stack in " + syntax);
            }
        }
        if (time >= 0) {
            if (time < lastTime) {
                // A replay records each call at the latest time given, so every event from here
                // on would be shown before the calls that came first (and a PyTorch snapshot's
                // trace would go back in time).
                throw new TraceFormatException(file, lineNumber, "time_us=" + time + ", before time_us=" + lastTime
                        + " of line " + lastTimeLine, "times that never go back (time_us is read on a"
                        + " monotonic clock within one trace: a clock that was set back, or traces joined"
                        + " out of order; write each call's time_us no smaller than the one before it)");
            }
            lastTime = time;
            lastTimeLine = lineNumber;
        }
        pendingId = id;
        pending = new Provenance(time, thread, annotation, step, stack);
    }

    /**
     * The provenance given by the {@code #@ alloc} line right before the {@code alloc} line of
     * {@code id}, consumed; {@code null} if there was none.
     */
    Provenance takeFor(long id) {
        Provenance p = id == pendingId ? pending : null;
        clearPending();
        return p;
    }

    /** A body line other than an alloc line ends the scope of a pending {@code #@ alloc} line. */
    void clearPending() {
        pendingId = -1;
        pending = null;
    }

    private long number(String s, long lineNumber, String what) throws TraceFormatException {
        try {
            long v = Long.parseLong(s);
            if (v >= 0 && (s.length() == 1 || s.charAt(0) != '0') && s.charAt(0) != '+') {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new TraceFormatException(file, lineNumber, quote(s), what + " (a decimal number >= 0)");
    }

    private String decode(String s, long lineNumber) throws TraceFormatException {
        if (s.equals("-")) {
            return null;
        }
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < b.length; i++) {
            if (b[i] == '%') {
                int hi = i + 2 < b.length ? Character.digit(b[i + 1], 16) : -1;
                int lo = i + 2 < b.length ? Character.digit(b[i + 2], 16) : -1;
                if (hi < 0 || lo < 0) {
                    throw new TraceFormatException(file, lineNumber, quote(s),
                            "percent-encoded text (%XX with two hex digits)");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else {
                out.write(b[i]);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static String orEmpty(String s) {
        return s == null ? "" : s;
    }

    /**
     * Text quoted for a message as the reader quotes its lines and words: the first 200
     * characters, then {@code ...}, with control characters shown as escapes.
     */
    private static String quote(String text) {
        return "'" + TraceReader.visible(text.length() > 200 ? text.substring(0, 200) : text)
                + (text.length() > 200 ? "...'" : "'");
    }

    // ---------------------------------------------------------------------------------------
    // Writing

    /** Frame and stack numbers handed out by a writer. */
    static final class Definitions {
        private final Map<StackFrame, Long> frameIds = new HashMap<>();
        private final Map<List<StackFrame>, Long> stackIds = new HashMap<>();

        /**
         * Appends the lines a provenance needs (frame and stack definitions not written yet,
         * then its {@code #@ alloc} line) to {@code sb}.
         *
         * @throws IllegalArgumentException if one of the lines would be longer than a reader
         *     takes ({@link TraceReader#MAX_LINE_BYTES}); then nothing is appended, and the
         *     frames and stacks it would have defined are not taken as defined
         */
        void lines(StringBuilder sb, long id, Provenance p) {
            final int start = sb.length();
            final int framesBefore = frameIds.size();
            final int stacksBefore = stackIds.size();
            appendLines(sb, id, p);
            int lineStart = start;
            for (int i = start; i < sb.length(); i++) {
                if (sb.charAt(i) == '\n') {
                    long bytes = utf8Length(sb, lineStart, i);
                    if (bytes > TraceReader.MAX_LINE_BYTES) {
                        sb.setLength(start);
                        frameIds.values().removeIf(n -> n > framesBefore);
                        stackIds.values().removeIf(n -> n > stacksBefore);
                        throw new IllegalArgumentException("provenance of alloc " + id + ": a line of " + bytes
                                + " bytes, longer than a trace line may be (" + TraceReader.MAX_LINE_BYTES
                                + " bytes): shorten the thread name, the annotation or the stack frame that makes"
                                + " it (they are written percent-encoded, up to 3 bytes a character)");
                    }
                    lineStart = i + 1;
                }
            }
        }

        private static long utf8Length(CharSequence s, int from, int to) {
            long n = 0;
            for (int i = from; i < to; i++) {
                char c = s.charAt(i);
                n += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3;
            }
            return n;
        }

        private void appendLines(StringBuilder sb, long id, Provenance p) {
            long stackId = -1;
            if (!p.stack().isEmpty()) {
                Long known = stackIds.get(p.stack());
                if (known == null) {
                    StringBuilder refs = new StringBuilder();
                    for (StackFrame f : p.stack()) {
                        Long fid = frameIds.get(f);
                        if (fid == null) {
                            fid = (long) frameIds.size() + 1;
                            frameIds.put(f, fid);
                            sb.append(PREFIX).append("frame ").append(fid).append(' ')
                                    .append(encode(f.className())).append(' ')
                                    .append(encode(f.methodName())).append(' ')
                                    .append(encode(f.fileName())).append(' ')
                                    .append(f.lineNumber() >= 0 ? Integer.toString(f.lineNumber()) : "-")
                                    .append('\n');
                        }
                        refs.append(' ').append(fid);
                    }
                    known = (long) stackIds.size() + 1;
                    stackIds.put(p.stack(), known);
                    sb.append(PREFIX).append("stack ").append(known).append(refs).append('\n');
                }
                stackId = known;
            }
            sb.append(PREFIX).append("alloc ").append(id);
            if (p.thread() != null) {
                sb.append(" thread=").append(encode(p.thread()));
            }
            if (p.timeMicros() >= 0) {
                sb.append(" time_us=").append(p.timeMicros());
            }
            if (p.annotation() != null) {
                sb.append(" annotation=").append(encode(p.annotation()));
            }
            if (p.step() >= 0) {
                sb.append(" step=").append(p.step());
            }
            if (stackId >= 0) {
                sb.append(" stack=").append(stackId);
            }
            sb.append('\n');
        }
    }

    /** Percent-encodes text for a {@code #@} line; {@code null} or empty is {@code -}. */
    static String encode(String s) {
        if (s == null || s.isEmpty()) {
            return "-";
        }
        if (s.equals("-")) {
            return "%2D";
        }
        StringBuilder sb = null;
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < b.length; i++) {
            int c = b[i] & 0xff;
            boolean escape = c == '%' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '=' || c < 0x20
                    || c == 0x7f;
            if (escape && sb == null) {
                sb = new StringBuilder(s.length() + 16);
                sb.append(new String(b, 0, i, StandardCharsets.UTF_8));
            }
            if (sb != null) {
                if (escape) {
                    sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                            .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
                } else if (c < 0x80) {
                    sb.append((char) c);
                } else {
                    // Copy the whole UTF-8 sequence as text.
                    int len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
                    int e = Math.min(b.length, i + len);
                    sb.append(new String(b, i, e - i, StandardCharsets.UTF_8));
                    i = e - 1;
                }
            }
        }
        return sb == null ? s : sb.toString();
    }
}
