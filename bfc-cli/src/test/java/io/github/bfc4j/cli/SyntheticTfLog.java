/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.sim.SimSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Writes a log in TensorFlow 2.18's {@code bfc_allocator.cc} shapes (VLOG 1, 3 and 4 lines with
 * stack traces, as in tf218-mlp-train-3steps.log.gz) for a random workload run on this port's
 * allocator over a simulated space: a log whose right answers are known.
 */
final class SyntheticTfLog {
    private static final String PREFIX = "2026-11-21 21:27:54.426801: I external/local_xla/xla/tsl/framework/"
            + "bfc_allocator.cc:";

    final StringBuilder log = new StringBuilder();
    int allocs;
    int frees;
    int nulls;

    private void line(int src, String msg) {
        log.append(PREFIX).append(src).append("] ").append(msg).append('\n');
    }

    private void stack(String first) {
        log.append("\ttsl::CurrentStackTrace[abi:cxx11]()\n\t").append(first).append("\n\t\n\tTF_SessionRun\n\t\n")
                .append("*** End stack trace ***\n\n");
    }

    /**
     * Runs {@code calls} random calls on an allocator named {@code name} with growth and the
     * given limit, over a sim space at {@code base} with {@code gap}, and logs them.
     */
    static SyntheticTfLog generate(String name, long limit, long base, long gap, long seed, int calls) {
        SyntheticTfLog s = new SyntheticTfLog();
        s.log.append("=== other output\n");
        s.line(84, "Creating new BFCAllocator named: other_bfc");
        s.line(84, "Creating new BFCAllocator named: " + name);
        SimSubAllocator sim = new SimSubAllocator(base, limit * 2, gap, false);
        SubAllocator logging = new SubAllocator() {
            @Override
            public Block alloc(long alignment, long numBytes) {
                Block b = sim.alloc(alignment, numBytes);
                if (b != null) {
                    s.line(171, "Extending allocation by " + BfcAllocator.humanReadableNumBytes(b.bytes())
                            + " bytes for " + name + ".");
                    s.line(178, "Total allocated bytes: (not read)");
                    s.line(181, "Allocated memory at 0x" + Long.toHexString(b.ptr()) + " to 0x"
                            + Long.toHexString(b.ptr() + b.bytes()));
                }
                return b;
            }

            @Override
            public void free(long ptr, long numBytes) {
                sim.free(ptr, numBytes);
            }

            @Override
            public boolean supportsCoalescing() {
                return false;
            }
        };
        // The allocator's out-of-memory warnings are expected here: keep the test output quiet.
        java.util.logging.Logger bfcLogger = java.util.logging.Logger.getLogger("io.github.bfc4j");
        java.util.logging.Level previous = bfcLogger.getLevel();
        bfcLogger.setLevel(java.util.logging.Level.SEVERE);
        try {
            run(s, name, limit, logging, seed, calls);
        } finally {
            bfcLogger.setLevel(previous);
        }
        return s;
    }

    private static void run(SyntheticTfLog s, String name, long limit, SubAllocator logging, long seed, int calls) {
        Random random = new Random(seed);
        List<long[]> live = new ArrayList<>(); // {ptr, requested}
        try (BfcAllocator a = new BfcAllocator(logging, limit, name, BfcOptions.builder().allowGrowth(true)
                .allowRetryOnFailure(false).build())) {
            for (int i = 0; i < calls; i++) {
                if (live.isEmpty() || random.nextInt(100) < 55) {
                    long bytes = random.nextInt(10) == 0 ? 0 : 1 + (long) (Math.pow(random.nextDouble(), 3) * limit / 4);
                    s.line(276, "AllocateRaw " + name + "  " + bytes);
                    long p = a.allocateRaw(64, bytes);
                    s.line(323, "AllocateRaw " + name + "  " + bytes + " " + (p == 0 ? "0" : "0x" + Long.toHexString(p)));
                    s.line(324, "[mem-debug] AllocateRaw," + name + "," + bytes + ","
                            + (p == 0 ? "0" : "0x" + Long.toHexString(p)) + ",*** Begin stack trace ***");
                    s.stack("tsl::BFCAllocator::AllocateRaw(unsigned long, unsigned long)");
                    s.allocs++;
                    if (p != 0) {
                        live.add(new long[] {p, bytes});
                    } else {
                        s.nulls++;
                    }
                    if (random.nextInt(50) == 0) {
                        // A free of null: logged, a no-op.
                        s.line(696, "DeallocateRaw " + name + " 0");
                        s.line(698, "[mem-debug] DeallocateRaw," + name + ",0,0,*** Begin stack trace ***");
                        s.stack("tsl::BFCAllocator::DeallocateRaw(void*)");
                    }
                } else {
                    long[] v = live.remove(random.nextInt(live.size()));
                    s.line(696, "DeallocateRaw " + name + " " + v[1]);
                    s.line(698, "[mem-debug] DeallocateRaw," + name + "," + v[1] + ",0x" + Long.toHexString(v[0])
                            + ",*** Begin stack trace ***");
                    s.stack("tsl::BFCAllocator::DeallocateRaw(void*)");
                    a.deallocateRaw(v[0]);
                    s.frees++;
                }
                if (i % 7 == 0) {
                    // Another allocator's lines are ignored.
                    s.line(323, "AllocateRaw other_bfc  256 0x1000");
                }
            }
        }
    }
}
