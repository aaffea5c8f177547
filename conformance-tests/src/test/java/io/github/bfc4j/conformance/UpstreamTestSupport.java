/*
 * Copyright 2026 The bfc4j Authors.
 * Test helpers for the ports of TensorFlow's BFC allocator tests (Copyright 2015 The TensorFlow
 * Authors), licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the upstream tests take from TensorFlow and the Java API does not have: the options
 * {@code GPUBFCAllocator} derives, {@code CheckStats}, {@code random::SimplePhilox}, a reader for
 * {@code DumpMemoryLog} (standing in for the private {@code get_bin_debug_info} and
 * {@code RecordMemoryMap}), and the invariant checker and shadow model of the house style.
 */
final class UpstreamTestSupport {

    /** Base of the simulated address space standing in for a CUDA device. */
    static final long SIM_BASE = 0x7f0000000000L;

    /** Upstream's {@code Allocator::kAllocatorAlignment}, used by {@code TypedAllocator}. */
    static final long ALLOCATOR_ALIGNMENT = 64;

    /** System property that overrides the seed of every randomised test. */
    static final String SEED_PROPERTY = "bfc4j.test.seed";

    private UpstreamTestSupport() {
    }

    /**
     * The {@code BFCAllocator::Options} that {@code GPUBFCAllocator(sub, total, name, opts)}
     * builds from {@code GPUBFCAllocator::Options} when neither {@code TF_FORCE_GPU_ALLOW_GROWTH}
     * nor {@code TF_ENABLE_GPU_GARBAGE_COLLECTION} is set (gpu_bfc_allocator.cc):
     * {@code allow_growth = opts.allow_growth} (default false), {@code allow_retry_on_failure =
     * true}, {@code garbage_collection = GetGarbageCollectionValue()} = true,
     * {@code fragmentation_fraction = 0}. Note that plain {@code BFCAllocator::Options} default
     * garbage collection to false.
     */
    static BfcOptions gpuBfcOptions(boolean allowGrowth) {
        return BfcOptions.builder()
                .allowGrowth(allowGrowth)
                .allowRetryOnFailure(true)
                .garbageCollection(true)
                .fragmentationFraction(0)
                .build();
    }

    /** Port of the tests' {@code CheckStats}. */
    static void checkStats(BfcAllocator a, long numAllocs, long bytesInUse, long peakBytesInUse,
            long largestAllocSize) {
        AllocatorStats stats = a.getStats();
        assertThat(stats).as("stats").isNotNull();
        assertThat(stats.bytesInUse()).as("bytes_in_use").isEqualTo(bytesInUse);
        assertThat(stats.peakBytesInUse()).as("peak_bytes_in_use").isEqualTo(peakBytesInUse);
        assertThat(stats.numAllocs()).as("num_allocs").isEqualTo(numAllocs);
        assertThat(stats.largestAllocSize()).as("largest_alloc_size").isEqualTo(largestAllocSize);
    }

    /**
     * The seed of a randomised test: {@code -Dbfc4j.test.seed} if set, else upstream's. Printed,
     * so that a failure can be replayed.
     */
    static long seed(String test, long upstreamSeed) {
        String prop = System.getProperty(SEED_PROPERTY);
        long seed = (prop == null || prop.isBlank()) ? upstreamSeed : Long.decode(prop.trim());
        System.out.println(test + ": seed=" + seed + (seed == upstreamSeed ? " (upstream's)" : "")
                + "; replay with -D" + SEED_PROPERTY + "=" + seed);
        return seed;
    }

    // ---------------------------------------------------------------------------------------
    // random::PhiloxRandom + random::SimplePhilox (tsl/lib/random/philox_random.h,
    // simple_philox.h), so that the ported tests draw exactly upstream's sizes.
    // ---------------------------------------------------------------------------------------

    /** Port of {@code random::SimplePhilox} over {@code random::PhiloxRandom(seed_lo, seed_hi)}. */
    static final class SimplePhilox {
        private static final int PHILOX_W32A = 0x9E3779B9;
        private static final int PHILOX_W32B = 0xBB67AE85;
        private static final long PHILOX_M4X32A = 0xD2511F53L;
        private static final long PHILOX_M4X32B = 0xCD9E8D57L;

