/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.ForwardingSubAllocator;
import io.github.bfc4j.core.GarbageCollection;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.SourceTree;
import io.github.bfc4j.core.SubAllocator;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The binder's meters, scraped through Micrometer's real Prometheus registry: the text parses,
 * and every documented series is there with the tags and the value the allocator reports.
 */
class BfcAllocatorMetricsTest {

    private static final long BASE = 0x7f0000000000L;
    private static final long MIB = 1L << 20;

    private static BfcAllocator sim(String name) {
        return new BfcAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, false), 32 * MIB, name,
                BfcOptions.builder().allowRetryOnFailure(false).garbageCollection(true)
                        .dumpOnOomDirectory(null).build());
    }

    @Test
    void scrapeHoldsEverySeriesWithTheAllocatorsValues() {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        System.out.println("BfcAllocatorMetricsTest seed: -Dbfc4j.test.seed=" + seed);
        Random rnd = new Random(seed);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("gpu_0_bfc")) {
            new BfcAllocatorMetrics(a, "3", List.of(Tag.of("job", "test"))).bindTo(registry);
            List<Long> live = new ArrayList<>();
            for (int round = 0; round < 5; round++) {
                assertThat(a.allocateRaw(256, 64 * MIB)).as("above the limit").isZero();
                for (int i = 0; i < 200; i++) {
                    if (live.isEmpty() || rnd.nextBoolean()) {
                        long p = a.allocateRaw(256, 1 + rnd.nextInt(rnd.nextInt(10) == 0 ? 8 << 20 : 100_000));
                        if (p != 0) {
                            live.add(p);
                        }
                    } else {
                        a.deallocateRaw(live.remove(rnd.nextInt(live.size())));
                    }
                }
                String text = registry.scrape();
                if (round == 0) {
                    System.out.println(text);
                }
                PrometheusText.Exposition e = PrometheusText.parse(text);
                AllocatorStats s = a.getStats();
                MemoryStats m = a.memoryStats();
                for (BfcAllocatorMeters meter : BfcAllocatorMeters.values()) {
                    List<PrometheusText.Sample> found = e.named(meter.prometheusName());
                    assertThat(found).as("series %s (seed %d)", meter.prometheusName(), seed).hasSize(1);
                    PrometheusText.Sample sample = found.get(0);
                    assertThat(sample.labels()).containsExactlyInAnyOrderEntriesOf(Map.of(
                            "allocator_name", "gpu_0_bfc", "memory_type", "sim", "device_id", "3",
                            "job", "test"));
                    assertThat(sample.value()).as("%s (seed %d)", meter, seed).isEqualTo(meter.valueOf(m));
                    assertThat(e.types()).containsEntry(meter.prometheusName(),
                            meter.getType() == Meter.Type.COUNTER ? "counter" : "gauge");
                }
                // The required names, against upstream's GetStats().
                assertThat(value(e, "bfc_allocator_memory_used_bytes")).isEqualTo(s.bytesInUse());
                assertThat(value(e, "bfc_allocator_memory_peak_bytes")).isEqualTo(s.peakBytesInUse());
                assertThat(value(e, "bfc_allocator_memory_limit_bytes")).isEqualTo(s.bytesLimit());
                assertThat(value(e, "bfc_allocator_pool_size_bytes")).isEqualTo(s.poolBytes());
                assertThat(value(e, "bfc_allocator_pool_peak_bytes")).isEqualTo(s.peakPoolBytes());
                assertThat(value(e, "bfc_allocator_allocations_total")).isEqualTo(s.numAllocs());
                assertThat(value(e, "bfc_allocator_oom_total")).isEqualTo(m.oomsTotal());
                assertThat(value(e, "bfc_allocator_fragmentation_ratio")).isEqualTo(a.fragmentation());
                assertThat(value(e, "bfc_allocator_fragmentation_within_regions_ratio"))
                        .isEqualTo(a.fragmentationWithinRegions());
                assertThat(value(e, "bfc_allocator_largest_free_chunk_bytes")).isEqualTo(a.largestFreeChunkBytes());
                assertThat(value(e, "bfc_allocator_regions")).isEqualTo(a.regionCount());
            }
            assertThat(a.memoryStats().oomsTotal()).as("seed %d", seed).isGreaterThanOrEqualTo(5);
        }
    }

    private static double value(PrometheusText.Exposition e, String name) {
        List<PrometheusText.Sample> s = e.named(name);
        assertThat(s).as(name).hasSize(1);
        return s.get(0).value();
    }

    @Test
    void twoAllocatorsAreTwoSetsOfSeries() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("a"); BfcAllocator b = sim("b")) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            new BfcAllocatorMetrics(b).bindTo(registry);
            a.allocateRaw(256, 1000);
            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            List<PrometheusText.Sample> used = e.named("bfc_allocator_memory_used_bytes");
            assertThat(used).hasSize(2);
            assertThat(used).anySatisfy(s -> {
                assertThat(s.labels()).containsEntry("allocator_name", "a").containsEntry("device_id", "0");
                assertThat(s.value()).isEqualTo(1024);
            });
            assertThat(used).anySatisfy(s -> {
                assertThat(s.labels()).containsEntry("allocator_name", "b");
                assertThat(s.value()).isZero();
            });
        }
    }

    @Test
    void anAllocatorMadeAnewUnderTheNameOfAClosedOneIsWhatItsMetersRead() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator first = sim("gpu_0_bfc")) {
            new BfcAllocatorMetrics(first).bindTo(registry);
            first.deallocateRaw(first.allocateRaw(256, 5000));
        }
        try (BfcAllocator second = sim("gpu_0_bfc")) {
            new BfcAllocatorMetrics(second).bindTo(registry);
            long p = second.allocateRaw(256, 1000);
            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            assertThat(value(e, "bfc_allocator_memory_used_bytes")).as("the second allocator's").isEqualTo(1024);
            assertThat(value(e, "bfc_allocator_frees_total")).isZero();
            assertThat(value(e, "bfc_allocator_pool_size_bytes")).isEqualTo(second.reservedBytes()).isPositive();
            second.deallocateRaw(p);
        }
    }

    /**
     * The extra tags are taken once: those of an Iterable that can be iterated only once (a
     * stream's iterator) tag the meters, and one that answers an own key the second time cannot
     * replace the meters' own tag past the check made on the first.
     */
    @Test
    void extraTagsAreTakenOnce() {
        try (BfcAllocator a = sim("once")) {
            SimpleMeterRegistry r = new SimpleMeterRegistry();
            new BfcAllocatorMetrics(a, "0", java.util.stream.Stream.of(Tag.of("job", "serving"))::iterator).bindTo(r);
            assertThat(r.getMeters()).hasSize(BfcAllocatorMeters.values().length)
                    .allSatisfy(m -> assertThat(m.getId().getTag("job")).isEqualTo("serving"));
            int[] iterations = {0};
            Iterable<Tag> changing = () -> (iterations[0]++ == 0 ? List.of(Tag.of("job", "x"))
                    : List.of(Tag.of("allocator.name", "someone_else"))).iterator();
            SimpleMeterRegistry r2 = new SimpleMeterRegistry();
            new BfcAllocatorMetrics(BfcAllocatorView.of(a), "1", changing).bindTo(r2);
            assertThat(r2.getMeters()).isNotEmpty().allSatisfy(m -> {
                assertThat(m.getId().getTag("allocator.name")).isEqualTo("once");
                assertThat(m.getId().getTag("job")).isEqualTo("x");
            });
        }
    }

    /** A null says which argument and what it takes (it said only "allocator", "deviceId"). */
    @Test
    void nullArgumentsSayWhatTheyTake() {
        try (BfcAllocator a = sim("nulls")) {
            BfcAllocatorView v = BfcAllocatorView.of(a);
            assertThatThrownBy(() -> new BfcAllocatorMetrics((BfcAllocator) null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("allocator=null (expected: ");
            assertThatThrownBy(() -> new BfcAllocatorMetrics((BfcAllocatorView) null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("view=null (expected: ");
            assertThatThrownBy(() -> new BfcAllocatorMetrics(a, null, Tags.empty()))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("deviceId=null (expected: ");
            assertThatThrownBy(() -> new BfcAllocatorMetrics(v, "0", null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("extraTags=null (expected: ");
            assertThatThrownBy(() -> new BfcAllocatorMetrics(a, "0", java.util.Arrays.asList(Tag.of("job", "x"), null)))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith("extraTags[1]=null (expected: ");
            for (String own : java.util.List.of("allocator.name", "memory.type", "device.id")) {
                assertThatThrownBy(() -> new BfcAllocatorMetrics(v, "0", java.util.List.of(Tag.of("job", "x"), Tag.of(own, "zzz"))))
                        .as("an extra tag that would replace the meters' own %s", own)
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("extraTags[1]=tag(" + own + "=zzz) (expected: a"
                                + " key other than '" + own + "'");
            }
            assertThatThrownBy(() -> new BfcAllocatorMetrics(a).bindTo(null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("registry=null (expected: ");
            assertThatThrownBy(() -> BfcAllocatorMetrics.memoryTypeTag(null))
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("type=null (expected: ");
            // Nothing was left behind: the allocator binds as if those calls had not been made.
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            new BfcAllocatorMetrics(a).bindTo(registry);
            assertThat(registry.getMeters()).hasSize(BfcAllocatorMeters.values().length);
        }
    }

    @Test
    void bindingTheSameAllocatorTwiceChangesNothing() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("a")) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            int meters = registry.getMeters().size();
            new BfcAllocatorMetrics(a).bindTo(registry);
            assertThat(registry.getMeters()).hasSize(meters);
            long p = a.allocateRaw(256, 1000);
            assertThat(value(PrometheusText.parse(registry.scrape()), "bfc_allocator_memory_used_bytes"))
                    .isEqualTo(1024);
            a.deallocateRaw(p);
        }
    }

    @Test
    void anotherOpenAllocatorWithTheSameTagsIsRefusedAndTheFirstStaysBound() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("host"); BfcAllocator b = sim("host")) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            assertThatThrownBy(() -> new BfcAllocatorMetrics(b).bindTo(registry))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("another open allocator with the same tags")
                    .hasMessageContaining("allocator.name=host")
                    .hasMessageContaining("distinct name or tags");
            long p = a.allocateRaw(256, 1000);
            assertThat(value(PrometheusText.parse(registry.scrape()), "bfc_allocator_memory_used_bytes"))
                    .isEqualTo(1024);
            new BfcAllocatorMetrics(b, "1", List.of()).bindTo(registry);
            assertThat(PrometheusText.parse(registry.scrape()).named("bfc_allocator_memory_used_bytes")).hasSize(2);
            a.deallocateRaw(p);
        }
    }

    @Test
    void metersRemovedFromTheRegistryAreRegisteredAgain() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("a"); BfcAllocator b = sim("a")) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            registry.clear();
            new BfcAllocatorMetrics(b).bindTo(registry);
            long p = b.allocateRaw(256, 3000);
            assertThat(value(PrometheusText.parse(registry.scrape()), "bfc_allocator_memory_used_bytes"))
                    .isEqualTo(3072);
            b.deallocateRaw(p);
        }
    }

    @Test
    void theShardsOfAShardedAllocatorAreSeriesOfTheirOwnThatAddUp() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("host").memoryLimit(1L << 30)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 2L << 30, 0, true)).shards(2).build()) {
            sharded.shards().forEach(s -> new BfcAllocatorMetrics(s).bindTo(registry));
            long mine = sharded.allocateRaw(256, 1000);
            long[] theirs = new long[1];
            Thread other = new Thread(() -> theirs[0] = sharded.allocateRaw(256, 5000), "other");
            other.setDaemon(true);
            other.start();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);

            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            List<PrometheusText.Sample> used = e.named("bfc_allocator_memory_used_bytes");
            assertThat(used).extracting(s -> s.labels().get("allocator_name")).containsExactlyInAnyOrder("host/0", "host/1");
            assertThat(used).anySatisfy(s -> {
                assertThat(s.labels()).containsEntry("allocator_name", "host/0");
                assertThat(s.value()).isEqualTo(1024);
            });
            assertThat(used.stream().mapToDouble(PrometheusText.Sample::value).sum())
                    .isEqualTo((double) sharded.bytesInUse()).isEqualTo(1024 + 5120);
            sharded.deallocateRaw(mine);
            sharded.deallocateRaw(theirs[0]);
        }
    }

    /**
     * A whole sharded allocator bound at once has one series per meter under the name given to
     * its builder, with the figures of all shards together; bound beside its shards, the series
     * of each keep their own names.
     */
    @Test
    void aWholeShardedAllocatorIsOneSetOfSeriesUnderTheNameGiven() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("host").memoryLimit(1L << 30)
                .subAllocator(new SimSubAllocator(BASE, 2L << 30, 0, true)).shards(2).build()) {
            new BfcAllocatorMetrics(sharded).bindTo(registry);
            new BfcAllocatorMetrics(sharded).bindTo(registry); // again: changes nothing
            sharded.shards().forEach(s -> new BfcAllocatorMetrics(s).bindTo(registry));
            long mine = sharded.allocateRaw(256, 1000);
            long[] theirs = new long[1];
            Thread other = new Thread(() -> theirs[0] = sharded.allocateRaw(256, 5000), "other");
            other.setDaemon(true);
            other.start();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);
            sharded.deallocateRaw(mine);

            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            assertThat(e.named("bfc_allocator_memory_used_bytes")).extracting(s -> s.labels().get("allocator_name"))
                    .containsExactlyInAnyOrder("host", "host/0", "host/1");
            MemoryStats all = sharded.memoryStats();
            Map<String, Double> whole = Map.of(
                    "bfc_allocator_memory_used_bytes", (double) sharded.bytesInUse(),
                    "bfc_allocator_pool_size_bytes", (double) sharded.reservedBytes(),
                    "bfc_allocator_pool_peak_bytes", (double) sharded.getStats().peakPoolBytes(),
                    "bfc_allocator_memory_limit_bytes", (double) sharded.memoryLimit(),
                    "bfc_allocator_largest_free_chunk_bytes", (double) sharded.largestFreeChunkBytes(),
                    "bfc_allocator_regions", (double) sharded.regionCount(),
                    "bfc_allocator_allocations_active", 1.0,
                    "bfc_allocator_allocations_total", 2.0,
                    "bfc_allocator_frees_total", 1.0,
                    "bfc_allocator_fragmentation_ratio", all.fragmentation());
            for (Map.Entry<String, Double> w : whole.entrySet()) {
                assertThat(e.named(w.getKey())).as(w.getKey())
                        .filteredOn(s -> "host".equals(s.labels().get("allocator_name")))
                        .singleElement().satisfies(s -> assertThat(s.value()).as(w.getKey()).isEqualTo(w.getValue()));
            }
            assertThat(sharded.bytesInUse()).isEqualTo(5120);
            assertThat(sharded.regionCount()).isEqualTo(2);
            sharded.deallocateRaw(theirs[0]);
        }
    }

    @Test
    void theShardsReportTheLimitAndTheBytesHeldForViewsOfTheWholeAllocatorEach() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("host").memoryLimit(256 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).shards(2).build()) {
            sharded.shards().forEach(s -> new BfcAllocatorMetrics(s).bindTo(registry));
            ByteBuffer view;
            try (Allocation x = sharded.allocate(64 * MIB)) {
                view = x.asByteBuffer();
            }
            assertThat(sharded.emptyCache()).isEqualTo(64 * MIB);
            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            // docs/metrics.md: max over the shards, not sum, for these two.
            assertThat(e.named("bfc_allocator_held_for_views_bytes")).hasSize(2)
                    .allSatisfy(s -> assertThat(s.value()).isEqualTo(sharded.bytesHeldForViews()).isEqualTo(64 * MIB));
            assertThat(e.named("bfc_allocator_memory_limit_bytes")).hasSize(2)
                    .allSatisfy(s -> assertThat(s.value()).isEqualTo(sharded.memoryLimit()));
            view.put(0, (byte) 1);
        }
    }

    @Test
    void heldForViewsIsTheMemoryOfAGivenBackRegionThatAViewStillReaches() throws InterruptedException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = BfcAllocator.builder().name("host").memoryLimit(256 * MIB)
                .subAllocator(new AlignedHostSubAllocator()).build()) {
            new BfcAllocatorMetrics(a, "0", List.of()).bindTo(registry);
            ByteBuffer view;
            try (Allocation x = a.allocate(64 * MIB)) {
                view = x.asByteBuffer();
            }
            assertThat(a.emptyCache()).isEqualTo(64 * MIB);
            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            assertThat(value(e, "bfc_allocator_held_for_views_bytes")).isEqualTo(64 * MIB);
            assertThat(value(e, "bfc_allocator_pool_size_bytes")).isZero();
            view.put(0, (byte) 1);

            view = null;
            GarbageCollection.gcUntil("the view collected and its region given back", () -> a.bytesHeldForViews() == 0);
            e = PrometheusText.parse(registry.scrape());
            assertThat(value(e, "bfc_allocator_held_for_views_bytes")).isZero();
        }
    }

    @Test
    void anAllocatorIsBoundThroughItsReadOnlyViewToo() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("GPU_1_bfc")) {
            BfcAllocatorView view = BfcAllocatorView.of(a);
            new BfcAllocatorMetrics(view, "1", List.of()).bindTo(registry);
            a.allocateRaw(256, 3000);
            PrometheusText.Exposition e = PrometheusText.parse(registry.scrape());
            List<PrometheusText.Sample> used = e.named("bfc_allocator_memory_used_bytes");
            assertThat(used).singleElement().satisfies(s -> {
                assertThat(s.labels()).containsEntry("allocator_name", "GPU_1_bfc")
                        .containsEntry("memory_type", "sim").containsEntry("device_id", "1");
                assertThat(s.value()).isEqualTo(3072);
            });
            assertThat(value(e, "bfc_allocator_pool_size_bytes")).isEqualTo(a.reservedBytes());
        }
    }

    /**
     * Without a device id given, the meters are tagged with the allocator's own device (its
     * sub-allocator's {@code deviceId()}), bound directly, through its view or as a sharded
     * allocator whole or shard by shard: an allocator on device 1 was tagged {@code device_id="0"}.
     * A device id given still wins.
     */
    @Test
    void theDefaultDeviceIdIsTheAllocatorsOwn() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = new BfcAllocator(onDevice(1), 32 * MIB, "gpu_1_bfc", BfcOptions.defaults());
                BfcAllocator v = new BfcAllocator(onDevice(2), 32 * MIB, "gpu_2_bfc", BfcOptions.defaults());
                ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("gpu_3").shards(2)
                        .memoryLimit(32 * MIB).subAllocator(onDevice(3)).build();
                BfcAllocator given = new BfcAllocator(onDevice(1), 32 * MIB, "given", BfcOptions.defaults())) {
            assertThat(a.deviceId()).isEqualTo(1);
            assertThat(BfcAllocatorView.of(v).deviceId()).isEqualTo(2);
            assertThat(sharded.deviceId()).isEqualTo(3);
            new BfcAllocatorMetrics(a).bindTo(registry);
            new BfcAllocatorMetrics(BfcAllocatorView.of(v)).bindTo(registry);
            new BfcAllocatorMetrics(sharded).bindTo(registry);
            sharded.shards().forEach(s -> new BfcAllocatorMetrics(s).bindTo(registry));
            new BfcAllocatorMetrics(given, "7", Tags.empty()).bindTo(registry);

            Map<String, String> deviceByName = new java.util.TreeMap<>();
            for (PrometheusText.Sample s : PrometheusText.parse(registry.scrape()).named("bfc_allocator_memory_used_bytes")) {
                deviceByName.put(s.labels().get("allocator_name"), s.labels().get("device_id"));
            }
            assertThat(deviceByName).containsExactlyEntriesOf(new java.util.TreeMap<>(Map.of("gpu_1_bfc", "1",
                    "gpu_2_bfc", "2", "gpu_3", "3", "gpu_3/0", "3", "gpu_3/1", "3", "given", "7")));
        }
    }

    /** A simulated space that says it is the memory of device {@code device}. */
    private static SubAllocator onDevice(int device) {
        return new ForwardingSubAllocator(new SimSubAllocator(BASE, 256 * MIB, 0, false)) {
            @Override
            public int deviceId() {
                return device;
            }
        };
    }

    /**
     * An allocator bound directly and again through {@code BfcAllocatorView.of} (or through two
     * such calls) is one allocator: the second binding changes nothing. It was refused as
     * "another open allocator with the same tags", and the meters of a view not kept read NaN
     * once the collector took it, the allocator alive.
     */
    @Test
    void anAllocatorBoundDirectlyAndThroughViewsMadeOnTheSpotIsOneAllocator() throws InterruptedException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        PrometheusMeterRegistry viewsOnly = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (BfcAllocator a = sim("host")) {
            new BfcAllocatorMetrics(a).bindTo(registry);
            new BfcAllocatorMetrics(BfcAllocatorView.of(a)).bindTo(registry);
            new BfcAllocatorMetrics(BfcAllocatorView.of(a), "0", Tags.empty()).bindTo(registry);
            assertThat(registry.getMeters()).hasSize(BfcAllocatorMeters.values().length);
            new BfcAllocatorMetrics(BfcAllocatorView.of(a)).bindTo(viewsOnly);
            new BfcAllocatorMetrics(BfcAllocatorView.of(a)).bindTo(viewsOnly);
            assertThat(viewsOnly.getMeters()).hasSize(BfcAllocatorMeters.values().length);

            java.lang.ref.WeakReference<Object> sentinel = new java.lang.ref.WeakReference<>(new Object());
            GarbageCollection.gcUntil("a collection ran (an object held only weakly collected)",
                    () -> sentinel.get() == null);
            long p = a.allocateRaw(256, 3000);
            assertThat(value(PrometheusText.parse(viewsOnly.scrape()), "bfc_allocator_memory_used_bytes"))
                    .as("read through a view no one kept, after a collection").isEqualTo(3072);
            assertThat(value(PrometheusText.parse(registry.scrape()), "bfc_allocator_memory_used_bytes"))
                    .isEqualTo(3072);
            a.deallocateRaw(p);
        }
    }

    @Test
    void docsListEveryMeterWithItsPrometheusName() throws Exception {
        Path doc = SourceTree.resolve("docs/metrics.md");
        String md = Files.readString(doc);
        for (BfcAllocatorMeters m : BfcAllocatorMeters.values()) {
            assertThat(md).as("docs/metrics.md lists %s", m)
                    .containsPattern("\\| `" + m.getName().replace(".", "\\.") + "` \\| `"
                            + m.prometheusName() + "` \\|");
        }
    }
}
