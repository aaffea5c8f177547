/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * Property-based tests (jqwik): random call sequences under random options and limits, each
 * call checked by {@link ShadowModel} (live set, non-overlap, sizes, ids, stats) and
 * {@link BfcAllocator#checkInvariants()}. A failing sequence is shrunk to a minimal one, which
 * the failure message prints as a workload trace (also written under
 * {@code bfc-core/target/failing-traces/}) for {@code bin/bfc} to replay.
 *
 * <p>Tries: {@code jqwik.tries.default} in {@code junit-platform.properties} (250); run more
 * with {@code -Djqwik.tries.default=N}. jqwik prints each property's seed; rerun one with
 * {@code -Dbfc4j.test.seed=SEED}.
 */
@AddLifecycleHook(value = BfcAllocatorPropertyTest.SeedFromSystemProperty.class,
        propagateTo = PropagationMode.ALL_DESCENDANTS)
class BfcAllocatorPropertyTest {

    private static final AtomicLong CALLS = new AtomicLong();
    private static final AtomicLong SEQUENCES = new AtomicLong();

    /** One call on the allocator. */
    sealed interface Op permits Alloc, Free, Frontier, ClearStats {
    }

    /** {@code allocateRaw(1 << alignLog2, bytes)}, with {@code freed_before} if stamps exist. */
    record Alloc(long bytes, int alignLog2, int freedBeforeBack) implements Op {
    }

    /** Free the live allocation {@code index} modulo the live count. */
    record Free(int index) implements Op {
    }

    /** {@code setSafeFrontier(counter + 1 - back)}. */
    record Frontier(int back) implements Op {
    }

    /** {@code clearStats()}. */
    record ClearStats() implements Op {
    }

    @Provide
    Arbitrary<ShadowModel.Config> configs() {
        Arbitrary<Long> limits = Arbitraries.longs().between(1L << 16, 64L << 20)
                .map(l -> l & ~255L).edgeCases(c -> c.add(2304L));
        Arbitrary<Double> fractions = Arbitraries.of(0.0, 0.01, 0.1, 0.5);
        Arbitrary<Long> gaps = Arbitraries.of(0L, 4096L);
        return Combinators.combine(limits, Arbitraries.of(true, false), Arbitraries.of(true, false),
                fractions, Arbitraries.of(true, false), Arbitraries.integers().between(1, 4), gaps,
                Arbitraries.of(true, false))
                .as((limit, growth, gc, fraction, timing, capacityFactor, gap, coalescing) ->
                        new ShadowModel.Config(limit, growth, gc, fraction, timing,
                                capacityFactor * limit + 2 * gap, gap, coalescing))
                .filter(c -> c.fragmentationFraction() == 0
                        || (long) (c.fragmentationFraction() * c.limit()) > 0);
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Long> smallSizes = Arbitraries.longs().between(0, 64 * 1024);
        Arbitrary<Long> largeSizes = Arbitraries.longs().between(64 * 1024, 80L << 20);
        Arbitrary<Op> alloc = Combinators.combine(
                        Arbitraries.frequencyOf(
                                Tuple.of(6, smallSizes), Tuple.of(1, largeSizes)),
                        Arbitraries.integers().between(0, 12), Arbitraries.integers().between(-1, 4))
                .as((bytes, align, back) -> new Alloc(bytes, align, back));
        Arbitrary<Op> free = Arbitraries.integers().between(0, 1000).map(Free::new);
        Arbitrary<Op> frontier = Arbitraries.integers().between(0, 3).map(Frontier::new);
        Arbitrary<Op> clear = Arbitraries.just(new ClearStats());
        return Arbitraries.frequencyOf(
                        Tuple.of(50, alloc), Tuple.of(40, free),
                        Tuple.of(6, frontier), Tuple.of(2, clear))
                .list().ofMaxSize(200).withSizeDistribution(RandomDistribution.uniform());
    }

    @Property
    void randomCallSequencesKeepTheInvariantsAndMatchTheModel(
            @ForAll("configs") ShadowModel.Config config, @ForAll("ops") List<Op> ops) {
        run(config, ops);
    }

    static void run(ShadowModel.Config config, List<Op> ops) {
        ShadowModel m = new ShadowModel(config, "property", "jqwik BfcAllocatorPropertyTest");
        try {
            for (Op op : ops) {
                apply(m, op);
            }
            m.close();
        } catch (AssertionError | RuntimeException e) {
            throw m.failure("BfcAllocatorPropertyTest", e);
        } finally {
            CALLS.addAndGet(m.calls());
            SEQUENCES.incrementAndGet();
        }
    }

    private static void apply(ShadowModel m, Op op) {
        if (op instanceof Alloc a) {
            // freed_before: 0 (none) when back < 0 or without stamps, else a recent stamp.
            long freedBefore = a.freedBeforeBack() < 0 || !m.config.timing() ? 0
                    : Math.max(1, m.counter.get() - a.freedBeforeBack());
            m.alloc(a.bytes(), 1L << a.alignLog2(), freedBefore);
        } else if (op instanceof Free f) {
            m.freeNth(f.index());
        } else if (op instanceof Frontier f) {
            m.frontier(f.back());
        } else {
            m.clearStats();
        }
    }

    @AfterContainer
    static void report() {
        System.out.println("BfcAllocatorPropertyTest: " + SEQUENCES.get() + " sequences, "
                + CALLS.get() + " calls, each followed by checkInvariants() and the model check");
    }

    /** Applies {@code -Dbfc4j.test.seed} to every property of the class. */
    static final class SeedFromSystemProperty implements AroundPropertyHook {
        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context,
                PropertyExecutor property) {
            String seed = System.getProperty("bfc4j.test.seed");
            if (seed != null && !seed.isEmpty()) {
                context.attributes().setSeed(seed);
            }
            return property.execute();
        }
    }
}