        private final int[] counter = new int[4];
        private final int[] key = new int[2];
        private int[] results = new int[4];
        private int used = 4;

        SimplePhilox(long seedLo, long seedHi) {
            key[0] = (int) seedLo;
            key[1] = (int) (seedLo >>> 32);
            counter[2] = (int) seedHi;
            counter[3] = (int) (seedHi >>> 32);
        }

        /** {@code SimplePhilox::Rand32}: the next 32 random bits, as an unsigned value. */
        long rand32() {
            if (used == 4) {
                results = philox4x32x10(counter, key);
                skipOne();
                used = 0;
            }
            return Integer.toUnsignedLong(results[used++]);
        }

        private void skipOne() {
            if (++counter[0] == 0 && ++counter[1] == 0 && ++counter[2] == 0) {
                ++counter[3];
            }
        }

        /** {@code PhiloxRandom::operator()} without the counter advance: ten rounds. */
        static int[] philox4x32x10(int[] ctr, int[] k) {
            int c0 = ctr[0];
            int c1 = ctr[1];
            int c2 = ctr[2];
            int c3 = ctr[3];
            int k0 = k[0];
            int k1 = k[1];
            for (int round = 0; round < 10; round++) {
                if (round > 0) {
                    k0 += PHILOX_W32A;
                    k1 += PHILOX_W32B;
                }
                long p0 = PHILOX_M4X32A * Integer.toUnsignedLong(c0);
                long p1 = PHILOX_M4X32B * Integer.toUnsignedLong(c2);
                int n0 = (int) (p1 >>> 32) ^ c1 ^ k0;
                int n1 = (int) p1;
                int n2 = (int) (p0 >>> 32) ^ c3 ^ k1;
                int n3 = (int) p0;
                c0 = n0;
                c1 = n1;
                c2 = n2;
                c3 = n3;
            }
            return new int[] {c0, c1, c2, c3};
        }
    }

    // ---------------------------------------------------------------------------------------
    // DumpMemoryLog reader
    // ---------------------------------------------------------------------------------------

    /** One chunk line of the dump: {@code InUse at <hex> of size <n> next <h>}. */
    record DumpChunk(boolean inUse, long address, long size) {
    }

    /** One {@code Next region of size <n>} section. */
    record DumpRegion(long size, List<DumpChunk> chunks) {
    }

    /**
     * One {@code Bin (<size>): Total Chunks: ...} line, i.e. upstream's {@code BinDebugInfo}. The
     * byte counts are as precise as {@code strings::HumanReadableNumBytes} prints them: exact below
     * 1 KiB and for multiples of 1 KiB below 1 MiB.
     */
    record DumpBin(long binSize, long totalChunksInBin, long totalChunksInUse, long totalBytesInBin,
            long totalBytesInUse, long totalRequestedBytesInUse) {
    }

    /** What {@code DumpMemoryLog} told. */
    record MemoryDump(List<DumpBin> bins, List<DumpRegion> regions, String text) {
        int chunkCount() {
            int n = 0;
            for (DumpRegion r : regions) {
                n += r.chunks().size();
            }
            return n;
        }
    }

    private static final Pattern BIN_LINE = Pattern.compile(
            "Bin \\((\\d+)\\):\\s*Total Chunks: (\\d+), Chunks in use: (\\d+)\\.\\s*(\\S+) allocated"
                    + " for chunks\\.\\s*(\\S+) in use in bin\\.\\s*(\\S+) client-requested in use in"
                    + " bin\\.");
    private static final Pattern REGION_LINE = Pattern.compile("Next region of size (\\d+)");
    private static final Pattern CHUNK_LINE = Pattern.compile(
            "\\b(InUse|Free)\\s+at\\s+(?:0x)?([0-9a-fA-F]+)\\s+of size\\s+(\\d+)");
    private static final Pattern HUMAN_BYTES = Pattern.compile("(-?[0-9.]+)(B|([KMGTPE])iB)");

    /** Calls {@code dumpMemoryLog} and reads it. */
    static MemoryDump dump(BfcAllocator a) {
        return parseDump(a.dumpMemoryLog(BfcAllocator.MIN_ALLOCATION_SIZE));
    }

