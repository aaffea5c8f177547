package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_PARALLEL;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemoryMapChecks;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemoryMap;
import io.github.bfc4j.core.Provenance;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.SessionOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several threads on one bfc4j allocator with a real model (all-MiniLM-L6-v2): out of memory on
 * every thread at once, and the memory of two sessions told apart while they run.
 */
class OrtThreadsTest {

    private static final EmbeddingModel MODEL = EmbeddingModel.ALL_MINILM_L6_V2_Q;
    private static final int THREADS = 4;
    /** How long the threads may take, all together, before the test calls it a deadlock. */
    private static final long DEADLOCK_SECONDS = 120;
    private static Env env;

    @BeforeAll
    static void createEnv() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-threads");
    }

    @AfterAll
    static void releaseEnv() {
        if (env != null) {
            env.close();
        }
    }

    private static Encoding[] batch(long seed, int texts, int tokens) {
        Random random = new Random(seed);
        List<String> t = new ArrayList<>();
        for (int i = 0; i < texts; i++) {
            t.add(Sentences.text(random, tokens));
        }
        try (HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(tokens)) {
            return EmbeddingModel.encode(tokenizer, t);
        }
    }

    /** Runs each task on a thread of its own, named by {@code names}, and returns their results. */
    private static <T> List<T> onThreads(List<String> names, List<Callable<T>> tasks) throws Exception {
        AtomicInteger n = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size(), r -> new Thread(r, names.get(n.getAndIncrement())));
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (Callable<T> task : tasks) {
                futures.add(pool.submit(task));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLOCK_SECONDS);
            List<T> results = new ArrayList<>();
            for (Future<T> f : futures) {
                results.add(f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    private static List<String> names(String prefix, int count) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            names.add(prefix + i);
        }
        return names;
    }

    /**
     * Four threads share a session while the application holds all but a few MiB of the limit:
     * every thread's run fails with bfc4j's message in ORT's error, nothing of the failed runs
     * stays allocated, and once the application lets go, the same four requests succeed at once
     * on the same session, each with ORT's arena's answer bit for bit.
     */
    @Test
    void outOfMemoryOnEveryThreadReachesEachCallerAndTheSameRunsSucceedOnceMemoryIsFree() throws Exception {
        long limit = 128L << 20;
        Encoding[] big = batch(7, 4, 128);
        int[] expected;
        try (EmbeddingSession arena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            expected = RealModelEmbeddingsTest.bits(arena.run(big).hidden());
        }
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("ort_threads", limit);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
                EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
            long weights = bfc.bytesInUse();
            long weightAllocations = ort.stats().liveAllocations();
            bfc.resetPeakStats();
            assertThat(RealModelEmbeddingsTest.bits(session.run(big).hidden())).as("alone, with room").isEqualTo(expected);
            long oneRun = bfc.peakBytesInUse() - weights;

            // The application's own allocations take what is left, but for a few MiB.
            List<Long> ballast = new ArrayList<>();
            for (long p = bfc.allocateRaw(256, 256 << 10); p != 0; p = bfc.allocateRaw(256, 256 << 10)) {
                ballast.add(p);
            }
            for (int i = 0; i < 8; i++) {
                bfc.deallocateRaw(ballast.remove(ballast.size() - 1));
            }
            long heldByApplication = bfc.bytesInUse() - weights;
            assertThat(limit - bfc.bytesInUse()).as("memory left, against the %d bytes one run took", oneRun)
                    .isLessThan(oneRun);

            List<Callable<String>> runs = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                runs.add(() -> {
                    try {
                        session.run(big);
                        return "served";
                    } catch (RuntimeException e) {
                        return e.getClass().getName() + ": " + e.getMessage();
                    }
                });
            }
            List<String> failed = onThreads(names("caller-", THREADS), runs);
            System.out.println("What each thread's run gave:\n  " + String.join("\n  ", failed));
            assertThat(failed).hasSize(THREADS).allSatisfy(m -> assertThat(m)
                    .startsWith(RuntimeException.class.getName() + ": ")
                    .contains("bfc4j: ONNX Runtime asked for ")
                    .contains("Allocator 'ort_threads' is out of memory: tried to allocate ")
                    .contains("the memory limit is 128.00MiB"));
            assertThat(ort.stats().failedAllocs()).isGreaterThanOrEqualTo(THREADS);
            assertThat(ort.stats().callbackErrors()).isZero();
            assertThat(bfc.bytesInUse()).as("nothing of the failed runs is left").isEqualTo(weights + heldByApplication);
            assertThat(ort.stats().liveAllocations()).isEqualTo(weightAllocations);
            bfc.checkInvariants();
            MemoryMapChecks.assertAddsUp(bfc.memoryMap());

            for (long p : ballast) {
                bfc.deallocateRaw(p);
            }
            List<Callable<int[]>> again = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                again.add(() -> RealModelEmbeddingsTest.bits(session.run(big).hidden()));
            }
            assertThat(onThreads(names("caller-", THREADS), again)).as("the same runs, with room")
                    .hasSize(THREADS).allSatisfy(bits -> assertThat(bits).isEqualTo(expected));
            assertThat(bfc.bytesInUse()).isEqualTo(weights);
            assertThat(ort.stats().liveAllocations()).isEqualTo(weightAllocations);
            bfc.checkInvariants();
            MemoryMapChecks.assertAddsUp(bfc.memoryMap());
        }
    }

    /**
     * With ORT's parallel executor the run's allocations are made on ORT's inter-op threads, not
     * the caller's: one that bfc4j cannot serve throws from a thread that JavaCPP attached to the
     * JVM, with no Java caller of its own. The exception crosses into ORT there as on the caller's
     * thread: the caller's {@code Run} fails with bfc4j's message (no abort of the process), nothing
     * of the failed run stays allocated, and once memory is free the same session gives the same
     * answer as before.
     */
    @Test
    void outOfMemoryOnOrtsInterOpThreadsReachesTheCaller() throws Exception {
        Encoding[] big = batch(7, 4, 128);
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("ort_parallel", 128L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            SessionOptions options = EmbeddingSession.options(true);
            options.SetExecutionMode(ORT_PARALLEL);
            options.SetInterOpNumThreads(2);
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, options)) {
                int[] expected = RealModelEmbeddingsTest.bits(session.run(big).hidden());
                long weights = bfc.bytesInUse();
                List<Long> ballast = new ArrayList<>();
                for (long p = bfc.allocateRaw(256, 256 << 10); p != 0; p = bfc.allocateRaw(256, 256 << 10)) {
                    ballast.add(p);
                }
                for (int i = 0; i < 8; i++) {
                    bfc.deallocateRaw(ballast.remove(ballast.size() - 1));
                }
                long held = bfc.bytesInUse();
                List<String> failedOn = new CopyOnWriteArrayList<>();
                ort.listener(new BfcOrtAllocator.CallListener() {
                    @Override
                    public void allocated(long size, long ptr, boolean reserve) {
                        if (ptr == 0) {
                            failedOn.add(Thread.currentThread().getName());
                        }
                    }

                    @Override
                    public void freed(long ptr) {
                    }
                });
                String caller = Thread.currentThread().getName();
                assertThatThrownBy(() -> session.run(big)).isInstanceOf(RuntimeException.class)
                        .hasMessageContaining("bfc4j: ONNX Runtime asked for ")
                        .hasMessageContaining("Allocator 'ort_parallel' is out of memory: tried to allocate ");
                ort.listener(null);
                assertThat(failedOn).as("the threads whose allocation failed").isNotEmpty()
                        .allSatisfy(name -> assertThat(name).isNotEqualTo(caller).startsWith("JavaCPP Thread ID"));
                assertThat(ort.stats().callbackErrors()).isZero();
                assertThat(bfc.bytesInUse()).as("nothing of the failed run is left").isEqualTo(held);
                bfc.checkInvariants();
                for (long p : ballast) {
                    bfc.deallocateRaw(p);
                }
                assertThat(RealModelEmbeddingsTest.bits(session.run(big).hidden())).as("the same run, with room")
                        .isEqualTo(expected);
                assertThat(bfc.bytesInUse()).isEqualTo(weights);
            }
        }
    }

    /**
     * Two sessions of one model, each created on a thread of its own and run by two threads of
     * its own, all at once, each call inside an annotation naming its session: every chunk in
     * use, in memory maps taken from inside ORT's allocations while the runs go on, and every
     * allocation in the history, is named by the annotation of its own session and thread,
     * never the other's; the two sessions' weights are two holders of equal size.
     */
    @Test
    void annotationsTellTwoSessionsApartUnderThreads() throws Exception {
        Encoding[] request = batch(11, 2, 32);
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("ort_two_sessions", 512L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            bfc.recordHistory(HistoryOptions.builder().stacks(false).build());
            List<Callable<EmbeddingSession>> loads = new ArrayList<>();
            for (String s : List.of("A", "B")) {
                loads.add(() -> {
                    try (MemoryAnnotation a = MemoryAnnotation.push(s + "/load")) {
                        return new EmbeddingSession(env, MODEL, EmbeddingSession.options(true));
                    }
                });
            }
            List<EmbeddingSession> sessions = onThreads(List.of("A-loader", "B-loader"), loads);
            try (EmbeddingSession a = sessions.get(0); EmbeddingSession b = sessions.get(1)) {
                AtomicInteger maps = new AtomicInteger();
                AtomicInteger runChunksSeen = new AtomicInteger();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                AtomicInteger calls = new AtomicInteger();
                ort.listener(new BfcOrtAllocator.CallListener() {
                    @Override
                    public void allocated(long size, long ptr, boolean reserve) {
                        // Inside ORT's allocation on a caller's thread: its run is under way.
                        if (ptr == 0 || calls.incrementAndGet() % 16 != 0) {
                            return;
                        }
                        try {
                            MemoryMap m = bfc.memoryMap();
                            MemoryMapChecks.assertAddsUp(m);
                            runChunksSeen.addAndGet(assertEachChunkNamedByItsSession(m));
                            maps.incrementAndGet();
                        } catch (Throwable t) {
                            failure.compareAndSet(null, t);
                        }
                    }

                    @Override
                    public void freed(long ptr) {
                    }
                });
                List<Callable<Integer>> runs = new ArrayList<>();
                List<String> callers = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    String s = t % 2 == 0 ? "A" : "B";
                    EmbeddingSession session = t % 2 == 0 ? a : b;
                    callers.add(s + "-caller-" + t / 2);
                    runs.add(() -> {
                        for (int step = 0; step < 6; step++) {
                            try (MemoryAnnotation ann = MemoryAnnotation.push(s + "/run", step)) {
                                session.run(request);
                            }
                        }
                        return 0;
                    });
                }
                onThreads(callers, runs);
                ort.listener(null);
                if (failure.get() != null) {
                    throw new AssertionError("a memory map taken inside ORT's allocation", failure.get());
                }
                assertThat(maps.get()).as("memory maps taken inside ORT's allocations").isPositive();
                assertThat(runChunksSeen.get()).as("chunks of runs in flight seen in them").isPositive();

                MemoryMap m = bfc.memoryMap();
                assertEachChunkNamedByItsSession(m);
                Map<String, MemoryMap.Holder> holders = new TreeMap<>();
                for (MemoryMap.Holder h : m.largestHolders(10)) {
                    holders.put(h.holder(), h);
                }
                System.out.println("Largest holders, both sessions open: " + holders.values());
                assertThat(holders).as("between runs only the two sessions' weights are held")
                        .containsOnlyKeys("A/load", "B/load");
                assertThat(holders.get("A/load").bytes()).isGreaterThan(MODEL.onnx().length / 2L);
                assertThat(holders.get("A/load").chunks()).isEqualTo(holders.get("B/load").chunks());
                assertThat(holders.get("A/load").requestedBytes()).isEqualTo(holders.get("B/load").requestedBytes());
            }
            long allocations = 0;
            for (MemoryEvent e : bfc.snapshot().history().events()) {
                if (e.kind() == MemoryEvent.Kind.ALLOC) {
                    allocations++;
                    assertNamedByItsSession(e.provenance(), "allocation " + e.allocationId());
                }
            }
            assertThat(allocations).as("allocations recorded").isEqualTo(bfc.memoryStats().allocationsTotal());
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            bfc.checkInvariants();
        }
    }

    /** Checks every chunk in use; returns how many were allocated by a run. */
    private static int assertEachChunkNamedByItsSession(MemoryMap m) {
        int runChunks = 0;
        for (MemoryMap.Chunk c : m.chunks()) {
            if (c.inUse()) {
                assertNamedByItsSession(c.provenance(), "chunk 0x" + Long.toHexString(c.ptr()));
                runChunks += c.provenance().annotation().endsWith("/run") ? 1 : 0;
            }
        }
        return runChunks;
    }

    private static void assertNamedByItsSession(Provenance p, String what) {
        assertThat(p.annotation()).as("%s's annotation (thread %s)", what, p.thread()).isNotNull();
        String session = p.annotation().substring(0, 1);
        assertThat(p.thread()).as("%s, annotated %s", what, p.annotation())
                .isEqualTo(p.annotation().endsWith("/load") ? session + "-loader" : p.thread())
                .startsWith(session + (p.annotation().endsWith("/load") ? "-loader" : "-caller-"));
        if (p.annotation().endsWith("/run")) {
            assertThat(p.step()).as("%s's step", what).isBetween(0L, 5L);
        }
    }
}
