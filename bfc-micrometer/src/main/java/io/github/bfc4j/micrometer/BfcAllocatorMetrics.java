/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcAllocatorView;
import io.github.bfc4j.core.MemoryType;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.function.Supplier;

/**
 * Binds the meters of {@link BfcAllocatorMeters} for one allocator to a registry:
 *
 * <pre>{@code
 * new BfcAllocatorMetrics(allocator).bindTo(registry);   // tags allocator.name, memory.type, device.id
 * new BfcAllocatorMetrics(sharded).bindTo(registry);     // a ShardedBfcAllocator: all shards, by its name
 * }</pre>
 *
 * <p>The meters read the allocator when the registry is scraped: one
 * {@link BfcAllocator#memoryStats()} snapshot (one lock acquisition) serves every meter of a
 * scrape (of up to 1 s), so that the series of one scrape agree with each other (a meter read
 * alone is at most 1 s stale; see {@link ScrapeSnapshot});
 * the allocator counts with plain fields under its own lock and calls nothing of Micrometer's.
 * The meters hold the allocator weakly (Micrometer's default): once it is unreachable they read
 * NaN. An allocator whose owner hands out only a {@link BfcAllocatorView} (bfc-cuda's
 * {@code GpuBfcAllocator.allocator()}) is bound through the view, the allocator's one view
 * ({@link BfcAllocatorView#of}), which lives as long as the allocator.
 *
 * <p>One registry holds one set of these meters per set of tags. Binding the same allocator again
 * with the same tags, directly or through its view, changes nothing. Binding another allocator with the
 * same tags replaces the meters of the first if it is closed or collected (an allocator made
 * anew under the same name, say), and throws if it is still open: its meters would otherwise
 * shadow the new ones, which Micrometer would silently drop.
 */
public final class BfcAllocatorMetrics implements MeterBinder {

    /**
     * The meters this class registered, per registry (held weakly) and set of tags, so that a
     * second binding with the same tags can tell whose meters are there. Guarded by itself.
     */
    private static final Map<MeterRegistry, Map<Tags, Binding>> BOUND = new WeakHashMap<>();

    /** The snapshot the meters of one binding read, and the ids the registry gave them. */
    private record Binding(ScrapeSnapshot<?> snapshot, List<Meter.Id> ids) {
    }

    /**
     * What the meters read: an allocator's view (an allocator bound directly is read through it)
     * or a sharded allocator; compared by identity when bound again.
     */
    private final Object target;
    private final Supplier<ScrapeSnapshot<?>> snapshots;
    private final Tags tags;

    /**
     * Meters tagged with the allocator's name, its memory type and its device
     * ({@code device.id}: {@link BfcAllocator#deviceId()}, the sub-allocator's, {@code 0} for
     * host or simulated memory).
     *
     * @param allocator the allocator to observe
     * @throws NullPointerException if {@code allocator} is null
     */
    public BfcAllocatorMetrics(BfcAllocator allocator) {
        this(BfcAllocatorView.of(Objects.requireNonNull(allocator,
                "allocator=null (expected: the BfcAllocator whose meters to bind)")));
    }

    /**
     * Meters tagged with the allocator's name, its memory type, the device id and extra tags.
     *
     * @param allocator the allocator to observe
     * @param deviceId the {@code device.id} tag (e.g. the CUDA ordinal)
     * @param extraTags more tags for every meter
     * @throws NullPointerException if an argument is null, or {@code extraTags} holds a null
     * @throws IllegalArgumentException if a key of {@code extraTags} is {@code allocator.name},
     *     {@code memory.type} or {@code device.id}, which the meters have already
     */
    public BfcAllocatorMetrics(BfcAllocator allocator, String deviceId, Iterable<Tag> extraTags) {
        // Read through the allocator's one view, so that binding it directly or through its view
        // is binding the same thing.
        this(BfcAllocatorView.of(Objects.requireNonNull(allocator,
                "allocator=null (expected: the BfcAllocator whose meters to bind)")), deviceId, extraTags);
    }

