/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * Drives one {@link BfcAllocator} on a {@link SimSubAllocator} and checks every answer against a
 * simple model: the live allocations (address, requested and allocated size, allocation id)
 * never overlap, stay inside the simulated space, are at least the rounded request; the stats
 * equal what the live set adds up to; and {@link BfcAllocator#checkInvariants()} holds after
 * every call. Every call is also written to a workload trace (docs/trace-format.md), so a
 * failure can be replayed with {@code bin/bfc}.
 *
 * <p>Shared by the property, fuzz and fault-injection tests. Not thread-safe.
 */
final class ShadowModel implements AutoCloseable {

    static final long BASE = 0x7f0000000000L;

    /**
     * The allocator's setup.
     *
     * @param limit the memory limit
     * @param allowGrowth {@code allow_growth}
     * @param garbageCollection {@code garbage_collection}
     * @param fragmentationFraction {@code fragmentation_fraction}: 0 or a fraction whose
     *     threshold is at least one byte
     * @param timing whether the allocator gets a timing counter
     * @param capacity the simulated space, gaps included
     * @param gap the simulated gap after every region
     * @param coalescing whether the simulated sub-allocator coalesces
     */
    record Config(long limit, boolean allowGrowth, boolean garbageCollection,
            double fragmentationFraction, boolean timing, long capacity, long gap, boolean coalescing) {

        BfcOptions options() {
            return BfcOptions.builder().allowGrowth(allowGrowth).garbageCollection(garbageCollection)
                    .fragmentationFraction(fragmentationFraction).allowRetryOnFailure(false).build();
        }

        TraceHeader header(String name, String source) {
            return new TraceHeader(name, TraceHeader.WORKLOAD_SOURCE_PREFIX + " " + source, limit,
                    allowGrowth, garbageCollection, fragmentationFraction, timing, BASE, capacity,
                    gap, coalescing);
        }
    }

    private record Live(long id, long requested, long allocated) {
    }

    final Config config;
    final SimSubAllocator sim;
    final BfcAllocator allocator;
    final SharedCounter counter = new SharedCounter();
    private final String name;
    private final TreeMap<Long, Live> live = new TreeMap<>();
    /** Live addresses in allocation order: {@link #freeNth} picks from here. */
    private final List<Long> liveOrder = new ArrayList<>();
    private final ByteArrayOutputStream traceBytes = new ByteArrayOutputStream();
    private final TraceWriter trace;
    private long numAllocs;
    private long lastAllocationId;
    private long nextTraceId;
    private long calls;
    private long lastFreed;

    /** A model of an allocator on a plain simulated space. */
    ShadowModel(Config config, String name, String source) {
        this(config, name, source, UnaryOperator.identity());
    }

    /**
     * A model of an allocator whose sub-allocator is the simulated space wrapped by
     * {@code wrap} (e.g. a fault-injecting adaptor).
     */
    ShadowModel(Config config, String name, String source, UnaryOperator<SubAllocator> wrap) {
        this.config = config;
        this.name = name;
        this.sim = new SimSubAllocator(BASE, config.capacity(), config.gap(), config.coalescing());
        this.allocator = new BfcAllocator(wrap.apply(sim), config.limit(), name, config.options());
        if (config.timing()) {
            allocator.setTimingCounter(counter);
        }
        try {
            trace = TraceWriter.of(traceBytes, false);
            trace.header(config.header(name, source));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return calls made on the allocator so far (each followed by a full check) */
    long calls() {
        return calls;
    }

    /** @return whether {@code address} is the start of a live allocation */
    boolean isLive(long address) {
        return live.containsKey(address);
    }

    /** @return the address freed last, or 0 */
    long lastFreed() {
        return lastFreed;
    }

    /** @return the number of live allocations */
    int liveCount() {
        return liveOrder.size();
    }

    /**
     * {@code allocateRaw(alignment, bytes)} with the timestamp constraint {@code freedBefore}
     * (0: none), checked against the model.
     *
     * @return the address, or 0
     */
    long alloc(long bytes, long alignment, long freedBefore) {
        long id = nextTraceId++;
        try {
            trace.workloadAlloc(id, bytes, alignment, freedBefore);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        AllocationAttributes attr = freedBefore == 0 ? AllocationAttributes.NO_RETRY
                : new AllocationAttributes(false, () -> freedBefore);
        long before = allocator.getStats().bytesInUse();
        long p = allocator.allocateRaw(alignment, bytes, attr);
        calls++;
        if (bytes == 0 && p != 0) {
            throw new AssertionError("allocateRaw of 0 bytes returned 0x" + Long.toHexString(p));
        }
        if (p == 0) {
            if (allocator.getStats().bytesInUse() != before) {
                throw new AssertionError("a failed allocation changed bytes_in_use");
            }
        } else {
            long size = allocator.allocatedSize(p);
            if (size < BfcAllocator.roundedBytes(bytes) || size % 256 != 0 || p % 256 != 0) {
                throw new AssertionError("allocation of " + bytes + " bytes at 0x"
                        + Long.toHexString(p) + " has size " + size);
            }
            if (allocator.requestedSize(p) != bytes) {
                throw new AssertionError("requestedSize(0x" + Long.toHexString(p) + ")="
                        + allocator.requestedSize(p) + ", requested " + bytes);
            }
            long allocationId = allocator.allocationId(p);
            if (allocationId != lastAllocationId + 1) {
                throw new AssertionError("allocation id " + allocationId + " after "
                        + lastAllocationId);
            }
            lastAllocationId = allocationId;
            if (p < BASE || p + size > BASE + config.capacity()) {
                throw new AssertionError("[0x" + Long.toHexString(p) + ", +" + size
                        + ") is outside the simulated space");
            }
            Map.Entry<Long, Live> below = live.floorEntry(p);
            if (below != null && below.getKey() + below.getValue().allocated() > p) {
                throw new AssertionError("0x" + Long.toHexString(p) + " overlaps the live "
                        + "allocation at 0x" + Long.toHexString(below.getKey()));
            }
            Map.Entry<Long, Live> above = live.ceilingEntry(p);
            if (above != null && p + size > above.getKey()) {
                throw new AssertionError("[0x" + Long.toHexString(p) + ", +" + size
                        + ") overlaps the live allocation at 0x" + Long.toHexString(above.getKey()));
            }
            live.put(p, new Live(id, bytes, size));
            liveOrder.add(p);
            numAllocs++;
        }
        check();
        return p;
    }

    /** Frees the live allocation number {@code index} (modulo the live count), if any. */
    void freeNth(int index) {
        if (liveOrder.isEmpty()) {
            return;
        }
        int i = Math.floorMod(index, liveOrder.size());
        long p = liveOrder.get(i);
        liveOrder.set(i, liveOrder.get(liveOrder.size() - 1));
        liveOrder.remove(liveOrder.size() - 1);
        Live l = live.remove(p);
        lastFreed = p;
        try {
            trace.free(l.id());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        allocator.deallocateRaw(p);
        calls++;
        check();
    }

    /** {@code setSafeFrontier(counter + 1 - back)}: {@code back} 0 makes every stamp safe. */
    void frontier(int back) {
        long count = Math.max(0, counter.get() + 1 - back);
        try {
            trace.frontier(count);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        allocator.setSafeFrontier(count);
        calls++;
        check();
    }

    void clearStats() {
        try {
            trace.clearStats();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        allocator.clearStats();
        numAllocs = 0;
        calls++;
        check();
    }

    /** {@link BfcAllocator#checkInvariants()} and the stats against the model. */
    void check() {
        allocator.checkInvariants();
        AllocatorStats s = allocator.getStats();
        long inUse = 0;
        for (Live l : live.values()) {
            inUse += l.allocated();
        }
        if (s.bytesInUse() != inUse || s.numAllocs() != numAllocs || s.peakBytesInUse() < inUse
                || s.poolBytes() > config.limit() || s.peakPoolBytes() < s.poolBytes()
                || s.bytesLimit() != config.limit()) {
            throw new AssertionError("stats " + s + " disagree with the model: " + live.size()
                    + " live allocations of " + inUse + " bytes, " + numAllocs + " allocations");
        }
    }

    /** Frees every live allocation, newest first. */
    void freeAll() {
        while (!liveOrder.isEmpty()) {
            freeNth(liveOrder.size() - 1);
        }
    }

    /** Frees everything, checks nothing is in use, closes, and checks the space is all free. */
    @Override
    public void close() {
        freeAll();
        if (allocator.getStats().bytesInUse() != 0) {
            throw new AssertionError("bytes_in_use=" + allocator.getStats().bytesInUse()
                    + " after every allocation was freed");
        }
        allocator.close();
        allocator.checkInvariants();
        if (sim.reservedBytes() != 0) {
            throw new AssertionError("the closed allocator still holds " + sim.reservedBytes()
                    + " bytes of " + sim);
        }
    }

    /** @return the workload trace of every call made so far */
    String trace() {
        try {
            trace.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return traceBytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * Writes the trace of the calls so far to {@code bfc-core/target/failing-traces/<file>.bfctrace} and
     * returns an error that quotes it.
     */
    AssertionError failure(String file, Throwable cause) {
        String text = trace();
        String where;
        try {
            Path dir = SourceTree.root().resolve("bfc-core/target/failing-traces");
            Path path = dir.resolve(file + ".bfctrace");
            Files.createDirectories(dir);
            Files.writeString(path, text);
            where = "written to " + path.toAbsolutePath();
        } catch (IOException | IllegalStateException e) {
            where = "could not be written (" + e + ")";
        }
        return new AssertionError(cause + "\nafter " + calls + " calls on allocator '" + name
                + "'. The calls as a workload trace (" + where + "; replay it with"
                + " bin/bfc):\n" + text, cause);
    }
}
