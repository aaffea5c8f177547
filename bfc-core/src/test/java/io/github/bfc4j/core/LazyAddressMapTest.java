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
import org.junit.jupiter.api.Test;

/**
 * The address map learns a split's free rest only when that chunk is first allocated, and
 * forgets a deleted chunk's start only if it held it: the queries still find every chunk start
 * (upstream's {@code get_handle}), frees still find every allocation, timestamped frees keep
 * their chunks by handle, and a region off a 256-byte boundary puts every chunk start in the
 * map, as upstream's holds them.
 * {@link BfcAllocator#checkInvariants()} checks the map against the chunks after every call.
 */
class LazyAddressMapTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator allocator(SubAllocator sub, long limit) {
        return new BfcAllocator(sub, limit, "lazy", BfcOptions.builder().allowRetryOnFailure(false).build());
    }

    /** The port's read-only state (the field is package-private: same package). */
    private static PortView view(BfcAllocator a) {
        return a.port.view();
    }

    @Test
    void aSplitsRestIsFoundByTheQueriesBeforeItIsEverAllocated() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 4 * MIB, 0, true), MIB)) {
            assertThat(a.allocateRaw(64, 1000)).isEqualTo(BASE);
            // The rest [BASE + 1 KiB, BASE + 1 MiB) was split off and never allocated.
            assertThat(view(a).lazyAddressMap()).isTrue();
            assertThat(view(a).handleAt(BASE + 1024)).isEqualTo(-1);
            assertThat(view(a).addressMapSize()).isEqualTo(1);

            // As upstream: a free chunk's start answers the queries.
            assertThat(a.allocatedSize(BASE + 1024)).isEqualTo(MIB - 1024);
            assertThat(a.requestedSize(BASE + 1024)).isZero();
            assertThat(a.allocationId(BASE + 1024)).isEqualTo(-1);
            // An address where no chunk starts, inside the rest or outside every region, does not.
            assertThatThrownBy(() -> a.allocatedSize(BASE + 2048))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("never allocated");
            assertThatThrownBy(() -> a.allocatedSize(BASE + 2 * MIB))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("never allocated");
            // A free of the rest's start is refused as a free of anything not allocated is.
            assertThatThrownBy(() -> a.deallocateRaw(BASE + 1024))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("was not allocated by allocator 'lazy'");
            a.checkInvariants();
        }
    }

    @Test
    void theRestEntersTheMapWhenAllocatedAndAMergedBackRestCostsItNothing() {
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 4 * MIB, 0, true), MIB)) {
            PortView v = view(a);
            long p = a.allocateRaw(64, 1000);
            long q = a.allocateRaw(64, 1000);
            assertThat(q).isEqualTo(BASE + 1024);
            // p and q are in the map; the new rest behind q is not.
            assertThat(v.handleAt(q)).isNotEqualTo(-1);
            assertThat(v.addressMapSize()).isEqualTo(2);
            a.deallocateRaw(q);
            // q merged with the rest behind it: q's chunk stays (in the map), the rest's start
            // was never there.
            assertThat(v.addressMapSize()).isEqualTo(2);
            a.checkInvariants();
            a.deallocateRaw(p);
            // p's chunk took q's in: q's start left the map.
            assertThat(v.addressMapSize()).isEqualTo(1);
            assertThat(v.handleAt(q)).isEqualTo(-1);
            a.checkInvariants();
        }
    }

    @Test
    void timestampedFreesWorkWithTheLazyMap() {
        long seed = System.nanoTime();
        System.out.println("LazyAddressMapTest seed " + seed);
        Random random = new Random(seed);
        try (BfcAllocator a = allocator(new SimSubAllocator(BASE, 256 * MIB, 0, true), 64 * MIB)) {
            List<Long> live = new ArrayList<>();
            SharedCounter counter = new SharedCounter();
            for (int i = 0; i < 3000; i++) {
                if (i == 1000) {
                    a.setTimingCounter(counter);
                }
                if (i > 1000 && random.nextInt(10) == 0) {
                    a.setSafeFrontier(counter.get() - random.nextInt(20));
                }
                if (!live.isEmpty() && random.nextBoolean()) {
                    a.deallocateRaw(live.remove(random.nextInt(live.size())));
                } else {
                    long p = a.allocateRaw(64, 1 + random.nextInt(random.nextBoolean() ? 4096 : 400_000));
                    if (p != 0) {
                        live.add(p);
                    }
                }
                a.checkInvariants();
            }
            // The timestamped frees keep their chunks by handle: the map stays lazy.
            assertThat(view(a).lazyAddressMap()).as("seed %d", seed).isTrue();
            for (long p : live) {
                a.deallocateRaw(p);
            }
            a.setSafeFrontier(counter.get() + 1);
            // Every free is safe now: the next allocation merges the timestamped chunks.
            a.deallocateRaw(a.allocateRaw(64, 1));
            a.checkInvariants();
        }
    }

    /** Hands out its first block as asked, every later one 64 bytes in. */
    private static final class SecondRegionOffBoundary implements SubAllocator {
        private final SubAllocator upstream = new SimSubAllocator(BASE, 64 * MIB, 0, false);
        private boolean first = true;

        @Override
        public Block alloc(long alignment, long numBytes) {
            if (first) {
                first = false;
                return upstream.alloc(alignment, numBytes);
            }
            Block b = upstream.alloc(256, numBytes + 256);
            return b == null ? null : new Block(b.ptr() + 64, numBytes);
        }

        @Override
        public void free(long ptr, long numBytes) {
            if (ptr % 256 == 0) {
                upstream.free(ptr, numBytes);
            } else {
                upstream.free(ptr - 64, numBytes + 256);
            }
        }

        @Override
        public boolean supportsCoalescing() {
            return false;
        }
    }

    @Test
    void aRegionOffA256ByteBoundaryPutsEveryChunkStartInTheMap() {
        try (BfcAllocator a = allocator(new SecondRegionOffBoundary(), 16 * MIB)) {
            long p = a.allocateRaw(64, 1000);
            long q = a.allocateRaw(64, 3000);
            assertThat(view(a).lazyAddressMap()).isTrue();
            assertThat(view(a).addressMapSize()).isEqualTo(2);
            // Larger than the first region's rest: a second region, 64 bytes off 256.
            long r = a.allocateRaw(64, 4 * MIB);
            assertThat(r % 256).isEqualTo(64);
            assertThat(view(a).lazyAddressMap()).isFalse();
            a.checkInvariants();
            assertThat(view(a).addressMapSize()).isEqualTo(a.memoryMap().chunks().size());
            for (long x : new long[] {q, r, p}) {
                a.deallocateRaw(x);
                a.checkInvariants();
            }
        }
    }

    /**
     * Once the map holds every chunk start, a split records its free rest at once, as
     * upstream's {@code SplitChunk} does ({@code region_manager_.set_handle}): the rest answers
     * the queries before it is allocated, and an allocation made from it can be freed.
     */
    @Test
    void afterTheMapHoldsEveryStartASplitsRestIsInItAtOnce() {
        try (BfcAllocator a = allocator(new SecondRegionOffBoundary(), 16 * MIB)) {
            assertThat(a.allocateRaw(64, 1000)).isEqualTo(BASE);
            long r = a.allocateRaw(64, 4 * MIB);
            assertThat(r % 256).isEqualTo(64);
            assertThat(view(a).lazyAddressMap()).isFalse();

            // From the first region's free rest [BASE + 1 KiB, BASE + 2 MiB): split again.
            long s = a.allocateRaw(64, 1000);
            assertThat(s).isEqualTo(BASE + 1024);
            assertThat(view(a).handleAt(BASE + 2048)).as("the new rest is in the map").isNotEqualTo(-1);
            assertThat(a.allocatedSize(BASE + 2048)).isEqualTo(2 * MIB - 2048);
            long t = a.allocateRaw(64, 1000);
            assertThat(t).isEqualTo(BASE + 2048);
            a.deallocateRaw(t);
            a.checkInvariants();
            a.deallocateRaw(s);
            a.deallocateRaw(r);
            a.checkInvariants();
            assertThat(view(a).addressMapSize()).isEqualTo(a.memoryMap().chunks().size());
        }
    }
}
