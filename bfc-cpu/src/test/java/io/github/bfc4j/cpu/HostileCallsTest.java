/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.ShardedBfcAllocator;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;

/**
 * Random calls of the Java-facing API with hostile arguments (negative, huge, unaligned sizes
 * and alignments, addresses never handed out, freed twice, indices past the end, views of
 * closed handles, views after the allocator's close) on real host memory, one allocator or a
 * sharded one. The JVM must survive (a crash fails the forked test JVM), every exception must be
 * one the API documents, and the allocator's invariants must hold after each round.
 */
class HostileCallsTest {

    private static final long MIB = 1L << 20;
    private static final long[] HOSTILE = {0, 1, -1, 255, 256, 257, 4095, 4096, Long.MAX_VALUE, Long.MIN_VALUE,
        1L << 62, (1L << 62) + 1, 1L << 40, 1L << 31, Integer.MAX_VALUE, -256};
    private static final Set<Class<? extends RuntimeException>> DOCUMENTED = Set.of(IllegalArgumentException.class,
            IllegalStateException.class, IndexOutOfBoundsException.class, BfcOutOfMemoryException.class);

    /** What one round holds: handles, raw addresses and views, closed or not. */
    private static final class Held {
        final List<Allocation> handles = new ArrayList<>();
        final List<Long> raw = new ArrayList<>();
        final List<ByteBuffer> buffers = new ArrayList<>();
        final List<BytePointer> pointers = new ArrayList<>();
    }

    @Test
    void hostileCallsGetDocumentedExceptionsAndLeaveTheAllocatorWhole() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("hostileCallsGetDocumentedExceptionsAndLeaveTheAllocatorWhole seed=" + seed);
        Random random = new Random(seed);
        Set<String> undocumented = new TreeSet<>();
        int served = 0;
        int refused = 0;
        for (int round = 0; round < 20; round++) {
            boolean sharded = random.nextBoolean();
            ClosePolicy policy = random.nextBoolean() ? ClosePolicy.FORCE : ClosePolicy.REFUSE;
            MemoryAllocator a = sharded
                    ? ShardedBfcAllocator.builder().name("hostile").shards(2).memoryLimit(256 * MIB)
                            .subAllocator(new AlignedHostSubAllocator()).closePolicy(policy).build()
                    : BfcAllocator.builder().name("hostile").memoryLimit(256 * MIB)
                            .subAllocator(new AlignedHostSubAllocator()).closePolicy(policy).build();
            Held held = new Held();
            for (int i = 0; i < 2000; i++) {
                int op = random.nextInt(14);
                try {
                    call(a, held, op, random);
                    served++;
                } catch (RuntimeException e) {
                    refused++;
                    if (!DOCUMENTED.contains(e.getClass())) {
                        undocumented.add("op " + op + ": " + e);
                    }
                }
            }
            checkInvariants(a);
            closeAndUseTheViews(a, held, undocumented);
        }
        System.out.println("HostileCallsTest: " + served + " calls served, " + refused + " refused");
        assertThat(undocumented).as("exceptions the API does not document (seed %d)", seed).isEmpty();
        assertThat(served).as("calls served").isGreaterThan(10_000);
        assertThat(refused).as("calls refused").isGreaterThan(5_000);
    }

    /** One random call; {@code op} picks which. */
    private static void call(MemoryAllocator a, Held h, int op, Random random) {
        long size = random.nextInt(4) == 0 ? HOSTILE[random.nextInt(HOSTILE.length)] : random.nextInt(1 << 20);
        long alignment = random.nextInt(4) == 0 ? HOSTILE[random.nextInt(HOSTILE.length)] : 1L << random.nextInt(14);
        switch (op) {
            case 0 -> h.handles.add(a.allocate(size));
            case 1 -> h.handles.add(a.allocate(size, alignment));
            case 2 -> {
                long p = a.allocateRaw(alignment, size);
                if (p != 0) {
                    h.raw.add(p);
                }
            }
            case 3 -> a.deallocateRaw(!h.raw.isEmpty() && random.nextBoolean()
                    ? h.raw.remove(random.nextInt(h.raw.size())) // a real one, or (below) anything
                    : size + (h.raw.isEmpty() ? 0 : h.raw.get(0)));
            case 4 -> any(h.handles, random).close(); // closed handles too: twice is a no-op
            case 5 -> h.buffers.add(any(h.handles, random).asByteBuffer());
            case 6 -> h.pointers.add(any(h.handles, random).asPointer());
            case 7 -> {
                ByteBuffer b = any(h.buffers, random);
                b.put((int) (size % (b.capacity() + 10)) - 5, (byte) 1);
            }
            case 8 -> any(h.pointers, random).put(size - 5, (byte) 2);
            case 9 -> any(h.pointers, random).position(random.nextInt(64)).putLong(size % 4096 - 8, 7L);
            case 10 -> any(h.pointers, random).getPointer(size % 2048 - 16).get(0);
            case 11 -> a.emptyCache();
            case 12 -> {
                a.memorySummary();
                a.getStats();
            }
            case 13 -> a.recordHistory(HistoryOptions.builder().stacks(false).build());
            default -> throw new AssertionError(op);
        }
    }

    /** A random element; an empty list makes the call a refused one (IllegalStateException). */
    private static <T> T any(List<T> list, Random random) {
        if (list.isEmpty()) {
            throw new IllegalStateException("nothing held yet");
        }
        return list.get(random.nextInt(list.size()));
    }

    private static void checkInvariants(MemoryAllocator a) {
        if (a instanceof ShardedBfcAllocator s) {
            s.shards().forEach(BfcAllocator::checkInvariants);
        } else {
            ((BfcAllocator) a).checkInvariants();
        }
    }

    /**
     * Closes the allocator (refused under REFUSE while handles are live: then closes them and
     * closes again), then writes through every view taken: the views of a closed handle are
     * refused or still reach mapped memory, never memory given back to the operating system.
     */
    private static void closeAndUseTheViews(MemoryAllocator a, Held h, Set<String> undocumented) {
        try {
            a.close();
        } catch (IllegalStateException refused) {
            h.handles.forEach(Allocation::close);
            for (long p : h.raw) {
                try {
                    a.deallocateRaw(p);
                } catch (IllegalArgumentException alreadyFreed) { // by a hostile free that hit it
                }
            }
            a.close();
        }
        assertThat(a.isClosed()).isTrue();
        for (ByteBuffer b : h.buffers) {
            if (b.capacity() > 0) {
                b.put(0, (byte) 3); // not caught (documented), but mapped: no crash
            }
        }
        for (BytePointer p : h.pointers) {
            try {
                p.put(0, (byte) 3);
            } catch (RuntimeException e) {
                if (!DOCUMENTED.contains(e.getClass())) {
                    undocumented.add("a pointer view after close: " + e);
                }
            }
        }
    }
}
