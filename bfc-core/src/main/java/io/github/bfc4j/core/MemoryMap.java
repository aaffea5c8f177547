/*
 * Copyright 2026 The bfc4j Authors.
 * Derived from TensorFlow's MemoryDump (bfc_memory_map.proto) and
 * BFCAllocator::RecordMemoryMapInternal (Copyright 2015 The TensorFlow Authors),
 * licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.internal.NullElements;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * An immutable snapshot of every region and chunk of a {@link BfcAllocator}, with per-bin
 * summaries and the statistics, taken under the allocator's lock by
 * {@link BfcAllocator#memoryMap()}. The counterpart of upstream's {@code MemoryDump}
 * ({@code RecordMemoryMap}); chunks are grouped by region here, in address order, where
 * upstream lists them flat in the same order.
 *
 * <p>{@link #toJson()} writes the document described in docs/observability.md
 * (schema {@value #SCHEMA}).
 *
 * @param allocatorName the allocator's name
 * @param memoryType the sub-allocator's memory type
 * @param stats upstream's statistics ({@link BfcAllocator#getStats()})
 * @param memoryStats bfc4j's figures ({@link BfcAllocator#memoryStats()})
 * @param bins one summary per bin, bins 0 to 20 (upstream's {@code bin_summary})
 * @param regions every region, in address order
 */
