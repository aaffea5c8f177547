/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.HistoryOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

/**
 * Random calls of {@link GpuBfcAllocator}'s API with hostile arguments: sizes and alignments
 * that cannot be served or are no power of two, addresses never handed out or freed twice,
 * numbers that are no stream, pause and resume at any point, calls after close. Run on the
 * simulated driver ({@code GpuHostileCallsTest}) and on a real GPU ({@code RealGpuTest}), where a
 * hostile argument that reached the driver unchecked would kill the JVM. Every exception must be
 * one the API documents for bad input ({@link IllegalArgumentException},
 * {@link IllegalStateException}): a {@link CudaException} means an argument reached the driver.
 */
final class GpuHostileCalls {

    private static final long MIB = 1L << 20;
    private static final long[] HOSTILE = {0, 1, -1, 255, 257, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 62, 1L << 40,
        Integer.MAX_VALUE, -256, 3 * MIB, 65 * MIB};
    /** Streams: the special ones, and numbers where nothing is mapped. */
    private static final long[] STREAMS = {0, 1, 2, 3, 0x3039, 0xdeadbeef000L, -1, 1L << 47};

    private GpuHostileCalls() {
    }

    /**
     * Runs {@code rounds} rounds of random calls, each on an allocator from {@code make}
     * (virtual memory or not).
     *
     * @param make an allocator with a 64 MiB limit and no retry on failure, over virtual memory if
     *     asked
     * @param canPause whether pause/resume are tried (virtual memory only)
     * @param dir where snapshots are written
     * @return the exceptions the API does not document for bad input, with the call; empty if none
     */
    static Set<String> run(Function<Boolean, GpuBfcAllocator> make, BooleanSupplier canPause, long seed,
            int rounds, Path dir) {
        System.out.println("GpuHostileCalls seed=" + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random random = new Random(seed);
        Set<String> undocumented = new TreeSet<>();
        int served = 0;
        int refused = 0;
        for (int round = 0; round < rounds; round++) {
            boolean vmm = canPause.getAsBoolean() && random.nextBoolean();
            GpuBfcAllocator gpu = make.apply(vmm);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                int op = random.nextInt(12);
                try {
                    call(gpu, live, op, random, dir);
                    served++;
                } catch (IllegalArgumentException | IllegalStateException documented) {
                    refused++; // bad input, or a call while paused
                } catch (RuntimeException e) {
                    undocumented.add("op " + op + ": " + e);
                }
            }
            try {
                if (gpu.isPaused()) {
                    gpu.resume();
                }
                for (long p : live) {
                    gpu.deallocateRaw(p, 0);
                }
                assertThat(gpu.getStats().bytesInUse()).as("round %d", round).isZero();
            } finally {
                gpu.close();
            }
        }
        System.out.println("GpuHostileCalls: " + served + " calls served, " + refused + " refused");
        assertThat(served).as("calls served").isGreaterThan(rounds * 100);
        assertThat(refused).as("calls refused").isGreaterThan(rounds * 50);
        return undocumented;
    }

    private static void call(GpuBfcAllocator gpu, List<Long> live, int op, Random random, Path dir) {
        long size = random.nextInt(3) == 0 ? HOSTILE[random.nextInt(HOSTILE.length)] : random.nextInt(4 << 20);
        long alignment = random.nextInt(4) == 0 ? HOSTILE[random.nextInt(HOSTILE.length)] : 1L << random.nextInt(12);
        long stream = STREAMS[random.nextInt(STREAMS.length)];
        switch (op) {
            case 0, 1 -> {
                long p = gpu.allocateRaw(alignment, size); // built without retry: a failure answers at once
                if (p != 0) {
                    live.add(p);
                }
            }
            case 2 -> { // a real address, or a hostile one: never handed out, or freed already
                long p = !live.isEmpty() && random.nextBoolean() ? live.get(random.nextInt(live.size())) : size;
                gpu.deallocateRaw(p, stream);
                live.remove(p);
            }
            case 3 -> {
                long p = !live.isEmpty() && random.nextBoolean() ? live.get(random.nextInt(live.size())) : size;
                gpu.deallocateRaw(p);
                live.remove(p);
            }
            case 4 -> gpu.pollEvents();
            case 5 -> gpu.emptyCache();
            case 6 -> gpu.pause(random.nextBoolean());
            case 7 -> gpu.resume();
            case 8 -> gpu.recordHistory(HistoryOptions.builder().stacks(random.nextBoolean()).build());
            case 9 -> {
                try {
                    gpu.writePyTorchPickle(dir.resolve("hostile.pickle"));
                    Files.delete(dir.resolve("hostile.pickle"));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            case 10 -> {
                gpu.getStats();
                gpu.allocator().memorySummary();
                gpu.pendingFrees();
            }
            case 11 -> gpu.resetPeakStats();
            default -> throw new AssertionError(op);
        }
    }
}