    static MemoryDump parseDump(String text) {
        List<DumpBin> bins = new ArrayList<>();
        List<DumpRegion> regions = new ArrayList<>();
        List<DumpChunk> current = null;
        for (String line : text.split("\\R")) {
            Matcher m = BIN_LINE.matcher(line);
            if (m.find()) {
                bins.add(new DumpBin(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)),
                        Long.parseLong(m.group(3)), humanBytes(m.group(4)), humanBytes(m.group(5)),
                        humanBytes(m.group(6))));
                continue;
            }
            m = REGION_LINE.matcher(line);
            if (m.find()) {
                current = new ArrayList<>();
                regions.add(new DumpRegion(Long.parseLong(m.group(1)), current));
                continue;
            }
            m = CHUNK_LINE.matcher(line);
            if (m.find()) {
                if (current == null) {
                    fail("chunk line before any 'Next region of size' line in the dump:%n%s", text);
                }
                current.add(new DumpChunk(m.group(1).equals("InUse"),
                        Long.parseUnsignedLong(m.group(2), 16), Long.parseLong(m.group(3))));
            }
        }
        return new MemoryDump(bins, regions, text);
    }

    /** Reads what {@code strings::HumanReadableNumBytes} printed. */
    static long humanBytes(String s) {
        Matcher m = HUMAN_BYTES.matcher(s);
        if (!m.matches()) {
            fail("not a HumanReadableNumBytes value: '%s'", s);
        }
        double v = Double.parseDouble(m.group(1));
        if (m.group(3) != null) {
            int shift = 10 * (1 + "KMGTPE".indexOf(m.group(3).charAt(0)));
            v *= Math.pow(2, shift);
        }
        return Math.round(v);
    }

    // ---------------------------------------------------------------------------------------
    // Invariants and shadow model
    // ---------------------------------------------------------------------------------------

    /**
     * Checks, from the dump, {@code getBinDebugInfo} and the stats, that: chunks tile each region
     * without gaps; no two adjacent chunks are free (unless the allocator has a timing counter);
     * each free chunk is in the bin its size maps to (checked inside {@code getBinDebugInfo});
     * each bin's figures count exactly the chunks whose size maps to it; {@code bytes_in_use}
     * and {@code pool_bytes} equal the sums recomputed from the chunks and regions.
     */
    static MemoryDump checkInvariants(BfcAllocator a, boolean timestamped, String context) {
        MemoryDump md = dump(a);
        AllocatorStats stats = a.getStats();
        if (stats.poolBytes() > 0 && md.regions().isEmpty()) {
            fail("%s: pool_bytes=%d but no 'Next region of size' section in the dump:%n%s",
                    context, stats.poolBytes(), md.text());
        }
        assertThat(md.bins()).as("%s: bin lines in the dump:%n%s", context, md.text())
                .hasSize(BfcAllocator.NUM_BINS);
        long[] chunksPerBin = new long[BfcAllocator.NUM_BINS];
        long[] inUsePerBin = new long[BfcAllocator.NUM_BINS];
        long[] bytesPerBin = new long[BfcAllocator.NUM_BINS];
        long[] inUseBytesPerBin = new long[BfcAllocator.NUM_BINS];
        long poolBytes = 0;
        long bytesInUse = 0;
        for (DumpRegion r : md.regions()) {
            poolBytes += r.size();
            long sum = 0;
            DumpChunk prev = null;
            for (DumpChunk c : r.chunks()) {
                assertThat(c.size()).as("%s: chunk size", context).isPositive();
                assertThat(c.size() % BfcAllocator.MIN_ALLOCATION_SIZE).as("%s: chunk size %% 256",
                        context).isZero();
                if (prev != null) {
                    assertThat(c.address()).as("%s: chunk after 0x%x (size %d) starts at its end",
                            context, prev.address(), prev.size())
                            .isEqualTo(prev.address() + prev.size());
                    if (!timestamped) {
                        assertThat(prev.inUse() || c.inUse()).as(
                                "%s: adjacent free chunks at 0x%x and 0x%x", context,
                                prev.address(), c.address()).isTrue();
                    }
                }
                sum += c.size();
                int bin = BfcAllocator.binNumForSize(c.size());
                chunksPerBin[bin]++;
                bytesPerBin[bin] += c.size();
                if (c.inUse()) {
                    inUsePerBin[bin]++;
                    inUseBytesPerBin[bin] += c.size();
                    bytesInUse += c.size();
                }
                prev = c;
            }
            assertThat(sum).as("%s: chunks of a region sum to its size", context)
                    .isEqualTo(r.size());
        }
        // getBinDebugInfo also checks that every free chunk sits in the bin its size maps to.
        List<BfcAllocator.BinDebugInfo> infos = a.getBinDebugInfo();
        for (int b = 0; b < BfcAllocator.NUM_BINS; b++) {
            DumpBin bin = md.bins().get(b);
            BfcAllocator.BinDebugInfo info = infos.get(b);
            assertThat(info.totalChunksInBin()).as("%s: getBinDebugInfo chunks of bin %d", context, b)
                    .isEqualTo(chunksPerBin[b]);
            assertThat(info.totalChunksInUse()).as("%s: getBinDebugInfo chunks in use of bin %d",
                    context, b).isEqualTo(inUsePerBin[b]);
            assertThat(info.totalBytesInBin()).as("%s: getBinDebugInfo bytes of bin %d", context, b)
                    .isEqualTo(bytesPerBin[b]);
            assertThat(info.totalBytesInUse()).as("%s: getBinDebugInfo bytes in use of bin %d",
                    context, b).isEqualTo(inUseBytesPerBin[b]);
            assertThat(bin.binSize()).as("%s: size of bin %d", context, b)
                    .isEqualTo(BfcAllocator.MIN_ALLOCATION_SIZE << b);
            assertThat(bin.totalChunksInBin()).as("%s: chunks of bin %d", context, b)
                    .isEqualTo(chunksPerBin[b]);
            assertThat(bin.totalChunksInUse()).as("%s: chunks in use of bin %d", context, b)
                    .isEqualTo(inUsePerBin[b]);
        }
        assertThat(poolBytes).as("%s: pool_bytes = sum of regions", context)
                .isEqualTo(stats.poolBytes());
        assertThat(bytesInUse).as("%s: bytes_in_use = sum of chunks in use", context)
                .isEqualTo(stats.bytesInUse());
        return md;
    }

    /**
     * The live allocations as the test sees them: address to {requested, allocated}. Checks, on
     * every change, what upstream's tests check at the end (no duplicates, no overlap, a
     * positive requested size) plus the allocator's own answers and {@code bytes_in_use}.
     */
    static final class Shadow {
        private final BfcAllocator a;
        private final String context;
        private final TreeMap<Long, long[]> live = new TreeMap<>();
        private long bytesInUse;

        Shadow(BfcAllocator a, String context) {
            this.a = a;
            this.context = context;
        }

        void allocated(long ptr, long requested) {
            assertThat(ptr).as("%s: allocation of %d bytes", context, requested).isNotZero();
            assertThat(live).as("%s: duplicate 0x%x", context, ptr).doesNotContainKey(ptr);
            long allocated = a.allocatedSize(ptr);
            assertThat(a.requestedSize(ptr)).as("%s: requestedSize(0x%x)", context, ptr)
                    .isEqualTo(requested);
            assertThat(allocated).as("%s: allocatedSize(0x%x)", context, ptr)
                    .isGreaterThanOrEqualTo(requested);
            Map.Entry<Long, long[]> below = live.lowerEntry(ptr);
            if (below != null) {
                assertThat(ptr - below.getKey()).as("%s: 0x%x overlaps 0x%x", context, ptr,
                        below.getKey()).isGreaterThanOrEqualTo(below.getValue()[1]);
            }
            Map.Entry<Long, long[]> above = live.higherEntry(ptr);
            if (above != null) {
                assertThat(above.getKey() - ptr).as("%s: 0x%x overlaps 0x%x", context, ptr,
                        above.getKey()).isGreaterThanOrEqualTo(allocated);
            }
            live.put(ptr, new long[] {requested, allocated});
            bytesInUse += allocated;
            assertThat(a.getStats().bytesInUse()).as("%s: bytes_in_use", context)
                    .isEqualTo(bytesInUse);
        }

        void freed(long ptr) {
            long[] v = live.remove(ptr);
            assertThat(v).as("%s: freeing 0x%x, which is not live", context, ptr).isNotNull();
            bytesInUse -= v[1];
            assertThat(a.getStats().bytesInUse()).as("%s: bytes_in_use", context)
                    .isEqualTo(bytesInUse);
        }
    }
}