    /**
     * Meters tagged with the allocator's name, its memory type and its device
     * ({@code device.id}: {@link BfcAllocatorView#deviceId()}), read through a view.
     *
     * @param view the view of the allocator to observe ({@link BfcAllocatorView#of}, one per
     *     allocator); the meters hold it weakly, and it lives as long as its allocator
     * @throws NullPointerException if {@code view} is null
     */
    public BfcAllocatorMetrics(BfcAllocatorView view) {
        this(view, Integer.toString(Objects.requireNonNull(view,
                "view=null (expected: the BfcAllocatorView whose meters to bind)").deviceId()), Tags.empty());
    }

    /**
     * Meters tagged with the allocator's name, its memory type, the device id and extra tags,
     * read through a view.
     *
     * @param view the view of the allocator to observe ({@link BfcAllocatorView#of}, one per
     *     allocator); the meters hold it weakly, and it lives as long as its allocator
     * @param deviceId the {@code device.id} tag (e.g. the CUDA ordinal)
     * @param extraTags more tags for every meter
     * @throws NullPointerException if an argument is null, or {@code extraTags} holds a null
     * @throws IllegalArgumentException if a key of {@code extraTags} is {@code allocator.name},
     *     {@code memory.type} or {@code device.id}, which the meters have already
     */
    public BfcAllocatorMetrics(BfcAllocatorView view, String deviceId, Iterable<Tag> extraTags) {
        Objects.requireNonNull(view, "view=null (expected: the BfcAllocatorView whose meters to bind)");
        this.target = view;
        this.snapshots = () -> new ScrapeSnapshot<>(view, BfcAllocatorView::memoryStats, BfcAllocatorView::isClosed,
                System::nanoTime);
        this.tags = tags(view.name(), view.getMemoryType(), deviceId, extraTags);
    }

    /**
     * The meters of a whole {@link ShardedBfcAllocator}, tagged with the name given to its
     * builder (not its shards' {@code NAME/I}), its memory type and its device
     * ({@code device.id}: {@link ShardedBfcAllocator#deviceId()}): every figure of all shards
     * together, read at one instant ({@link ShardedBfcAllocator#memoryStats()}).
     *
     * @param allocator the sharded allocator to observe
     * @throws NullPointerException if {@code allocator} is null
     */
    public BfcAllocatorMetrics(ShardedBfcAllocator allocator) {
        this(allocator, Integer.toString(Objects.requireNonNull(allocator,
                "allocator=null (expected: the ShardedBfcAllocator whose meters to bind)").deviceId()), Tags.empty());
    }

    /**
     * The meters of a whole {@link ShardedBfcAllocator}, tagged with the name given to its
     * builder, its memory type, the device id and extra tags; see
     * {@link #BfcAllocatorMetrics(ShardedBfcAllocator)}.
     *
     * @param allocator the sharded allocator to observe
     * @param deviceId the {@code device.id} tag
     * @param extraTags more tags for every meter
     * @throws NullPointerException if an argument is null, or {@code extraTags} holds a null
     * @throws IllegalArgumentException if a key of {@code extraTags} is {@code allocator.name},
     *     {@code memory.type} or {@code device.id}, which the meters have already
     */
    public BfcAllocatorMetrics(ShardedBfcAllocator allocator, String deviceId, Iterable<Tag> extraTags) {
        Objects.requireNonNull(allocator, "allocator=null (expected: the ShardedBfcAllocator whose meters to bind)");
        this.target = allocator;
        this.snapshots = () -> new ScrapeSnapshot<>(allocator, ShardedBfcAllocator::memoryStats,
                ShardedBfcAllocator::isClosed, System::nanoTime);
        this.tags = tags(allocator.name(), allocator.getMemoryType(), deviceId, extraTags);
    }

