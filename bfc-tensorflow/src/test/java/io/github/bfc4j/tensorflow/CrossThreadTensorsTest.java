/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.MemoryMapChecks;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.tensorflow.Graph;
import org.tensorflow.Result;
import org.tensorflow.Session;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.op.Ops;
import org.tensorflow.op.core.Identity;
import org.tensorflow.op.core.Placeholder;
import org.tensorflow.types.TFloat32;

/**
 * bfc4j tensors that cross threads, on one allocator and on a sharded one: made on four threads,
 * run through one graph and closed on two others; an {@code Identity} output (the same buffer)
 * closed on a third thread after its input; meanwhile the history is switched on and off and
 * the memory maps are checked. Every sum is right and every byte comes back. Seeded.
 */
class CrossThreadTensorsTest {

    private static final int MAKERS = 4;
    private static final int TENSORS_PER_MAKER = 40;

    /** A tensor handed from its maker to a runner, with the sum its values must have. */
    private record Made(TFloat32 tensor, float expectedSum) {
    }

    @ParameterizedTest(name = "{0} shards")
    @ValueSource(ints = {0, 4})
    void madeOnSomeThreadsRunAndClosedOnOthers(int shardCount) throws Exception {
        long seed = Seeds.seed("CrossThreadTensorsTest.madeOnSomeThreadsRunAndClosedOnOthers(" + shardCount + ")");
        MemoryAllocator bfc = shardCount == 0
                ? BfcAllocator.builder().name("tf_cross").memoryLimit(64L << 20)
                        .subAllocator(new AlignedHostSubAllocator()).build()
                : ShardedBfcAllocator.builder().name("tf_cross").memoryLimit(64L << 20)
                        .subAllocator(new AlignedHostSubAllocator()).shards(shardCount).build();
        List<BfcAllocator> parts = bfc instanceof ShardedBfcAllocator s ? s.shards() : List.of((BfcAllocator) bfc);
        BfcTensors tensors = new BfcTensors(bfc);
        ExecutorService pool = Executors.newCachedThreadPool();
        try (Graph g = new Graph(); Session session = new Session(g)) {
            Ops tf = Ops.create(g);
            Placeholder<TFloat32> x = tf.placeholder(TFloat32.class);
            var sum = tf.reduceSum(x, tf.constant(new int[] {0, 1}));
            Identity<TFloat32> same = tf.identity(x);
            BlockingQueue<Made> made = new LinkedBlockingQueue<>();
            BlockingQueue<Result> aliases = new LinkedBlockingQueue<>();
            AtomicBoolean making = new AtomicBoolean(true);
            AtomicBoolean running = new AtomicBoolean(true);
            List<Future<?>> makers = new ArrayList<>();
            for (int t = 0; t < MAKERS; t++) {
                long makerSeed = seed * 31 + t;
                makers.add(pool.submit(() -> {
                    Random r = new Random(makerSeed);
                    for (int i = 0; i < TENSORS_PER_MAKER; i++) {
                        int rows = 1 + r.nextInt(64);
                        float[] values = new float[rows * 3];
                        float expected = 0;
                        for (int k = 0; k < values.length; k++) {
                            values[k] = r.nextInt(1000);   // small integers: every sum is exact
                            expected += values[k];
                        }
                        made.put(new Made(tensors.ofFloats(Shape.of(rows, 3), values), expected));
                    }
                    return null;
                }));
            }
            AtomicInteger ran = new AtomicInteger();
            List<Future<?>> runners = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                runners.add(pool.submit(() -> {
                    for (;;) {
                        Made m = made.poll(10, TimeUnit.MILLISECONDS);
                        if (m == null) {
                            if (!making.get() && made.isEmpty()) {
                                return null;
                            }
                            continue;
                        }
                        try (TFloat32 in = m.tensor()) {
                            try (Result r = session.runner().feed(x, in).fetch(sum).run()) {
                                assertThat(((TFloat32) r.get(0)).getFloat()).isEqualTo(m.expectedSum());
                            }
                            Result alias = session.runner().feed(x, in).fetch(same).run();
                            assertThat(BfcTensors.dataAddress(alias.get(0))).as("Identity's output: the same buffer")
                                    .isEqualTo(BfcTensors.dataAddress(in));
                            aliases.put(alias);   // outlives the input, closed on another thread
                        }
                        ran.incrementAndGet();
                    }
                }));
            }
            Future<?> aliasCloser = pool.submit(() -> {
                for (;;) {
                    Result r = aliases.poll(10, TimeUnit.MILLISECONDS);
                    if (r == null) {
                        if (!running.get() && aliases.isEmpty()) {
                            return null;
                        }
                        continue;
                    }
                    r.close();
                }
            });
            Future<?> toggler = pool.submit(() -> {
                Random r = new Random(seed);
                while (running.get()) {
                    bfc.recordHistory(HistoryOptions.builder().stacks(r.nextBoolean()).build());
                    for (BfcAllocator p : parts) {
                        MemoryMapChecks.assertAddsUp(p.memoryMap());
                    }
                    Thread.yield();
                    bfc.stopHistory();
                    for (BfcAllocator p : parts) {
                        MemoryMapChecks.assertAddsUp(p.memoryMap());
                    }
                }
                return null;
            });
            try {
                for (Future<?> f : makers) {
                    f.get(60, TimeUnit.SECONDS);
                }
                making.set(false);
                for (Future<?> f : runners) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                making.set(false);
                running.set(false);
            }
            aliasCloser.get(60, TimeUnit.SECONDS);
            toggler.get(60, TimeUnit.SECONDS);
            assertThat(ran.get()).isEqualTo(MAKERS * TENSORS_PER_MAKER);
        } finally {
            pool.shutdownNow();
        }
        assertThat(tensors.tensorsCreated()).isEqualTo(MAKERS * TENSORS_PER_MAKER);
        assertThat(tensors.buffersReturned()).isEqualTo(tensors.tensorsCreated());
        assertThat(tensors.liveBuffers()).isZero();
        assertThat(tensors.callbackFailures()).isZero();
        assertThat(bfc.bytesInUse()).as("bytes in use once every tensor and result is closed").isZero();
        for (BfcAllocator p : parts) {
            p.checkInvariants();
            MemoryMapChecks.assertAddsUp(p.memoryMap());
        }
        bfc.close();   // REFUSE: throws if anything is still allocated
    }
}