public record MemoryMap(
        String allocatorName,
        MemoryType memoryType,
        AllocatorStats stats,
        MemoryStats memoryStats,
        List<BfcAllocator.BinDebugInfo> bins,
        List<Region> regions) {

    /** The {@code schema} value of {@link #toJson()}'s document. */
    public static final String SCHEMA = "bfc4j.memory-map/1";

    /**
     * Checks and copies the lists.
     *
     * @throws NullPointerException if an argument is null, or an element of {@code bins} or
     *     {@code regions}
     */
    public MemoryMap {
        Objects.requireNonNull(allocatorName, "allocatorName=null (expected: the allocator's name)");
        Objects.requireNonNull(memoryType, "memoryType=null (expected: a MemoryType, UNKNOWN if not known)");
        Objects.requireNonNull(stats, "stats=null (expected: AllocatorStats, e.g. allocator.getStats())");
        Objects.requireNonNull(memoryStats, "memoryStats=null (expected: MemoryStats, e.g. allocator.memoryStats())");
        bins = NullElements.copyOf(Objects.requireNonNull(bins, "bins=null (expected: the bins, e.g. allocator.getBinDebugInfo())"),
                "bins", "a BinDebugInfo for each bin");
        regions = NullElements.copyOf(Objects.requireNonNull(regions, "regions=null (expected: the regions, List.of() for none)"),
                "regions", "a Region, in address order");
    }

    /**
     * A region held from the sub-allocator, and the chunks that tile it.
     *
     * @param ptr the start address
     * @param size the size in bytes
     * @param chunks its chunks, in address order; their sizes add up to {@code size}
     */
    public record Region(long ptr, long size, List<Chunk> chunks) {
        /**
         * Copies the list.
         *
         * @throws NullPointerException if {@code chunks} or one of them is null
         */
        public Region {
            chunks = NullElements.copyOf(Objects.requireNonNull(chunks, "chunks=null (expected: the region's chunks, in address order)"),
                    "chunks", "a Chunk, in address order");
        }
    }

    /**
     * A chunk: upstream's {@code MemChunk}.
     *
     * @param ptr the start address
     * @param size the chunk's size (a multiple of 256)
     * @param requestedSize the size the caller asked for (for a free chunk: of its last use)
     * @param inUse whether the chunk is allocated
     * @param allocationId the allocation's id, -1 if free
     * @param bin the bin holding the free chunk, -1 if in use
     * @param freedAtCount the timing-counter stamp of a free chunk (unsigned), 0 if none, in use,
     *     or no timing counter is set now (as upstream's map)
     * @param notYetSafe whether the chunk is free but its free is not yet safe: stamped at or
     *     after the timing counter's safe frontier ({@link BfcAllocator#setSafeFrontier}; work
     *     still queued on a stream may use it), also when the counter was taken away since
     *     ({@code setTimingCounter(null)} stops stamping, not the wait). It is not merged with its
     *     neighbours until then, and an allocation with a {@code freedByFunc} skips it until that
     *     count passes the stamp
     * @param provenance who allocated a chunk in use, as far as recorded
     *     ({@link BfcAllocator#recordAnnotations}, {@link BfcAllocator#recordHistory}); for a
     *     chunk not yet safe, who allocated the memory freed into it, while the chunk is the one
     *     that free left (not merged since); else {@link Provenance#UNKNOWN} (a free chunk, or
     *     nothing recorded)
     * @param lentTo for a chunk in use that an adapter lent to a runtime
     *     ({@link MemoryAllocator#lendTo}, e.g. ONNX Runtime's {@code BfcOrtAllocator}), the
     *     runtime as the adapter named it; else {@code null} (not lent). Known whether or not
     *     anything is recorded
     */
    public record Chunk(long ptr, long size, long requestedSize, boolean inUse, long allocationId,
            int bin, long freedAtCount, boolean notYetSafe, Provenance provenance, String lentTo) {

        /** A {@code null} provenance becomes {@link Provenance#UNKNOWN}. */
        public Chunk {
            provenance = provenance == null ? Provenance.UNKNOWN : provenance;
        }

        /**
         * A chunk not lent to a runtime.
         *
         * @param ptr the start address
         * @param size the chunk's size
         * @param requestedSize the size the caller asked for
         * @param inUse whether the chunk is allocated
         * @param allocationId the allocation's id, -1 if free
         * @param bin the bin holding the free chunk, -1 if in use
         * @param freedAtCount the timing-counter stamp of a free chunk, 0 if none
         * @param notYetSafe whether the chunk is free but its free is not yet safe
         * @param provenance who allocated it, as far as recorded; {@code null} becomes
         *     {@link Provenance#UNKNOWN}
         */
        public Chunk(long ptr, long size, long requestedSize, boolean inUse, long allocationId, int bin,
                long freedAtCount, boolean notYetSafe, Provenance provenance) {
            this(ptr, size, requestedSize, inUse, allocationId, bin, freedAtCount, notYetSafe, provenance, null);
        }

        /**
         * A chunk without provenance, not waiting for a timing counter.
         *
         * @param ptr the start address
         * @param size the chunk's size
         * @param requestedSize the size the caller asked for
         * @param inUse whether the chunk is allocated
         * @param allocationId the allocation's id, -1 if free
         * @param bin the bin holding the free chunk, -1 if in use
         * @param freedAtCount the timing-counter stamp of a free chunk, 0 if none
         */
        public Chunk(long ptr, long size, long requestedSize, boolean inUse, long allocationId, int bin,
                long freedAtCount) {
            this(ptr, size, requestedSize, inUse, allocationId, bin, freedAtCount, false, Provenance.UNKNOWN, null);
        }

        /**
         * Who holds the chunk, the key by which {@link MemoryMap#largestHolders(int)}, the
         * summary and the out-of-memory message group memory: {@link Provenance#holder()}, or,
         * where the provenance names no one ({@code "(unknown)"}: nothing recorded), the runtime
         * the chunk is lent to ({@link #lentTo()}), e.g. {@code ONNX Runtime (BfcOrtAllocator 'x')}.
         *
         * @return a short, human-readable key
         */
        public String holder() {
            String h = provenance.holder();
            return lentTo != null && h.equals(Provenance.UNKNOWN_HOLDER) ? lentTo : h;
        }
    }

    /**
     * Bytes in use held by one holder: an annotation, or an innermost stack frame, or a
     * thread, or a step, or the runtime the memory is lent to, or {@code "(unknown)"}
     * ({@link Chunk#holder()}).
     *
     * @param holder the holder's key
     * @param bytes the bytes of the chunks it holds (chunk sizes)
     * @param requestedBytes the bytes it asked for
     * @param chunks how many chunks it holds
     */
    public record Holder(String holder, long bytes, long requestedBytes, int chunks) {
        /**
         * Checks the holder.
         *
         * @throws NullPointerException if {@code holder} is null
         */
        public Holder {
            Objects.requireNonNull(holder, "holder=null (expected: the holder's key, e.g. chunk.holder())");
        }
    }

    /**
     * The largest holders of the memory in use, grouped by {@link Chunk#holder()}: what
     * {@link BfcAllocator#memorySummary()} and the out-of-memory message list.
     *
     * @param limit the most holders returned
     * @return holders by bytes, largest first (ties by name)
     * @throws IllegalArgumentException if {@code limit} is negative
     */
    public List<Holder> largestHolders(int limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit=" + limit + " (expected: >= 0)");
        }
        List<Holder> each = new ArrayList<>();
        for (Region r : regions) {
            for (Chunk c : r.chunks()) {
                if (c.inUse()) {
                    each.add(new Holder(c.holder(), c.size(), c.requestedSize(), 1));
                }
            }
        }
        return largest(each, limit);
    }

    /**
     * The largest holders of several maps taken together (the shards of a
     * {@link ShardedBfcAllocator}), a holder's chunks in every map summed, ordered as
     * {@link #largestHolders(int)} orders them.
     */
    static List<Holder> largestHolders(List<MemoryMap> maps, int limit) {
        List<Holder> all = new ArrayList<>();
        for (MemoryMap m : maps) {
            all.addAll(m.largestHolders(Integer.MAX_VALUE));
        }
        return largest(all, limit);
    }

    /**
     * Holders summed by name (also across several maps: a sharded allocator's), largest first,
     * ties by name.
     *
     * @param limit the most holders returned
     */
    static List<Holder> largest(Iterable<Holder> holders, int limit) {
        Map<String, long[]> by = new HashMap<>();
        for (Holder h : holders) {
            long[] a = by.computeIfAbsent(h.holder(), k -> new long[3]);
            a[0] += h.bytes();
            a[1] += h.requestedBytes();
            a[2] += h.chunks();
        }
        return by.entrySet().stream()
                .map(e -> new Holder(e.getKey(), e.getValue()[0], e.getValue()[1], (int) e.getValue()[2]))
                .sorted(Comparator.comparingLong(Holder::bytes).reversed()
                        .thenComparing(Holder::holder))
                .limit(limit)
                .toList();
    }

    /**
     * Whether the holders of this map name anyone: some chunk carries a provenance, or some
     * chunk in use is lent to a runtime. The summary and the out-of-memory message list the
     * largest holders only then.
     */
    boolean namesHolders() {
        if (hasProvenance()) {
            return true;
        }
        for (Region r : regions) {
            for (Chunk c : r.chunks()) {
                if (c.lentTo() != null) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Whether any chunk carries a provenance.
     *
     * @return true if at least one chunk's provenance is known
     */
    public boolean hasProvenance() {
        for (Region r : regions) {
            for (Chunk c : r.chunks()) {
                if (c.provenance().isKnown()) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * The chunks of every region, in address order: upstream's flat {@code chunk} list.
     *
     * @return every chunk
     */
    public List<Chunk> chunks() {
        return regions.stream().flatMap(r -> r.chunks().stream()).toList();
    }

    /**
     * The snapshot as JSON (UTF-8 text, schema {@value #SCHEMA}, documented in
     * docs/observability.md). Addresses are strings {@code "0x..."} (64-bit unsigned values do
     * not survive a parser that reads numbers as doubles); every other number is an integer,
     * except {@code fragmentation}.
     *
     * @return the JSON document, pretty-printed with one chunk per line
     */
    public String toJson() {
        StringBuilder sb = new StringBuilder(256 + 160 * regions.size() * 4);
        sb.append("{\n  \"schema\": ");
        string(sb, SCHEMA);
        sb.append(",\n  \"allocatorName\": ");
        string(sb, allocatorName);
        sb.append(",\n  \"memoryType\": ");
        string(sb, memoryType.name());
        sb.append(",\n  \"stats\": {\"numAllocs\": ").append(stats.numAllocs())
                .append(", \"bytesInUse\": ").append(stats.bytesInUse())
                .append(", \"peakBytesInUse\": ").append(stats.peakBytesInUse())
                .append(", \"largestAllocSize\": ").append(stats.largestAllocSize())
                .append(", \"bytesLimit\": ").append(stats.bytesLimit())
                .append(", \"poolBytes\": ").append(stats.poolBytes())
                .append(", \"peakPoolBytes\": ").append(stats.peakPoolBytes())
                .append("},\n");
        MemoryStats m = memoryStats;
        sb.append("  \"memoryStats\": {\"bytesInUse\": ").append(m.bytesInUse())
                .append(", \"peakBytesInUse\": ").append(m.peakBytesInUse())
                .append(", \"allocatedBytesTotal\": ").append(m.allocatedBytesTotal())
                .append(", \"freedBytesTotal\": ").append(m.freedBytesTotal())
                .append(",\n    \"reservedBytes\": ").append(m.reservedBytes())
                .append(", \"peakReservedBytes\": ").append(m.peakReservedBytes())
                .append(", \"reservedBytesTotal\": ").append(m.reservedBytesTotal())
                .append(", \"releasedBytesTotal\": ").append(m.releasedBytesTotal())
                .append(",\n    \"activeAllocations\": ").append(m.activeAllocations())
                .append(", \"peakActiveAllocations\": ").append(m.peakActiveAllocations())
                .append(", \"allocationsTotal\": ").append(m.allocationsTotal())
                .append(", \"freesTotal\": ").append(m.freesTotal())
                .append(", \"oomsTotal\": ").append(m.oomsTotal())
                .append(",\n    \"regionCount\": ").append(m.regionCount())
                .append(", \"regionExtendsTotal\": ").append(m.regionExtendsTotal())
                .append(", \"regionFreesTotal\": ").append(m.regionFreesTotal())
                .append(", \"largestFreeChunkBytes\": ").append(m.largestFreeChunkBytes())
                .append(", \"fragmentation\": ").append(m.fragmentation())
                .append(", \"bytesLimit\": ").append(m.bytesLimit())
                .append(", \"fragmentationWithinRegions\": ").append(m.fragmentationWithinRegions())
                .append(", \"bytesHeldForViews\": ").append(m.bytesHeldForViews())
                .append("},\n");
        sb.append("  \"bins\": [");
        for (int i = 0; i < bins.size(); i++) {
            BfcAllocator.BinDebugInfo b = bins.get(i);
            sb.append(i == 0 ? "\n" : ",\n");
            sb.append("    {\"bin\": ").append(b.binNum())
                    .append(", \"binSize\": ").append(b.binSize())
                    .append(", \"totalBytesInUse\": ").append(b.totalBytesInUse())
                    .append(", \"totalBytesInBin\": ").append(b.totalBytesInBin())
                    .append(", \"totalRequestedBytesInUse\": ").append(b.totalRequestedBytesInUse())
                    .append(", \"totalChunksInUse\": ").append(b.totalChunksInUse())
                    .append(", \"totalChunksInBin\": ").append(b.totalChunksInBin()).append('}');
        }
        sb.append(bins.isEmpty() ? "],\n" : "\n  ],\n");
        sb.append("  \"regions\": [");
        for (int i = 0; i < regions.size(); i++) {
            Region r = regions.get(i);
            sb.append(i == 0 ? "\n" : ",\n");
            sb.append("    {\"ptr\": \"0x").append(Long.toHexString(r.ptr()))
                    .append("\", \"size\": ").append(r.size()).append(", \"chunks\": [");
            for (int j = 0; j < r.chunks().size(); j++) {
                Chunk c = r.chunks().get(j);
                sb.append(j == 0 ? "\n" : ",\n");
                sb.append("      {\"ptr\": \"0x").append(Long.toHexString(c.ptr()))
                        .append("\", \"size\": ").append(c.size())
                        .append(", \"requestedSize\": ").append(c.requestedSize())
                        .append(", \"inUse\": ").append(c.inUse())
                        .append(", \"allocationId\": ").append(c.allocationId())
                        .append(", \"bin\": ").append(c.bin())
                        .append(", \"freedAtCount\": ").append(Long.toUnsignedString(c.freedAtCount()));
                if (c.notYetSafe()) {
                    sb.append(", \"notYetSafe\": true");
                }
                if (c.provenance().isKnown()) {
                    sb.append(", \"provenance\": ");
                    provenance(sb, c.provenance());
                }
                if (c.lentTo() != null) {
                    sb.append(", \"lentTo\": ");
                    string(sb, c.lentTo());
                }
                sb.append('}');
            }
            sb.append(r.chunks().isEmpty() ? "]}" : "\n    ]}");
        }
        sb.append(regions.isEmpty() ? "]\n}\n" : "\n  ]\n}\n");
        return sb.toString();
    }

    /** Appends a provenance object: only the fields that were recorded. */
    private static void provenance(StringBuilder sb, Provenance p) {
        sb.append('{');
        String sep = "";
        if (p.timeMicros() >= 0) {
            sb.append("\"timeMicros\": ").append(p.timeMicros());
            sep = ", ";
        }
        if (p.thread() != null) {
            sb.append(sep).append("\"thread\": ");
            string(sb, p.thread());
            sep = ", ";
        }
        if (p.annotation() != null) {
            sb.append(sep).append("\"annotation\": ");
            string(sb, p.annotation());
            sep = ", ";
        }
        if (p.step() >= 0) {
            sb.append(sep).append("\"step\": ").append(p.step());
            sep = ", ";
        }
        if (!p.stack().isEmpty()) {
            sb.append(sep).append("\"stack\": [");
            for (int i = 0; i < p.stack().size(); i++) {
                sb.append(i == 0 ? "" : ", ");
                string(sb, p.stack().get(i).toString());
            }
            sb.append(']');
        }
        sb.append('}');
    }

    /**
     * Appends {@code s} as a JSON string (RFC 8259: quotes, backslash and control characters
     * escaped; a lone surrogate too, as {@code \\uXXXX}, since no encoding can write it as a
     * character: a name holding one would make the whole document impossible to write as UTF-8).
     *
     * @param sb where to append
     * @param s the text
     */
    static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20 || isLoneSurrogate(s, i)) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /**
     * Whether the char at {@code i} is half of a surrogate pair whose other half is missing.
     *
     * @param s the text
     * @param i an index in it
     * @return true for a lone surrogate
     */
    static boolean isLoneSurrogate(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 == s.length() || !Character.isLowSurrogate(s.charAt(i + 1));
        }
        return Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(s.charAt(i - 1)));
    }
}
