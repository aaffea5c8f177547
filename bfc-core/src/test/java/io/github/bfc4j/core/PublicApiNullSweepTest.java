/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.trace.SnapshotTraces;
import io.github.bfc4j.trace.StatKey;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.TraceWriter;
import io.github.bfc4j.trace.WorkloadListener;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every public constructor and method of bfc-core's exported packages ({@code core},
 * {@code core.sim}, {@code trace}) refuses a null where it takes an object, as {@link NullSweep}
 * says: a {@link NullPointerException} (or the {@link IllegalArgumentException} a builder
 * already throws) whose message starts with {@code name=null (expected: }, thrown before
 * anything changes. The parameters whose javadoc allows null are listed below with what null
 * means there.
 */
class PublicApiNullSweepTest {

    @TempDir
    Path tmp;

    static SimSubAllocator sim() {
        return new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false);
    }

    /**
     * A sweep with samples of bfc-core's types and receivers for its classes.
     *
     * @param tmp a directory for sample files
     * @param sourceRoot the swept module's {@code src/main/java}
     * @return the sweep
     */
    static NullSweep coreSweep(Path tmp, Path sourceRoot) {
        NullSweep s = new NullSweep(tmp, sourceRoot);
        s.sample(String.class, x -> "sweep")
                .sample(Path.class, NullSweep::newPath)
                .sample(OutputStream.class, x -> new ByteArrayOutputStream())
                .sample(InputStream.class, x -> new ByteArrayInputStream(traceBytes(x, false)))
                .sample(Throwable.class, x -> new RuntimeException("sample"))
                .sample(long[].class, x -> new long[] {1})
                .sample(LongSupplier.class, x -> (LongSupplier) () -> 0)
                .sample(SubAllocator.class, x -> sim())
                .sample(BfcOptions.class, x -> BfcOptions.defaults())
                .sample(HistoryOptions.class, x -> HistoryOptions.defaults())
                .sample(AllocationAttributes.class, x -> AllocationAttributes.DEFAULT)
                .sample(ClosePolicy.class, x -> ClosePolicy.REFUSE)
                .sample(LeakDetection.class, x -> LeakDetection.DISABLED)
                .sample(MemoryType.class, x -> MemoryType.UNKNOWN)
                .sample(MemoryEvent.Kind.class, x -> MemoryEvent.Kind.ALLOC)
                .sample(OutOfMemoryListener.class, x -> (OutOfMemoryListener) r -> { })
                .sample(BfcAllocator.ChunkVisitor.class, x -> (BfcAllocator.ChunkVisitor) (h, ptr, size, req, id, bin, freed) -> { })
                .sample(SharedCounter.class, x -> new SharedCounter())
                .sample(Provenance.class, x -> Provenance.UNKNOWN)
                .sample(StackFrame.class, x -> new StackFrame("C", "m", "C.java", 1))
                .sample(StackTraceElement.class, x -> new StackTraceElement("C", "m", "C.java", 1))
                .sample(StackWalker.StackFrame.class, x -> StackWalker.getInstance().walk(f -> f.findFirst().orElseThrow()))
                .sample(BfcAllocator.class, PublicApiNullSweepTest::allocator)
                .sample(BfcAllocatorView.class, x -> BfcAllocatorView.of(allocator(x)))
                .sample(AllocatorStats.class, x -> allocator(x).getStats())
                .sample(MemoryStats.class, x -> allocator(x).memoryStats())
                .sample(MemorySnapshot.class, x -> {
                    BfcAllocator a = x.closeLater(BfcAllocator.builder().name("sweep").memoryLimit(64L << 20)
                            .subAllocator(sim()).build());
                    a.recordHistory(HistoryOptions.defaults());
                    a.deallocateRaw(a.allocateRawOrThrow(64, 1000));
                    return a.snapshot();
                })
                .sample(MemoryMap.class, x -> allocator(x).memoryMap())
                .sample(MemoryHistory.class, x -> MemoryHistory.NONE)
                .sample(MemoryMap.Region.class, x -> new MemoryMap.Region(0x1000, 256,
                        List.of(new MemoryMap.Chunk(0x1000, 256, 0, false, 0, 0, 0))))
                .sample("java.util.List<io.github.bfc4j.core.StackFrame>", x -> List.of(x.sampleOf(StackFrame.class)))
                .sample("java.util.List<io.github.bfc4j.core.MemoryEvent>", x -> List.of(
                        new MemoryEvent(MemoryEvent.Kind.ALLOC, 0x1000, 256, 256, 256, 1, 0, Provenance.UNKNOWN)))
                .sample("java.util.List<java.util.List<io.github.bfc4j.core.MemoryEvent>>", x -> List.of(List.of()))
                .sample("java.util.List<io.github.bfc4j.core.MemoryMap$Chunk>", x -> List.of(
                        new MemoryMap.Chunk(0x1000, 256, 0, false, 0, 0, 0)))
                .sample("java.util.List<io.github.bfc4j.core.MemoryMap$Region>", x -> List.of())
                .sample("java.util.List<io.github.bfc4j.core.BfcAllocator$BinDebugInfo>",
                        x -> allocator(x).getBinDebugInfo())
                .sample("java.util.List<io.github.bfc4j.core.MemoryHistory>", x -> List.of(MemoryHistory.NONE))
                .sample("java.util.List<io.github.bfc4j.core.MemorySnapshot>",
                        x -> List.of(x.sampleOf(MemorySnapshot.class)))
                .sample(TraceHeader.class, x -> new TraceHeader("sweep", "sweep", 64L << 20, true, false, 0.0, false,
                        SnapshotTraces.SIM_BASE, 1L << 30, 0, false))
                .sample(TraceReader.class, x -> x.closeLater(reader(x, false)))
                .sample(TraceEvent.class, x -> {
                    try {
                        return x.closeLater(reader(x, false)).next();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                })
                .sample(TraceWriter.class, x -> x.closeLater(writer(new ByteArrayOutputStream())))
                .sample(TraceWriter.Content.class, x -> (TraceWriter.Content) w -> w.header(x.sampleOf(TraceHeader.class)))
                .sample(WorkloadListener.class, x -> (WorkloadListener) step -> { });

        s.receiver(BfcAllocator.class, e -> {
            BfcAllocator a = allocator(s);
            long live = a.allocateRawOrThrow(64, 1000);
            s.closeLater(() -> a.deallocateRaw(live)); // before the allocator's close
            return new NullSweep.Subject(a, () -> List.of(a.getStats(), a.memoryStats(), a.snapshot().history().recording()),
                    () -> a.deallocateRaw(a.allocateRawOrThrow(64, 256)));
        });
        s.receiver(ShardedBfcAllocator.class, e -> {
            ShardedBfcAllocator a = s.closeLater(ShardedBfcAllocator.builder().name("sweep").shards(2)
                    .memoryLimit(64L << 20).subAllocator(sim()).build());
            long live = a.allocateRawOrThrow(64, 1000);
            s.closeLater(() -> a.deallocateRaw(live)); // before the allocator's close
            return new NullSweep.Subject(a, () -> List.of(a.getStats(), a.snapshots().get(0).history().recording()),
                    () -> a.deallocateRaw(a.allocateRawOrThrow(64, 256)));
        });
        s.receiver(BfcAllocator.Builder.class, e -> {
            BfcAllocator.Builder b = BfcAllocator.builder().name("sweep").memoryLimit(64L << 20).subAllocator(sim());
            return new NullSweep.Subject(b, () -> built(b.build()), () -> b.build().close());
        });
        s.receiver(ShardedBfcAllocator.Builder.class, e -> {
            ShardedBfcAllocator.Builder b = ShardedBfcAllocator.builder().name("sweep").shards(2)
                    .memoryLimit(64L << 20).subAllocator(sim());
            return new NullSweep.Subject(b, () -> {
                try (ShardedBfcAllocator a = b.build()) {
                    return List.of(a.toString(), a.shards().get(0).options(), a.closePolicy(),
                            a.shards().get(0).leakDetection(), a.getMemoryType());
                }
            }, () -> b.build().close());
        });
        s.receiver(BfcOptions.Builder.class, e -> {
            BfcOptions.Builder b = BfcOptions.builder();
            return new NullSweep.Subject(b, () -> b.build().toString(), b::build);
        });
        s.receiver(BfcAllocatorView.class, e -> {
            BfcAllocatorView v = BfcAllocatorView.of(allocator(s));
            return new NullSweep.Subject(v, v::getStats, v::memorySummary);
        });
        s.receiver(MemorySnapshot.class, e -> NullSweep.Subject.value(s.sampleOf(MemorySnapshot.class)));
        s.receiver(StatKey.class, e -> NullSweep.Subject.value(StatKey.BYTES_IN_USE));
        s.receiver(FaultInjectingSubAllocator.class, e -> {
            FaultInjectingSubAllocator f = new FaultInjectingSubAllocator(sim()).failCalls(2);
            return new NullSweep.Subject(f, () -> List.of(f.toString(), f.allocCalls(), f.injectedFailures()), () -> {
                SubAllocator.Block b = f.alloc(256, 1 << 20);
                assertThat(b).as("call 1 is not to fail").isNotNull();
                f.free(b.ptr(), b.bytes());
                assertThat(f.alloc(256, 1 << 20)).as("call 2 is to fail").isNull();
            });
        });
        s.receiver(TraceWriter.class, e -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            TraceWriter w = s.closeLater(writer(out));
            boolean headerFirst = e.getName().equals("header");
            try {
                if (!headerFirst) {
                    w.header(s.sampleOf(TraceHeader.class));
                    w.flush();
                }
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return new NullSweep.Subject(w, () -> {
                try {
                    w.flush();
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
                return out.toString();
            }, () -> {
                try {
                    if (headerFirst) {
                        w.header(s.sampleOf(TraceHeader.class));
                    }
                    w.clearStats();
                    w.close();
                    try (TraceReader r = TraceReader.open(new ByteArrayInputStream(out.toByteArray()), "w.bfctrace")) {
                        assertThat(r.next().kind()).isEqualTo(TraceEvent.Kind.CLEAR_STATS);
                        assertThat(r.next()).isNull();
                    }
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            });
        });
        s.receiver(WorkloadRunner.class, e -> {
            WorkloadRunner r = new WorkloadRunner(64L << 20, BfcOptions.defaults(), sim());
            return new NullSweep.Subject(r, () -> "", () -> {
                try {
                    assertThat(r.run(s.closeLater(reader(s, true))).allocations()).isEqualTo(1);
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            });
        });
        return s;
    }

    static BfcAllocator allocator(NullSweep s) {
        return s.closeLater(BfcAllocator.builder().name("sweep").memoryLimit(64L << 20).subAllocator(sim()).build());
    }

    private static List<Object> built(BfcAllocator a) {
        try (a) {
            return List.of(a.name(), a.memoryLimit(), a.options(), a.closePolicy(), a.leakDetection(), a.getMemoryType());
        }
    }

    private static TraceWriter writer(OutputStream out) {
        try {
            return TraceWriter.of(out, false);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A trace of one call: a workload's allocation, or a replay's {@code clear_stats}. */
    private static byte[] traceBytes(NullSweep s, boolean workload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = writer(out)) {
            TraceHeader h = s.sampleOf(TraceHeader.class);
            if (workload) {
                w.header(new TraceHeader(h.name(), TraceHeader.WORKLOAD_SOURCE_PREFIX + "sweep", h.memoryLimit(),
                        h.allowGrowth(), h.garbageCollection(), h.fragmentationFraction(), h.timingCounter(),
                        h.simBase(), h.simCapacity(), h.simGap(), h.simCoalescing()));
                w.workloadAlloc(1, 256, 64, 0);
            } else {
                w.header(h);
                w.clearStats();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    private static TraceReader reader(NullSweep s, boolean workload) {
        try {
            return TraceReader.open(new ByteArrayInputStream(traceBytes(s, workload)), "sample.bfctrace");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void everyPublicConstructorAndMethodRefusesANullArgumentByName() {
        NullSweep s = coreSweep(tmp, SourceTree.resolve("bfc-core/src/main/java"));
        // Where the javadoc allows null, and what it means there.
        s.nullable("AllocationAttributes.<init>(boolean,LongSupplier)[1]", "no freed_by_func, as upstream's nullptr")
                .nullable("BfcAllocator.setTimingCounter(SharedCounter)[0]", "stops stamping frees")
                .nullable("BfcOptions$Builder.dumpOnOomDirectory(Path)[0]", "no dumps")
                .nullable("MemoryMap$Chunk.<init>(long,long,long,boolean,long,int,long,boolean,Provenance)[8]",
                        "the constructor: becomes Provenance.UNKNOWN")
                .nullable("MemoryMap$Chunk.<init>(long,long,long,boolean,long,int,long,boolean,Provenance,String)[8]",
                        "the constructor: becomes Provenance.UNKNOWN")
                .nullable("MemoryMap$Chunk.<init>(long,long,long,boolean,long,int,long,boolean,Provenance,String)[9]",
                        "not lent to a runtime")
                .nullable("MemoryAnnotation.push(String,long,List)[0]", "no name of its own when a stack is given")
                .nullable("MemoryAnnotation.push(String,long,List)[2]", "record the Java stack")
                .nullable("MemoryHistory.<init>(HistoryOptions,boolean,long,boolean,long,List)[0]",
                        "history was never recorded")
                .nullable("Provenance.<init>(long,String,String,long,List)[1]", "the thread was not recorded")
                .nullable("Provenance.<init>(long,String,String,long,List)[2]", "no annotation was open")
                .nullable("Provenance.<init>(long,String,String,long,List)[4]", "the constructor: becomes empty")
                .nullable("ReplayResult.<init>(boolean,long,long,String,String,String,Throwable)[3]", "the replay passed")
                .nullable("ReplayResult.<init>(boolean,long,long,String,String,String,Throwable)[4]", "the replay passed")
                .nullable("ReplayResult.<init>(boolean,long,long,String,String,String,Throwable)[6]",
                        "no exception failed the replay")
                .nullable("StackFrame.<init>(String,String,String,int)[2]", "the source file is unknown")
                .nullable("SubAllocator.refuseIfAllocatorHolds(String,String,long,long)[0]",
                        "other code obtained the memory")
                .nullable("ReplayResult.fail(long,long,String,String,String,Throwable)[5]", "no exception failed it")
                .nullable("WorkloadRunner.listener(WorkloadListener)[0]", "no listener")
                .nullable("TraceWriter.provenance(long,Provenance)[1]", "none given, as TraceEvent.provenance() says");
        // What a user implements, with a default body that the library calls.
        s.skip("WorkloadListener.beforeRun(BfcAllocator)", "a callback's default body: does nothing")
                .skip("WorkloadListener.afterRun(BfcAllocator)", "a callback's default body: does nothing");
        List<Class<?>> classes = new ArrayList<>();
        classes.addAll(NullSweep.publicClassesOf(BfcAllocator.class));
        classes.addAll(NullSweep.publicClassesOf(SimSubAllocator.class));
        classes.addAll(NullSweep.publicClassesOf(TraceReader.class));
        assertThat(classes).contains(BfcAllocator.class, BfcAllocator.Builder.class, SimSubAllocator.class,
                TraceWriter.class, MemoryMap.Chunk.class);
        List<String> problems = s.run(classes);
        assertThat(s.calls()).as("calls made with a null").isGreaterThan(100);
        assertThat(problems).as("%d calls with a null", s.calls()).isEmpty();
        assertThat(MemoryAnnotation.current()).as("an annotation the sweep opened is still open").isNull();
    }
}
