/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.StackFrame;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The calls of one BFC allocator, read from a TensorFlow log written with
 * {@code TF_CPP_VMODULE=bfc_allocator=4} (plain or gzip). The lines used are those of
 * {@code bfc_allocator.cc} (TensorFlow 2.18, {@code xla/tsl/framework/bfc_allocator.cc}):
 * <ul>
 * <li>{@code AllocateRaw <name>  <bytes> <ptr>}: the result of an {@code AllocateRaw} (VLOG 3,
 *     logged after the call; {@code 0} for null). The line logged before the call,
 *     {@code AllocateRaw <name>  <bytes>} (newer versions: {@code AllocateRaw <name> <bytes>
 *     alignment=<n>}), gives the alignment where it says it.</li>
 * <li>{@code [mem-debug] DeallocateRaw,<name>,<requested>,<ptr>,<stack trace>}: a
 *     {@code DeallocateRaw} (VLOG 4, logged before the call); the stack trace's lines that
 *     follow are skipped, as is every line not from {@code bfc_allocator.cc}.</li>
 * <li>{@code Extending allocation by <size> bytes for <name>.} then
 *     {@code Allocated memory at <start> to <end>}: a region obtained from the sub-allocator
 *     (VLOG 1), during the next {@code AllocateRaw} result of that allocator.</li>
 * </ul>
 * A {@code DeallocateRaw} of null is a no-op and is dropped. Ids are numbered 1, 2, 3, ... in
 * the order of the {@code AllocateRaw} results.
 *
 * <p>Provenance, where the log has it: the stack trace of the {@code [mem-debug] AllocateRaw,
 * <name>,<bytes>,<ptr>,*** Begin stack trace ***} line (VLOG 4, logged after the call; the
 * allocator's own frames and empty lines left out) goes with the allocation it follows; the op
 * name and step of the {@code InUse at <ptr> of size <n> by op <op> action_count <n> step <n>}
 * lines of a memory dump (builds with {@code TENSORFLOW_MEM_DEBUG}) go with the allocation live
 * at that address; the op of an out-of-memory warning ({@code ...requested by op <op>}) goes
 * with the failing call that follows it.
 */
final class TfLog {

    /** Kinds of call. */
    static final int ALLOC = 0;
    static final int FREE = 1;

    private static final String MARK = "bfc_allocator.cc:";

    /** The log's name in messages: its path, or {@code <stdin>}. */
    final String file;
    final String allocator;
    /** Allocator names in the order the log mentions them. */
    final Set<String> names = new LinkedHashSet<>();
    /** The memory limit a known TensorFlow line states for the allocator, 0 if none. */
    long statedLimit;
    String statedLimitLine;

    // Calls, in log order.
    int calls;
    int[] kind = new int[1024];
    long[] id = new long[1024];
    long[] bytes = new long[1024];
    long[] alignment = new long[1024];
    /** The line that said an alloc call's alignment ({@code alignment=<n>}), 0 where none did (64). */
    long[] alignmentLine = new long[1024];
    long[] ptr = new long[1024];
    long[] line = new long[1024];
    /** Index of the first region obtained during the call, and how many. */
    int[] firstRegion = new int[1024];
    int[] regionCount = new int[1024];
    /** Provenance of alloc calls: stack (innermost first, or null), op name (or null), step (-1: none). */
    Object[] stack = new Object[1024];
    String[] op = new String[1024];
    long[] step = new long[1024];
    private final Map<List<StackFrame>, List<StackFrame>> stacks = new HashMap<>();
    long allocsWithStack;
    long allocsWithOp;

    // Regions, in the order obtained.
    final List<long[]> regions = new ArrayList<>(); // {start, bytes, line}

    long nullFrees;
    long allocs;
    long frees;
    long deallocWithoutPtrLine;
    /** The log's last line, if it had no line break after it (and was not used), else 0. */
    private long cutLine;

    private TfLog(String file, String allocator) {
        this.file = file;
        this.allocator = allocator;
    }

    /**
     * Reads the calls of one allocator.
     *
     * @param input the log (plain or gzip), read once
     * @param allocator the allocator's name, e.g. {@code GPU_0_bfc}
     * @return the calls
     * @throws IOException if the log cannot be read (a damaged gzip file: naming the line)
     * @throws UsageException if the log is empty or names no BFC allocator, a line of the
     *     allocator cannot be used (naming the line), the allocator is not in the log (naming
     *     those that are), or the log lacks the lines needed
     */
    static TfLog read(TraceInput input, String allocator) throws IOException {
        TfLog log = new TfLog(input.name(), allocator);
        try (InputStream raw = input.rawStream();
                LineLimit limit = new LineLimit(new InputStreamReader(Gzip.maybeGunzip(raw, log.file),
                        StandardCharsets.UTF_8));
                BufferedReader r = new BufferedReader(limit, 1 << 16)) {
            log.parse(r, limit);
        }
        return log;
    }

    /**
     * A warning if the log's last line had no line break after it (a log cut while it was
     * written: that line's numbers may be cut too, so it was not used), else null.
     *
     * @return the warning, or null
     */
    String cutWarning() {
        return cutLine == 0 ? null : file + " line " + cutLine + ": the last line has no line break after it: the"
                + " log may be truncated (that line was not used)";
    }

    private void parse(BufferedReader r, LineLimit limit) throws IOException {
        Map<Long, long[]> live = new HashMap<>(); // ptr -> {id, line}
        long nextId = 1;
        long pendingAlignment = 0;
        long pendingAlignmentBytes = -1;
        long pendingAlignmentLine = 0;
        int pendingRegions = 0;
        long extendingLine = 0; // an "Extending" line of this allocator waiting for its "Allocated memory at"
        String lastExtendingName = null;
        long n = 0;
        List<StackFrame> frames = null; // the stack trace being read, for call stackFor
        int stackFor = -1;
        String oomOp = null; // "requested by op" of an out-of-memory warning, for the next failed call
        Map<Long, Integer> liveCall = new HashMap<>(); // ptr -> index of its alloc call
        for (String text = readLine(r, n), next; text != null; text = next) {
            next = readLine(r, n + 1);
            if (next == null && limit.midLine()) {
                cutLine = n + 1;
                break;
            }
            n++;
            if (frames != null) {
                if (text.startsWith("*** End stack trace ***")) {
                    if (!frames.isEmpty()) {
                        stack[stackFor] = stacks.computeIfAbsent(List.copyOf(frames), k -> k);
                        allocsWithStack++;
                    }
                    frames = null;
                    continue;
                }
                if (text.startsWith("\t")) {
                    String f = text.trim();
                    if (!f.isEmpty() && !f.startsWith("tsl::CurrentStackTrace") && !f.startsWith("tsl::BFCAllocator::")
                            && !f.startsWith("tensorflow::CurrentStackTrace")) {
                        frames.add(new StackFrame("", f, null, -1));
                    }
                    continue;
                }
                frames = null; // a trace cut short: keep what was read of it
            }
            if (text.isEmpty() || text.charAt(0) == '\t' || text.charAt(0) == ' ') {
                continue; // stack trace lines
            }
            statedLimit(text, n);
            int at = text.indexOf(MARK);
            if (at < 0) {
                continue;
            }
            int close = text.indexOf("] ", at);
            if (close < 0) {
                continue;
            }
            String msg = text.substring(close + 2);
            if (msg.startsWith("AllocateRaw ")) {
                String[] t = tokens(msg.substring("AllocateRaw ".length()));
                if (t.length < 2) {
                    throw unusable(n, msg, "AllocateRaw <name>  <bytes> <ptr>");
                }
                names.add(t[0]);
                if (!t[0].equals(allocator)) {
                    continue;
                }
                long b = number(n, msg, t[1], "AllocateRaw <name>  <bytes> <ptr>");
                if (t.length == 2 || t[2].startsWith("alignment=")) {
                    // Logged before the call; newer versions say the alignment.
                    if (t.length >= 3) {
                        pendingAlignment = number(n, msg, t[2].substring("alignment=".length()),
                                "AllocateRaw <name> <bytes> alignment=<n>");
                        pendingAlignmentBytes = b;
                        pendingAlignmentLine = n;
                    }
                    continue;
                }
                if (t.length != 3) {
                    throw unusable(n, msg, "AllocateRaw <name>  <bytes> <ptr>");
                }
                long p = pointer(n, msg, t[2]);
                long align = 64;
                long alignLine = 0;
                if (pendingAlignmentBytes == b && pendingAlignment > 0
                        && (pendingAlignment & (pendingAlignment - 1)) == 0) {
                    align = pendingAlignment;
                    alignLine = pendingAlignmentLine;
                }
                pendingAlignmentBytes = -1;
                if (extendingLine != 0 && allocator.equals(lastExtendingName)) {
                    throw new UsageException(file + " line " + extendingLine + ": 'Extending allocation' of '"
                            + allocator + "' has no 'Allocated memory at <start> to <end>' line after it");
                }
                if (p != 0) {
                    long[] before = live.get(p);
                    if (before != null) {
                        checkDeallocLines();
                        throw new UsageException(file + " line " + n + ": AllocateRaw of '" + allocator
                                + "' returned 0x" + Long.toHexString(p) + ", which is still allocated since line "
                                + before[1] + " (a DeallocateRaw line is missing: was the log written with"
                                + " TF_CPP_VMODULE=bfc_allocator=4?)");
                    }
                    live.put(p, new long[] {nextId, n});
                }
                add(ALLOC, nextId++, b, align, p, n);
                alignmentLine[calls - 1] = alignLine;
                if (p != 0) {
                    liveCall.put(p, calls - 1);
                } else if (oomOp != null) {
                    op[calls - 1] = oomOp;
                    allocsWithOp++;
                }
                oomOp = null;
                firstRegion[calls - 1] = regions.size() - pendingRegions;
                regionCount[calls - 1] = pendingRegions;
                pendingRegions = 0;
                allocs++;
            } else if (msg.startsWith("[mem-debug] AllocateRaw,")) {
                String[] t = msg.substring("[mem-debug] AllocateRaw,".length()).split(",", 4);
                if (t.length == 4 && t[0].equals(allocator) && t[3].startsWith("*** Begin stack trace ***")
                        && calls > 0 && kind[calls - 1] == ALLOC) {
                    // Logged right after the call's result line: the stack of that call.
                    int c = calls - 1;
                    try {
                        if (decimal(t[1]) == bytes[c] && pointer(n, msg, t[2]) == ptr[c] && stack[c] == null) {
                            frames = new ArrayList<>();
                            stackFor = c;
                        }
                    } catch (UsageException e) {
                        // Not the line of that call: no stack for it.
                    }
                }
            } else if (msg.startsWith("InUse at ") && msg.contains(" by op ")) {
                annotateLive(msg, liveCall);
            } else if (msg.startsWith("Allocator (" + allocator + ") ran out of memory")) {
                int i = msg.indexOf("requested by op ");
                if (i >= 0) {
                    String rest = msg.substring(i + "requested by op ".length()).trim();
                    int end = rest.indexOf(' ');
                    oomOp = end < 0 ? rest : rest.substring(0, end);
                    if (oomOp.isEmpty()) {
                        oomOp = null;
                    }
                }
            } else if (msg.startsWith("[mem-debug] DeallocateRaw,")) {
                String[] t = msg.substring("[mem-debug] DeallocateRaw,".length()).split(",", 4);
                if (t.length < 3) {
                    throw unusable(n, msg, "[mem-debug] DeallocateRaw,<name>,<requested>,<ptr>,...");
                }
                names.add(t[0]);
                if (!t[0].equals(allocator)) {
                    continue;
                }
                long p = pointer(n, msg, t[2]);
                if (p == 0) {
                    nullFrees++;
                    continue;
                }
                long[] a = live.remove(p);
                if (a == null) {
                    throw new UsageException(file + " line " + n + ": DeallocateRaw of 0x" + Long.toHexString(p)
                            + ", which no earlier AllocateRaw result line of '" + allocator + "' returned (is the"
                            + " log cut at its start, or were lines of several threads interleaved?)");
                }
                add(FREE, a[0], 0, 0, p, n);
                liveCall.remove(p);
                frees++;
            } else if (msg.startsWith("DeallocateRaw ")) {
                String[] t = tokens(msg.substring("DeallocateRaw ".length()));
                if (t.length >= 1) {
                    names.add(t[0]);
                    if (t[0].equals(allocator) && deallocWithoutPtrLine == 0) {
                        deallocWithoutPtrLine = n;
                    }
                }
            } else if (msg.startsWith("Extending allocation by ")) {
                int f = msg.lastIndexOf(" for ");
                if (f < 0 || !msg.endsWith(".")) {
                    throw unusable(n, msg, "Extending allocation by <size> bytes for <name>.");
                }
                String name = msg.substring(f + 5, msg.length() - 1);
                names.add(name);
                lastExtendingName = name;
                extendingLine = name.equals(allocator) ? n : 0;
            } else if (msg.startsWith("Allocated memory at ")) {
                if (extendingLine == 0) {
                    continue; // another allocator's region
                }
                String[] t = tokens(msg.substring("Allocated memory at ".length()));
                if (t.length != 3 || !t[1].equals("to")) {
                    throw unusable(n, msg, "Allocated memory at <start> to <end>");
                }
                long start = pointer(n, msg, t[0]);
                long end = pointer(n, msg, t[2]);
                // Addresses are unsigned: 0xffffffffffffffff is no start below 0x7f... .
                if (start == 0 || Long.compareUnsigned(end, start) <= 0) {
                    throw unusable(n, msg, "Allocated memory at <start> to <end> with 0 < start < end");
                }
                // A region's size is a long: 0x1 to 0xffffffffffffffff would be -2 bytes.
                if (end - start < 0) {
                    throw unusable(n, msg, "Allocated memory at <start> to <end> with end - start of at most"
                            + " 9223372036854775807 bytes (8 EiB - 1), the largest region an allocator can hold");
                }
                regions.add(new long[] {start, end - start, n});
                pendingRegions++;
                extendingLine = 0;
                lastExtendingName = null;
            } else if (msg.startsWith("Creating new BFCAllocator named: ")) {
                names.add(msg.substring("Creating new BFCAllocator named: ".length()).trim());
            }
        }
        if (n == 0) {
            throw new UsageException(file + " is empty (expected: a TensorFlow log written with"
                    + " TF_CPP_VMODULE=bfc_allocator=4)");
        }
        if (names.isEmpty()) {
            throw new UsageException(file + ": none of its " + Counts.of(n, "line") + " names a BFC allocator"
                    + " (expected: a TensorFlow log written with TF_CPP_VMODULE=bfc_allocator=4, which names each"
                    + " allocator in a 'Creating new BFCAllocator named: <name>' line)");
        }
        if (!names.contains(allocator) || allocs == 0) {
            if (!names.contains(allocator)) {
                throw new UsageException("--allocator=" + Words.shown(allocator) + " (expected: an allocator of " + file
                        + ": "
                        + String.join(", ", names.stream().limit(20).map(TfLog::shown).toList())
                        + (names.size() > 20 ? ", ... (" + (names.size() - 20) + " more)" : "") + ")");
            }
            throw new UsageException(file + " has no 'AllocateRaw " + allocator + "  <bytes> <ptr>' lines: write the"
                    + " log with TF_CPP_VMODULE=bfc_allocator=4 (and an allocator that is used)");
        }
        checkDeallocLines();
    }

    /**
     * A memory dump's {@code InUse at <hex> of size <n> by op <op> action_count <n> step <n> next <n>}
     * line: the op and step of the allocation live at that address.
     */
    private void annotateLive(String msg, Map<Long, Integer> liveCall) {
        String[] t = tokens(msg);
        // InUse at <hex> of size <n> by op <op> action_count <n> step <n> ...
        if (t.length < 9 || !t[6].equals("by") || !t[7].equals("op")) {
            return;
        }
        String digits = t[2].startsWith("0x") ? t[2].substring(2) : t[2];
        if (!isHex(digits)) {
            return;
        }
        long p = Long.parseUnsignedLong(digits, 16);
        Integer c = liveCall.get(p);
        if (c == null || op[c] != null) {
            return;
        }
        op[c] = t[8];
        allocsWithOp++;
        for (int i = 9; i + 1 < t.length; i++) {
            if (t[i].equals("step")) {
                step[c] = decimal(t[i + 1]); // -1: no step
            }
        }
    }

    /** The provenance of call {@code i} (an alloc), or null if the log gave none. */
    @SuppressWarnings("unchecked")
    Provenance provenance(int i) {
        if (stack[i] == null && op[i] == null) {
            return null;
        }
        return new Provenance(-1, null, op[i], op[i] == null ? -1 : step[i], (List<StackFrame>) stack[i]);
    }

    /** The next line, or null at the end; a damaged gzip stream is named with the line. */
    private String readLine(BufferedReader r, long linesRead) throws IOException {
        try {
            return r.readLine();
        } catch (LineTooLong e) {
            throw new UsageException(file + " line " + (linesRead + 1) + ": longer than " + MAX_LINE_CHARS
                    + " characters (expected: a TensorFlow log written with TF_CPP_VMODULE=bfc_allocator=4)");
        } catch (IOException e) {
            throw Gzip.readError(e, file, linesRead + 1);
        }
    }

    /** The longest line read, in characters: as a trace's line (a TensorFlow line is far shorter). */
    static final int MAX_LINE_CHARS = 1 << 20;

    /** A line past {@link #MAX_LINE_CHARS}. */
    private static final class LineTooLong extends IOException {
        LineTooLong() {
            super("line too long");
        }
    }

    /**
     * Counts the characters since the last line break, and fails past {@link #MAX_LINE_CHARS}:
     * a file that is no log (/dev/zero) would otherwise fill the heap in one {@code readLine}.
     */
    private static final class LineLimit extends java.io.FilterReader {
        private long run;

        LineLimit(java.io.Reader in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int c = super.read();
            count(c);
            return c;
        }

        @Override
        public int read(char[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            for (int i = 0; i < n; i++) {
                count(b[off + i]);
            }
            return n;
        }

        /** @return whether characters were read since the last line break */
        boolean midLine() {
            return run > 0;
        }

        private void count(int c) throws LineTooLong {
            if (c == '\n' || c == '\r') {
                run = 0;
            } else if (c >= 0 && ++run > MAX_LINE_CHARS) {
                throw new LineTooLong();
            }
        }
    }

    /** Fails if the log has DeallocateRaw lines of the allocator but none with an address (VLOG 3 only). */
    private void checkDeallocLines() {
        if (frees == 0 && deallocWithoutPtrLine != 0) {
            throw new UsageException(file + " line " + deallocWithoutPtrLine + ": DeallocateRaw lines without"
                    + " addresses; write the log with TF_CPP_VMODULE=bfc_allocator=4 to get the"
                    + " '[mem-debug] DeallocateRaw' lines");
        }
    }

    /** Known TensorFlow lines that state an allocator's memory limit. */
    private void statedLimit(String text, long n) {
        try {
            statedLimitOrThrow(text, n);
        } catch (ArithmeticException e) {
            // A line that only looks like one of these, or states more than a long holds: it
            // states nothing usable.
        }
    }

    private void statedLimitOrThrow(String text, long n) {
        int i = text.indexOf("Using BFCAllocator with memory limit of ");
        if (i >= 0 && allocator.equals("bfc_cpu_allocator_for_gpu") && text.contains("ProcessState CPU allocator")) {
            String[] t = tokens(text.substring(i + "Using BFCAllocator with memory limit of ".length()));
            if (t.length >= 2 && t[1].equals("MB")) {
                long mb = decimal(t[0]);
                if (mb > 0) {
                    statedLimit = Math.multiplyExact(mb, 1L << 20);
                    statedLimitLine = "line " + n + ", ProcessState CPU allocator";
                }
            }
        }
        i = text.indexOf("MklCPUAllocator: Setting max_mem_bytes: ");
        if (i >= 0 && allocator.equals("mklcpu")) {
            long bytes = decimal(text.substring(i + "MklCPUAllocator: Setting max_mem_bytes: ".length()).trim());
            if (bytes > 0) {
                statedLimit = bytes;
                statedLimitLine = "line " + n + ", MklCPUAllocator max_mem_bytes";
            }
        }
    }

    private void add(int k, long callId, long b, long align, long p, long n) {
        if (calls == kind.length) {
            int c = calls * 2;
            kind = Arrays.copyOf(kind, c);
            id = Arrays.copyOf(id, c);
            bytes = Arrays.copyOf(bytes, c);
            alignment = Arrays.copyOf(alignment, c);
            alignmentLine = Arrays.copyOf(alignmentLine, c);
            ptr = Arrays.copyOf(ptr, c);
            line = Arrays.copyOf(line, c);
            firstRegion = Arrays.copyOf(firstRegion, c);
            regionCount = Arrays.copyOf(regionCount, c);
            stack = Arrays.copyOf(stack, c);
            op = Arrays.copyOf(op, c);
            step = Arrays.copyOf(step, c);
        }
        step[calls] = -1;
        kind[calls] = k;
        id[calls] = callId;
        bytes[calls] = b;
        alignment[calls] = align;
        ptr[calls] = p;
        line[calls] = n;
        calls++;
    }

    private static String[] tokens(String s) {
        return s.trim().split(" +");
    }

    private UsageException unusable(long n, String msg, String expected) {
        return new UsageException(file + " line " + n + ": cannot use '" + shown(msg) + "' (expected: " + expected
                + ")");
    }

    /**
     * Text of the log as a message shows it: its first 120 characters (then {@code ...}), with
     * control characters but tab as escapes ({@code \x1b}), so that a line of any bytes makes a
     * short message and never drives the terminal.
     */
    private static String shown(String text) {
        int end = Math.min(text.length(), 120);
        String shown = CommandRunner.visible(text.substring(0, end), true);
        return end < text.length() ? shown + "..." : shown;
    }

    private long number(long n, String msg, String token, String expected) {
        long v = decimal(token);
        if (v >= 0) {
            return v;
        }
        if (!token.isEmpty() && token.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw unusable(n, msg, expected + ", with a number of at most " + Long.MAX_VALUE + " in place of '"
                    + shown(token) + "'");
        }
        throw unusable(n, msg, expected + ", with a number of the digits 0 to 9 in place of '" + shown(token) + "'");
    }

    /**
     * A whole number written as TensorFlow writes one, and as a trace's numbers are read: the
     * ASCII digits {@code 0} to {@code 9} alone, where Java's parsers also take a sign
     * ({@code +5}) and other scripts' digits ({@code ١٢}).
     *
     * @return its value, or -1 if it is no such number or is past a {@code long}'s range
     */
    static long decimal(String token) {
        if (token.isEmpty()) {
            return -1;
        }
        long v = 0;
        for (int i = 0; i < token.length(); i++) {
            int d = token.charAt(i) - '0';
            if (d < 0 || d > 9 || v > (Long.MAX_VALUE - d) / 10) {
                return -1;
            }
            v = v * 10 + d;
        }
        return v;
    }

    /**
     * Whether {@code digits} are hex digits in ASCII ({@code 0}-{@code 9}, {@code a}-{@code f},
     * either case), 1 to 16 of them: what {@code Long.parseUnsignedLong(digits, 16)} reads
     * without a sign or other scripts' digits.
     */
    static boolean isHex(String digits) {
        if (digits.isEmpty() || digits.length() > 16) {
            return false;
        }
        for (int i = 0; i < digits.length(); i++) {
            char c = digits.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
                return false;
            }
        }
        return true;
    }

    private long pointer(long n, String msg, String token) {
        if (token.equals("0") || token.equals("(nil)") || token.equals("nullptr") || token.equals("0x0")) {
            return 0;
        }
        if (token.startsWith("0x") && isHex(token.substring(2))) {
            return Long.parseUnsignedLong(token.substring(2), 16);
        }
        throw unusable(n, msg, "an address like 0x7f19f8135040, or 0 for null, in place of '" + shown(token)
                + "'");
    }

    /**
     * Whether the regions were obtained at rising addresses (each one above the end of the one
     * before), which expected answers need.
     *
     * @return the index of the first region that breaks the order, -1 if none does
     */
    int firstFallingRegion() {
        for (int i = 1; i < regions.size(); i++) {
            long[] prev = regions.get(i - 1);
            // Addresses are unsigned: 0x9000000000000000 lies above 0x7f0000000000.
            if (Long.compareUnsigned(regions.get(i)[0], prev[0] + prev[1]) < 0) {
                return i;
            }
        }
        return -1;
    }
}
