/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ShardRegionsTest {

    private static final long BASE = 0x10000;

    @Test
    void findsTheShardOfEveryAddressOfItsRegionsAndNoneOutside() {
        ShardRegions regions = new ShardRegions(new SimSubAllocator(BASE, 1 << 20, 0, true), 1 << 20, () -> false);
        SubAllocator.Block a = regions.forShard(0).alloc(256, 4096);
        SubAllocator.Block b = regions.forShard(1).alloc(256, 8192);
        SubAllocator.Block c = regions.forShard(0).alloc(256, 256);

        assertThat(regions.shardOf(a.ptr())).isZero();
        assertThat(regions.shardOf(a.ptr() + 4095)).isZero();
        assertThat(regions.shardOf(b.ptr())).isEqualTo(1);
        assertThat(regions.shardOf(b.ptr() + 8191)).isEqualTo(1);
        assertThat(regions.shardOf(c.ptr() + 255)).isZero();
        assertThat(regions.shardOf(a.ptr() - 1)).isEqualTo(-1);
        assertThat(regions.shardOf(c.ptr() + 256)).isEqualTo(-1);
        assertThat(regions.heldBytes()).isEqualTo(4096 + 8192 + 256);

        regions.forShard(1).free(b.ptr(), b.bytes());
        assertThat(regions.shardOf(b.ptr())).isEqualTo(-1);
        assertThat(regions.shardOf(a.ptr())).isZero();
        assertThat(regions.regionCount()).isEqualTo(2);
        assertThat(regions.peakHeldBytes()).isEqualTo(4096 + 8192 + 256);
    }

    /** A region as the test recorded it when a shard obtained it. */
    private record Held(long start, long end, int shard) {
    }

    @Test
    void randomRegionsOfManyShardsAreFoundAtEveryEdgeAndBetween() {
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println("ShardRegionsTest seed=" + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random random = new Random(seed);
        // Gaps between the sub-allocator's blocks, so that addresses between regions exist.
        ShardRegions regions = new ShardRegions(new SimSubAllocator(BASE, 1L << 40, 4096, false), 1L << 40, () -> false);
        List<Held> held = new ArrayList<>();
        for (int round = 0; round < 600; round++) {
            if (held.isEmpty() || random.nextInt(3) != 0) {
                int shard = random.nextInt(8);
                SubAllocator.Block b = regions.forShard(shard).alloc(256, 256L * (1 + random.nextInt(64)));
                held.add(new Held(b.ptr(), b.ptr() + b.bytes(), shard));
            } else {
                Held h = held.remove(random.nextInt(held.size()));
                regions.forShard(h.shard()).free(h.start(), h.end() - h.start());
            }
            assertThat(regions.regionCount()).isEqualTo(held.size());
            for (Held h : held) {
                assertThat(regions.shardOf(h.start())).as("round %d, start of %s", round, h).isEqualTo(h.shard());
                assertThat(regions.shardOf(h.end() - 1)).as("round %d, last byte of %s", round, h).isEqualTo(h.shard());
                assertThat(regions.shardOf(h.start() - 1)).as("round %d, before %s", round, h).isEqualTo(-1);
                assertThat(regions.shardOf(h.end())).as("round %d, after %s", round, h).isEqualTo(-1);
            }
        }
    }

    @Test
    void adjacentRegionsOfOneShardAreFreedAsOneButNotAcrossShards() {
        ShardRegions regions = new ShardRegions(new SimSubAllocator(BASE, 1 << 20, 0, true), 1 << 20, () -> false);
        SubAllocator.Block a = regions.forShard(0).alloc(256, 4096);
        SubAllocator.Block b = regions.forShard(0).alloc(256, 4096);
        SubAllocator.Block c = regions.forShard(1).alloc(256, 4096);
        assertThat(b.ptr()).isEqualTo(a.ptr() + 4096);
        assertThat(c.ptr()).isEqualTo(b.ptr() + 4096);

        assertThatThrownBy(() -> regions.forShard(0).free(a.ptr(), 3 * 4096))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("from shard 0");
        assertThatThrownBy(() -> regions.forShard(1).free(a.ptr(), 4096))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> regions.forShard(0).free(a.ptr(), 2048))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(regions.heldBytes()).as("refused frees change nothing").isEqualTo(3 * 4096);

        regions.forShard(0).free(a.ptr(), 2 * 4096);
        assertThat(regions.shardOf(a.ptr())).isEqualTo(-1);
        assertThat(regions.shardOf(b.ptr())).isEqualTo(-1);
        assertThat(regions.shardOf(c.ptr())).isEqualTo(1);
        assertThat(regions.heldBytes()).isEqualTo(4096);
    }

    @Test
    void noRegionIsHandedOutOnceRefused() {
        boolean[] refuse = {false};
        ShardRegions regions = new ShardRegions(new SimSubAllocator(BASE, 1 << 20, 0, true), 1 << 20, () -> refuse[0]);
        SubAllocator.Block a = regions.forShard(0).alloc(256, 4096);
        refuse[0] = true;
        assertThat(regions.forShard(1).alloc(256, 4096)).isNull();
        regions.forShard(0).free(a.ptr(), a.bytes()); // giving back still works
        assertThat(regions.heldBytes()).isZero();
    }

    @Test
    void theCapCountsEveryShard() {
        ShardRegions regions = new ShardRegions(new SimSubAllocator(BASE, 1 << 20, 0, true), 8192, () -> false);
        assertThat(regions.forShard(0).alloc(256, 4096)).isNotNull();
        assertThat(regions.forShard(1).alloc(256, 4096)).isNotNull();
        assertThat(regions.forShard(2).alloc(256, 256)).as("over the cap").isNull();
        assertThat(regions.heldBytes()).isEqualTo(8192);
    }
}
