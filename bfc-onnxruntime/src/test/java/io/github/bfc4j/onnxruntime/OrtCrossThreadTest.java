package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.MemoryMapChecks;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.Value;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * all-MiniLM-L6-v2 on one bfc4j allocator, plain and sharded, where ORT's memory crosses
 * threads: sessions created on one thread, run on others and closed on a third; output values
 * made by one thread's {@code Run} and read and closed on another; the history switched on and
 * off while the runs go on; one thread asking for more than the limit while the others serve.
 * Every answer is compared bit for bit with ORT's own arena's; afterwards every byte is back and
 * the memory maps add up. Seeded: {@code -Dbfc4j.test.seed}.
 */
class OrtCrossThreadTest {

    private static final EmbeddingModel MODEL = EmbeddingModel.ALL_MINILM_L6_V2_Q;
    /** [batch, tokens] of the requests the callers draw from. */
    private static final int[][] SHAPES = {{1, 8}, {2, 8}, {4, 8}, {1, 16}, {2, 16}, {1, 32}, {3, 24}};
    private static final int CALLERS = 4;
    private static final int REQUESTS_PER_CALLER = 8;
    private static final long DEADLOCK_SECONDS = 120;

    private static Env env;
    private static long seed;
    private static List<Request> requests;

    /** A tokenized batch and ORT's arena's answer to it. */
    record Request(Encoding[] batch, int[] expectedBits) {
    }

    /** The allocator under the {@code BfcOrtAllocator}. */
    enum Kind {
        PLAIN, SHARDED;

        MemoryAllocator build(String name, long limit) {
            return this == PLAIN ? BfcOrtAllocatorTest.hostAllocator(name, limit)
                    : ShardedBfcAllocator.builder().name(name).memoryLimit(limit)
                            .subAllocator(new AlignedHostSubAllocator()).shards(4).build();
        }
    }

    private static List<BfcAllocator> parts(MemoryAllocator a) {
        return a instanceof ShardedBfcAllocator s ? s.shards() : List.of((BfcAllocator) a);
    }

