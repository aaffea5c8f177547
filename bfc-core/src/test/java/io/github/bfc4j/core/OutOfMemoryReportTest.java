/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The out-of-memory report describes the moment of failure: the figures of
 * {@link BfcOutOfMemoryException} and the dump are taken under the allocator's lock in the
 * failing call, so a free that another party makes after the lock is released, before
 * {@code allocate} throws, shows in neither.
 */
class OutOfMemoryReportTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    /** Frees one address the first time the allocator logs the sentence about its dump. */
    private static final class FreeOnDumpLog extends Handler {
        private final BfcAllocator allocator;
        private final long victim;
        boolean freed;

        FreeOnDumpLog(BfcAllocator allocator, long victim) {
            this.allocator = allocator;
            this.victim = victim;
        }

        @Override
        public void publish(LogRecord r) {
            String text = new SimpleFormatter().formatMessage(r);
            if (!freed && (text.contains("Memory map and summary written to")
                    || text.contains("Could not write the memory dump"))) {
                freed = true;
                allocator.deallocateRaw(victim);
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    @Test
    void theExceptionAndTheDumpDescribeTheMomentOfFailure(@TempDir Path dir) throws Exception {
        // Retry on failure (the default), so that the allocator logs the dump's file name after
        // the failing attempt released the lock and before allocate() builds its exception: the
        // handler frees there, in this thread, deterministically. An interrupt ends the retry's
        // wait at once (one last attempt, as documented) instead of after 10 seconds.
        try (BfcAllocator a = BfcAllocator.builder().name("moment_bfc").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false))
                .options(BfcOptions.builder().dumpOnOomDirectory(dir).build())
                .closePolicy(ClosePolicy.FORCE).build()) {
            long victim = a.allocateRaw(64, MIB);
            assertThat(a.allocateRaw(64, MIB)).isNotZero();
            final long inUseAtFailure = a.bytesInUse();
            final long largestFreeAtFailure = a.largestFreeChunkBytes();

            Logger jul = Logger.getLogger(BfcAllocator.class.getName());
            FreeOnDumpLog freer = new FreeOnDumpLog(a, victim);
            jul.addHandler(freer);
            BfcOutOfMemoryException e;
            Thread.currentThread().interrupt();
            try {
                e = catchThrowableOfType(() -> a.allocate(3 * MIB), BfcOutOfMemoryException.class);
            } finally {
                Thread.interrupted();
                jul.removeHandler(freer);
            }

            assertThat(freer.freed).as("the free between the failure and the exception happened").isTrue();
            assertThat(a.bytesInUse()).isEqualTo(inUseAtFailure - MIB);
            assertThat(e).isNotNull();
            assertThat(e.bytesInUse()).as("bytes in use at the failure").isEqualTo(inUseAtFailure);
            assertThat(e.stats().bytesInUse()).isEqualTo(inUseAtFailure);
            assertThat(e.largestFreeChunkBytes()).isEqualTo(largestFreeAtFailure);
            assertThat(e.getMessage()).contains(BfcAllocator.humanReadableNumBytes(inUseAtFailure)
                    + " is in use by live allocations");
            assertThat(e.getMessage()).as("why it failed without waiting")
                    .contains(" This thread is interrupted, which ends the wait for other threads to free memory"
                            + " (allowRetryOnFailure waits up to 10 s otherwise): the allocation may have failed"
                            + " without waiting.");

            assertThat(e.dumpFile()).isNotNull();
            Map<?, ?> doc = (Map<?, ?>) TinyJson.parse(Files.readString(Path.of(e.dumpFile())));
            Map<?, ?> map = (Map<?, ?>) doc.get("memoryMap");
            Map<?, ?> stats = (Map<?, ?>) map.get("stats");
            assertThat(num(stats.get("bytesInUse"))).as("the dump's bytes in use").isEqualTo(inUseAtFailure);
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(1);
        }
    }

    /**
     * An out-of-memory listener is told of every failed allocation, once, and of nothing else:
     * with retry on, a request above the memory limit (which fails at once) and one above the
     * largest possible request each make one report; the successful and the 0-byte requests
     * after them none (a thread's last report is not told again).
     */
    @Test
    void aListenerHearsOfEachFailureOnceAndOfNothingElse() {
        try (BfcAllocator a = BfcAllocator.builder().name("told").memoryLimit(MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false)).allowRetryOnFailure(true)
                .closePolicy(ClosePolicy.FORCE).build()) {
            java.util.List<Long> told = new java.util.ArrayList<>();
            a.addOutOfMemoryListener(r -> told.add(r.requestedBytes()));
            assertThat(a.allocateRaw(64, 2 * MIB)).isZero();
            assertThat(told).as("above the limit, retry on").containsExactly(2 * MIB);
            long p = a.allocateRaw(64, 4096);
            assertThat(p).isNotZero();
            assertThat(a.allocateRaw(64, 0)).isZero();
            assertThat(told).as("a success and a 0-byte request are no failures").containsExactly(2 * MIB);
            assertThat(a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1)).isZero();
            assertThat(told).as("above the largest possible request")
                    .containsExactly(2 * MIB, BfcAllocator.MAX_ALLOCATION_BYTES + 1);
            assertThat(a.allocateRaw(64, 4096)).isNotZero();
            assertThat(told).hasSize(2);
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(2);
        }
    }

    /**
     * allocateRawOrThrow serves as allocateRaw does, and its failure throws the figures of the
     * moment of failure, though an out-of-memory listener frees memory before it returns.
     */
    @Test
    void allocateRawOrThrowServesAsAllocateRawAndThrowsTheMomentOfFailure() {
        try (BfcAllocator a = BfcAllocator.builder().name("raw_moment").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false)).allowRetryOnFailure(false)
                .closePolicy(ClosePolicy.FORCE).build();
                BfcAllocator twin = BfcAllocator.builder().name("raw_twin").memoryLimit(4 * MIB)
                        .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false)).allowRetryOnFailure(false)
                        .closePolicy(ClosePolicy.FORCE).build()) {
            long victim = a.allocateRawOrThrow(64, MIB);
            assertThat(victim).as("the address allocateRaw gives the same calls").isEqualTo(twin.allocateRaw(64, MIB));
            assertThat(a.allocateRawOrThrow(64, MIB)).isEqualTo(twin.allocateRaw(64, MIB));
            assertThat(a.allocateRawOrThrow(64, 0)).isZero();
            final long inUseAtFailure = a.bytesInUse();
            final long largestFreeAtFailure = a.largestFreeChunkBytes();
            a.addOutOfMemoryListener(r -> a.deallocateRaw(victim));

            BfcOutOfMemoryException e = catchThrowableOfType(() -> a.allocateRawOrThrow(64, 3 * MIB),
                    BfcOutOfMemoryException.class);

            assertThat(a.bytesInUse()).as("the listener freed").isEqualTo(inUseAtFailure - MIB);
            assertThat(e).isNotNull();
            assertThat(e.requestedBytes()).isEqualTo(3 * MIB);
            assertThat(e.bytesInUse()).as("bytes in use at the failure").isEqualTo(inUseAtFailure);
            assertThat(e.largestFreeChunkBytes()).isEqualTo(largestFreeAtFailure);
            assertThat(e.getMessage()).startsWith("Allocator 'raw_moment' is out of memory: tried to allocate 3.00MiB.")
                    .contains(BfcAllocator.humanReadableNumBytes(inUseAtFailure) + " is in use by live allocations");
            assertThat(catchThrowableOfType(() -> a.allocateRawOrThrow(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1),
                    BfcOutOfMemoryException.class)).as("above the largest possible request")
                    .hasMessageContaining("The request alone is larger than the memory limit");
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(2);
            a.checkInvariants();
        }
    }

    @Test
    void aShardedAllocatorsAllocateRawOrThrowGivesTheFiguresOfAllShards() {
        try (ShardedBfcAllocator s = ShardedBfcAllocator.builder().name("raw_shards").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false)).shards(2).build()) {
            long p = s.allocateRawOrThrow(64, MIB);
            assertThat(p).isNotZero();
            assertThat(s.allocateRawOrThrow(64, 0)).isZero();
            BfcOutOfMemoryException e = catchThrowableOfType(() -> s.allocateRawOrThrow(64, 4 * MIB),
                    BfcOutOfMemoryException.class);
            assertThat(e).isNotNull();
            assertThat(e.getMessage()).startsWith("Allocator 'raw_shards' is out of memory: tried to allocate 4.00MiB.")
                    .contains("The figures are those of all 2 shards together");
            assertThat(e.bytesInUse()).isEqualTo(s.bytesInUse());
            s.deallocateRaw(p);
            assertThat(s.bytesInUse()).isZero();
        }
    }

    private static long num(Object o) {
        return ((BigDecimal) o).longValueExact();
    }

    /**
     * The exception is {@code Serializable}, as every {@code Throwable}: sent to another JVM (a
     * remote call, a serialising log appender), it keeps every figure, the statistics included.
     */
    @Test
    void theExceptionKeepsItsFiguresThroughSerialization() throws Exception {
        try (BfcAllocator a = BfcAllocator.builder().name("sent_bfc").memoryLimit(4 * MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false)).build()) {
            Allocation held = a.allocate(MIB);
            BfcOutOfMemoryException e = catchThrowableOfType(() -> a.allocate(8 * MIB), BfcOutOfMemoryException.class);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(e);
            }
            BfcOutOfMemoryException back;
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
                back = (BfcOutOfMemoryException) in.readObject();
            }
            assertThat(back.getMessage()).isEqualTo(e.getMessage());
            assertThat(back.stats()).isNotNull().isEqualTo(e.stats());
            assertThat(back.requestedBytes()).isEqualTo(8 * MIB);
            assertThat(back.bytesInUse()).isEqualTo(e.bytesInUse());
            held.close();
        }
    }

    /**
     * The report of an allocator of its own names no shard, nor does its snapshot, and its dump
     * has no shard's fields; a report or snapshot whose shard's figures do not fit together is
     * refused, saying what fits.
     */
    @Test
    void aReportOfAnAllocatorOfItsOwnNamesNoShard(@TempDir Path dir) throws Exception {
        try (BfcAllocator a = BfcAllocator.builder().name("alone").memoryLimit(MIB)
                .subAllocator(new SimSubAllocator(BASE, 16 * MIB, 0, false))
                .options(BfcOptions.builder().allowRetryOnFailure(false).dumpOnOomDirectory(dir).build()).build()) {
            java.util.List<OutOfMemoryReport> told = new java.util.ArrayList<>();
            a.addOutOfMemoryListener(told::add);
            assertThat(a.allocateRaw(64, 2 * MIB)).isZero();
            OutOfMemoryReport r = told.get(0);
            assertThat(r.allocatorName()).isEqualTo("alone");
            assertThat(r.shardedAllocatorName()).isNull();
            assertThat(r.shardIndex()).isEqualTo(-1);
            assertThat(r.shardCount()).isZero();
            assertThat(r.describedAllocator()).isEqualTo("'alone'");
            try (var files = Files.list(dir)) {
                Path json = files.filter(f -> f.toString().endsWith(".json")).findFirst().orElseThrow();
                assertThat(json.getFileName().toString()).startsWith("bfc-oom-alone-").doesNotContain("shard");
                assertThat(((Map<?, ?>) TinyJson.parse(Files.readString(json))).keySet().stream().map(String::valueOf))
                        .doesNotContain("shardOf", "shardIndex", "shardCount");
            }
            MemorySnapshot snap = r.snapshot();
            assertThat(snap.shardedAllocatorName()).isNull();
            assertThat(snap.shardIndex()).isEqualTo(-1);
            assertThat(snap.shardCount()).isZero();
            assertThat(snap.describedAllocator()).isEqualTo("'alone'");
            assertThat(a.snapshot().describedAllocator()).isEqualTo("'alone'");
            assertThat(new MemorySnapshot(snap.timeMicros(), snap.memoryMap(), snap.options(), snap.coalescingRegions(),
                    snap.timingCounterUsed(), snap.history())).isEqualTo(snap);
            assertThat(new MemorySnapshot(snap.timeMicros(), snap.memoryMap(), snap.options(), snap.coalescingRegions(),
                    snap.timingCounterUsed(), snap.history(), "x", 1, 4).describedAllocator())
                    .isEqualTo("'x' (shard 1 of 4)");
            assertThat(catchThrowableOfType(() -> new MemorySnapshot(snap.timeMicros(), snap.memoryMap(),
                    snap.options(), false, false, snap.history(), null, 0, 2), IllegalArgumentException.class))
                    .isNotNull().hasMessageStartingWith("shardedAllocatorName=null (expected: the sharded allocator's"
                            + " name for a shard, shardIndex=0 of shardCount=2");
            assertThat(catchThrowableOfType(() -> new MemorySnapshot(snap.timeMicros(), snap.memoryMap(),
                    snap.options(), false, false, snap.history(), "x", 2, 2), IllegalArgumentException.class))
                    .isNotNull().hasMessageStartingWith("shardIndex=2, shardCount=2 (expected: shardCount >= 1");
            assertThat(new OutOfMemoryReport("alone", 1, 256, Provenance.UNKNOWN, snap, "")).isEqualTo(
                    new OutOfMemoryReport("alone", 1, 256, Provenance.UNKNOWN, snap, "", null, -1, 0));
            for (Object[] bad : new Object[][] {{null, 0, 0}, {null, -1, 2}}) {
                assertThat(catchThrowableOfType(() -> new OutOfMemoryReport("x/0", 1, 256, Provenance.UNKNOWN, snap,
                        "", (String) bad[0], (int) bad[1], (int) bad[2]), IllegalArgumentException.class))
                        .as("%s, %s", bad[1], bad[2]).isNotNull().hasMessageStartingWith("shardedAllocatorName=null"
                                + " (expected: the sharded allocator's name for a shard, shardIndex=" + bad[1]);
            }
            for (int[] bad : new int[][] {{-1, 2}, {2, 2}, {0, 0}}) {
                assertThat(catchThrowableOfType(() -> new OutOfMemoryReport("x/0", 1, 256, Provenance.UNKNOWN, snap,
                        "", "x", bad[0], bad[1]), IllegalArgumentException.class))
                        .as("%s, %s", bad[0], bad[1]).isNotNull()
                        .hasMessage("shardIndex=" + bad[0] + ", shardCount=" + bad[1] + " (expected: shardCount >= 1"
                                + " and shardIndex from 0 to shardCount - 1 for a shard of 'x'; or shardedAllocatorName"
                                + " null, shardIndex -1 and shardCount 0 for an allocator of its own)");
            }
        }
    }
}
