/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.MemoryType;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Binds the meters of {@link BfcAllocatorMeters} for one allocator to a registry:
 *
 * <pre>{@code
 * new BfcAllocatorMetrics(allocator).bindTo(registry);   // tags allocator.name, memory.type, device.id=0
 * }</pre>
 *
 * <p>The meters read the allocator when the registry is scraped: one
 * {@link BfcAllocator#memoryStats()} snapshot (one lock acquisition) serves every meter of a
 * scrape (of up to 1 s), so that the series of one scrape agree with each other (a meter read
 * alone is at most 1 s stale; see {@link ScrapeSnapshot});
 * the allocator counts with plain fields under its own lock and calls nothing of Micrometer's.
 * The meters hold the allocator weakly (Micrometer's default): once it is unreachable they read
 * NaN. An allocator whose owner hands out only a {@link BfcAllocatorView} (bfc-cuda's
 * {@code GpuBfcAllocator.allocator()}) is bound through the view, which lives as long as its
 * owner.
 */
public final class BfcAllocatorMetrics implements MeterBinder {

    private final Supplier<ScrapeSnapshot<?>> snapshots;
    private final Tags tags;

    /**
     * Meters tagged with the allocator's name, its memory type and {@code device.id=0}.
     *
     * @param allocator the allocator to observe
     * @throws NullPointerException if {@code allocator} is null
     */
    public BfcAllocatorMetrics(BfcAllocator allocator) {
        this(allocator, "0", Tags.empty());
    }

    /**
     * Meters tagged with the allocator's name, its memory type, the device id and extra tags.
     *
     * @param allocator the allocator to observe
     * @param deviceId the {@code device.id} tag (e.g. the CUDA ordinal)
     * @param extraTags more tags for every meter
     * @throws NullPointerException if an argument is null
     */
    public BfcAllocatorMetrics(BfcAllocator allocator, String deviceId, Iterable<Tag> extraTags) {
        Objects.requireNonNull(allocator, "allocator");
        this.snapshots = () -> new ScrapeSnapshot<>(allocator, BfcAllocator::memoryStats, System::nanoTime);
        this.tags = tags(allocator.name(), allocator.getMemoryType(), deviceId, extraTags);
    }

    /**
     * Meters tagged with the allocator's name, its memory type and {@code device.id=0}, read
     * through a view.
     *
     * @param view the view of the allocator to observe; the meters hold it weakly
     * @throws NullPointerException if {@code view} is null
     */
    public BfcAllocatorMetrics(BfcAllocatorView view) {
        this(view, "0", Tags.empty());
    }

    /**
     * Meters tagged with the allocator's name, its memory type, the device id and extra tags,
     * read through a view.
     *
     * @param view the view of the allocator to observe; the meters hold it weakly
     * @param deviceId the {@code device.id} tag (e.g. the CUDA ordinal)
     * @param extraTags more tags for every meter
     * @throws NullPointerException if an argument is null
     */
    public BfcAllocatorMetrics(BfcAllocatorView view, String deviceId, Iterable<Tag> extraTags) {
        Objects.requireNonNull(view, "view");
        this.snapshots = () -> new ScrapeSnapshot<>(view, BfcAllocatorView::memoryStats, System::nanoTime);
        this.tags = tags(view.name(), view.getMemoryType(), deviceId, extraTags);
    }

    private static Tags tags(String name, MemoryType type, String deviceId, Iterable<Tag> extraTags) {
        return Tags.of(
                        BfcAllocatorMeters.Tags.ALLOCATOR_NAME.asString(), name,
                        BfcAllocatorMeters.Tags.MEMORY_TYPE.asString(), memoryTypeTag(type),
                        BfcAllocatorMeters.Tags.DEVICE_ID.asString(), Objects.requireNonNull(deviceId, "deviceId"))
                .and(Objects.requireNonNull(extraTags, "extraTags"));
    }

    /**
     * The {@code memory.type} tag value of a memory type.
     *
     * @param type the sub-allocator's memory type
     * @return {@code device}, {@code host_pinned}, {@code host}, or {@code sim} for
     *     {@link MemoryType#UNKNOWN} (what the simulated address space reports)
     */
    public static String memoryTypeTag(MemoryType type) {
        return switch (type) {
            case DEVICE -> "device";
            case HOST_PINNED -> "host_pinned";
            case HOST_PAGEABLE -> "host";
            case UNKNOWN -> "sim";
        };
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        ScrapeSnapshot<?> snapshot = snapshots.get();
        for (BfcAllocatorMeters m : BfcAllocatorMeters.values()) {
            if (m.getType() == Meter.Type.COUNTER) {
                FunctionCounter.builder(m.getName(), snapshot, s -> s.read(m))
                        .description(m.description())
                        .baseUnit(m.getBaseUnit())
                        .tags(tags)
                        .register(registry);
            } else {
                // Strong: keeps the shared snapshot (which holds the allocator weakly) alive for
                // the function counters too, which hold their object weakly.
                Gauge.builder(m.getName(), snapshot, s -> s.read(m))
                        .strongReference(true)
                        .description(m.description())
                        .baseUnit(m.getBaseUnit())
                        .tags(tags)
                        .register(registry);
            }
        }
    }
}
