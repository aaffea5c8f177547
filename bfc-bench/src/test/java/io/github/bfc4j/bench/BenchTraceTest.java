/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.TestThreads;
import org.junit.jupiter.api.Test;

/**
 * The benchmarks' inputs are right (no timing here: the figures come from JMH): a trace decodes
 * into as many calls as it has {@code alloc}/{@code free} lines, every free names a slot
 * allocated before it, and one replay pass runs on each implementation.
 */
class BenchTraceTest {

    @Test
    void decodesEveryCallAndFreesOnlyWhatWasAllocated() {
        BenchTrace t = BenchTrace.load("tf-resnet-train");
        // grep -c '^alloc\|^free' conformance-tests/src/test/resources/recorded/tf-resnet-train.bfctrace
        assertThat(t.calls).isEqualTo(5226);
        boolean[] live = new boolean[t.slots];
        int allocs = 0;
        for (int i = 0; i < t.calls; i++) {
            int s = t.slot[i];
            if (t.bytes[i] >= 0) {
                assertThat(live[s]).as("call %d allocates into a live slot", i).isFalse();
                live[s] = true;
                allocs++;
            } else {
                assertThat(live[s]).as("call %d frees a slot not live", i).isTrue();
                live[s] = false;
            }
        }
        assertThat(allocs).isEqualTo(t.slots);
        assertThat(t.header.memoryLimit()).isEqualTo(68719476736L);
    }

    @Test
    void everyImplementationReplaysATraceTwice() {
        for (String impl : new String[] {Impl.BFC4J, Impl.NETTY, Impl.MALLOC}) {
            ReplayBenchmark b = new ReplayBenchmark();
            b.impl = impl;
            b.trace = "tf-resnet-train";
            b.setUp(); // one full pass
            BenchTrace t = BenchTrace.load("tf-resnet-train");
            for (int i = 0; i < t.calls; i++) {
                b.call();
            }
            b.tearDown();
        }
    }

    @Test
    void unknownTraceOrImplementationIsNamed() {
        assertThatThrownBy(() -> BenchTrace.load("nope"))
                .hasMessageContaining("trace=nope (expected: one of");
        assertThatThrownBy(() -> Impl.create("jemalloc", 1, null))
                .hasMessageContaining("impl=jemalloc (expected: bfc4j, bfc4j-sharded, bfc4j-shard-per-thread,"
                        + " netty or malloc)");
        assertThatThrownBy(() -> Impl.create(Impl.BFC4J_SHARDED, 1, BenchTrace.load("tf-resnet-train")))
                .hasMessageContaining("impl=bfc4j-sharded with a trace (expected: no trace");
    }

    @Test
    void theShardedImplementationAllocatesAndFreesFromEachThread() throws Exception {
        Impl impl = Impl.create(Impl.BFC4J_SHARDED, 2, null);
        impl.alloc(0, 1 << 20, 64);
        Thread other = new Thread(() -> impl.alloc(1, 1 << 20, 64), "other");
        other.setDaemon(true);
        other.start();
        TestThreads.joinOrFail(TestThreads.RUN_LIMIT, other);
        ShardedImpl sharded = (ShardedImpl) impl;
        assertThat(sharded.allocator.bytesInUse()).isEqualTo(2L << 20);
        // One shard per available processor; the two threads got the first two (one, on one processor).
        int processors = Runtime.getRuntime().availableProcessors();
        assertThat(sharded.allocator.shards()).hasSize(processors);
        assertThat(sharded.allocator.shards()).filteredOn(s -> s.bytesInUse() != 0).hasSize(Math.min(2, processors));
        impl.close();
        assertThat(sharded.allocator.isClosed()).isTrue();
    }
}
