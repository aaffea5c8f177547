package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_PARALLEL;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryMapChecks;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.trace.SnapshotTraces;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.SessionOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A model server's load on bfc4j memory: all-MiniLM-L6-v2 answering requests of varying batch
 * size (1 to 32) and sequence length (8 to 256 tokens) from 1, 2, 4 and 8 Java threads, sharing
 * one session or each with its own, on one {@code BfcAllocator} or on a
 * {@code ShardedBfcAllocator}. Every answer is compared bit for bit with the same request
 * answered beforehand on ORT's own arena, one at a time; afterwards every allocation is back.
 * Every allocation bfc4j served was ORT's, and each session's weights were reserved in bfc4j.
 * While the callers run, another thread takes the allocators' memory maps, each of which must
 * add up; callers that do not finish in time fail the test with their stacks (a deadlock). Which
 * threads ORT called {@code Alloc} on is counted and printed.
 */
class ServerLoadTest {

    /**
     * Requests per configuration, -Dbfc4j.test.loadRequests=N for a longer run: mostly small
     * (1 to 4 texts of 8 to 32 tokens), one in {@value #MEDIUM_EVERY} of 256 tokens in all, one
     * in {@value #LARGE_EVERY} of 1024 to 2048 tokens; ORT's parallel executor gets a tenth.
     */
    private static final int REQUESTS = Integer.getInteger("bfc4j.test.loadRequests", 160);
    private static final int MEDIUM_EVERY = 40;
    private static final int LARGE_EVERY = 160;
    /** [batch, tokens]: small, medium and large requests. */
    private static final int[][] SMALL = {{1, 8}, {1, 16}, {2, 8}, {3, 8}, {4, 8}, {2, 16}, {1, 24}, {1, 32}};
    private static final int[][] MEDIUM = {{16, 16}, {32, 8}, {1, 256}, {4, 64}, {2, 128}};
    private static final int[][] LARGE = {{32, 32}, {8, 256}, {32, 64}};
    private static final String CALLER = "caller-";

    private static Env env;
    private static List<Request> small;
    private static List<Request> medium;
    private static List<Request> large;

    /** One request: a tokenized batch and the arena's answer to it. */
    record Request(Encoding[] batch, int[] expectedBits) {
        int tokens() {
            return batch.length * batch[0].getIds().length;
        }
    }

