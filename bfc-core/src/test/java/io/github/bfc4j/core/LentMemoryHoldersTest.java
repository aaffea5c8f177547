/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Memory lent to a runtime ({@link MemoryAllocator#lendTo}) is held by that runtime in the
 * memory map, the largest holders, the summary, the out-of-memory message and a refused
 * close, with nothing recorded: the chunk's loan names it. Recorded provenance still comes
 * first.
 */
class LentMemoryHoldersTest {

    private static final String A = "Runtime A (adapter 'a')";
    private static final String B = "Runtime B (adapter 'b')";
    private static final String RELEASE = "release the sessions, then close the adapter";

    private static SimSubAllocator sim() {
        return new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false);
    }

    private static BfcAllocator allocator() {
        return BfcAllocator.builder().name("lent").memoryLimit(64L << 20).subAllocator(sim()).build();
    }

    @Test
    void aLentChunkIsHeldByItsRuntimeWithNothingRecorded() {
        try (BfcAllocator a = allocator()) {
            long own = a.allocateRawOrThrow(64, 64 << 10);
            MemoryAllocator.Loan la = a.lendTo(A, RELEASE);
            MemoryAllocator.Loan lb = a.lendTo(B, RELEASE);
            long pa = la.allocateRawOrThrow(64, 1 << 20);
            long pb = lb.allocateRawOrThrow(64, 256 << 10);

            MemoryMap map = a.memoryMap();
            MemoryMap.Chunk ca = chunkAt(map, pa);
            MemoryMap.Chunk cb = chunkAt(map, pb);
            MemoryMap.Chunk co = chunkAt(map, own);
            assertThat(ca.lentTo()).isEqualTo(A);
            assertThat(ca.holder()).isEqualTo(A);
            assertThat(cb.holder()).isEqualTo(B);
            assertThat(co.lentTo()).isNull();
            assertThat(co.holder()).isEqualTo("(unknown)");
            assertThat(map.largestHolders(10)).containsExactly(
                    new MemoryMap.Holder(A, ca.size(), 1 << 20, 1),
                    new MemoryMap.Holder(B, cb.size(), 256 << 10, 1),
                    new MemoryMap.Holder("(unknown)", co.size(), 64 << 10, 1));
            assertThat(map.toJson()).contains("\"lentTo\": \"" + A + "\"");

            assertThat(a.memorySummary()).contains(
                    "Largest holders (in use, by annotation, else innermost frame outside org.bytedeco., else thread,"
                            + " else step, else runtime lent to):\n"
                            + line(ca, A) + line(cb, B) + line(co, "(unknown)"));
            assertThatThrownBy(() -> la.allocateRawOrThrow(64, 63L << 20))
                    .isInstanceOf(BfcOutOfMemoryException.class)
                    .hasMessageContaining(" Largest holders: " + size(ca) + " by " + A + " (1 chunk); " + size(cb)
                            + " by " + B + " (1 chunk); " + size(co) + " by (unknown) (1 chunk).");
            assertThatThrownBy(a::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(size(ca) + " by " + A + " (1 chunk)");

            la.deallocateRaw(pa);
            lb.deallocateRaw(pb);
            la.close();
            lb.close();
            assertThat(a.memorySummary()).as("nothing lent, nothing recorded").doesNotContain("Largest holders");
            assertThatThrownBy(a::close).message().doesNotContain("Largest holders");
            a.deallocateRaw(own);
        }
    }

    @Test
    void recordedProvenanceComesBeforeTheRuntime() {
        try (BfcAllocator a = allocator()) {
            a.recordAnnotations(true);
            MemoryAllocator.Loan la = a.lendTo(A, RELEASE);
            long inside;
            try (MemoryAnnotation ignored = MemoryAnnotation.push("session/load")) {
                inside = la.allocateRawOrThrow(64, 512 << 10);
            }
            long outside = la.allocateRawOrThrow(64, 128 << 10);
            MemoryMap map = a.memoryMap();
            assertThat(chunkAt(map, inside).lentTo()).isEqualTo(A);
            assertThat(chunkAt(map, inside).holder()).isEqualTo("session/load");
            assertThat(chunkAt(map, outside).holder()).as("no annotation open").isEqualTo(A);
            la.deallocateRaw(inside);
            la.deallocateRaw(outside);
            assertThat(a.memoryMap().chunks()).as("nothing is lent once freed")
                    .allSatisfy(c -> assertThat(c.lentTo()).isNull());
            la.close();
        }
    }

    @Test
    void aShardedAllocatorsHoldersNameTheRuntimeWhicheverShardServed() throws Exception {
        try (ShardedBfcAllocator a = ShardedBfcAllocator.builder().name("lent").shards(2).memoryLimit(64L << 20)
                .subAllocator(sim()).build()) {
            MemoryAllocator.Loan la = a.lendTo(A, RELEASE);
            long[] p = new long[2];
            p[0] = la.allocateRawOrThrow(64, 1 << 20);
            Thread other = new Thread(() -> p[1] = la.allocateRawOrThrow(64, 1 << 20), "other-shard");
            other.setDaemon(true);
            other.start();
            other.join(60_000);
            assertThat(other.isAlive()).as("the other thread's allocation ended").isFalse();
            assertThat(a.shardOf(p[0])).as("two shards served").isNotSameAs(a.shardOf(p[1]));
            List<MemoryMap.Holder> holders = a.largestHolders(10);
            assertThat(holders).hasSize(1);
            assertThat(holders.get(0).holder()).isEqualTo(A);
            assertThat(holders.get(0).chunks()).isEqualTo(2);
            assertThat(holders.get(0).requestedBytes()).isEqualTo(2 << 20);
            assertThat(a.memorySummary()).contains("Largest holders of all shards").contains("in      2 chunks  " + A + "\n");
            la.deallocateRaw(p[0]);
            la.deallocateRaw(p[1]);
            la.close();
        }
    }

    /** A holder's line of the summary, for a holder of the one chunk {@code c}. */
    private static String line(MemoryMap.Chunk c, String holder) {
        return String.format(java.util.Locale.ROOT, "  %10s in      1 chunk   %s%n", size(c), holder);
    }

    private static String size(MemoryMap.Chunk c) {
        return BfcAllocator.humanReadableNumBytes(c.size());
    }

    private static MemoryMap.Chunk chunkAt(MemoryMap map, long ptr) {
        List<MemoryMap.Chunk> found = map.chunks().stream().filter(c -> c.ptr() == ptr).toList();
        assertThat(found).as("a chunk at 0x%x", ptr).hasSize(1);
        return found.get(0);
    }
}
