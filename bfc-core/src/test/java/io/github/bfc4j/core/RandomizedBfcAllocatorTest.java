package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Random call sequences under random options, checked after every call against a shadow model
 * (live set, non-overlap, sizes, ids, stats), with {@link BfcAllocator#checkInvariants()} (the
 * chunk structure) and the chunks in use as {@link BfcAllocator#getBinDebugInfo()} sees them.
 */
class RandomizedBfcAllocatorTest {

    private static final long BASE = 0x7f0000000000L;

    private record Live(long requested, long allocated) {
    }

    @Test
    void randomSequencesKeepTheModelsInvariants() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("RandomizedBfcAllocatorTest seed: " + seed
                + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random configs = new Random(seed);
        for (int round = 0; round < 24; round++) {
            long roundSeed = configs.nextLong();
            try {
                runRound(roundSeed);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + seed + ", round " + round + " (round seed "
                        + roundSeed + "): " + e.getMessage(), e);
            }
        }
    }

    private static void runRound(long roundSeed) {
        Random rnd = new Random(roundSeed);
        long limit = (1L << (20 + rnd.nextInt(8))) + 256L * rnd.nextInt(64);
        double[] fractions = {0, 0.01, 0.1, 0.5};
        BfcOptions opts = BfcOptions.builder()
                .allowGrowth(rnd.nextBoolean())
                .garbageCollection(rnd.nextBoolean())
                .fragmentationFraction(fractions[rnd.nextInt(fractions.length)])
                .allowRetryOnFailure(false)
                .build();
        boolean coalescing = rnd.nextBoolean();
        long gap = rnd.nextBoolean() ? 0 : 4096;
        SimSubAllocator sim = new SimSubAllocator(BASE, 3 * limit, gap, coalescing);
        BfcAllocator a = new BfcAllocator(sim, limit, "random", opts);
        boolean timing = rnd.nextInt(4) == 0;
        SharedCounter counter = new SharedCounter();
        if (timing) {
            a.setTimingCounter(counter);
        }

        TreeMap<Long, Live> live = new TreeMap<>();
        List<Long> liveList = new ArrayList<>();
        long numAllocs = 0;
        long lastId = 0;
        long peakPool = 0;
        for (int step = 0; step < 2500; step++) {
            int op = rnd.nextInt(100);
            if (op < 55 || liveList.isEmpty()) {
                long n = rnd.nextInt(8) == 0 ? rnd.nextInt((int) Math.min(limit / 2, Integer.MAX_VALUE))
                        : 1 + rnd.nextInt(64 * 1024);
                long freedBefore = timing && rnd.nextBoolean() ? 1 + rnd.nextInt((int) counter.get() + 1) : 0;
                AllocationAttributes attr = freedBefore == 0 ? AllocationAttributes.NO_RETRY
                        : new AllocationAttributes(false, () -> freedBefore);
                long p = a.allocateRaw(1L << (6 + rnd.nextInt(6)), n, attr);
                if (n == 0) {
                    assertThat(p).isZero();
                }
                if (p != 0) {
                    long size = a.allocatedSize(p);
                    assertThat(size).isGreaterThanOrEqualTo(BfcAllocator.roundedBytes(n));
                    assertThat(size % 256).isZero();
                    assertThat(a.requestedSize(p)).isEqualTo(n);
                    long id = a.allocationId(p);
                    assertThat(id).isEqualTo(lastId + 1);
                    lastId = id;
                    numAllocs++;
                    Map.Entry<Long, Live> below = live.floorEntry(p);
                    if (below != null) {
                        assertThat(below.getKey() + below.getValue().allocated()).as("overlap below 0x%x", p)
                                .isLessThanOrEqualTo(p);
                    }
                    Map.Entry<Long, Live> above = live.ceilingEntry(p);
                    if (above != null) {
                        assertThat(p + size).as("overlap above 0x%x", p).isLessThanOrEqualTo(above.getKey());
                    }
                    assertThat(p).isBetween(BASE, BASE + 3 * limit - size);
                    live.put(p, new Live(n, size));
                    liveList.add(p);
                }
            } else if (op < 95) {
                int idx = rnd.nextInt(liveList.size());
                long p = liveList.get(idx);
                liveList.set(idx, liveList.get(liveList.size() - 1));
                liveList.remove(liveList.size() - 1);
                live.remove(p);
                a.deallocateRaw(p);
            } else if (op < 98) {
                a.setSafeFrontier(counter.get() + 1 - rnd.nextInt(3));
            } else {
                a.clearStats();
                numAllocs = 0;
            }
            peakPool = Math.max(peakPool, a.getStats().poolBytes());
            checkInvariants(a, live, numAllocs, limit, peakPool);
        }
        for (long p : liveList) {
            a.deallocateRaw(p);
        }
        live.clear();
        checkInvariants(a, live, numAllocs, limit, peakPool);
        a.close();
        assertThat(sim.reservedBytes()).isZero();
    }

    private static void checkInvariants(BfcAllocator a, Map<Long, Live> live, long numAllocs,
            long limit, long peakPool) {
        AllocatorStats s = a.getStats();
        long inUse = 0;
        long requested = 0;
        for (Live l : live.values()) {
            inUse += l.allocated();
            requested += l.requested();
        }
        assertThat(s.bytesInUse()).isEqualTo(inUse);
        assertThat(s.numAllocs()).isEqualTo(numAllocs);
        assertThat(s.peakBytesInUse()).isGreaterThanOrEqualTo(inUse);
        assertThat(s.poolBytes()).isLessThanOrEqualTo(limit);
        assertThat(s.peakPoolBytes()).isEqualTo(peakPool);
        assertThat(s.bytesLimit()).isEqualTo(limit);
        assertThat(s.bytesReserved()).isZero();
        assertThat(s.largestFreeBlockBytes()).isZero();

        // The structure (tiling, links, bins, address map, stats against the chunks).
        a.checkInvariants();
        // The chunks against the model.
        long chunkRequested = 0;
        long chunksInUse = 0;
        for (BfcAllocator.BinDebugInfo info : a.getBinDebugInfo()) {
            chunkRequested += info.totalRequestedBytesInUse();
            chunksInUse += info.totalChunksInUse();
        }
        assertThat(chunkRequested).isEqualTo(requested);
        assertThat(chunksInUse).isEqualTo(live.size());
    }
}
