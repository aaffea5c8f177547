/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.sim.SimSubAllocator;
import java.math.BigDecimal;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The figures beyond upstream's stats ({@link MemoryStats}), the memory map and its JSON, the
 * memory summary and the out-of-memory dump, checked against a shadow model and against each
 * other.
 */
class MemoryObservabilityTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator sim(long limit, BfcOptions opts) {
        return new BfcAllocator(new SimSubAllocator(BASE, 4 * limit, 0, false), limit, "obs_bfc", opts);
    }

    private static BfcOptions.Builder gcNoRetry() {
        return BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true)
                .dumpOnOomDirectory(null);
    }

    @Test
    void countersMatchAShadowModelAndTheMemoryMap() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("MemoryObservabilityTest seed: -Dbfc4j.test.seed=" + seed);
        Random rnd = new Random(seed);
        try (BfcAllocator a = sim(48 * MIB, gcNoRetry().build())) {
            List<Long> live = new ArrayList<>();
            long allocs = 0;
            long frees = 0;
            long allocatedBytes = 0;
            long freedBytes = 0;
            long ooms = 0;
            long peakActive = 0;
            for (int step = 0; step < 3000; step++) {
                if (step % 500 == 0) {
                    assertThat(a.allocateRaw(256, 64 * MIB)).as("above the limit").isZero();
                    ooms++;
                }
                if (step % 700 == 699) {
                    // Free everything now and then, so that garbage collection has regions to free.
                    for (long p : live) {
                        freedBytes += a.allocatedSize(p);
                        a.deallocateRaw(p);
                        frees++;
                    }
                    live.clear();
                } else if (live.isEmpty() || rnd.nextInt(100) < 55) {
                    long n = rnd.nextInt(8) == 0 ? 1 + rnd.nextInt(12 << 20) : 1 + rnd.nextInt(64 << 10);
                    long p = a.allocateRaw(256, n);
                    if (p == 0) {
                        ooms++;
                    } else {
                        live.add(p);
                        allocs++;
                        allocatedBytes += a.allocatedSize(p);
                        peakActive = Math.max(peakActive, live.size());
                    }
                } else {
                    long p = live.remove(rnd.nextInt(live.size()));
                    freedBytes += a.allocatedSize(p);
                    a.deallocateRaw(p);
                    frees++;
                }
                if (step % 100 == 0 || step == 2999) {
                    MemoryStats m = a.memoryStats();
                    assertThat(m.allocationsTotal()).as("seed %d", seed).isEqualTo(allocs);
                    assertThat(m.freesTotal()).isEqualTo(frees);
                    assertThat(m.allocatedBytesTotal()).isEqualTo(allocatedBytes);
                    assertThat(m.freedBytesTotal()).isEqualTo(freedBytes);
                    assertThat(m.oomsTotal()).isEqualTo(ooms);
                    assertThat(m.activeAllocations()).isEqualTo(live.size());
                    assertThat(m.peakActiveAllocations()).isEqualTo(peakActive);
                    assertThat(m.bytesInUse()).isEqualTo(allocatedBytes - freedBytes);
                    checkAgainstMap(a, seed);
                }
            }
        }
    }

    /** Every figure agrees with the chunks of the memory map and with getStats(). */
    private static void checkAgainstMap(BfcAllocator a, long seed) {
        MemoryMap map = a.memoryMap();
        MemoryStats m = map.memoryStats();
        AllocatorStats s = a.getStats();
        assertThat(map.stats()).isEqualTo(s);
        assertThat(s.bytesReserved()).as("getStats stays upstream's").isZero();
        assertThat(s.largestFreeBlockBytes()).as("getStats stays upstream's").isZero();
        long inUse = 0;
        long reserved = 0;
        long largestFree = 0;
        long[] binBytes = new long[BfcAllocator.NUM_BINS];
        long[] binChunks = new long[BfcAllocator.NUM_BINS];
        long sumOfRegionsLargestFree = 0;
        for (MemoryMap.Region r : map.regions()) {
            reserved += r.size();
            long regionLargestFree = 0;
            long expectPtr = r.ptr();
            for (MemoryMap.Chunk c : r.chunks()) {
                assertThat(c.ptr()).as("chunks tile the region (seed %d)", seed).isEqualTo(expectPtr);
                expectPtr += c.size();
                int bin = BfcAllocator.binNumForSize(c.size());
                binBytes[bin] += c.size();
                binChunks[bin]++;
                if (c.inUse()) {
                    inUse += c.size();
                    assertThat(c.bin()).isEqualTo(-1);
                    assertThat(c.allocationId()).isEqualTo(a.allocationId(c.ptr())).isPositive();
                    assertThat(c.requestedSize()).isEqualTo(a.requestedSize(c.ptr()));
                } else {
                    largestFree = Math.max(largestFree, c.size());
                    regionLargestFree = Math.max(regionLargestFree, c.size());
                    assertThat(c.bin()).isEqualTo(bin);
                    assertThat(c.allocationId()).isEqualTo(-1);
                }
            }
            assertThat(expectPtr).isEqualTo(r.ptr() + r.size());
            sumOfRegionsLargestFree += regionLargestFree;
        }
        assertThat(m.bytesInUse()).isEqualTo(inUse).isEqualTo(s.bytesInUse());
        assertThat(m.peakBytesInUse()).isEqualTo(s.peakBytesInUse());
        assertThat(m.reservedBytes()).isEqualTo(reserved).isEqualTo(s.poolBytes())
                .isEqualTo(a.reservedBytes());
        assertThat(m.peakReservedBytes()).isEqualTo(s.peakPoolBytes()).isEqualTo(a.peakReservedBytes());
        assertThat(m.reservedBytesTotal() - m.releasedBytesTotal()).isEqualTo(reserved);
        assertThat(m.regionCount()).isEqualTo(map.regions().size()).isEqualTo(a.regionCount());
        assertThat(m.largestFreeChunkBytes()).isEqualTo(largestFree).isEqualTo(a.largestFreeChunkBytes());
        long free = reserved - inUse;
        double frag = free == 0 ? 0 : (double) (free - largestFree) / free;
        assertThat(m.fragmentation()).isEqualTo(frag).isEqualTo(a.fragmentation());
        double fragWithin = free == 0 ? 0 : (double) (free - sumOfRegionsLargestFree) / free;
        assertThat(m.fragmentationWithinRegions()).as("seed %d", seed).isEqualTo(fragWithin)
                .isEqualTo(a.fragmentationWithinRegions()).isLessThanOrEqualTo(m.fragmentation());
        assertThat(m.regionExtendsTotal() - m.regionFreesTotal()).isGreaterThanOrEqualTo(m.regionCount());
        assertThat(map.bins()).isEqualTo(a.getBinDebugInfo());
        for (BfcAllocator.BinDebugInfo b : map.bins()) {
            assertThat(b.totalBytesInBin()).isEqualTo(binBytes[b.binNum()]);
            assertThat(b.totalChunksInBin()).isEqualTo(binChunks[b.binNum()]);
        }
    }

    @Test
    void garbageCollectionCountsRegionFrees() {
        try (BfcAllocator a = sim(4 * MIB, gcNoRetry().build())) {
            long p = a.allocateRaw(256, MIB);
            a.deallocateRaw(p);
            assertThat(a.memoryStats().regionExtendsTotal()).isEqualTo(1);
            // 2 MiB held and free; 3 MiB fits only once the free region is given back.
            assertThat(a.allocateRaw(256, 3 * MIB)).isNotZero();
            MemoryStats m = a.memoryStats();
            assertThat(m.regionFreesTotal()).isEqualTo(1);
            assertThat(m.releasedBytesTotal()).isEqualTo(2 * MIB);
            assertThat(m.regionExtendsTotal()).isEqualTo(2);
            assertThat(m.reservedBytesTotal()).isEqualTo(2 * MIB + m.reservedBytes());
            assertThat(m.regionCount()).isEqualTo(1);
            assertThat(m.oomsTotal()).isZero();
        }
    }

    @Test
    void aLoneSurrogateInANameIsEscapedSoTheJsonCanBeWrittenAsUtf8() throws Exception {
        // Half of a surrogate pair (a name cut in the middle of an emoji), and a whole pair.
        String name = "cut \uD83D| whole \uD83D\uDE00 | low \uDE00";
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false), 16 * MIB,
                name, gcNoRetry().build())) {
            a.allocateRaw(256, 1000);
            String json = a.memoryMap().toJson();
            // Before, the lone halves were written as chars, which no encoder can write.
            StandardCharsets.UTF_8.newEncoder().encode(CharBuffer.wrap(json));
            assertThat(json).contains("\"allocatorName\": \"cut \\ud83d| whole \uD83D\uDE00 | low \\ude00\"");
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = (Map<String, Object>) TinyJson.parse(json);
            assertThat(doc.get("allocatorName")).isEqualTo(name);
        }
    }

    @Test
    void memoryMapJsonParsesAndHoldsTheSnapshot() {
        try (BfcAllocator a = new BfcAllocator(new SimSubAllocator(BASE, 64 * MIB, 0, false), 16 * MIB,
                "json \"quoted\"\tname", gcNoRetry().build())) {
            long p1 = a.allocateRaw(256, 1000);
            long p2 = a.allocateRaw(256, 3 * MIB);
            a.allocateRaw(256, 5000);
            a.deallocateRaw(p1);
            MemoryMap map = a.memoryMap();
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = (Map<String, Object>) TinyJson.parse(map.toJson());
            assertThat(doc.get("schema")).isEqualTo(MemoryMap.SCHEMA);
            assertThat(doc.get("allocatorName")).isEqualTo("json \"quoted\"\tname");
            assertThat(doc.get("memoryType")).isEqualTo("UNKNOWN");
            Map<?, ?> stats = (Map<?, ?>) doc.get("stats");
            assertThat(num(stats.get("bytesInUse"))).isEqualTo(a.getStats().bytesInUse());
            assertThat(num(stats.get("numAllocs"))).isEqualTo(3);
            Map<?, ?> ms = (Map<?, ?>) doc.get("memoryStats");
            assertThat(num(ms.get("freesTotal"))).isEqualTo(1);
            assertThat(num(ms.get("largestFreeChunkBytes"))).isEqualTo(a.largestFreeChunkBytes());
            assertThat(((BigDecimal) ms.get("fragmentation")).doubleValue()).isEqualTo(a.fragmentation());
            assertThat(((BigDecimal) ms.get("fragmentationWithinRegions")).doubleValue())
                    .isEqualTo(a.fragmentationWithinRegions());
            assertThat((List<?>) doc.get("bins")).hasSize(BfcAllocator.NUM_BINS);
            List<?> regions = (List<?>) doc.get("regions");
            assertThat(regions).hasSize(map.regions().size());
            int chunkIndex = 0;
            for (int r = 0; r < regions.size(); r++) {
                Map<?, ?> region = (Map<?, ?>) regions.get(r);
                assertThat(region.get("ptr")).isEqualTo("0x" + Long.toHexString(map.regions().get(r).ptr()));
                for (Object o : (List<?>) region.get("chunks")) {
                    Map<?, ?> c = (Map<?, ?>) o;
                    MemoryMap.Chunk expected = map.chunks().get(chunkIndex++);
                    assertThat(c.get("ptr")).isEqualTo("0x" + Long.toHexString(expected.ptr()));
                    assertThat(num(c.get("size"))).isEqualTo(expected.size());
                    assertThat(num(c.get("requestedSize"))).isEqualTo(expected.requestedSize());
                    assertThat(c.get("inUse")).isEqualTo(expected.inUse());
                    assertThat(num(c.get("allocationId"))).isEqualTo(expected.allocationId());
                    assertThat(num(c.get("bin"))).isEqualTo(expected.bin());
                }
            }
            assertThat(chunkIndex).isEqualTo(map.chunks().size()).isGreaterThanOrEqualTo(4);
            assertThat(map.chunks()).anySatisfy(c -> assertThat(c.ptr()).isEqualTo(p2));
        }
    }

    @Test
    void timestampedFreesShowTheirFreedAtCount() {
        try (BfcAllocator a = sim(16 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            long p = a.allocateRaw(256, 4096);
            a.allocateRaw(256, 4096);
            a.deallocateRaw(p);
            MemoryMap.Chunk c = a.memoryMap().chunks().stream().filter(x -> x.ptr() == p).findFirst().orElseThrow();
            assertThat(c.inUse()).isFalse();
            assertThat(c.freedAtCount()).isPositive();
        }
    }

    @Test
    void aChunkFreedButNotYetSafeNamesWhoAllocatedItUntilItIsSafe() {
        try (BfcAllocator a = sim(16 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long weights;
            long kept;
            try (MemoryAnnotation ignored = MemoryAnnotation.push("weights", 3)) {
                weights = a.allocateRaw(256, MIB);
            }
            try (MemoryAnnotation ignored = MemoryAnnotation.push("activations")) {
                kept = a.allocateRaw(256, MIB / 2);
            }
            a.deallocateRaw(weights); // stamped: waits until the frontier passes it

            MemoryMap map = a.memoryMap();
            MemoryMap.Chunk pending = chunkAt(map, weights);
            assertThat(pending.inUse()).isFalse();
            assertThat(pending.notYetSafe()).isTrue();
            assertThat(pending.provenance().annotation()).isEqualTo("weights");
            assertThat(pending.provenance().step()).isEqualTo(3);
            assertThat(pending.provenance().thread()).isEqualTo(Thread.currentThread().getName());
            assertThat(chunkAt(map, kept).notYetSafe()).isFalse();
            assertThat(chunkAt(map, kept).provenance().annotation()).isEqualTo("activations");
            // The rest of the region, free and never stamped: neither waiting nor anyone's.
            assertThat(map.chunks()).filteredOn(c -> !c.inUse() && c.ptr() != weights)
                    .isNotEmpty().allSatisfy(c -> {
                        assertThat(c.notYetSafe()).isFalse();
                        assertThat(c.provenance()).isEqualTo(Provenance.UNKNOWN);
                    });
            // Only the memory in use has holders.
            assertThat(map.largestHolders(10)).extracting(MemoryMap.Holder::holder)
                    .containsExactly("activations");
            assertThat(map.toJson()).contains("\"notYetSafe\": true, \"provenance\": {")
                    .contains("\"annotation\": \"weights\"");

            a.setSafeFrontier(counter.next()); // every free so far is safe now
            MemoryMap.Chunk safe = chunkAt(a.memoryMap(), weights);
            assertThat(safe.notYetSafe()).isFalse();
            assertThat(safe.provenance()).isEqualTo(Provenance.UNKNOWN);
            assertThat(a.memoryMap().toJson()).doesNotContain("notYetSafe");
        }
    }

    /**
     * Taking the counter away ({@code setTimingCounter(null)}) stops stamping new frees, but a
     * chunk stamped before still waits for the frontier: the allocator still keeps its region
     * from {@code emptyCache()} and an allocation with a {@code freedByFunc} still skips it. The
     * map, the summary and the PyTorch snapshot say so, as they did while the counter was set.
     */
    @Test
    @SuppressWarnings("unchecked")
    void aChunkStampedBeforeTheCounterWasTakenAwayStillWaitsInTheMapTheSummaryAndTheSnapshot() throws Exception {
        try (BfcAllocator a = sim(16 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordHistory(HistoryOptions.builder().stacks(false).build());
            long weights;
            try (MemoryAnnotation ignored = MemoryAnnotation.push("weights", 3)) {
                weights = a.allocateRaw(256, MIB);
            }
            a.deallocateRaw(weights); // stamped 1: waits until the frontier passes it
            a.setTimingCounter(null);

            assertThat(a.emptyCache()).as("the allocator keeps the region of the waiting chunk").isZero();
            assertThat(a.regionCount()).isEqualTo(1);
            MemoryMap.Chunk pending = chunkAt(a.memoryMap(), weights);
            assertThat(pending.inUse()).isFalse();
            assertThat(pending.notYetSafe()).as("still waiting for the frontier").isTrue();
            assertThat(pending.provenance().annotation()).isEqualTo("weights");
            assertThat(a.memorySummary()).contains("| Not yet safe: 1.00MiB in 1 free chunk (freed on busy streams)")
                    .contains("Not yet safe, by holder").contains("1.00MiB in      1 chunk   weights (step 3)");
            Map<String, Object> pickle = MemoryVizReplay.pickle(a.snapshot());
            List<Map<String, Object>> blocks = (List<Map<String, Object>>) ((List<Map<String, Object>>) pickle
                    .get("segments")).get(0).get("blocks");
            assertThat(blocks.get(0).get("state")).isEqualTo("active_pending_free");
            MemoryVizReplay.check(pickle);

            a.setSafeFrontier(counter.next()); // the frontier passes stamp 1
            MemoryMap.Chunk safe = chunkAt(a.memoryMap(), weights);
            assertThat(safe.notYetSafe()).isFalse();
            assertThat(safe.provenance()).isEqualTo(Provenance.UNKNOWN);
            assertThat(a.memorySummary()).doesNotContain("Not yet safe");
            assertThat(a.emptyCache()).as("safe now: the region goes back").isEqualTo(2 * MIB);
        }
    }

    /**
     * While nothing is recorded the allocator hears no call: a chunk freed and stamped under
     * "first", then (without a counter, which leaves its stamp as it was) allocated again and
     * freed again unheard, is the same chunk with the same stamp, but the memory it holds was
     * last another allocation's. Recording again does not name "first" for it: nothing stale is
     * shown.
     */
    @Test
    void aWaitingChunkTakenAndFreedAgainWhileNothingWasRecordedNamesNoOne() {
        try (BfcAllocator a = sim(16 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordAnnotations(true);
            long p;
            try (MemoryAnnotation ignored = MemoryAnnotation.push("first")) {
                p = a.allocateRaw(256, 1000);
            }
            a.deallocateRaw(p); // stamped 1: waits, and names "first"
            assertThat(chunkAt(a.memoryMap(), p).provenance().annotation()).isEqualTo("first");

            a.recordAnnotations(false); // nothing recorded: the allocator calls no recorder
            a.setTimingCounter(null);   // frees no longer stamp, nor unstamp
            long q = a.allocateRaw(256, 1000, new AllocationAttributes(false, () -> 2)); // stamp 1 allowed
            assertThat(q).as("the waiting chunk, the best fit, taken whole").isEqualTo(p);
            a.deallocateRaw(q); // unheard; the chunk keeps stamp 1
            a.recordAnnotations(true);

            MemoryMap.Chunk c = chunkAt(a.memoryMap(), p);
            assertThat(c.notYetSafe()).as("stamp 1 is still at or after the frontier").isTrue();
            assertThat(c.provenance()).as("last held by an allocation nothing recorded").isEqualTo(Provenance.UNKNOWN);
        }
    }

    @Test
    void theSummaryNamesWhoHeldTheMemoryNotYetSafeLargestFirstAndBounded() {
        try (BfcAllocator a = sim(64 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordAnnotations(true);
            List<Long> freed = new ArrayList<>();
            for (int i = 0; i < 7; i++) { // seven holders, the largest first: "layer0" holds 7 x 64 KiB
                try (MemoryAnnotation ignored = MemoryAnnotation.push("layer" + i, 2)) {
                    freed.add(a.allocateRaw(256, (7 - i) * 64 * 1024L));
                }
            }
            try (MemoryAnnotation ignored = MemoryAnnotation.push("kept")) {
                a.allocateRaw(256, 1024);
            }
            for (long p : freed) {
                a.deallocateRaw(p); // stamped: waits until the frontier passes it
            }

            String summary = a.memorySummary();
            System.out.println(summary);
            assertThat(summary).contains("| Not yet safe: 1.75MiB in 7 free chunks (freed on busy streams)");
            assertThat(summary).contains("Not yet safe, by holder");
            String section = summary.substring(summary.indexOf("Not yet safe, by holder"));
            assertThat(section.lines().toList()).containsExactly(
                    "Not yet safe, by holder of the allocation freed (annotation, else innermost frame outside"
                            + " org.bytedeco., else thread, else step):",
                    "    448.0KiB in      1 chunk   layer0 (step 2)",
                    "    384.0KiB in      1 chunk   layer1 (step 2)",
                    "    320.0KiB in      1 chunk   layer2 (step 2)",
                    "    256.0KiB in      1 chunk   layer3 (step 2)",
                    "    192.0KiB in      1 chunk   layer4 (step 2)",
                    "    192.0KiB in      2 chunks  (2 more holders)");
            assertThat(summary.substring(0, summary.indexOf("Not yet safe, by holder")))
                    .as("the memory in use is held by 'kept' alone").contains("kept").doesNotContain("layer");

            a.setSafeFrontier(counter.next()); // every free so far is safe now
            assertThat(a.memorySummary()).doesNotContain("Not yet safe");
        }
    }

    /** Five waiting holders are all listed, with no "more holders" line (there are none more). */
    @Test
    void theSummaryListsExactlyFiveWaitingHoldersWithoutAMoreLine() {
        try (BfcAllocator a = sim(64 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordAnnotations(true);
            List<Long> freed = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                try (MemoryAnnotation ignored = MemoryAnnotation.push("layer" + i, 2)) {
                    freed.add(a.allocateRaw(256, (5 - i) * 64 * 1024L));
                }
            }
            try (MemoryAnnotation ignored = MemoryAnnotation.push("kept")) {
                a.allocateRaw(256, 1024);
            }
            for (long p : freed) {
                a.deallocateRaw(p); // stamped: waits until the frontier passes it
            }

            String summary = a.memorySummary();
            String section = summary.substring(summary.indexOf("Not yet safe, by holder"));
            assertThat(section.lines().toList()).containsExactly(
                    "Not yet safe, by holder of the allocation freed (annotation, else innermost frame outside"
                            + " org.bytedeco., else thread, else step):",
                    "    320.0KiB in      1 chunk   layer0 (step 2)",
                    "    256.0KiB in      1 chunk   layer1 (step 2)",
                    "    192.0KiB in      1 chunk   layer2 (step 2)",
                    "    128.0KiB in      1 chunk   layer3 (step 2)",
                    "     64.0KiB in      1 chunk   layer4 (step 2)");
        }
    }

    /**
     * With nothing recorded, the summary has no "Largest holders" (or "Not yet safe, by holder")
     * section and the out-of-memory message names no holders: they appear once provenance is
     * recorded.
     */
    @Test
    void withNothingRecordedNoHoldersAreNamed() {
        try (BfcAllocator a = sim(8 * MIB, gcNoRetry().build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            assertThat(a.allocateRaw(256, MIB)).isNotZero();
            a.deallocateRaw(a.allocateRaw(256, MIB)); // stamped: waits until the frontier passes it
            String summary = a.memorySummary();
            assertThat(summary).contains("| Not yet safe:").doesNotContain("Largest holders")
                    .doesNotContain("by holder");
            BfcOutOfMemoryException e = org.junit.jupiter.api.Assertions.assertThrows(
                    BfcOutOfMemoryException.class, () -> a.allocate(16 * MIB));
            assertThat(e.getMessage()).doesNotContain("Largest holders");

            a.recordAnnotations(true); // on, but nothing annotated: still nothing recorded
            a.deallocateRaw(a.allocateRaw(256, MIB));
            assertThat(a.allocateRaw(256, MIB)).isNotZero();
            assertThat(a.memorySummary()).doesNotContain("Largest holders").doesNotContain("by holder");
            e = org.junit.jupiter.api.Assertions.assertThrows(
                    BfcOutOfMemoryException.class, () -> a.allocate(16 * MIB));
            assertThat(e.getMessage()).doesNotContain("Largest holders");
        }
    }

    @Test
    void aChunkNotYetSafeThatIsNoLongerTheFreedOneNamesNoOne() {
        // Three adjacent waiting chunks; an allocation that finds no chunk large enough merges
        // them (forced merging, before failing) and takes the start of the merged chunk; the
        // rest, split off, still waits, but holds parts of two frees: it names neither.
        try (BfcAllocator a = sim(4 * MIB, BfcOptions.builder().allowGrowth(false).garbageCollection(false)
                .allowRetryOnFailure(false).build())) {
            SharedCounter counter = new SharedCounter();
            a.setTimingCounter(counter);
            a.recordAnnotations(true);
            long[] p = new long[3];
            for (int i = 0; i < 3; i++) {
                try (MemoryAnnotation ignored = MemoryAnnotation.push("part" + i)) {
                    p[i] = a.allocateRaw(256, MIB);
                }
            }
            assertThat(a.allocateRaw(256, MIB)).as("the pool is full").isNotZero();
            a.deallocateRaw(p[1]);
            a.deallocateRaw(p[0]);
            a.deallocateRaw(p[2]);
            for (int i = 0; i < 3; i++) {
                assertThat(chunkAt(a.memoryMap(), p[i]).provenance().annotation()).isEqualTo("part" + i);
            }

            long merged = a.allocateRaw(256, MIB + MIB / 4);
            assertThat(merged).isEqualTo(p[0]);
            MemoryMap.Chunk splitOff = chunkAt(a.memoryMap(), p[0] + MIB + MIB / 4);
            assertThat(splitOff.size()).isEqualTo(MIB + 3 * MIB / 4);
            assertThat(splitOff.inUse()).isFalse();
            assertThat(splitOff.notYetSafe()).isTrue();
            assertThat(splitOff.provenance()).isEqualTo(Provenance.UNKNOWN);
        }
    }

    private static MemoryMap.Chunk chunkAt(MemoryMap map, long ptr) {
        return map.chunks().stream().filter(c -> c.ptr() == ptr).findFirst().orElseThrow();
    }

    @Test
    void summaryShowsTheFiguresBinsAndOccupancy() {
        try (BfcAllocator a = sim(16 * MIB, gcNoRetry().build())) {
            long p = a.allocateRaw(256, 1000);
            a.allocateRaw(256, 512 << 10);
            a.deallocateRaw(p);
            assertThat(a.allocateRaw(256, 64 * MIB)).isZero();
            String summary = a.memorySummary();
            System.out.println(summary);
            assertThat(summary).contains("bfc4j memory summary: obs_bfc (UNKNOWN)")
                    .contains("OOMs: 1  |  region extends: 1  |  region frees (GC, emptyCache): 0")
                    .containsPattern("\\| Allocated memory +\\| +512\\.0KiB \\| +513\\.0KiB \\| +513\\.0KiB \\| +1\\.0KiB \\|")
                    .containsPattern("\\| Reserved memory +\\| +2\\.00MiB \\| +2\\.00MiB \\| +2\\.00MiB \\| +0B \\|")
                    .containsPattern("\\| Allocations +\\| +1 \\| +2 \\| +2 \\| +1 \\|")
                    .containsPattern("\\| Regions +\\| +1 \\| +- \\| +1 \\| +0 \\|")
                    .contains("Bin (1024): \tTotal Chunks: 1, Chunks in use: 0.")
                    .contains(a.renderOccupancy());
            for (String line : summary.split("\n")) {
                if (line.startsWith("|")) {
                    assertThat(line).as("table lines are aligned").hasSize(77).endsWith("|");
                }
            }
        }
    }

    @Test
    void outOfMemoryWritesADumpAndCountsIt(@TempDir Path dir) throws Exception {
        Path dumps = dir.resolve("dumps");
        try (BfcAllocator a = sim(8 * MIB, gcNoRetry().dumpOnOomDirectory(dumps).build())) {
            long p = a.allocateRaw(256, 3 * MIB);
            assertThat(p).isNotZero();
            assertThat(a.allocateRaw(256, 6 * MIB)).isZero();
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(1);
            List<Path> files;
            try (Stream<Path> list = Files.list(dumps)) {
                files = list.sorted().toList();
            }
            // One JSON document and, by the same name, PyTorch's snapshot of the same moment.
            assertThat(files).hasSize(2);
            String json = files.get(0).getFileName().toString();
            assertThat(json).startsWith("bfc-oom-obs_bfc-").endsWith(".json");
            assertThat(files.get(1).getFileName().toString())
                    .isEqualTo(json.substring(0, json.length() - ".json".length()) + ".pickle");
            byte[] pickle = Files.readAllBytes(files.get(1));
            MemoryVizOpcodes.check(pickle);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> segments = (List<Map<String, Object>>) ((Map<?, ?>) new Unpickler()
                    .loads(pickle)).get("segments");
            assertThat(segments.stream().mapToLong(seg -> PyTorchSnapshotTest.num(seg.get("total_size"))).sum())
                    .isEqualTo(a.getStats().poolBytes());
            assertThat(segments).flatExtracting(seg -> (List<?>) seg.get("blocks"))
                    .filteredOn(b -> ((Map<?, ?>) b).get("state").equals("active_allocated"))
                    .extracting(b -> PyTorchSnapshotTest.num(((Map<?, ?>) b).get("address")))
                    .containsExactly(p);
            Map<?, ?> doc = (Map<?, ?>) TinyJson.parse(Files.readString(files.get(0)));
            assertThat(doc.get("schema")).isEqualTo("bfc4j.oom-dump/1");
            assertThat(num(doc.get("requestedBytes"))).isEqualTo(6 * MIB);
            assertThat((String) doc.get("summary")).contains("OOMs: 1");
            Map<?, ?> map = (Map<?, ?>) doc.get("memoryMap");
            assertThat(map.get("schema")).isEqualTo(MemoryMap.SCHEMA);
            Map<?, ?> stats = (Map<?, ?>) map.get("stats");
            assertThat(num(stats.get("bytesInUse"))).isEqualTo(a.getStats().bytesInUse());
            assertThat(doc.containsKey("shards")).as("shards: a sharded allocator's only").isFalse();
            // A second failure writes a second dump.
            assertThat(a.allocateRaw(256, 7 * MIB)).isZero();
            try (Stream<Path> list = Files.list(dumps)) {
                assertThat(list.count()).isEqualTo(4);
            }
        }
    }

    @Test
    void allocateThrowsAnExceptionNamingTheDumpFile(@TempDir Path dir) throws Exception {
        try (BfcAllocator a = sim(8 * MIB, gcNoRetry().dumpOnOomDirectory(dir).build())) {
            assertThat(a.allocateRaw(256, 3 * MIB)).isNotZero();
            // A raw failure first: its dump must not be confused with the next one's.
            assertThat(a.allocateRaw(256, 7 * MIB)).isZero();
            BfcOutOfMemoryException e = org.junit.jupiter.api.Assertions.assertThrows(
                    BfcOutOfMemoryException.class, () -> a.allocate(6 * MIB));
            assertThat(e.dumpFile()).isNotNull();
            String pickle = e.dumpFile().substring(0, e.dumpFile().length() - ".json".length()) + ".pickle";
            assertThat(e.getMessage()).endsWith(" Memory map and summary written to " + e.dumpFile() + ", PyTorch's"
                    + " memory snapshot of it (for pytorch.org/memory_viz) to " + pickle + ".");
            assertThat(Path.of(pickle)).isRegularFile();
            Map<?, ?> doc = (Map<?, ?>) TinyJson.parse(Files.readString(Path.of(e.dumpFile())));
            assertThat(num(doc.get("requestedBytes"))).isEqualTo(6 * MIB);
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(2);
        }
        try (BfcAllocator a = sim(8 * MIB, gcNoRetry().build())) {
            BfcOutOfMemoryException e = org.junit.jupiter.api.Assertions.assertThrows(
                    BfcOutOfMemoryException.class, () -> a.allocate(16 * MIB));
            assertThat(e.dumpFile()).as("no dump without the option").isNull();
            assertThat(e.getMessage()).doesNotContain("Memory map");
        }
    }

    @Test
    void anUnwritableDumpDirectoryIsReportedNotThrown(@TempDir Path dir) throws Exception {
        Path notADir = Files.writeString(dir.resolve("file"), "x");
        try (BfcAllocator a = sim(8 * MIB, gcNoRetry().dumpOnOomDirectory(notADir).build())) {
            BfcOutOfMemoryException e = org.junit.jupiter.api.Assertions.assertThrows(
                    BfcOutOfMemoryException.class, () -> a.allocate(16 * MIB));
            assertThat(e.dumpFile()).isNull();
            assertThat(e.getMessage()).contains("Could not write the memory dump to " + notADir.toAbsolutePath());
        }
    }

    @Test
    void dumpDirectoryDefaultsToTheSystemProperty(@TempDir Path dir) {
        String old = System.getProperty("bfc4j.dumpOnOom");
        System.setProperty("bfc4j.dumpOnOom", dir.toString());
        try {
            assertThat(BfcOptions.builder().build().dumpOnOomDirectory()).isEqualTo(dir);
        } finally {
            if (old == null) {
                System.clearProperty("bfc4j.dumpOnOom");
            } else {
                System.setProperty("bfc4j.dumpOnOom", old);
            }
        }
        assertThat(BfcOptions.builder().dumpOnOomDirectory(null).build().dumpOnOomDirectory()).isNull();
    }

    /**
     * A bad sample period in the system property is an IllegalArgumentException naming it, from
     * builder() and defaults() alike, and the options work again once it is fixed. defaults() was
     * computed once, when the class was loaded: a bad property then failed the class's
     * initialisation for the rest of the JVM, and a property set later was never read.
     */
    @Test
    void aBadSamplePeriodPropertyIsNamedAndLeavesTheOptionsUsable() {
        String old = System.getProperty("bfc4j.jfr.allocationSamplePeriod");
        try {
            System.setProperty("bfc4j.jfr.allocationSamplePeriod", "often");
            for (Runnable r : new Runnable[] {BfcOptions::builder, BfcOptions::defaults}) {
                assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("-Dbfc4j.jfr.allocationSamplePeriod=often (expected: an integer >= 0; 0 turns"
                                + " allocation samples off)");
            }
            System.setProperty("bfc4j.jfr.allocationSamplePeriod", "7");
            assertThat(BfcOptions.defaults().jfrAllocationSamplePeriod()).isEqualTo(7);
        } finally {
            if (old == null) {
                System.clearProperty("bfc4j.jfr.allocationSamplePeriod");
            } else {
                System.setProperty("bfc4j.jfr.allocationSamplePeriod", old);
            }
        }
        assertThat(BfcOptions.defaults().jfrAllocationSamplePeriod()).isZero();
    }

    @Test
    void noDumpWithoutTheOption(@TempDir Path dir) throws Exception {
        try (BfcAllocator a = sim(4 * MIB, gcNoRetry().build())) {
            assertThat(a.allocateRaw(256, 8 * MIB)).isZero();
            assertThat(a.memoryStats().oomsTotal()).isEqualTo(1);
        }
        try (Stream<Path> list = Files.list(dir)) {
            assertThat(list.count()).isZero();
        }
    }

    private static long num(Object o) {
        return ((BigDecimal) o).longValueExact();
    }
}