    private static Tags tags(String name, MemoryType type, String deviceId, Iterable<Tag> extraTags) {
        // Taken once: what is checked is what is kept, even from an Iterable that can be iterated
        // only once (a stream's iterator) or that answers differently the second time.
        List<Tag> extra = new ArrayList<>();
        Objects.requireNonNull(extraTags, "extraTags=null (expected: more tags, Tags.empty() for none)").forEach(extra::add);
        for (int i = 0; i < extra.size(); i++) {
            Tag t = extra.get(i);
            Objects.requireNonNull(t, "extraTags[" + i + "]=null (expected: a Tag, e.g. Tag.of(\"job\", \"serving\"))");
            for (BfcAllocatorMeters.Tags own : BfcAllocatorMeters.Tags.values()) {
                if (own.asString().equals(t.getKey())) {
                    // Tags.and would let it replace the binder's own tag without a word.
                    throw new IllegalArgumentException("extraTags[" + i + "]=" + t + " (expected: a key other than '"
                            + t.getKey() + "', which every meter has already: the allocator's name, its memory type"
                            + " and the deviceId argument set allocator.name, memory.type and device.id)");
                }
            }
        }
        return Tags.of(
                        BfcAllocatorMeters.Tags.ALLOCATOR_NAME.asString(), name,
                        BfcAllocatorMeters.Tags.MEMORY_TYPE.asString(), memoryTypeTag(type),
                        BfcAllocatorMeters.Tags.DEVICE_ID.asString(), Objects.requireNonNull(deviceId, "deviceId=null (expected: the device.id tag, e.g. \"0\")"))
                .and(extra);
    }

    /**
     * The {@code memory.type} tag value of a memory type.
     *
     * @param type the sub-allocator's memory type
     * @return {@code device}, {@code host_pinned}, {@code host}, or {@code sim} for
     *     {@link MemoryType#UNKNOWN} (what the simulated address space reports)
     * @throws NullPointerException if {@code type} is null
     */
    public static String memoryTypeTag(MemoryType type) {
        Objects.requireNonNull(type, "type=null (expected: a MemoryType, e.g. allocator.getMemoryType())");
        return switch (type) {
            case DEVICE -> "device";
            case HOST_PINNED -> "host_pinned";
            case HOST_PAGEABLE -> "host";
            case UNKNOWN -> "sim";
        };
    }

    /**
     * Registers the meters. Nothing changes if this allocator is already bound to
     * {@code registry} with the same tags (directly or through its view); the meters of another allocator bound with the same
     * tags are removed first if it is closed or collected.
     *
     * @param registry the registry
     * @throws NullPointerException if {@code registry} is null
     * @throws IllegalStateException if another allocator that is still open is bound to
     *     {@code registry} with the same tags; nothing is registered then
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry=null (expected: the MeterRegistry to register the meters with)");
        synchronized (BOUND) {
            Map<Tags, Binding> bound = BOUND.computeIfAbsent(registry, r -> new HashMap<>());
            Binding old = bound.get(tags);
            if (old != null && anyRegistered(registry, old.ids())) {
                if (old.snapshot().reads(target)) {
                    return;
                }
                if (old.snapshot().readsAnOpenAllocator()) {
                    throw new IllegalStateException("the registry already holds the bfc.allocator meters of another"
                            + " open allocator with the same tags " + tags + "; give this one a distinct name or"
                            + " tags (device.id, extra tags), or close the other first (the meters of a closed"
                            + " allocator are replaced)");
                }
                for (Meter.Id id : old.ids()) {
                    registry.remove(id);
                }
            }
            Binding binding = new Binding(snapshots.get(), new ArrayList<>());
            register(registry, binding);
            bound.put(tags, binding);
        }
    }

    private void register(MeterRegistry registry, Binding binding) {
        ScrapeSnapshot<?> snapshot = binding.snapshot();
        for (BfcAllocatorMeters m : BfcAllocatorMeters.values()) {
            Meter meter;
            if (m.getType() == Meter.Type.COUNTER) {
                meter = FunctionCounter.builder(m.getName(), snapshot, s -> s.read(m))
                        .description(m.description())
                        .baseUnit(m.getBaseUnit())
                        .tags(tags)
                        .register(registry);
            } else {
                // Strong: keeps the shared snapshot (which holds the allocator weakly) alive for
                // the function counters too, which hold their object weakly.
                meter = Gauge.builder(m.getName(), snapshot, s -> s.read(m))
                        .strongReference(true)
                        .description(m.description())
                        .baseUnit(m.getBaseUnit())
                        .tags(tags)
                        .register(registry);
            }
            binding.ids().add(meter.getId());
        }
    }

    /** Whether the registry still holds a meter of one of {@code ids} (not removed since). */
    private static boolean anyRegistered(MeterRegistry registry, List<Meter.Id> ids) {
        for (Meter.Id id : ids) {
            for (Meter m : registry.find(id.getName()).tags(id.getTags()).meters()) {
                if (m.getId().equals(id)) {
                    return true;
                }
            }
        }
        return false;
    }
}