    @BeforeAll
    static void prepare() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-load");
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println("ServerLoadTest seed=" + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random random = new Random(seed);
        try (EmbeddingSession arena = new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q,
                EmbeddingSession.options(false))) {
            // Distinct requests, answered once here; the load draws from them.
            small = answered(arena, random, SMALL);
            medium = answered(arena, random, MEDIUM);
            large = answered(arena, random, LARGE);
        }
    }

    private static List<Request> answered(EmbeddingSession arena, Random random, int[][] shapes) {
        List<Request> requests = new ArrayList<>();
        for (int[] shape : shapes) {
            try (HuggingFaceTokenizer tokenizer = EmbeddingModel.ALL_MINILM_L6_V2_Q.fixedLengthTokenizer(shape[1])) {
                List<String> texts = new ArrayList<>();
                for (int b = 0; b < shape[0]; b++) {
                    texts.add(Sentences.text(random, shape[1]));
                }
                Encoding[] batch = EmbeddingModel.encode(tokenizer, texts);
                requests.add(new Request(batch, RealModelEmbeddingsTest.bits(arena.run(batch).hidden())));
            }
        }
        return requests;
    }

    @AfterAll
    static void releaseEnv() {
        env.close();
    }

    /** The {@code count} requests of one configuration, in a random order. */
    private static List<Request> workload(Random random, int count) {
        List<Request> w = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            List<Request> kind = i % LARGE_EVERY == LARGE_EVERY - 1 ? large
                    : i % MEDIUM_EVERY == MEDIUM_EVERY - 1 ? medium : small;
            w.add(kind.get(random.nextInt(kind.size())));
        }
        java.util.Collections.shuffle(w, random);
        return w;
    }

    @ParameterizedTest(name = "{0} threads, {1}")
    @CsvSource({
        "1, shared session",
        "2, shared session",
        "4, shared session",
        "8, shared session",
        "1, session per thread",
        "2, session per thread",
        "4, session per thread",
        "8, session per thread",
        "4, shared session with ORT's parallel executor",
        "4, session per thread on shards",
        "8, shared session on shards",
        "4, shared session with ORT's parallel executor on shards"})
    void everyAnswerRightAndEveryAllocationBack(int threads, String mode, @TempDir Path dir) throws Exception {
        boolean shared = mode.startsWith("shared");
        boolean parallelExecutor = mode.contains("parallel");
        boolean sharded = mode.endsWith("on shards");
        Supplier<SessionOptions> options = () -> {
            SessionOptions o = EmbeddingSession.options(true);
            if (parallelExecutor) {
                o.SetExecutionMode(ORT_PARALLEL);
                o.SetInterOpNumThreads(2);
            }
            return o;
        };
        Map<String, LongAdder> allocThreads = new ConcurrentHashMap<>();
        LongAdder servedByBfc = new LongAdder();
        Map<String, LongAdder> reservedByThread = new ConcurrentHashMap<>();
        AtomicInteger concurrentOrtThreadAllocs = new AtomicInteger();
        AtomicInteger callersInRun = new AtomicInteger();
        long seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        int count = parallelExecutor ? Math.max(1, REQUESTS / 10) : REQUESTS;
        List<Request> work = workload(new Random(seed), count);
        AtomicInteger next = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads, new java.util.concurrent.ThreadFactory() {
            private final AtomicInteger n = new AtomicInteger();

            @Override
            public Thread newThread(Runnable r) {
                return new Thread(r, CALLER + n.getAndIncrement());
            }
        });
        long started = System.nanoTime();
        try (BfcAllocator bfc = sharded ? null : BfcOrtAllocatorTest.hostAllocator("ort_load", 2L << 30);
                ShardedBfcAllocator shards = sharded ? ShardedBfcAllocator.builder().name("ort_load")
                        .memoryLimit(2L << 30).subAllocator(new AlignedHostSubAllocator()).shards(4).build() : null;
                BfcOrtAllocator ort = sharded ? BfcOrtAllocator.register(shards) : BfcOrtAllocator.register(bfc)) {
            if (sharded) {
                // Every shard's calls, for one trace of the whole run (below).
                shards.recordHistory(HistoryOptions.builder().stacks(false).maxEntries(1 << 20).build());
            }
            ort.listener(new BfcOrtAllocator.CallListener() {
                @Override
                public void allocated(long size, long ptr, boolean reserve) {
                    if (ptr != 0) {
                        servedByBfc.increment();
                        if (reserve) {
                            reservedByThread.computeIfAbsent(Thread.currentThread().getName(), k -> new LongAdder())
                                    .add(size);
                        }
                    }
                    String name = Thread.currentThread().getName();
                    allocThreads.computeIfAbsent(name.startsWith(CALLER) ? name : "other: " + name,
                            k -> new LongAdder()).increment();
                    if (!name.startsWith(CALLER) && callersInRun.get() > 0) {
                        concurrentOrtThreadAllocs.incrementAndGet();
                    }
                }

                @Override
                public void freed(long ptr) {
                }
            });
            List<BfcAllocator> allocators = sharded ? shards.shards() : List.of(bfc);
            long tokens;
            MapSampler sampler = new MapSampler(allocators);
            try (EmbeddingSession common = shared ? new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q,
                    options.get()) : null) {
                // The sampler starts first, and the callers wait for its first map: started after
                // them, it could find them all done (a loaded machine) and take no map.
                sampler.start();
                List<Future<Long>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        sampler.awaitFirstMap();
                        long served = 0;
                        try (EmbeddingSession own = shared ? null
                                : new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q, options.get())) {
                            EmbeddingSession session = shared ? common : own;
                            for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                                Request r = work.get(i);
                                EmbeddingSession.Output out;
                                callersInRun.incrementAndGet();
                                try {
                                    out = session.run(r.batch());
                                } finally {
                                    callersInRun.decrementAndGet();
                                }
                                if (!java.util.Arrays.equals(RealModelEmbeddingsTest.bits(out.hidden()), r.expectedBits())) {
                                    throw new AssertionError("answer differs from ORT's arena's for a batch of "
                                            + r.batch().length + " x " + r.batch()[0].getIds().length + " tokens");
                                }
                                served += r.tokens();
                            }
                        }
                        return served;
                    }));
                }
                tokens = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLOCK_SECONDS);
                for (Future<Long> f : futures) {
                    try {
                        tokens += f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    } catch (TimeoutException e) {
                        throw new AssertionError("the callers did not finish within " + DEADLOCK_SECONDS
                                + " s (a deadlock?); their stacks:" + callerStacks());
                    }
                }
            } finally {
                sampler.stop();
            }
            ort.listener(null);
            System.out.printf(java.util.Locale.ROOT, "  memory maps taken during the run: %d, each adding up%n",
                    sampler.maps());
            assertThat(sampler.maps()).as("memory maps taken while the callers ran").isPositive();
            long allocationsServed = 0;
            for (BfcAllocator a : allocators) {
                allocationsServed += a.memoryStats().allocationsTotal();
            }
            assertThat(allocationsServed).as("allocations bfc4j served: every one ORT's").isEqualTo(servedByBfc.sum());
            // ORT reserves a session's weights on the thread that creates it: here, one session a
            // thread, or the shared one on this thread.
            int sessions = shared ? 1 : threads;
            assertThat(reservedByThread).as("threads that created a session, and the bytes ORT reserved in bfc4j"
                    + " on each").hasSize(sessions);
            long oneSession = reservedByThread.values().iterator().next().sum();
            assertThat(oneSession).as("a session's reserved weights").isGreaterThan(1L << 20);
            assertThat(reservedByThread.values()).as("every session's, as much as the first's")
                    .allSatisfy(r -> assertThat(r.sum()).isEqualTo(oneSession));
            StringBuilder servedBy = new StringBuilder();
            int shardsServing = 0;
            for (BfcAllocator a : allocators) {
                MemoryStats after = a.memoryStats();
                servedBy.append(String.format(java.util.Locale.ROOT, "%n  %s: %d allocations, peak in use %s,"
                        + " peak reserved %s", a.name(), after.allocationsTotal(),
                        BfcAllocator.humanReadableNumBytes(after.peakBytesInUse()),
                        BfcAllocator.humanReadableNumBytes(after.peakReservedBytes())));
                assertThat(after.bytesInUse()).as("bytes in use in %s once the sessions are closed", a.name()).isZero();
                assertThat(after.activeAllocations()).isZero();
                assertThat(after.freesTotal()).isEqualTo(after.allocationsTotal());
                shardsServing += after.allocationsTotal() > 0 ? 1 : 0;
                a.checkInvariants();
                MemoryMapChecks.assertAddsUp(a.memoryMap());
            }
            System.out.printf(java.util.Locale.ROOT, "%d threads, %s (seed %d): %d requests, %d tokens in %.1f s;"
                    + " Alloc %d, Reserve %d, Free %d%n  Alloc by thread: %s;"
                    + " by ORT's threads while a caller was in Run: %d%s%n",
                    threads, mode, seed, count, tokens, (System.nanoTime() - started) / 1e9, ort.stats().allocCalls(),
                    ort.stats().reserveCalls(), ort.stats().freeCalls(),
                    new TreeMap<>(allocThreads), concurrentOrtThreadAllocs.get(), servedBy);
            if (sharded) {
                assertThat(shardsServing).as("shards that served the threads' allocations").isGreaterThan(1);
                // The shards' calls as one trace: every allocation and free, each free after
                // its allocation, replayed as one allocator serving them all.
                Path trace = dir.resolve("ort_load.bfctrace.gz");
                SnapshotTraces.write(shards.snapshots(), trace, "ort_load: " + threads + " threads, " + mode);
                long allocations = 0;
                for (BfcAllocator a : allocators) {
                    allocations += a.memoryStats().allocationsTotal();
                }
                try (TraceReader reader = TraceReader.open(trace)) {
                    WorkloadResult replay = WorkloadRunner.forHeader(reader.header()).run(reader);
                    assertThat(replay.allocations()).as("allocations replayed from the shards' trace")
                            .isEqualTo(allocations);
                    assertThat(replay.oomCount()).isZero();
                }
            }
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().failedAllocs()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            if (parallelExecutor) {
                assertThat(concurrentOrtThreadAllocs.get()).as("ORT's inter-op threads allocated during callers' runs")
                        .isPositive();
            } else {
                assertThat(allocThreads.keySet()).as("callers' threads allocated").anyMatch(n -> n.startsWith(CALLER));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** How long the callers may take, all together, before the test calls it a deadlock. */
    private static final int DEADLOCK_SECONDS = 300;

    /** The callers' threads and their stacks, for a test that timed out. */
    private static String callerStacks() {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            if (e.getKey().getName().startsWith(CALLER)) {
                sb.append("\n  ").append(e.getKey().getName()).append(' ').append(e.getKey().getState());
                for (StackTraceElement f : e.getValue()) {
                    sb.append("\n    at ").append(f);
                }
            }
        }
        return sb.toString();
    }

    /**
     * Takes the allocators' memory maps over and over on a thread of its own while the callers
     * run, and checks that each adds up ({@link MemoryMapChecks#assertAddsUp}): a map is one
     * picture, whatever the other threads allocate meanwhile.
     */
    private static final class MapSampler {
        private final List<BfcAllocator> allocators;
        private final AtomicInteger maps = new AtomicInteger();
        private final java.util.concurrent.atomic.AtomicReference<Throwable> failure =
                new java.util.concurrent.atomic.AtomicReference<>();
        private final CountDownLatch firstMap = new CountDownLatch(1);
        private volatile boolean running = true;
        private Thread thread;

        MapSampler(List<BfcAllocator> allocators) {
            this.allocators = allocators;
        }

        void start() {
            thread = new Thread(() -> {
                try {
                    while (running) {
                        for (BfcAllocator a : allocators) {
                            MemoryMapChecks.assertAddsUp(a.memoryMap());
                            maps.incrementAndGet();
                        }
                        firstMap.countDown();
                        Thread.sleep(20);
                    }
                } catch (Throwable t) {
                    failure.set(t);
                } finally {
                    firstMap.countDown(); // the callers go on if the sampler failed first
                }
            }, "memory-map-sampler");
            thread.setDaemon(true);
            thread.start();
        }

        /** Waits until the sampler has taken its first maps (or failed, which {@link #stop} reports). */
        void awaitFirstMap() throws InterruptedException {
            if (!firstMap.await(DEADLOCK_SECONDS, TimeUnit.SECONDS)) {
                throw new AssertionError("the memory-map sampler took no map within " + DEADLOCK_SECONDS + " s");
            }
        }

        /** Stops the sampler; rethrows what it found. */
        void stop() throws InterruptedException {
            running = false;
            if (thread == null) {
                return;
            }
            TestThreads.joinOrFail(Duration.ofSeconds(DEADLOCK_SECONDS), thread);
            Throwable t = failure.get();
            if (t instanceof Error e) {
                throw e;
            }
            if (t != null) {
                throw new AssertionError("the memory-map sampler failed", t);
            }
        }

        int maps() {
            return maps.get();
        }
    }
}
