package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.bytedeco.onnxruntime.global.onnxruntime.ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.GarbageCollection;
import io.github.bfc4j.core.MemoryAllocator;
import io.github.bfc4j.core.ShardedBfcAllocator;
import io.github.bfc4j.core.TestThreads;
import io.github.bfc4j.core.ThreadWatch;
import io.github.bfc4j.core.sim.SimSubAllocator;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.assertj.core.api.AbstractThrowableAssert;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.onnxruntime.Env;
import org.bytedeco.onnxruntime.OrtAllocator;
import org.bytedeco.onnxruntime.Value;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link BfcOrtAllocator}'s wiring and lifecycle: registration, the callbacks called through
 * their native function pointers, close against calls in flight, what a closed instance leaves
 * behind, and memory limits met by a real model (all-MiniLM-L6-v2).
 */
class BfcOrtAllocatorTest {

    private static final EmbeddingModel MODEL = EmbeddingModel.ALL_MINILM_L6_V2_Q;
    private static Env env;

    @BeforeAll
    static void createEnv() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-test");
    }

    @AfterAll
    static void releaseEnv() {
        if (env != null) {
            env.close();
        }
    }

    static BfcAllocator hostAllocator(String name, long limit) {
        return BfcAllocator.builder()
                .name(name)
                .memoryLimit(limit)
                .allowRetryOnFailure(false)
                .subAllocator(new AlignedHostSubAllocator())
                .build();
    }

    private static Encoding[] batch(HuggingFaceTokenizer tokenizer, int size, int words) {
        Random random = new Random(size * 31L + words);
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            texts.add(Sentences.text(random, words));
        }
        return EmbeddingModel.encode(tokenizer, texts);
    }

    /**
     * An allocator that lends to 255 runtimes already cannot be registered: register() passes on
     * lendTo's refusal, which says what to close, registers nothing (the environment's reference
     * and the allocator struct given back), and a register once a loan is closed goes through.
     */
    @Test
    void anAllocatorLentTo255RuntimesIsRefusedUntilALoanIsClosed() {
        try (BfcAllocator bfc = hostAllocator("lent_out", 8 << 20)) {
            List<MemoryAllocator.Loan> loans = new ArrayList<>();
            for (int i = 0; i < 255; i++) {
                loans.add(bfc.lendTo("runtime " + i, "close it"));
            }
            assertThatThrownBy(() -> BfcOrtAllocator.register(bfc)).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("255 loans of this allocator are open or have lent memory that is not yet"
                            + " freed: it can lend to no more runtimes at once.");
            loans.remove(0).close();
            try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
                assertThat(ort.allocator()).isSameAs(bfc);
            }
            loans.forEach(MemoryAllocator.Loan::close);
        }
    }

    @Test
    void useEnvAllocatorsOfNullSaysWhatItTakes() {
        assertThatThrownBy(() -> BfcOrtAllocator.useEnvAllocators(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("options=null (expected: the SessionOptions a session will be created with, e.g."
                        + " new SessionOptions())");
    }

    /**
     * Closed session options (their native address 0) are named as such: JavaCPP's own
     * {@code NullPointerException: This pointer address is NULL.} said neither which argument nor
     * what to do.
     */
    @Test
    void useEnvAllocatorsOfClosedOptionsSaysSo() {
        org.bytedeco.onnxruntime.SessionOptions closed = new org.bytedeco.onnxruntime.SessionOptions();
        closed.close();
        assertThatThrownBy(() -> BfcOrtAllocator.useEnvAllocators(closed)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("options are closed (native address 0) (expected: open SessionOptions that a session"
                        + " will be created with, e.g. new SessionOptions())");
    }

    @Test
    void aBatchTooLargeForTheLimitFailsWithBfcsMessageAndTheSessionServesSmallerOnes() {
        try (HuggingFaceTokenizer long256 = MODEL.fixedLengthTokenizer(256);
                HuggingFaceTokenizer short32 = MODEL.fixedLengthTokenizer(32);
                BfcAllocator bfc = hostAllocator("ort_limit", 96L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
                EmbeddingSession arena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            Encoding[] small = batch(short32, 4, 40);
            // 32 texts of 256 tokens: the attention scores alone, 32 x 12 heads x 256 x 256
            // floats, are 96 MiB, above the limit with the weights in.
            Encoding[] big = batch(long256, 32, 300);
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                long weights = bfc.bytesInUse();
                assertThat(weights).as("the weights fit").isGreaterThan(1L << 20);
                assertThatThrownBy(() -> session.run(big))
                        .isInstanceOf(RuntimeException.class)
                        .satisfies(e -> System.out.println("ORT's error: " + e.getMessage()))
                        .hasMessageContaining("bfc4j: ONNX Runtime asked for ")
                        .hasMessageContaining("Allocator 'ort_limit' is out of memory: tried to allocate ")
                        .hasMessageContaining("the memory limit is 96.00MiB")
                        // Nothing is recorded: the memory ORT holds is held by ORT.
                        .hasMessageContaining(" Largest holders: ")
                        .hasMessageContaining(" by ONNX Runtime (BfcOrtAllocator 'ort_limit') (");
                assertThat(ort.stats().failedAllocs()).isPositive();
                assertThat(bfc.memoryStats().oomsTotal()).isPositive();
                assertThat(bfc.bytesInUse()).as("nothing of the failed run is left").isEqualTo(weights);
                bfc.checkInvariants();
                // The same session goes on serving, with the same answers as ORT's arena.
                for (int i = 0; i < 3; i++) {
                    assertThat(RealModelEmbeddingsTest.bits(session.run(small).hidden()))
                            .isEqualTo(RealModelEmbeddingsTest.bits(arena.run(small).hidden()));
                }
                assertThat(bfc.bytesInUse()).isEqualTo(weights);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            bfc.checkInvariants();
        }
    }

    /**
     * ORT's error gives the figures of the moment the allocation failed, as bfc4j's own
     * exception does, where it read them afterwards: memory freed in between (here by an
     * out-of-memory listener, as another thread may) made it say, e.g., that 28 MiB were in use
     * and the largest free chunk was 34 MiB when a request of 768 KiB failed.
     */
    @Test
    void theOutOfMemoryErrorGivesTheFiguresOfTheMomentOfFailure() {
        try (HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(128);
                BfcAllocator bfc = hostAllocator("ort_moment", 96L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
                EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
            Encoding[] request = batch(tokenizer, 4, 128);
            List<Long> held = new ArrayList<>();
            for (long p = bfc.allocateRaw(256, 1 << 20); p != 0; p = bfc.allocateRaw(256, 1 << 20)) {
                held.add(p);
            }
            List<io.github.bfc4j.core.MemoryStats> atFailure = new ArrayList<>();
            bfc.addOutOfMemoryListener(report -> {
                atFailure.add(report.snapshot().memoryMap().memoryStats());
                held.forEach(bfc::deallocateRaw);   // freed just after the failure
                held.clear();
            });
            assertThatThrownBy(() -> session.run(request))
                    .isInstanceOf(RuntimeException.class)
                    .satisfies(e -> System.out.println("ORT's error: " + e.getMessage()))
                    .satisfies(e -> {
                        assertThat(atFailure).hasSize(1);
                        io.github.bfc4j.core.MemoryStats m = atFailure.get(0);
                        assertThat(m.bytesInUse()).as("in use at the failure, against now").isNotEqualTo(bfc.bytesInUse());
                        assertThat(e.getMessage()).as("in use and largest free chunk at the failure")
                                .contains(BfcAllocator.humanReadableNumBytes(m.bytesInUse()))
                                .contains(BfcAllocator.humanReadableNumBytes(m.largestFreeChunkBytes()))
                                .doesNotContain(BfcAllocator.humanReadableNumBytes(bfc.bytesInUse()))
                                .doesNotContain(BfcAllocator.humanReadableNumBytes(bfc.largestFreeChunkBytes()));
                    });
            assertThat(held).isEmpty();
            assertThat(ort.stats().liveAllocations()).as("the weights only").isPositive();
            session.run(request);   // the memory the listener freed serves it
        }
    }

    @Test
    void sessionCreationFailsWhenTheWeightsDoNotFit() {
        try (BfcAllocator bfc = hostAllocator("ort_weights", 4L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            assertThatThrownBy(() -> new EmbeddingSession(env, MODEL, EmbeddingSession.options(true)))
                    .isInstanceOf(RuntimeException.class)
                    .hasMessageContaining("bfc4j: ONNX Runtime asked for ")
                    .hasMessageContaining("Allocator 'ort_weights' is out of memory: tried to allocate ");
            assertThat(ort.stats().failedAllocs()).isPositive();
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
        }
    }

    @Test
    void closingTheBfcAllocatorUnderALiveSessionIsRefusedAndChangesNothing() {
        try (HuggingFaceTokenizer tokenizer = MODEL.tokenizer(64);
                BfcAllocator bfc = hostAllocator("ort_refuse", 256L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            Encoding[] batch = batch(tokenizer, 2, 20);
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                int[] before = RealModelEmbeddingsTest.bits(session.run(batch).hidden());
                long inUse = bfc.bytesInUse();
                // The advice is what frees memory ORT holds; not ClosePolicy.FORCE, which register refuses.
                assertThatThrownBy(bfc::close)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("close() refused: allocator 'ort_refuse' has")
                        .hasMessageContaining("ONNX Runtime (BfcOrtAllocator 'ort_refuse') may hold memory of it:"
                                + " release the sessions created while it was registered and the OrtValues they"
                                + " returned, then close the BfcOrtAllocator.")
                        .message().doesNotContain("ClosePolicy.FORCE");
                assertThatThrownBy(ort::close)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("ONNX Runtime still holds")
                        .hasMessageContaining("Release the sessions");
                assertThat(ort.isClosed()).isFalse();
                assertThat(bfc.bytesInUse()).isEqualTo(inUse);
                assertThat(RealModelEmbeddingsTest.bits(session.run(batch).hidden())).isEqualTo(before);
            }
        }
    }

    /**
     * Output values outlive the session that made them, on other threads: one read and closed on
     * a thread of its own after the session is closed gives its memory back there; one never
     * closed keeps its memory (and {@code close()} refuses, the allocator staying registered)
     * until it is dropped and the garbage collector has JavaCPP release it, on JavaCPP's
     * deallocator thread. No free is rejected, and the answers are the arena's.
     */
    @Test
    void outputValuesOutliveTheirSessionOnOtherThreadsAndAnUnclosedOneIsFreedAfterCollection() throws Exception {
        try (HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(16);
                BfcAllocator bfc = hostAllocator("ort_outlive", 256L << 20);
                EmbeddingSession arena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            Encoding[] batch = batch(tokenizer, 2, 12);
            int[] expected = RealModelEmbeddingsTest.bits(arena.run(batch).hidden());
            outputValuesOutliveTheirSession(bfc, batch, expected);
        }
    }

    private static void outputValuesOutliveTheirSession(BfcAllocator bfc, Encoding[] batch, int[] expected)
            throws InterruptedException {
        try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            Map<String, Integer> freesByThread = new java.util.concurrent.ConcurrentHashMap<>();
            ort.listener(new BfcOrtAllocator.CallListener() {
                @Override
                public void allocated(long size, long ptr, boolean reserve) {
                }

                @Override
                public void freed(long ptr) {
                    freesByThread.merge(Thread.currentThread().getName().replaceAll("\\d+$", ""), 1, Integer::sum);
                }
            });
            Value kept;
            // Reachable until dropped below, so that no collection frees it before.
            Value[] neverClosed = new Value[1];
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                kept = session.runToValue(batch);
                neverClosed[0] = session.runToValue(batch);
            }
            assertThat(ort.stats().liveAllocations()).as("the two outputs, once the session is closed").isEqualTo(2);
            long twoOutputs = bfc.bytesInUse();
            assertThat(twoOutputs).isPositive();
            int[] read = new int[1];
            Thread closer = new Thread(() -> {
                read[0] = RealModelEmbeddingsTest.bits(EmbeddingSession.output(kept, batch).hidden())[7];
                kept.close();
            }, "closer-");
            closer.setDaemon(true);
            closer.start();
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, closer);
            assertThat(read[0]).as("the output read on the closer's thread").isEqualTo(expected[7]);
            assertThat(freesByThread).as("freed on the thread that closed it").containsKey("closer-");
            assertThat(ort.stats().liveAllocations()).as("the unclosed output").isOne();
            assertThat(bfc.bytesInUse()).isEqualTo(twoOutputs / 2);
            assertThatThrownBy(ort::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("close() refused: ONNX Runtime still holds 1 allocation from allocator"
                            + " 'ort_outlive'")
                    .hasMessageEndingWith("Release the sessions and the OrtValues they returned first.");
            assertThat(ort.isClosed()).isFalse();
            assertThat(RealModelEmbeddingsTest.bits(EmbeddingSession.output(neverClosed[0], batch).hidden()))
                    .isEqualTo(expected);
            neverClosed[0] = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (ort.stats().liveAllocations() != 0 && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            assertThat(ort.stats().liveAllocations()).as("the unclosed output, after collection").isZero();
            assertThat(freesByThread.keySet()).as("threads that freed outputs")
                    .anyMatch(name -> name.startsWith("JavaCPP Deallocator"));
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            ort.close();
            bfc.checkInvariants();
        }
    }

    @Test
    void inputTensorsCanBeMadeInBfcMemoryToo() {
        try (BfcAllocator bfc = hostAllocator("ort_inputs", 8 << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                long address = x.GetTensorMutableDataFloat().address();
                assertThat(bfc.requestedSize(address)).isEqualTo(4 * 100 * 4);
                assertThat(ort.stats().liveAllocations()).isEqualTo(1);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
        }
    }

    /**
     * The application frees an address of its own twice, and ORT was given the same chunk in
     * between (a tensor's data): the second free used to free the tensor's memory under ORT, so
     * the next allocation was handed it while ORT still wrote there, and ORT's own Free later
     * failed. The memory is ORT's (allocated through the allocator's loan): that free is refused,
     * naming ONNX Runtime, and the tensor keeps its memory.
     */
    @Test
    void aStaleRawFreeCannotTakeMemoryOrtHolds() {
        try (BfcAllocator bfc = hostAllocator("ort_lent", 8 << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            long mine = bfc.allocateRaw(64, 1600);
            bfc.deallocateRaw(mine);
            try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                long address = x.GetTensorMutableDataFloat().address();
                assertThat(address).as("ORT is given the chunk just freed").isEqualTo(mine);
                assertThatThrownBy(() -> bfc.deallocateRaw(mine)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("lent to ONNX Runtime (BfcOrtAllocator 'ort_lent'), which frees it itself")
                        .hasMessageEndingWith("Nothing was freed.");
                long next = bfc.allocateRaw(64, 1600);
                assertThat(next).as("not handed out while ORT holds it").isNotEqualTo(address);
                bfc.deallocateRaw(next);
                assertThat(bfc.requestedSize(address)).isEqualTo(1600);
            }
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().callbackErrors()).as("ORT's Free found its memory").isZero();
            ort.close();
            bfc.checkInvariants();
        }
    }

    /**
     * A tensor made with the {@code ortAllocator()} of a closed instance (the struct stays valid:
     * ORT may still call it) fails, saying so: the message blamed a session still running, which
     * a caller who made no session could not act on.
     */
    @Test
    void aTensorMadeWithAClosedInstancesOrtAllocatorFailsSayingSo() {
        try (BfcAllocator bfc = hostAllocator("ort_closed_struct", 8 << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            ort.close();
            assertThatThrownBy(() -> Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)).isInstanceOf(RuntimeException.class)
                    .hasMessageContaining("bfc4j: Alloc(1600) on an OrtAllocator whose BfcOrtAllocator was closed")
                    .hasMessageContaining("use its ortAllocator() only while it is open");
            assertThat(bfc.bytesInUse()).isZero();
            try (BfcOrtAllocator again = BfcOrtAllocator.register(bfc);
                    Value x = Value.CreateTensor(again.ortAllocator(), new long[] {4, 100}, 2,
                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                assertThat(bfc.requestedSize(x.GetTensorMutableDataFloat().address())).isEqualTo(1600);
            }
            assertThat(bfc.bytesInUse()).isZero();
        }
    }

    /**
     * The {@code BfcAllocator} closed while a {@code BfcOrtAllocator} over it is registered (its
     * close succeeds where ORT holds none of its memory): ORT's next allocation through it fails
     * with a message that says what was closed and in which order to close, where it said only
     * {@code Alloc(1600) failed: java.lang.IllegalStateException: allocator '...' is closed};
     * nothing is allocated, and the instance still closes.
     */
    @Test
    void anAllocationAfterTheAllocatorWasClosedUnderTheRegisteredInstanceSaysWhatToDo() {
        BfcAllocator bfc = hostAllocator("ort_closed_under", 8 << 20);
        try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            bfc.close();
            assertThatThrownBy(() -> Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)).isInstanceOf(RuntimeException.class)
                    .hasMessageContaining("bfc4j: Alloc(1600) on BfcOrtAllocator 'ort_closed_under', whose allocator"
                            + " was closed while it was registered")
                    .hasMessageContaining("close the BfcOrtAllocator before its allocator");
            assertThat(ort.stats().failedAllocs()).isEqualTo(1);
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().lastError()).contains("whose allocator was closed while it was registered");
        }
        assertThat(bfc.bytesInUse()).isZero();
    }

    /**
     * Who holds the memory ORT allocates, with no annotation: the innermost frame of the
     * application's code that called into ORT, not the JavaCPP binding's frame that every call
     * of that kind shares ({@code Value.CreateTensor}, {@code Session.allocate},
     * {@code SessionImpl.Run}); the stack itself keeps the binding's frames.
     */
    @Test
    void theHolderOfOrtsMemoryIsTheApplicationsFrameNotTheBindings() {
        try (HuggingFaceTokenizer short32 = MODEL.fixedLengthTokenizer(32);
                BfcAllocator bfc = hostAllocator("ort_holders", 256L << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            bfc.recordHistory(io.github.bfc4j.core.HistoryOptions.defaults());
            try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                io.github.bfc4j.core.Provenance p = bfc.memoryMap().chunks().stream().filter(c -> c.inUse())
                        .findFirst().orElseThrow().provenance();
                assertThat(p.stack().get(0).className()).startsWith("org.bytedeco.onnxruntime.");
                assertThat(p.holder()).startsWith(BfcOrtAllocatorTest.class.getName()
                        + ".theHolderOfOrtsMemoryIsTheApplicationsFrameNotTheBindings(BfcOrtAllocatorTest.java:");
            }
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                List<io.github.bfc4j.core.MemoryMap.Holder> holders = bfc.memoryMap().largestHolders(3);
                System.out.println("holders: " + holders);
                assertThat(holders.get(0).holder()).as("the weights: the session's creation")
                        .startsWith(EmbeddingSession.class.getName() + ".<init>(EmbeddingSession.java:");
                int before = bfc.snapshot().history().events().size();
                session.run(batch(short32, 2, 10));
                List<io.github.bfc4j.core.MemoryEvent> run = bfc.snapshot().history().events()
                        .subList(before, bfc.snapshot().history().events().size());
                assertThat(run).filteredOn(e -> e.kind() == io.github.bfc4j.core.MemoryEvent.Kind.ALLOC)
                        .isNotEmpty().allSatisfy(e -> {
                            assertThat(e.provenance().stack().get(0).function())
                                    .isEqualTo("org.bytedeco.onnxruntime.SessionImpl.Run");
                            assertThat(e.provenance().holder()).as("the run's tensors: the call of Run")
                                    .startsWith(EmbeddingSession.class.getName() + ".run(EmbeddingSession.java:");
                        });
            }
        }
    }

    /**
     * A size_t of 2^63 bytes or more arrives as a negative long: it fails as an allocation too
     * large, where null (ORT writes to it) crashed the JVM.
     */
    @Test
    void aRequestOfTwoToTheSixtyThirdBytesOrMoreFailsWithAMessage() {
        try (BfcAllocator bfc = hostAllocator("ort_huge", 8 << 20);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            for (long[] shape : new long[][] {{1L << 61}, {3L << 60}}) {
                assertThatThrownBy(() -> Value.CreateTensor(ort.ortAllocator(), shape, 1,
                        ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT).close())
                        .hasMessageContaining("bfc4j: allocator 'ort_huge' cannot serve it: ONNX Runtime asked for "
                                + Long.toUnsignedString(shape[0] * 4) + " bytes, more than any allocation can be");
            }
            assertThat(ort.stats().failedAllocs()).isEqualTo(2);
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(bfc.bytesInUse()).isZero();
        }
    }

    /**
     * close() from inside one of ORT's allocations (an out-of-memory listener) is refused, where
     * it waited for that allocation, that is forever.
     */
    @Test
    void closeFromInsideAnAllocationIsRefused() {
        try (BfcAllocator bfc = hostAllocator("ort_reentry", 1 << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            List<Throwable> caught = new ArrayList<>();
            bfc.addOutOfMemoryListener(r -> {
                try {
                    ort.close();
                } catch (IllegalStateException e) {
                    caught.add(e);
                }
            });
            assertThatThrownBy(() -> Value.CreateTensor(ort.ortAllocator(), new long[] {1 << 20}, 1,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT).close()).hasMessageContaining("is out of memory");
            assertThat(caught).hasSize(1);
            assertThat(caught.get(0)).hasMessageStartingWith("close() of BfcOrtAllocator 'ort_reentry' refused:"
                    + " this thread is inside an allocation");
            assertThat(ort.isClosed()).isFalse();
            ort.close();
            assertThat(ort.isClosed()).isTrue();
        }
    }

    /**
     * For a child JVM without ORT's natives: register(...) twice, then the CUDA provider's reason,
     * then what the allocator was left with, one per line. With an argument, ORT's presets are
     * touched first (as an application's own ORT code would), so that their class stays
     * uninitialized.
     */
    public static final class PrintRegisterFailures {
        private PrintRegisterFailures() {
        }

        /**
         * Calls the entry points.
         *
         * @param args none, or anything to touch ORT's presets first
         */
        public static void main(String[] args) {
            if (args.length > 0) {
                try {
                    new OrtAllocator().close();
                    System.out.println("touched first: loaded");
                } catch (Throwable t) {
                    System.out.println("touched first, failed with " + t.getClass().getName());
                }
            }
            try (BfcAllocator bfc = BfcAllocator.builder().name("no_natives").memoryLimit(1 << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                for (int i = 0; i < 2; i++) {
                    try {
                        BfcOrtAllocator.register(bfc);
                        System.out.println("register: made");
                    } catch (Throwable t) {
                        System.out.println("register threw: " + t);
                    }
                }
                System.out.println("reason: " + BfcCudaProvider.unavailableReason());
                System.out.println("left: " + bfc.bytesInUse() + " bytes in use, closed " + bfc.isClosed());
            }
        }
    }

    /**
     * For a child JVM: holds all 10 of JavaCPP's native functions for ORT's {@code Free} callback
     * class, registers, gives them back, then registers twice more, each time making a tensor in
     * bfc4j memory and closing it; one line per step.
     */
    public static final class RegisterWithCallbacksTaken {
        private RegisterWithCallbacksTaken() {
        }

        /**
         * Runs the steps.
         *
         * @param args none
         */
        public static void main(String[] args) {
            org.bytedeco.javacpp.Loader.load(org.bytedeco.onnxruntime.global.onnxruntime.class);
            List<OrtAllocator.Free_OrtAllocator_Pointer> held = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                held.add(new OrtAllocator.Free_OrtAllocator_Pointer() {
                    @Override
                    public void call(OrtAllocator self, Pointer p) {
                    }
                });
            }
            try (BfcAllocator bfc = hostAllocator("callbacks_taken", 64L << 20)) {
                try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
                    System.out.println("register: made");
                } catch (Throwable t) {
                    System.out.println("register threw: " + t);
                }
                held.forEach(Pointer::close);
                for (int i = 0; i < 2; i++) {
                    try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
                        try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                                ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                            System.out.println("tensor: " + ort.stats().liveAllocations() + " live");
                        }
                        System.out.println("closed: " + ort.stats().liveAllocations() + " live");
                    } catch (Throwable t) {
                        System.out.println("register threw: " + t);
                    }
                }
                System.out.println("left: " + bfc.bytesInUse() + " bytes in use");
            }
        }
    }

    /**
     * JavaCPP makes 10 native functions per callback class for the whole process: where other
     * code held all 10 of ORT's {@code Free} class, the first register made its Free callback
     * without one, handed ORT a null function pointer, and the first free crashed the JVM
     * (SIGSEGV at address 0). Now it refuses, saying so, keeps none of its callbacks, and the
     * next register, once those are given back, works.
     */
    @Test
    void registerWithNoNativeFunctionLeftForACallbackRefusesAndTriesAgainNextTime() throws Exception {
        List<String> command = new ArrayList<>(List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin",
                "java").toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"),
                RegisterWithCallbacksTaken.class.getName()));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        assertThat(child.status()).as("the child's exit status (134: it crashed)\n" + out).isZero();
        List<String> lines = out.lines().filter(l -> l.matches("^(register|tensor|closed|left).*")).toList();
        assertThat(lines).as(out).containsExactly(
                "register threw: java.lang.IllegalStateException: cannot register a BfcOrtAllocator: JavaCPP has no"
                        + " native function left for callback class"
                        + " org.bytedeco.onnxruntime.OrtAllocator$Free_OrtAllocator_Pointer (it makes 10 per class"
                        + " for the whole process, and other code holds all 10 of this one): close some of those"
                        + " callbacks first",
                "tensor: 1 live", "closed: 0 live", "tensor: 1 live", "closed: 0 live", "left: 0 bytes in use");
    }

    /**
     * For a child JVM: the process's first register inside a JavaCPP {@code PointerScope}; a
     * tensor made on another thread (outside the scope) while it is open, closed after the scope
     * closed; then two more tensors, and one after registering again; one line per step.
     */
    public static final class RegisterInsideAPointerScope {
        private RegisterInsideAPointerScope() {
        }

        /**
         * Runs the steps.
         *
         * @param args none; or {@code deallocate}: the scope ends with {@code deallocate()}, which
         *     frees every pointer it took, whatever else retained them
         */
        public static void main(String[] args) throws Exception {
            try (BfcAllocator bfc = hostAllocator("scoped", 64L << 20)) {
                BfcOrtAllocator ort;
                Value[] made = new Value[1];
                try (org.bytedeco.javacpp.PointerScope scope = new org.bytedeco.javacpp.PointerScope()) {
                    ort = BfcOrtAllocator.register(bfc);
                    BfcOrtAllocator o = ort;
                    Thread other = new Thread(() -> made[0] = Value.CreateTensor(o.ortAllocator(),
                            new long[] {4, 100}, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT));
                    other.start();
                    other.join();
                    System.out.println("other thread's tensor: " + ort.stats().liveAllocations() + " live");
                    if (args.length == 1 && args[0].equals("deallocate")) {
                        scope.deallocate();   // frees what it took, whatever else holds it
                    }
                }
                made[0].close();   // ORT frees it through the Free callback
                System.out.println("scope closed, tensor closed: " + ort.stats().liveAllocations() + " live");
                for (int i = 0; i < 3; i++) {
                    if (i == 2) {
                        ort.close();
                        ort = BfcOrtAllocator.register(bfc);
                    }
                    try (Value x = Value.CreateTensor(ort.ortAllocator(), new long[] {4, 100}, 2,
                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)) {
                        x.GetTensorMutableDataFloat().put(399, 7f);
                        System.out.println("tensor: " + ort.stats().liveAllocations() + " live, "
                                + bfc.requestedSize(x.GetTensorMutableDataFloat().address()) + " bytes");
                    } catch (RuntimeException e) {
                        System.out.println("tensor threw: " + e);
                    }
                }
                ort.close();
                System.out.println("left: " + bfc.bytesInUse() + " bytes in use");
            }
        }
    }

    /**
     * JavaCPP's {@code PointerScope} takes every pointer with a deallocator made while it is open
     * on the thread, callbacks included, and releases them when it closes. The process's first
     * register made BfcOrtAllocator's four shared callbacks unretained, so where it ran inside a
     * scope, closing the scope released them for the life of the process: every later allocation
     * ONNX Runtime asked of any BfcOrtAllocator failed with "Unknown exception", and a free of
     * memory ORT held then (its Free callback throwing inside ORT's release of a value) killed the
     * JVM ({@code terminate called after throwing an instance of 'JavaCPP_exception'}, exit 134).
     */
    @Test
    void aPointerScopeAroundTheFirstRegisterDoesNotTakeTheCallbacksWithIt() throws Exception {
        registerInsideAPointerScope();
    }

    /**
     * As {@link #aPointerScopeAroundTheFirstRegisterDoesNotTakeTheCallbacksWithIt}, the scope
     * ending with {@code PointerScope.deallocate()}, which frees every pointer it took whatever
     * their reference counts: the callbacks, retained but still the scope's, were freed, and the
     * JVM died at the next free ORT made (exit 134).
     */
    @Test
    void aPointerScopeDeallocatedAroundTheFirstRegisterDoesNotTakeTheCallbacksWithIt() throws Exception {
        registerInsideAPointerScope("deallocate");
    }

    /** Runs {@link RegisterInsideAPointerScope} with {@code args} in a child JVM and checks its lines. */
    private static void registerInsideAPointerScope(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin",
                "java").toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"),
                RegisterInsideAPointerScope.class.getName()));
        command.addAll(List.of(args));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        assertThat(child.status()).as("the child's exit status (134: it crashed)\n" + out).isZero();
        List<String> lines = out.lines().filter(l -> l.matches("^(other|scope|tensor|left).*")).toList();
        assertThat(lines).as(out).containsExactly("other thread's tensor: 1 live",
                "scope closed, tensor closed: 0 live", "tensor: 1 live, 1600 bytes", "tensor: 1 live, 1600 bytes",
                "tensor: 1 live, 1600 bytes", "left: 0 bytes in use");
    }

    /**
     * For a child JVM: an {@code Env} with global thread pools created before the first register
     * ({@code env-first}) or after it ({@code register-first}), then a session of
     * all-MiniLM-L6-v2 that uses the global thread pools; one line saying whether it was made.
     */
    public static final class EnvAndRegisterInOrder {
        private EnvAndRegisterInOrder() {
        }

        /**
         * Runs the steps.
         *
         * @param args {@code env-first} or {@code register-first}
         */
        public static void main(String[] args) {
            boolean registerFirst = args[0].equals("register-first");
            try (BfcAllocator bfc = hostAllocator("env_order", 256L << 20)) {
                BfcOrtAllocator ort = registerFirst ? BfcOrtAllocator.register(bfc) : null;
                try (org.bytedeco.onnxruntime.ThreadingOptions threads = new org.bytedeco.onnxruntime.ThreadingOptions()
                        .SetGlobalIntraOpNumThreads(2);
                        Env env = new Env(threads.asOrtThreadingOptions(), ORT_LOGGING_LEVEL_WARNING, "app")) {
                    if (ort == null) {
                        ort = BfcOrtAllocator.register(bfc);
                    }
                    org.bytedeco.onnxruntime.SessionOptions options = EmbeddingSession.options(true);
                    options.DisablePerSessionThreads();
                    try (EmbeddingSession session = new EmbeddingSession(env, MODEL, options)) {
                        System.out.println("session: made");
                    } catch (RuntimeException e) {
                        System.out.println("session: failed: " + e.getMessage());
                    }
                }
                ort.close();
            }
        }
    }

    /**
     * What integrations.md says of the order of creation: an {@code Env} created before the first
     * register keeps its settings (global thread pools here), while one created after it is the
     * environment register created, without them.
     */
    @Test
    void anEnvCreatedAfterTheFirstRegisterHasRegistersSettings() throws Exception {
        List<String> seen = new ArrayList<>();
        for (String order : List.of("env-first", "register-first")) {
            List<String> command = new ArrayList<>(List.of(java.nio.file.Path.of(System.getProperty("java.home"),
                    "bin", "java").toString()));
            if (Runtime.version().feature() >= 22) {
                command.add("--enable-native-access=ALL-UNNAMED");
            }
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), EnvAndRegisterInOrder.class.getName(),
                    order));
            ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(120));
            String out = child.output();
            System.out.println(out);
            assertThat(child.status()).as(out).isZero();
            seen.add(order + " " + out.lines().filter(l -> l.startsWith("session: ")).findFirst().orElse(out));
        }
        assertThat(seen.get(0)).isEqualTo("env-first session: made");
        assertThat(seen.get(1)).startsWith("register-first session: failed: ")
                .contains("the env must be created with the the CreateEnvWithGlobalThreadPools API");
    }

    /**
     * Without ONNX Runtime's natives for this platform, register(...) throws the CUDA provider's
     * sentence as an IllegalStateException (not an UnsatisfiedLinkError, then a
     * NoClassDefFoundError of its callback class), every time, and the allocator is left as it was.
     */
    @Test
    void withoutOnnxRuntimesNativesRegisterSaysWhatIsMissingEveryTime() throws Exception {
        String out = WithoutOrtNatives.run(PrintRegisterFailures.class);
        String sentence = WithoutOrtNatives.SENTENCE;
        assertRegisterFailedTwiceSaying(out.lines().toList(), sentence, out);
    }

    /**
     * Without the natives of the presets ORT's presets inherit (OpenCL, oneDNN), the sentence
     * names their jar, not ORT's (which is there).
     */
    @Test
    void withoutTheNativesOfPresetsOrtLoadsTooRegisterNamesTheirJar() throws Exception {
        for (String[] missing : new String[][] {{"opencl", "OpenCL"}, {"dnnl", "dnnl"}}) {
            String out = WithoutOrtNatives.runWithout(missing[0], PrintRegisterFailures.class);
            String sentence = "ONNX Runtime's JNI library could not be loaded (Could not find jni" + missing[1]
                    + " in class, module, and library paths): add org.bytedeco:" + missing[0] + " with this platform's"
                    + " classifier (ONNX Runtime's presets load its natives too), see docs/integrations.md.";
            assertRegisterFailedTwiceSaying(out.lines().toList(), sentence, out);
        }
    }

    /**
     * As above, where the application touched ORT's presets first: JavaCPP's error is then only
     * the cause of {@code Could not initialize class}, quoted in an ExceptionInInitializerError's
     * message; the sentence quotes the error, not the wrapping.
     */
    @Test
    void withoutOnnxRuntimesNativesTouchedFirstRegisterStillSaysWhatIsMissing() throws Exception {
        String out = WithoutOrtNatives.run(PrintRegisterFailures.class, "touch");
        List<String> lines = out.lines().toList();
        assertThat(lines).as(out).hasSize(5);
        assertThat(lines.get(0)).isEqualTo("touched first, failed with java.lang.UnsatisfiedLinkError");
        String reason = lines.get(3).substring("reason: ".length());
        assertThat(reason).as(out)
                .startsWith("ONNX Runtime's JNI library could not be loaded (no jnionnxruntime in java.library.path: ")
                .endsWith("): add org.bytedeco:onnxruntime with this platform's classifier (linux-x86_64-gpu for the"
                        + " CUDAExecutionProvider, with -Dorg.bytedeco.javacpp.platform.extension=-gpu), see"
                        + " docs/integrations.md.")
                .doesNotContain("Exception", "[in thread");
        assertRegisterFailedTwiceSaying(lines.subList(1, 5), reason, out);
    }

    /**
     * What {@link PrintRegisterFailures} printed: {@code register} refused twice with the
     * sentence, the provider's reason the same, and nothing left in use, the allocator open.
     */
    private static void assertRegisterFailedTwiceSaying(List<String> lines, String sentence, String out) {
        assertThat(lines).as(out).containsExactly(
                "register threw: java.lang.IllegalStateException: " + sentence,
                "register threw: java.lang.IllegalStateException: " + sentence,
                "reason: " + sentence,
                "left: 0 bytes in use, closed false");
    }

    /**
     * The advice of a refused close() of the bfc4j allocator speaks of ONNX Runtime only while a
     * BfcOrtAllocator over it is registered: once that is closed (a failed register leaves
     * nothing), memory still live is the caller's own, and the allocator's own advice is back.
     */
    @Test
    void aClosedBfcOrtAllocatorTakesItsAdviceBack() {
        try (BfcAllocator bfc = hostAllocator("ort_advice", 1 << 20)) {
            long own = bfc.allocateRawOrThrow(64, 256);
            try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {   // closed even if this fails
                assertThatThrownBy(bfc::close).hasMessageContaining("ONNX Runtime (BfcOrtAllocator 'ort_advice') may"
                        + " hold").message().doesNotContain("ClosePolicy.FORCE");
            }
            assertThatThrownBy(bfc::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closePolicy(ClosePolicy.FORCE)").message().doesNotContain("ONNX Runtime");
            bfc.deallocateRaw(own);
        }
    }

    @Test
    void registerRejectsWhatCouldCorruptMemory() {
        registerRefuses(BfcAllocator.builder().name("forced").memoryLimit(1 << 20)
                .closePolicy(ClosePolicy.FORCE).subAllocator(new AlignedHostSubAllocator()).build())
                .hasMessageStartingWith("closePolicy=FORCE of allocator 'forced' (expected: REFUSE");
        registerRefuses(BfcAllocator.builder().name("simulated").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, true)).build())
                .hasMessageContaining("of allocator 'simulated' (expected: HOST_PAGEABLE or HOST_PINNED");
        assertThatThrownBy(() -> BfcOrtAllocator.register(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("bfc=null");
        BfcAllocator closed = hostAllocator("closed", 1 << 20);
        closed.close();
        registerRefuses(closed).hasMessageStartingWith("allocator 'closed' is closed (expected: an open allocator");
        registerRefuses(ShardedBfcAllocator.builder().name("forced-shards").memoryLimit(1 << 20)
                .closePolicy(ClosePolicy.FORCE).subAllocator(new AlignedHostSubAllocator()).build())
                .hasMessageStartingWith("closePolicy=FORCE of allocator 'forced-shards' (expected: REFUSE");
        registerRefuses(ShardedBfcAllocator.builder().name("simulated-shards").memoryLimit(1 << 20)
                .subAllocator(new SimSubAllocator(0x7f0000000000L, 1L << 30, 0, true)).build())
                .hasMessageContaining("of allocator 'simulated-shards' (expected: HOST_PAGEABLE or HOST_PINNED");
    }

    /** Registering {@code a} throws IllegalArgumentException; {@code a} is closed afterwards. */
    private static AbstractThrowableAssert<?, ? extends Throwable> registerRefuses(MemoryAllocator a) {
        try (a) {
            return assertThatThrownBy(() -> BfcOrtAllocator.register(a)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aShardedAllocatorServesOrtAndSaysWhenItIsOutOfMemory() {
        try (HuggingFaceTokenizer long256 = MODEL.fixedLengthTokenizer(256);
                HuggingFaceTokenizer short32 = MODEL.fixedLengthTokenizer(32);
                ShardedBfcAllocator sharded = ShardedBfcAllocator.builder().name("ort_shards").memoryLimit(96L << 20)
                        .subAllocator(new AlignedHostSubAllocator()).shards(2).build();
                BfcOrtAllocator ort = BfcOrtAllocator.register(sharded);
                EmbeddingSession arena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            assertThat(ort.allocator()).isSameAs(sharded);
            Encoding[] small = batch(short32, 4, 40);
            Encoding[] big = batch(long256, 32, 300);   // 96 MiB of attention scores alone
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                long weights = sharded.bytesInUse();
                assertThat(weights).as("the weights live in the shards").isGreaterThan(1L << 20);
                assertThatThrownBy(() -> session.run(big))
                        .isInstanceOf(RuntimeException.class)
                        .hasMessageContaining("bfc4j: ONNX Runtime asked for ")
                        .hasMessageContaining("Allocator 'ort_shards' is out of memory: tried to allocate ")
                        .hasMessageContaining("the memory limit is 96.00MiB")
                        .hasMessageContaining("The figures are those of all 2 shards together");
                assertThat(ort.stats().failedAllocs()).isPositive();
                assertThat(sharded.bytesInUse()).as("nothing of the failed run is left").isEqualTo(weights);
                for (int i = 0; i < 3; i++) {
                    assertThat(RealModelEmbeddingsTest.bits(session.run(small).hidden()))
                            .isEqualTo(RealModelEmbeddingsTest.bits(arena.run(small).hidden()));
                }
            }
            assertThat(sharded.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            sharded.shards().forEach(BfcAllocator::checkInvariants);
        }
    }

    @Test
    void onlyOneRegistrationAtATimeAndCloseIsIdempotent() {
        try (BfcAllocator a = hostAllocator("first", 8 << 20); BfcAllocator b = hostAllocator("second", 8 << 20)) {
            BfcOrtAllocator first = BfcOrtAllocator.register(a);
            assertThatThrownBy(() -> BfcOrtAllocator.register(b))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("a BfcOrtAllocator over 'first' is already registered");
            first.close();
            first.close();
            assertThat(first.isClosed()).isTrue();
            try (BfcOrtAllocator second = BfcOrtAllocator.register(b)) {
                assertThat(second.allocator()).isSameAs(b);
            }
        }
    }

    /** Registers, allocates, frees and closes; only weak references and the struct come back. */
    private static Object[] registerUseAndClose() {
        BfcAllocator bfc = hostAllocator("forgotten", 8 << 20);
        BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
        OrtAllocator struct = ort.ortAllocator();
        struct.Free().call(struct, struct.Alloc().call(struct, 1000));
        ort.close();
        bfc.close();
        return new Object[] {new WeakReference<>(ort), new WeakReference<>(bfc), struct};
    }

    @Test
    @SuppressWarnings("unchecked")
    void aClosedInstanceAndItsAllocatorAreNotKeptReachable() throws InterruptedException {
        Object[] left = registerUseAndClose();
        WeakReference<BfcOrtAllocator> closedOrt = (WeakReference<BfcOrtAllocator>) left[0];
        WeakReference<BfcAllocator> closedBfc = (WeakReference<BfcAllocator>) left[1];
        OrtAllocator struct = (OrtAllocator) left[2];
        GarbageCollection.gcUntil("the closed BfcOrtAllocator and its BfcAllocator collected",
                () -> closedOrt.get() == null && closedBfc.get() == null);
        // The native struct stays valid: a late call fails cleanly instead of touching freed memory.
        assertThat(struct.Info().call(struct)).as("Info still answers").isNotNull();
        assertThatThrownBy(() -> struct.Alloc().call(struct, 100)).isInstanceOf(RuntimeException.class);
    }

    /**
     * Memory bfc4j served but ONNX Runtime never received (something threw between the two: an
     * {@code OutOfMemoryError} making the returned pointer, here thrown by the listener) is given
     * back: nothing else would ever free it, and the allocator could not be closed cleanly.
     */
    @Test
    void memoryServedButNeverHandedToOrtIsGivenBack() {
        try (BfcAllocator bfc = hostAllocator("never_handed", 8 << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            OrtAllocator struct = ort.ortAllocator();
            ort.listener(new BfcOrtAllocator.CallListener() {
                @Override
                public void allocated(long size, long ptr, boolean reserve) {
                    if (ptr != 0) {
                        throw new OutOfMemoryError("no heap left for the pointer");
                    }
                }

                @Override
                public void freed(long ptr) {
                }
            });
            // What JavaCPP makes of an Error thrown in a callback: a RuntimeException, the cause logged.
            assertThatThrownBy(() -> struct.Alloc().call(struct, 4096)).isInstanceOf(RuntimeException.class);
            ort.listener(null);
            assertThat(bfc.bytesInUse()).as("the allocation ONNX Runtime never got").isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            ort.close();
        }
    }

    @Test
    void closeWaitsForAnAllocationInFlightAndThenRefuses() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (BfcAllocator bfc = hostAllocator("in_flight", 8 << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            OrtAllocator struct = ort.ortAllocator();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            ort.listener(new BfcOrtAllocator.CallListener() {
                @Override
                public void allocated(long size, long ptr, boolean reserve) {
                    inside.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void freed(long ptr) {
                }
            });
            // An allocation stopped between bfc4j's answer and its return to ORT.
            Future<Long> alloc = threads.submit(() -> struct.Alloc().call(struct, 4096).address());
            assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
            AtomicReference<Thread> closing = new AtomicReference<>();
            Future<?> close = threads.submit(() -> {
                closing.set(Thread.currentThread());
                ort.close();
            });
            ThreadWatch.awaitWaitingIn(closing::get, close, BfcOrtAllocator.class.getName(), "awaitDrained",
                    "for the allocation in flight");
            assertThat(close.isDone()).as("close() waits for the allocation in flight").isFalse();
            release.countDown();
            long ptr = alloc.get(10, TimeUnit.SECONDS);
            assertThatThrownBy(() -> close.get(10, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("ONNX Runtime still holds 1 allocation from allocator 'in_flight'");
            assertThat(ort.isClosed()).isFalse();
            ort.listener(null);
            // Still registered and working: the refused close changed nothing.
            assertThat(bfc.requestedSize(ptr)).isEqualTo(4096);
            struct.Free().call(struct, new Pointer() {
                {
                    address = ptr;
                }
            });
            ort.close();
            assertThat(bfc.bytesInUse()).isZero();
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * close() waiting for an allocation that itself waits for memory (allowRetryOnFailure: up to
     * 10 s) sleeps until it returns; it spun on a core meanwhile, holding the class lock.
     */
    @Test
    void closeWaitsForAnAllocationWaitingForMemoryWithoutSpinning() throws Exception {
        try (BfcAllocator bfc = BfcAllocator.builder().name("retrying").memoryLimit(1 << 20)
                .allowRetryOnFailure(true).subAllocator(new AlignedHostSubAllocator()).build()) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            OrtAllocator struct = ort.ortAllocator();
            long held = bfc.allocateRaw(BfcOrtAllocator.ALIGNMENT, 768 << 10);   // the application's, not ORT's
            AtomicReference<Object> allocated = new AtomicReference<>();
            Thread alloc = new Thread(() -> {
                try {
                    allocated.set(struct.Alloc().call(struct, 512 << 10).address());
                } catch (Throwable t) {
                    allocated.set(t);
                }
            }, "ort-alloc");
            AtomicReference<Throwable> closed = new AtomicReference<>();
            Thread close = new Thread(() -> {
                try {
                    ort.close();
                } catch (Throwable t) {
                    closed.set(t);
                }
            }, "ort-close");
            try {
                alloc.start();
                awaitState(alloc, Thread.State.TIMED_WAITING, "the allocation waits for memory in bfc4j's retry loop");
                close.start();
                awaitState(close, Thread.State.WAITING, "close() waits for the allocation in flight, not spinning");
                assertThat(close.getStackTrace()).as("waiting in close()").anyMatch(f ->
                        f.getClassName().equals(BfcOrtAllocator.class.getName()) && f.getMethodName().equals("close"));
            } finally {
                bfc.deallocateRaw(held);   // the waiting allocation is served, then close() goes on
                alloc.join(TimeUnit.SECONDS.toMillis(20));
                close.join(TimeUnit.SECONDS.toMillis(20));
                if (allocated.get() instanceof Long ptr) {
                    struct.Free().call(struct, new Pointer() {
                        {
                            address = ptr;
                        }
                    });
                }
                ort.close();
            }
            assertThat(allocated.get()).as("served after the free").isInstanceOf(Long.class).isNotEqualTo(0L);
            assertThat(closed.get()).as("close() after the wait: refused, ORT held what it was served")
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("ONNX Runtime still holds 1 allocation from allocator 'retrying'");
            assertThat(ort.isClosed()).isTrue();
            assertThat(bfc.bytesInUse()).isZero();
        }
    }

    /** Waits until {@code t} is in {@code state}, up to 5 s (well under the retry loop's 10 s). */
    private static void awaitState(Thread t, Thread.State state, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (t.getState() != state && System.nanoTime() - deadline < 0) {
            Thread.sleep(1);
        }
        assertThat(t.getState()).as(what + "; " + t.getName() + " at " + Arrays.toString(t.getStackTrace()))
                .isEqualTo(state);
    }

    @Test
    void noAllocationReachesTheAllocatorAfterASuccessfulClose() throws Exception {
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        Logger log = Logger.getLogger(BfcOrtAllocator.class.getName());
        boolean useParent = log.getUseParentHandlers();
        log.setUseParentHandlers(false);   // the late calls' errors are expected here
        try (BfcAllocator bfc = hostAllocator("racing", 64L << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            OrtAllocator struct = ort.ortAllocator();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger refusedAllocations = new AtomicInteger();
            List<Future<Integer>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                workers.add(pool.submit(() -> {
                    int failures = 0;
                    while (!stop.get()) {
                        Pointer p;
                        try {
                            p = struct.Alloc().call(struct, 1000);
                        } catch (RuntimeException closed) {
                            failures++;
                            refusedAllocations.incrementAndGet();
                            continue;
                        }
                        struct.Free().call(struct, p);
                    }
                    return failures;
                }));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            int refused = 0;
            while (true) {
                try {
                    ort.close();
                    break;
                } catch (IllegalStateException live) {
                    refused++;
                    assertThat(System.nanoTime()).as("close() succeeded within 20 s").isLessThan(deadline);
                }
            }
            long allocationsAtClose = bfc.memoryStats().allocationsTotal();
            assertThat(bfc.bytesInUse()).as("nothing live at a successful close").isZero();
            // The workers go on calling Alloc, and fail: wait until one has since the close (a
            // failure counted before it may be of a close that was refused, or none may be).
            int refusedAtClose = refusedAllocations.get();
            long lateDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (refusedAllocations.get() == refusedAtClose) {
                assertThat(System.nanoTime() - lateDeadline).as("a worker's Alloc refused after the close, within 30 s")
                        .isNegative();
                Thread.sleep(1);
            }
            stop.set(true);
            int failures = 0;
            for (Future<Integer> w : workers) {
                failures += w.get(10, TimeUnit.SECONDS);
            }
            System.out.println("close() refused " + refused + " times, then succeeded; " + failures
                    + " allocations failed after it");
            assertThat(failures).isPositive();
            assertThat(bfc.memoryStats().allocationsTotal()).as("no allocation after close").isEqualTo(allocationsAtClose);
            assertThat(bfc.bytesInUse()).isZero();
            bfc.checkInvariants();
        } finally {
            pool.shutdownNow();
            log.setUseParentHandlers(useParent);
        }
    }

    @Test
    void callbacksThroughTheNativeFunctionPointers() {
        List<String> logged = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                logged.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger(BfcOrtAllocator.class.getName());
        log.addHandler(capture);
        try (BfcAllocator bfc = hostAllocator("callbacks", 8 << 20)) {
            BfcOrtAllocator ort = BfcOrtAllocator.register(bfc);
            var struct = ort.ortAllocator();
            assertThat(struct.version()).isEqualTo(22);
            assertThat(struct.Info().call(struct).address()).isEqualTo(ort.memoryInfo().address());

            Pointer p = struct.Alloc().call(struct, 1000);
            Pointer r = struct.Reserve().call(struct, 3000);
            assertThat(p.address() % BfcOrtAllocator.ALIGNMENT).isZero();
            assertThat(bfc.requestedSize(p.address())).isEqualTo(1000);
            assertThat(bfc.requestedSize(r.address())).isEqualTo(3000);
            assertThat(ort.stats().liveAllocations()).isEqualTo(2);
            assertThat(struct.Alloc().call(struct, 0)).as("0 bytes: null, as ORT's CPU allocator").isNull();

            // Out of memory: thrown as a C++ exception (as ORT's own allocators do), which
            // JavaCPP's native call() turns back into a RuntimeException here (its message is
            // lost on this path: the presets only translate Ort::Exception).
            assertThatThrownBy(() -> struct.Alloc().call(struct, 64L << 20))
                    .isInstanceOf(RuntimeException.class);
            assertThat(ort.stats().failedAllocs()).isEqualTo(1);
            assertThat(ort.stats().callbackErrors()).isZero();

            // A free bfc4j rejects (never allocated) is logged and counted, not thrown.
            struct.Free().call(struct, new Pointer() {
                {
                    address = 0x1000;
                }
            });
            assertThat(ort.stats().callbackErrors()).isEqualTo(1);
            assertThat(ort.stats().lastError()).contains("Free(0x1000) on 'callbacks' failed");
            assertThat(ort.stats().liveAllocations()).isEqualTo(2);

            struct.Free().call(struct, p);
            assertThatThrownBy(ort::close).isInstanceOf(IllegalStateException.class);
            struct.Free().call(struct, r);
            ort.close();
            assertThat(ort.isClosed()).isTrue();

            // After close: allocation fails, and the log says why.
            assertThatThrownBy(() -> struct.Alloc().call(struct, 100)).isInstanceOf(RuntimeException.class);
            assertThat(logged).last().asString().contains("Alloc(100) for an OrtAllocator at 0x")
                    .contains("its BfcOrtAllocator was closed while a session created with it still runs");
            assertThat(bfc.bytesInUse()).isZero();
        } finally {
            log.removeHandler(capture);
        }
    }

    /**
     * Free never throws into ORT, even where logging its error fails (a handler that throws, as
     * a test's "fail on SEVERE" handler does): the exception of the log reached ORT as a C++
     * exception out of {@code Free}, which ORT calls where none may pass (releasing a value), so
     * the process ended. The error is still counted and kept in the statistics. The CUDA
     * provider's free function likewise.
     */
    @Test
    void aLogHandlerThatThrowsDoesNotMakeFreeThrowIntoOrt() {
        Handler throwing = new Handler() {
            @Override
            public void publish(LogRecord r) {
                throw new IllegalStateException("handler refuses: " + r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Pointer notAllocated = new Pointer() {
            {
                address = 0x1000;
            }
        };
        Logger log = Logger.getLogger(BfcOrtAllocator.class.getName());
        Logger cudaLog = Logger.getLogger(BfcCudaProvider.class.getName());
        log.addHandler(throwing);
        cudaLog.addHandler(throwing);
        try (BfcAllocator bfc = hostAllocator("throwing_log", 8 << 20)) {
            try (BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
                var struct = ort.ortAllocator();
                struct.Free().call(struct, notAllocated);   // threw a RuntimeException (the C++ exception)
                assertThat(ort.stats().callbackErrors()).isOne();
                assertThat(ort.stats().lastError()).contains("Free(0x1000) on 'throwing_log' failed");
            }
            BfcCudaProvider cuda = BfcCudaProvider.bind(BfcCudaProviderTest.hostStandIn(bfc),
                    (org.bytedeco.onnxruntime.OrtApi) null);
            try {
                PointerPointer<Pointer> cell = new PointerPointer<Pointer>(1).put(0, new Pointer() {
                    {
                        address = Long.parseUnsignedLong(cuda.providerOptions().get("gpu_external_free"));
                    }
                });
                new org.bytedeco.onnxruntime.OrtThreadWorkerFn(cell).call(notAllocated);
                assertThat(cuda.stats().callbackErrors()).isOne();
                assertThat(cuda.stats().lastError()).contains("gpu_external_free(0x1000) on 'throwing_log' failed");
                cell.close();
            } finally {
                cuda.close();
            }
            assertThat(bfc.bytesInUse()).isZero();
        } finally {
            log.removeHandler(throwing);
            cudaLog.removeHandler(throwing);
        }
    }
}
