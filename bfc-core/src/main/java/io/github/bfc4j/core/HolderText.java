/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The "largest holders" of {@link BfcAllocator#memorySummary()} and of the out-of-memory
 * message, PyTorch-style: the memory in use grouped by holder ({@link MemoryMap.Chunk#holder()}:
 * annotation, innermost stack frame, thread, step, or the runtime it is lent to), largest first.
 * Only when some chunk's provenance was recorded or some chunk is lent to a runtime.
 */
final class HolderText {

    /** Holders listed in the summary. */
    static final int SUMMARY_HOLDERS = 10;

    /** Holders named in an out-of-memory message. */
    static final int MESSAGE_HOLDERS = 5;

    private HolderText() {
    }

    /**
     * How a holder is named ({@link MemoryMap.Chunk#holder()}), for the headings: JavaCPP's bindings
     * ({@code org.bytedeco.}) are skipped when a frame names it, since their frames (ONNX
     * Runtime's {@code SessionImpl.Run}) are the same for every caller.
     */
    static final String HOLDER_KEY = "annotation, else innermost frame outside org.bytedeco., else thread, else step";

    /** How a holder of memory in use is named: a lent chunk's runtime comes last. */
    static final String IN_USE_HOLDER_KEY = HOLDER_KEY + ", else runtime lent to";

    /**
     * The summary's section, ending in a line break; empty when no provenance was recorded and
     * nothing is lent.
     */
    static String summarySection(MemoryMap map) {
        return summarySection(List.of(map), "Largest holders");
    }

    /**
     * The summary's section of several allocators' maps together (a sharded allocator's), the
     * holders summed by name; empty when no provenance was recorded and nothing is lent.
     *
     * @param title the section's first words
     */
    static String summarySection(List<MemoryMap> maps, String title) {
        if (!namesHolders(maps)) {
            return "";
        }
        List<MemoryMap.Holder> holders = MemoryMap.largestHolders(maps, SUMMARY_HOLDERS);
        Map<String, Long> oldest = oldestInUse(maps);
        StringBuilder sb = new StringBuilder();
        sb.append(title).append(" (in use, by ").append(IN_USE_HOLDER_KEY).append("):\n");
        for (MemoryMap.Holder h : holders) {
            sb.append(String.format(Locale.ROOT, "  %10s in %6d chunk%s  %s",
                    BfcAllocator.humanReadableNumBytes(h.bytes()), h.chunks(), h.chunks() == 1 ? " " : "s",
                    h.holder()));
            Long since = oldest.get(h.holder());
            if (since != null) {
                sb.append("  (since ").append(Provenance.timeText(since))
                        .append(h.chunks() == 1 ? ")" : ", its oldest chunk)");
            }
            sb.append(System.lineSeparator());
        }
        return sb.toString();
    }

    /**
     * For each holder, the time its oldest chunk in use was allocated (epoch microseconds), of
     * the chunks whose time was recorded (with the history on); holders with none are absent.
     */
    private static Map<String, Long> oldestInUse(List<MemoryMap> maps) {
        Map<String, Long> oldest = new HashMap<>();
        for (MemoryMap m : maps) {
            for (MemoryMap.Region r : m.regions()) {
                for (MemoryMap.Chunk c : r.chunks()) {
                    long t = c.provenance().timeMicros();
                    if (c.inUse() && t >= 0) {
                        oldest.merge(c.holder(), t, Math::min);
                    }
                }
            }
        }
        return oldest;
    }

    /** Holders of the memory not yet safe listed in the summary. */
    static final int WAITING_HOLDERS = 5;

    /**
     * The summary's section naming who held the memory freed but not yet safe (a timing
     * counter's stamp at or after the safe frontier): each waiting chunk counts under the holder
     * of the allocation freed into it ({@link MemoryMap.Chunk#provenance()}), or under
     * {@code (unknown)} when it names none (merged or split since its free, or allocated while
     * nothing was recorded); the {@value #WAITING_HOLDERS} largest, then how many more. Ends in a
     * line break; empty when no chunk waits or no provenance was recorded.
     */
    static String waitingSection(MemoryMap map) {
        List<MemoryMap.Holder> each = new ArrayList<>();
        for (MemoryMap.Chunk c : map.chunks()) {
            if (!c.inUse() && c.notYetSafe()) {
                each.add(new MemoryMap.Holder(c.holder(), c.size(), c.requestedSize(), 1));
            }
        }
        if (each.isEmpty() || !map.hasProvenance()) {
            return "";
        }
        List<MemoryMap.Holder> all = MemoryMap.largest(each, Integer.MAX_VALUE);
        StringBuilder sb = new StringBuilder();
        sb.append("Not yet safe, by holder of the allocation freed (").append(HOLDER_KEY).append("):\n");
        for (MemoryMap.Holder h : all.subList(0, Math.min(all.size(), WAITING_HOLDERS))) {
            sb.append(String.format(Locale.ROOT, "  %10s in %6d chunk%s  %s%n",
                    BfcAllocator.humanReadableNumBytes(h.bytes()), h.chunks(), h.chunks() == 1 ? " " : "s",
                    h.holder()));
        }
        if (all.size() > WAITING_HOLDERS) {
            long bytes = 0;
            int chunks = 0;
            for (MemoryMap.Holder h : all.subList(WAITING_HOLDERS, all.size())) {
                bytes += h.bytes();
                chunks += h.chunks();
            }
            int more = all.size() - WAITING_HOLDERS;
            sb.append(String.format(Locale.ROOT, "  %10s in %6d chunk%s  (%d more holder%s)%n",
                    BfcAllocator.humanReadableNumBytes(bytes), chunks, chunks == 1 ? " " : "s", more,
                    more == 1 ? "" : "s"));
        }
        return sb.toString();
    }

    /**
     * The message's sentence, starting with a space; empty when no provenance was recorded and
     * nothing is lent.
     */
    static String messageSentence(MemoryMap map) {
        return messageSentence(List.of(map));
    }

    /**
     * The message's sentence of several allocators' maps together, the holders summed by name;
     * empty when no provenance was recorded and nothing is lent.
     */
    static String messageSentence(List<MemoryMap> maps) {
        if (!namesHolders(maps)) {
            return "";
        }
        List<MemoryMap.Holder> holders = MemoryMap.largestHolders(maps, MESSAGE_HOLDERS);
        StringBuilder sb = new StringBuilder(" Largest holders:");
        for (int i = 0; i < holders.size(); i++) {
            MemoryMap.Holder h = holders.get(i);
            sb.append(i == 0 ? " " : "; ").append(BfcAllocator.humanReadableNumBytes(h.bytes())).append(" by ")
                    .append(h.holder()).append(" (").append(h.chunks()).append(h.chunks() == 1 ? " chunk)" : " chunks)");
        }
        return sb.append('.').toString();
    }

    private static boolean namesHolders(List<MemoryMap> maps) {
        for (MemoryMap m : maps) {
            if (m.namesHolders()) {
                return true;
            }
        }
        return false;
    }
}