    @BeforeAll
    static void prepare() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-cross-thread");
        seed = Long.getLong("bfc4j.test.seed", new Random().nextLong());
        System.out.println("OrtCrossThreadTest seed=" + seed + " (rerun with -Dbfc4j.test.seed=" + seed + ")");
        Random random = new Random(seed);
        requests = new ArrayList<>();
        try (EmbeddingSession arena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            for (int[] shape : SHAPES) {
                Encoding[] batch = batch(random, shape[0], shape[1]);
                requests.add(new Request(batch, RealModelEmbeddingsTest.bits(arena.run(batch).hidden())));
            }
        }
    }

    @AfterAll
    static void releaseEnv() {
        if (env != null) {
            env.close();
        }
    }

    private static Encoding[] batch(Random random, int texts, int tokens) {
        List<String> t = new ArrayList<>();
        for (int i = 0; i < texts; i++) {
            t.add(Sentences.text(random, tokens));
        }
        try (HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(tokens)) {
            return EmbeddingModel.encode(tokenizer, t);
        }
    }

    /** An output value in flight from the thread whose run made it to the thread that closes it. */
    private record Made(Request request, Value value) {
    }

    /**
     * Two sessions, each created on a loader thread of its own; four callers run them (two each)
     * and hand every output value, still in ORT's memory, to two closer threads, which read it,
     * compare it with the arena's answer and close it; meanwhile another thread switches the
     * history on (with and without stacks) and off again and again, and checks each memory map
     * it takes. The sessions are closed on the test's thread. Every answer is right, output
     * memory is freed on the closers' threads (on shards other than theirs, sharded), and
     * afterwards nothing is in use, every shard's invariants hold and its map adds up.
     */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void outputsClosedOnOtherThreadsWhileTheHistoryIsSwitchedOnAndOff(Kind kind) throws Exception {
        Random random = new Random(seed ^ kind.ordinal());
        MemoryAllocator bfc = kind.build("ort_cross", 1L << 30);
        List<BfcAllocator> parts = parts(bfc);
        Map<String, LongAdder> freesByThread = new ConcurrentHashMap<>();
        LongAdder freedOnAnotherShard = new LongAdder();
        AtomicInteger toggles = new AtomicInteger();
        AtomicInteger mapsChecked = new AtomicInteger();
        ExecutorService pool = Executors.newCachedThreadPool();
        try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            ort.listener(new BfcOrtAllocator.CallListener() {
                @Override
                public void allocated(long size, long ptr, boolean reserve) {
                }

                @Override
                public void freed(long ptr) {
                    String name = Thread.currentThread().getName();
                    freesByThread.computeIfAbsent(name.replaceAll("-\\d+$", ""), k -> new LongAdder()).increment();
                    if (bfc instanceof ShardedBfcAllocator s && s.shardOf(ptr) != s.homeShard()) {
                        freedOnAnotherShard.increment();
                    }
                }
            });
            List<EmbeddingSession> sessions = new ArrayList<>();
            for (int s = 0; s < 2; s++) {
                sessions.add(TestThreads.getOrFail(Duration.ofSeconds(DEADLOCK_SECONDS),
                        "seed " + seed + ": loader-" + s + " creating its session", pool.submit(named("loader-" + s,
                                () -> new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))))));
            }
            try {
                BlockingQueue<Made> made = new LinkedBlockingQueue<>();
                AtomicBoolean running = new AtomicBoolean(true);
                // The toggler starts first, and the callers wait for it to switch the history on:
                // started after them, it could find them all done (a loaded machine) and never toggle.
                long togglerSeed = random.nextLong();
                CountDownLatch switchedOn = new CountDownLatch(1);
                Future<?> toggler = pool.submit(named("history-toggler", () -> {
                    Random r = new Random(togglerSeed);
                    try {
                        while (running.get()) {
                            bfc.recordHistory(HistoryOptions.builder().stacks(r.nextBoolean())
                                    .maxEntries(1 + r.nextInt(4096)).build());
                            toggles.incrementAndGet();
                            switchedOn.countDown();
                            for (BfcAllocator p : parts) {
                                MemoryMapChecks.assertAddsUp(p.memoryMap());
                                mapsChecked.incrementAndGet();
                            }
                            if (toggles.get() % 2 == 1) {
                                // What a user reads while recording: the summary with its holders,
                                // and the PyTorch snapshot of every shard.
                                assertThat(bfc.memorySummary()).contains("ort_cross");
                                java.io.ByteArrayOutputStream pickle = new java.io.ByteArrayOutputStream();
                                if (bfc instanceof ShardedBfcAllocator s) {
                                    s.writePyTorchPickle(pickle);
                                } else {
                                    ((BfcAllocator) bfc).snapshot().writePyTorchPickle(pickle);
                                }
                                assertThat(pickle.size()).isPositive();
                            }
                            Thread.yield();
                            bfc.stopHistory();
                            for (BfcAllocator p : parts) {
                                MemoryMapChecks.assertAddsUp(p.memoryMap());
                                mapsChecked.incrementAndGet();
                            }
                        }
                    } finally {
                        switchedOn.countDown(); // the callers go on if the toggler failed first
                    }
                    return null;
                }));
                List<Future<?>> callers = new ArrayList<>();
                for (int t = 0; t < CALLERS; t++) {
                    EmbeddingSession session = sessions.get(t % 2);
                    long callerSeed = random.nextLong();
                    callers.add(pool.submit(named("caller-" + t, () -> {
                        Random r = new Random(callerSeed);
                        if (!switchedOn.await(DEADLOCK_SECONDS, TimeUnit.SECONDS)) {
                            throw new AssertionError("the history toggler did not switch the history on within "
                                    + DEADLOCK_SECONDS + " s");
                        }
                        for (int i = 0; i < REQUESTS_PER_CALLER; i++) {
                            Request q = requests.get(r.nextInt(requests.size()));
                            made.put(new Made(q, session.runToValue(q.batch())));
                        }
                        return null;
                    })));
                }
                List<Future<?>> closers = new ArrayList<>();
                for (int t = 0; t < 2; t++) {
                    closers.add(pool.submit(named("closer-" + t, () -> {
                        for (int i = 0; ; i++) {
                            Made m = made.poll(10, TimeUnit.MILLISECONDS);
                            if (m == null) {
                                if (!running.get() && made.isEmpty()) {
                                    return null;
                                }
                                continue;
                            }
                            try (Value v = m.value()) {
                                int[] bits = RealModelEmbeddingsTest.bits(EmbeddingSession.output(v, m.request().batch())
                                        .hidden());
                                if (!Arrays.equals(bits, m.request().expectedBits())) {
                                    throw new AssertionError("an output read on " + Thread.currentThread().getName()
                                            + " differs from ORT's arena's answer (batch of "
                                            + m.request().batch().length + " x "
                                            + m.request().batch()[0].getIds().length + " tokens)");
                                }
                            }
                        }
                    })));
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLOCK_SECONDS);
                try {
                    for (Future<?> f : callers) {
                        f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    }
                } finally {
                    running.set(false);
                }
                for (Future<?> f : closers) {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
                toggler.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                assertThat(made).as("output values left unclosed").isEmpty();
            } finally {
                for (EmbeddingSession s : sessions) {
                    s.close();   // on this thread, not the loader's
                }
            }
            ort.listener(null);
            System.out.printf(java.util.Locale.ROOT, "%s (seed %d): frees by thread %s, %d on a shard other than"
                    + " the freeing thread's; history switched on %d times, %d memory maps checked meanwhile%n",
                    kind, seed, freesByThread, freedOnAnotherShard.sum(), toggles.get(), mapsChecked.get());
            assertThat(toggles.get()).as("times the history was switched on while the callers ran").isPositive();
            assertThat(freesByThread).as("output memory freed on the closers' threads").containsKey("closer");
            assertThat(freesByThread).as("the sessions' weights freed on the test's thread").containsKey(
                    Thread.currentThread().getName().replaceAll("-\\d+$", ""));
            if (kind == Kind.SHARDED) {
                assertThat(freedOnAnotherShard.sum()).as("frees of memory another thread's shard served").isPositive();
            }
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().failedAllocs()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            assertThat(bfc.bytesInUse()).as("bytes in use once every session and value is closed").isZero();
            for (BfcAllocator p : parts) {
                assertThat(p.memoryStats().activeAllocations()).as("live allocations in %s", p.name()).isZero();
                p.checkInvariants();
                MemoryMapChecks.assertAddsUp(p.memoryMap());
            }
        } finally {
            pool.shutdownNow();
            bfc.close();
        }
    }

    /**
     * One thread asks again and again for a batch whose first large tensor is more than the
     * limit leaves, while three others keep serving small requests on the same session: the
     * large runs fail with bfc4j's message, whose figures are those of one moment (in use at
     * most reserved, reserved at most the limit, the largest free chunk too small for the
     * request) and name the allocator's limit; every small run succeeds with the arena's answer;
     * afterwards only the weights are in use, and after the session nothing.
     */
    @ParameterizedTest
    @EnumSource(Kind.class)
    void oneThreadOverTheLimitWhileTheOthersServe(Kind kind) throws Exception {
        long limit = 64L << 20;
        Random random = new Random(seed ^ (kind.ordinal() + 2));
        Encoding[] big = batch(random, 64, 512);   // its embeddings alone: 64 x 512 x 384 floats, 48 MiB
        MemoryAllocator bfc = kind.build("ort_limit", limit);
        List<BfcAllocator> parts = parts(bfc);
        ExecutorService pool = Executors.newCachedThreadPool();
        try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
                EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
            long weights = bfc.bytesInUse();
            AtomicBoolean running = new AtomicBoolean(true);
            List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            Future<?> large = pool.submit(named("large", () -> {
                try {
                    for (int i = 0; i < 3; i++) {
                        try {
                            session.run(big);
                            failures.add("served (expected: out of memory)");
                        } catch (RuntimeException e) {
                            failures.add(e.getMessage());
                        }
                    }
                } finally {
                    running.set(false);
                }
                return null;
            }));
            List<Future<Integer>> small = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                long callerSeed = random.nextLong();
                small.add(pool.submit(named("small-" + t, () -> {
                    Random r = new Random(callerSeed);
                    int served = 0;
                    while (running.get() || served < 4) {
                        Request q = requests.get(r.nextInt(requests.size()));
                        assertThat(RealModelEmbeddingsTest.bits(session.run(q.batch()).hidden()))
                                .as("a small request's answer on %s", Thread.currentThread().getName())
                                .isEqualTo(q.expectedBits());
                        served++;
                    }
                    return served;
                })));
            }
            large.get(DEADLOCK_SECONDS, TimeUnit.SECONDS);
            int served = 0;
            for (Future<Integer> f : small) {
                served += f.get(DEADLOCK_SECONDS, TimeUnit.SECONDS);
            }
            System.out.println(kind + " (seed " + seed + "): " + served + " small requests served; the large ones gave:\n  "
                    + String.join("\n  ", failures));
            assertThat(failures).hasSize(3).allSatisfy(m -> {
                assertThat(m).contains("bfc4j: ONNX Runtime asked for ")
                        .contains("Allocator 'ort_limit' is out of memory: tried to allocate ")
                        .contains("the memory limit is 64.00MiB");
                assertFiguresOfOneMoment(m, limit);
            });
            assertThat(bfc.bytesInUse()).as("in use after the failed runs: the weights").isEqualTo(weights);
            assertThat(ort.stats().callbackErrors()).isZero();
            for (BfcAllocator p : parts) {
                p.checkInvariants();
                MemoryMapChecks.assertAddsUp(p.memoryMap());
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(bfc.bytesInUse()).as("in use once the session is closed").isZero();
        for (BfcAllocator p : parts) {
            p.checkInvariants();
            MemoryMapChecks.assertAddsUp(p.memoryMap());
        }
        bfc.close();
    }

    private static final Pattern FIGURES = Pattern.compile("tried to allocate ([0-9.]+[KMG]?i?B)(?: \\(rounded to"
            + " ([0-9.]+[KMG]?i?B)\\))?\\. ([0-9.]+[KMG]?i?B) is in use by live allocations, ([0-9.]+[KMG]?i?B) is"
            + " reserved from the sub-allocator in \\d+ regions?, the memory limit is ([0-9.]+[KMG]?i?B) and the"
            + " largest free chunk is ([0-9.]+[KMG]?i?B)\\.");

    private static void assertFiguresOfOneMoment(String message, long limit) {
        Matcher m = FIGURES.matcher(message);
        assertThat(m.find()).as("the figures in: %s", message).isTrue();
        double requested = bytes(m.group(2) != null ? m.group(2) : m.group(1));
        double inUse = bytes(m.group(3));
        double reserved = bytes(m.group(4));
        double largestFree = bytes(m.group(6));
        assertThat(bytes(m.group(5))).as("the limit in: %s", message).isEqualTo(limit);
        assertThat(inUse).as("in use, at most reserved, in: %s", message).isLessThanOrEqualTo(reserved);
        assertThat(reserved).as("reserved, at most the limit, in: %s", message).isLessThanOrEqualTo(limit);
        assertThat(largestFree).as("the largest free chunk, too small, in: %s", message).isLessThan(requested);
        assertThat(reserved - inUse).as("free in the pool, at least the largest free chunk, in: %s", message)
                .isGreaterThanOrEqualTo(largestFree * 0.99);
    }

    private static double bytes(String human) {
        String[] units = {"B", "KiB", "MiB", "GiB"};
        for (int i = units.length - 1; i >= 0; i--) {
            if (human.endsWith(units[i])) {
                return Double.parseDouble(human.substring(0, human.length() - units[i].length())) * (1L << (10 * i));
            }
        }
        throw new IllegalArgumentException(human);
    }

    /** {@code task}, run on a thread named {@code name} (the pool's threads are renamed for it). */
    private static <T> Callable<T> named(String name, Callable<T> task) {
        return () -> {
            Thread.currentThread().setName(name);
            return task.call();
        };
    }
}
