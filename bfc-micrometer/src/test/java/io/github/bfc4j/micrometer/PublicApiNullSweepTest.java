/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.NullSweep;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.SourceTree;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every public constructor and method of bfc-micrometer refuses a null where it takes an
 * object, as {@link NullSweep} says: a {@link NullPointerException} whose message starts with
 * {@code name=null (expected: }, thrown before anything is registered; a binder whose
 * {@code bindTo(null)} was refused still binds its meters.
 */
class PublicApiNullSweepTest {

    @TempDir
    Path tmp;

    private static BfcAllocator allocator(NullSweep s) {
        return s.closeLater(BfcAllocator.builder().name("sweep").memoryLimit(64L << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, false)).build());
    }

    @Test
    void everyPublicConstructorAndMethodRefusesANullArgumentByName() {
        NullSweep s = new NullSweep(tmp, SourceTree.resolve("bfc-micrometer/src/main/java"));
        s.sample(BfcAllocator.class, PublicApiNullSweepTest::allocator)
                .sample(BfcAllocatorView.class, x -> BfcAllocatorView.of(allocator(x)))
                .sample(String.class, x -> "0")
                .sample("java.lang.Iterable<io.micrometer.core.instrument.Tag>", x -> Tags.of(Tag.of("job", "sweep")))
                .sample(MeterRegistry.class, x -> new SimpleMeterRegistry())
                .sample(MemoryType.class, x -> MemoryType.DEVICE)
                .sample(MemoryStats.class, x -> allocator(x).memoryStats())
                .sample(ShardedBfcAllocator.class, x -> x.closeLater(ShardedBfcAllocator.builder().name("sweep")
                        .memoryLimit(64L << 20).subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, true))
                        .shards(2).build()));
        s.receiver(BfcAllocatorMetrics.class, e -> {
            BfcAllocatorMetrics m = new BfcAllocatorMetrics(allocator(s));
            return new NullSweep.Subject(m, () -> "", () -> {
                SimpleMeterRegistry r = new SimpleMeterRegistry();
                m.bindTo(r);
                assertThat(r.getMeters()).hasSize(BfcAllocatorMeters.values().length);
            });
        });
        s.receiver(BfcAllocatorMeters.class, e -> NullSweep.Subject.value(BfcAllocatorMeters.MEMORY_USED));
        List<Class<?>> classes = NullSweep.publicClassesOf(BfcAllocatorMetrics.class);
        assertThat(classes).contains(BfcAllocatorMetrics.class, BfcAllocatorMeters.class);
        List<String> problems = s.run(classes);
        assertThat(s.calls()).as("calls made with a null").isGreaterThanOrEqualTo(10);
        assertThat(problems).as("%d calls with a null", s.calls()).isEmpty();
    }
}
