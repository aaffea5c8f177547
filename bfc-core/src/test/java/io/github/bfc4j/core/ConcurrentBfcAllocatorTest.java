package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * One allocator, several threads: the single lock must keep every allocation disjoint and the
 * statistics exact. (The long stress and linearizability checks belong to the reliability
 * work; this is the basic proof that the port is thread-safe as upstream is.)
 */
class ConcurrentBfcAllocatorTest {

    private static final long BASE = 0x7f0000000000L;

    @Test
    void threadsAllocatingAndFreeingNeverShareMemoryAndStatsAddUp() throws Exception {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("ConcurrentBfcAllocatorTest seed: " + seed);
        int threads = 4;
        int steps = 5_000;
        long limit = 16L << 20;
        BfcOptions opts = BfcOptions.builder().allowGrowth(true).garbageCollection(true)
                .allowRetryOnFailure(false).build();
        BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 2 * limit, 0, true), limit, "mt", opts);
        // Every live allocation's first 256-byte unit, claimed by the owner: a second claim of
        // the same unit by another live allocation means two allocations overlap.
        ConcurrentHashMap<Long, Integer> owners = new ConcurrentHashMap<>();
        AtomicLong successes = new AtomicLong();
        TestThreads.runTogether(threads, seed, id -> {
            Random rnd = new Random(seed + id);
            List<long[]> mine = new ArrayList<>();
            for (int i = 0; i < steps; i++) {
                if (mine.isEmpty() || rnd.nextInt(100) < 55) {
                    long n = 1 + rnd.nextInt(64 * 1024);
                    long p = a.allocateRaw(64, n, AllocationAttributes.NO_RETRY);
                    if (p != 0) {
                        long size = a.allocatedSize(p);
                        for (long u = p; u < p + size; u += 256) {
                            Integer prev = owners.putIfAbsent(u, id);
                            if (prev != null) {
                                throw new AssertionError("0x" + Long.toHexString(u)
                                        + " handed to thread " + id + " while thread " + prev + " holds it");
                            }
                        }
                        mine.add(new long[] {p, size});
                        successes.incrementAndGet();
                    }
                } else {
                    long[] victim = mine.remove(rnd.nextInt(mine.size()));
                    for (long u = victim[0]; u < victim[0] + victim[1]; u += 256) {
                        owners.remove(u);
                    }
                    a.deallocateRaw(victim[0]);
                }
                if (i % 1000 == 0) {
                    a.getStats();
                }
            }
            for (long[] v : mine) {
                for (long u = v[0]; u < v[0] + v[1]; u += 256) {
                    owners.remove(u);
                }
                a.deallocateRaw(v[0]);
            }
        });
        AllocatorStats stats = a.getStats();
        assertThat(stats.bytesInUse()).isZero();
        assertThat(stats.numAllocs()).isEqualTo(successes.get());
        assertThat(successes.get()).isGreaterThan(threads * (long) steps / 4);
        long chunkBytes = 0;
        for (BfcAllocator.BinDebugInfo info : a.getBinDebugInfo()) {
            assertThat(info.totalChunksInUse()).isZero();
            chunkBytes += info.totalBytesInBin();
        }
        assertThat(chunkBytes).isEqualTo(stats.poolBytes());
        a.close();
    }
}
