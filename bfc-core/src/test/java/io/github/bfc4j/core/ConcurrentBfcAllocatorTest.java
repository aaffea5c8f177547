package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * One allocator, several threads: the single lock must keep every allocation disjoint and the
 * statistics exact. (The long stress and linearizability checks belong to the reliability
 * work; this is the basic proof that the port is thread-safe as upstream is.)
 */
class ConcurrentBfcAllocatorTest {

    private static final long BASE = 0x7f0000000000L;

    /**
     * Every call gives the allocator's lock back, whether it answers, refuses or fails: after
     * each one, made on this thread, another thread allocates and frees at once. (The lock is
     * reentrant, so a call that kept it would go unnoticed on one thread.)
     */
    @Test
    void everyCallGivesTheLockBack() throws Exception {
        long limit = 1L << 20;
        BfcOptions opts = BfcOptions.builder().allowGrowth(false).allowRetryOnFailure(true).build();
        ExecutorService other = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "other");
            t.setDaemon(true); // stays blocked where a call kept the lock
            return t;
        });
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 4 * limit, 0, true), limit, "locks", opts)) {
            long p = a.allocateRaw(64, 4096);
            Map<String, Runnable> calls = new LinkedHashMap<>();
            calls.put("requestedSize", () -> a.requestedSize(p));
            calls.put("allocatedSize", () -> a.allocatedSize(p));
            calls.put("allocationId", () -> a.allocationId(p));
            calls.put("a refused query", () -> assertThatThrownBy(() -> a.allocatedSize(p + 256))
                    .isInstanceOf(IllegalArgumentException.class));
            calls.put("getStats", a::getStats);
            calls.put("clearStats", a::clearStats);
            calls.put("resetPeakStats", a::resetPeakStats);
            calls.put("setTimingCounter", () -> a.setTimingCounter(null));
            calls.put("emptyCache", a::emptyCache);
            calls.put("allocateRaw of more than the limit", () -> assertThat(a.allocateRaw(64, 2 * limit)).isZero());
            calls.put("allocateRaw of more than the largest request",
                    () -> assertThat(a.allocateRaw(64, BfcAllocator.MAX_ALLOCATION_BYTES + 1)).isZero());
            for (Map.Entry<String, Runnable> call : calls.entrySet()) {
                call.getValue().run();
                assertThat(other.submit(() -> {
                    long q = a.allocateRaw(64, 256, AllocationAttributes.NO_RETRY);
                    a.deallocateRaw(q);
                    return q;
                })).as("another thread's allocation after %s", call.getKey())
                        .succeedsWithin(Duration.ofSeconds(5)).isNotEqualTo(0L);
            }
            a.deallocateRaw(p);
        } finally {
            other.shutdownNow();
        }
    }

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
