/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link BfcAllocator#allocate(long, long)} keeps its alignment (the raw API's is only passed on
 * to the sub-allocator, as upstream's {@code unused_alignment}): random sizes at every
 * alignment from 512 B to 1 MiB, on 256-byte aligned regions and on regions that are not.
 */
class AlignedAllocationTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    /** Hands out its upstream's blocks 64 bytes in: regions that are only 64-byte aligned. */
    private static final class MisalignedSubAllocator implements SubAllocator {
        private final SubAllocator upstream = new SimSubAllocator(BASE, 1024 * MIB, 0, false);

        @Override
        public Block alloc(long alignment, long numBytes) {
            Block b = upstream.alloc(256, numBytes + 256);
            return b == null ? null : new Block(b.ptr() + 64, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            upstream.free(ptr - 64, numBytes + 256);
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    private static BfcAllocator allocator(SubAllocator sub) {
        return BfcAllocator.builder().name("aligned").memoryLimit(512 * MIB).subAllocator(sub)
                .leakDetection(LeakDetection.DISABLED).build();
    }

    private static void churn(BfcAllocator allocator, long alignment, long seed) {
        Random random = new Random(seed);
        // Live allocations by address, to check that none overlaps another.
        TreeMap<Long, Allocation> live = new TreeMap<>();
        List<Allocation> order = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            if (!order.isEmpty() && random.nextInt(3) == 0) {
                Allocation x = order.remove(random.nextInt(order.size()));
                live.remove(x.address());
                x.close();
                continue;
            }
            long bytes = 1 + random.nextInt(random.nextBoolean() ? 3000 : 300_000);
            Allocation x = allocator.allocate(bytes, alignment);
            long address = x.address();
            assertThat(address % alignment).as("address 0x%x for alignment %d (seed %d)",
                    address, alignment, seed).isZero();
            assertThat(x.requestedSize()).isEqualTo(bytes);
            var below = live.floorEntry(address);
            if (below != null) {
                assertThat(below.getKey() + below.getValue().requestedSize()).as("seed %d", seed)
                        .isLessThanOrEqualTo(address);
            }
            var above = live.ceilingEntry(address);
            if (above != null) {
                assertThat(address + bytes).as("seed %d", seed).isLessThanOrEqualTo(above.getKey());
            }
            live.put(address, x);
            order.add(x);
        }
        allocator.checkInvariants();
        order.forEach(Allocation::close);
        assertThat(allocator.bytesInUse()).isZero();
    }

    @ParameterizedTest
    @ValueSource(longs = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576})
    void everyAddressIsAligned(long alignment) {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("everyAddressIsAligned(" + alignment + ") seed=" + seed);
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, true))) {
            churn(a, alignment, seed);
        }
        try (BfcAllocator a = allocator(new MisalignedSubAllocator())) {
            churn(a, alignment, seed);
        }
    }

    @Test
    void smallAlignmentsCostNothingOnAlignedRegions() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, true))) {
            for (long alignment = 1; alignment <= 256; alignment *= 2) {
                try (Allocation x = a.allocate(1000, alignment)) {
                    assertThat(x.size()).isEqualTo(1024);
                    assertThat(x.address()).isEqualTo(a.memoryMap().regions().get(0).ptr());
                }
            }
            // Above 256 the chunk carries the padding: 1000 + 4096 - 256 = 4840 bytes, rounded to 4864.
            try (Allocation x = a.allocate(1000, 4096)) {
                assertThat(x.size()).isEqualTo(4864);
                assertThat(a.bytesInUse()).isEqualTo(4864);
            }
        }
    }

    @Test
    void onMisalignedRegionsEvenSmallAlignmentsAreKept() {
        try (BfcAllocator a = allocator(new MisalignedSubAllocator())) {
            Allocation x = a.allocate(1000); // ALLOCATION_ALIGNMENT, 64: the region start is 64-aligned
            assertThat(x.address() % 64).isZero();
            Allocation y = a.allocate(1000, 256);
            assertThat(y.address() % 256).isZero();
            assertThat(y.requestedSize()).isEqualTo(1000);
            x.close();
            y.close();
            assertThat(a.bytesInUse()).isZero();
            a.checkInvariants();
        }
    }

    @Test
    void theRawApiPassesItsAlignmentOnAndDoesNotKeepIt() {
        // As upstream: after the first region, 512-byte requests land every 512 bytes from a
        // 256-aligned start, but a 256-byte request in between shifts the rest by 256.
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, true))) {
            long p = a.allocateRaw(512, 256);
            long q = a.allocateRaw(512, 512);
            assertThat(p % 512).isZero();
            assertThat(q).isEqualTo(p + 256);
            assertThat(q % 512).isEqualTo(256);
            a.deallocateRaw(p);
            a.deallocateRaw(q);
        }
    }

    @Test
    void badAlignmentsAndSizesAreRefused() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, true))) {
            assertThatThrownBy(() -> a.allocate(100, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("alignment=0 (expected: a power of two) for allocator 'aligned'");
            assertThatThrownBy(() -> a.allocate(100, 48)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.allocate(100, -64)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> a.allocate(0, 64)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("bytes=0 (expected: > 0) for allocator 'aligned'");
            assertThatThrownBy(() -> a.allocate(BfcAllocator.MAX_ALLOCATION_BYTES, 512))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("bytes=4611686018427387904 with alignment=512 (expected: bytes + alignment - 1"
                            + " <= 4611686018427387904) for allocator 'aligned'");
            assertThat(a.bytesInUse()).isZero();
        }
    }

    @Test
    void anAlignmentThatCannotFitIsOutOfMemory() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 1024 * MIB, 0, true))) {
            assertThatThrownBy(() -> a.allocate(1000, 1L << 30)).isInstanceOf(BfcOutOfMemoryException.class);
            try (Allocation x = a.allocate(1000, MIB)) {
                assertThat(x.address() % MIB).isZero();
            }
        }
    }
}
