/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The out-of-memory dumps of {@link BfcOptions#dumpOnOomDirectory()}: an
 * {@link OutOfMemoryListener} that writes two files per failure, a JSON document (schema
 * {@value #SCHEMA}: the summary and the memory map at the moment of failure, and for a shard of
 * a {@link ShardedBfcAllocator} the memory maps of all shards) and, by the same name with
 * {@code .pickle}, PyTorch's memory snapshot of the same moment (with the recent history, when
 * recorded; all shards of a sharded allocator), for pytorch.org/memory_viz; rate-limited so
 * that a storm of expected failures (probing with retry off, say) cannot fill a disk: the first
 * {@value #FIRST_DUMPS} failures of the allocator are written, then at most one a minute.
 */
final class OomDumpWriter implements OutOfMemoryListener {

    /** The {@code schema} of a dump. */
    static final String SCHEMA = "bfc4j.oom-dump/1";

    /** The most characters of the allocator's name in a dump's file name. */
    static final int MAX_NAME_CHARS = 100;

    /** Failures always dumped before the rate limit applies. */
    static final int FIRST_DUMPS = 10;

    /** After the first dumps, at most one per this many nanoseconds. */
    static final long INTERVAL_NANOS = 60_000_000_000L;

    /** Successive numbers for file names, so that two dumps never share a name. */
    private static final AtomicLong SEQUENCE = new AtomicLong();

    /**
     * What a failure's message says about its dump, and the file (null if none was written). A
     * class, not a record: Lincheck's model checker, which runs the allocator's failures, cannot
     * read a record's static fields.
     */
    static final class Result {
        static final Result NONE = new Result("", null);

        private final String note;
        private final String file;

        Result(String note, String file) {
            this.note = note;
            this.file = file;
        }

        String note() {
            return note;
        }

        String file() {
            return file;
        }
    }

    /** Opens a new file for writing, failing if it exists: {@code Files.newOutputStream}. */
    @FunctionalInterface
    interface FileOpener {
        OutputStream openNew(Path file) throws IOException;
    }

    private final Path dir;
    private final LongSupplier nanoClock;
    private final FileOpener opener;
    private int written;
    private long lastNanos;
    private long skipped;

    OomDumpWriter(Path dir) {
        this(dir, System::nanoTime);
    }

    OomDumpWriter(Path dir, LongSupplier nanoClock) {
        this(dir, nanoClock, file -> Files.newOutputStream(file, StandardOpenOption.CREATE_NEW));
    }

    /**
     * @param opener opens the {@code .json} and {@code .pickle} files (tests give one whose
     *     stream fails)
     */
    OomDumpWriter(Path dir, LongSupplier nanoClock, FileOpener opener) {
        this.dir = dir;
        this.nanoClock = nanoClock;
        this.opener = opener;
    }

    @Override
    public void onOutOfMemory(OutOfMemoryReport report) {
        write(report);
    }

    /** {@link #write(OutOfMemoryReport, Supplier)} with no shards. */
    Result write(OutOfMemoryReport report) {
        return write(report, List::of);
    }

    /**
     * Writes the dump of a failure, unless the rate limit says no.
     *
     * @param shards the snapshots of all shards of the sharded allocator whose shard failed, in
     *     shard order, taken only if the dump is written; none for an allocator of its own
     * @return the sentence for the failure's messages (starting with a space), and the JSON file
     */
    Result write(OutOfMemoryReport report, Supplier<List<MemorySnapshot>> shards) {
        synchronized (this) {
            long now = nanoClock.getAsLong();
            if (!dueAt(now)) {
                return skip();
            }
            written++;
            lastNanos = now;
        }
        String stem = stem(report);
        Path file = dir.resolve(stem + ".json");
        List<MemorySnapshot> all;
        String abs;
        try {
            all = withFailingShardAsReported(report, shards.get());
            List<MemoryMap> maps = new ArrayList<>(all.size());
            for (MemorySnapshot s : all) {
                maps.add(s.memoryMap());
            }
            Files.createDirectories(dir);
            byte[] bytes = json(report, maps).getBytes(StandardCharsets.UTF_8);
            try (OutputStream out = opener.openNew(file)) {
                out.write(bytes);
            }
            abs = file.toAbsolutePath().toString();
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            // A dump is the failure's picture, not the failure: the allocation fails as it would
            // have, even where the picture does not fit in the heap.
            if (!(e instanceof FileAlreadyExistsException)) {
                deleteQuietly(file); // created here, if at all (a disk full part way)
            }
            return new Result(" Could not write the memory dump to " + file.toAbsolutePath() + ": " + e
                    + " (set BfcOptions.dumpOnOomDirectory or -Dbfc4j.dumpOnOom to a writable directory).", null);
        }
        Path pickle = dir.resolve(stem + ".pickle");
        OutputStream opened;
        try {
            opened = opener.openNew(pickle);
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            // Not created here (it may be another's file): left alone.
            return pickleFailed(abs, pickle, e);
        }
        try (OutputStream out = opened) {
            if (all.isEmpty()) {
                report.snapshot().writePyTorchPickle(out);
            } else {
                PyTorchSnapshotWriter.writeShards(all, out);
            }
        } catch (IOException | RuntimeException | OutOfMemoryError e) {
            deleteQuietly(pickle);
            return pickleFailed(abs, pickle, e);
        }
        return new Result(" Memory map and summary written to " + abs + ", PyTorch's memory snapshot of it (for"
                + " pytorch.org/memory_viz) to " + pickle.toAbsolutePath() + ".", abs);
    }

    /**
     * The name of a dump's files, without {@code .json} or {@code .pickle}:
     * {@code bfc-oom-NAME-MILLIS-N}, or for a shard of a sharded allocator
     * {@code bfc-oom-SHARDED-shardI-MILLIS-N}, by the name its user gave (the shard's own name,
     * {@code SHARDED/I}, is no name the user gave).
     */
    static String stem(OutOfMemoryReport report) {
        boolean shard = report.shardedAllocatorName() != null;
        String name = shard ? report.shardedAllocatorName() : report.allocatorName();
        String safe = name.replaceAll("[^A-Za-z0-9._-]", "_");
        // A file name holds 255 bytes on common file systems: a longer allocator name made every
        // dump fail ("File name too long").
        return "bfc-oom-" + safe.substring(0, Math.min(safe.length(), MAX_NAME_CHARS))
                + (shard ? "-shard" + report.shardIndex() : "") + "-" + System.currentTimeMillis()
                + "-" + SEQUENCE.incrementAndGet();
    }

    /** Deletes a partial file of this writer's; the note says what failed, and names it if it stays. */
    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // left, and named in the failure's message
        }
    }

    /** Counts a failure not dumped (the rate limit), and says so. */
    synchronized Result skip() {
        skipped++;
        return new Result(" No memory dump written (" + written + " written, " + skipped + " skipped: at most"
                + " one a minute after the first " + FIRST_DUMPS + "); memorySummary() tells the state now.", null);
    }

    /**
     * Whether a failure now would be written (the rate limit's answer, without counting it), so
     * that the picture is not taken for a dump that will be skipped.
     */
    synchronized boolean due() {
        return dueAt(nanoClock.getAsLong());
    }

    /** The rate limit: the first {@value #FIRST_DUMPS} dumps, then one an interval. Guarded by this. */
    private boolean dueAt(long now) {
        return written < FIRST_DUMPS || now - lastNanos >= INTERVAL_NANOS;
    }

    private static Result pickleFailed(String json, Path pickle, Throwable e) {
        return new Result(" Memory map and summary written to " + json + "; could not write PyTorch's memory"
                + " snapshot to " + pickle.toAbsolutePath() + ": " + e + ".", json);
    }

    /**
     * The shards' snapshots with the failing shard's replaced by the report's, taken at the
     * moment of failure (the others are read after it, all at one instant); {@code shards} as
     * given if no shard has the report's name, or if a range of the failing shard at the failure
     * is another shard's in {@code shards} (it moved in between: the two pictures together would
     * show it twice).
     */
    static List<MemorySnapshot> withFailingShardAsReported(OutOfMemoryReport report,
            List<MemorySnapshot> shards) {
        List<MemorySnapshot> out = new ArrayList<>(shards);
        for (int i = 0; i < out.size(); i++) {
            if (out.get(i).memoryMap().allocatorName().equals(report.allocatorName())) {
                if (overlapsAnother(report.snapshot(), shards, i)) {
                    return shards;
                }
                out.set(i, report.snapshot());
            }
        }
        return out;
    }

    /** Whether a region of {@code failing} overlaps a region of a shard other than {@code index}. */
    private static boolean overlapsAnother(MemorySnapshot failing, List<MemorySnapshot> shards, int index) {
        for (MemoryMap.Region r : failing.memoryMap().regions()) {
            for (int j = 0; j < shards.size(); j++) {
                if (j == index) {
                    continue;
                }
                for (MemoryMap.Region o : shards.get(j).memoryMap().regions()) {
                    if (r.ptr() < o.ptr() + o.size() && o.ptr() < r.ptr() + r.size()) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * The dump's JSON document; for a shard's report, the sharded allocator's name and the
     * shard's index and count; {@code shards}, when not empty, as a last field.
     */
    static String json(OutOfMemoryReport report, List<MemoryMap> shards) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\n\"schema\": \"").append(SCHEMA).append("\",\n\"allocatorName\": ");
        MemoryMap.string(sb, report.allocatorName());
        sb.append(",\n\"requestedBytes\": ").append(report.requestedBytes())
                .append(",\n\"roundedBytes\": ").append(report.roundedBytes())
                .append(",\n\"summary\": ");
        MemoryMap.string(sb, report.summary());
        sb.append(",\n\"memoryMap\": ").append(report.snapshot().memoryMap().toJson());
        if (report.shardedAllocatorName() != null) {
            sb.append(",\n\"shardOf\": ");
            MemoryMap.string(sb, report.shardedAllocatorName());
            sb.append(",\n\"shardIndex\": ").append(report.shardIndex())
                    .append(",\n\"shardCount\": ").append(report.shardCount());
        }
        if (!shards.isEmpty()) {
            sb.append(",\n\"shards\": [");
            for (int i = 0; i < shards.size(); i++) {
                sb.append(i == 0 ? "\n" : ",\n").append(shards.get(i).toJson());
            }
            sb.append("]");
        }
        sb.append("}\n");
        return sb.toString();
    }
}
