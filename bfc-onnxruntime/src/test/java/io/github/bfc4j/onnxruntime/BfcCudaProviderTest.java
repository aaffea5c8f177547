package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.cuda.CudaProbe;
import io.github.bfc4j.cuda.CudaUnavailableException;
import io.github.bfc4j.cuda.GpuBfcAllocators;
import io.github.bfc4j.cuda.GpuBfcOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.onnxruntime.OrtApi;
import org.bytedeco.onnxruntime.OrtCustomOp;
import org.bytedeco.onnxruntime.OrtThreadWorkerFn;
import org.junit.jupiter.api.Test;

/**
 * The CUDA provider wiring without a GPU: what fails and how, and the three C functions called
 * through the addresses ORT would be given (host memory from a BFC allocator stands in for the
 * device).
 */
class BfcCudaProviderTest {

    /** Forwards every call to another; a test overrides the one it changes. */
    private static class Forwarding implements BfcCudaProvider.DeviceMemory {
        private final BfcCudaProvider.DeviceMemory to;

        Forwarding(BfcCudaProvider.DeviceMemory to) {
            this.to = to;
        }

        @Override
        public long allocate(long bytes) {
            return to.allocate(bytes);
        }

        @Override
        public void free(long ptr) {
            to.free(ptr);
        }

        @Override
        public int deviceId() {
            return to.deviceId();
        }

        @Override
        public String name() {
            return to.name();
        }

        @Override
        public boolean isClosed() {
            return to.isClosed();
        }
    }

    /** Host memory behind the callbacks, as a GPU allocator would be. */
    static BfcCudaProvider.DeviceMemory hostStandIn(BfcAllocator bfc) {
        return hostStandIn(bfc, 0);
    }

    /** Host memory behind the callbacks, as the GPU allocator of device {@code deviceId} would be. */
    private static BfcCudaProvider.DeviceMemory hostStandIn(BfcAllocator bfc, int deviceId) {
        return new BfcCudaProvider.DeviceMemory() {
            @Override
            public long allocate(long bytes) {
                return bfc.allocateRaw(BfcOrtAllocator.ALIGNMENT, bytes);
            }

            @Override
            public void free(long ptr) {
                bfc.deallocateRaw(ptr);
            }

            @Override
            public int deviceId() {
                return deviceId;
            }

            @Override
            public String name() {
                return bfc.name();
            }

            @Override
            public boolean isClosed() {
                return bfc.isClosed();
            }

            @Override
            public Object allocator() {
                return bfc;
            }
        };
    }

    /**
     * create() refuses memory whose allocator is closed, as BfcOrtAllocator.register does, before
     * it looks for ORT's CUDA provider: it accepted a closed GpuBfcAllocator, and every
     * allocation ORT then asked of it failed.
     */
    @Test
    void createRefusesAClosedAllocator() {
        BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("closed_stand_in", 8 << 20);
        bfc.close();
        assertThatThrownBy(() -> BfcCudaProvider.create(hostStandIn(bfc)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("allocator 'closed_stand_in' is closed (expected: an open allocator: every allocation"
                        + " ONNX Runtime asked of it would fail)");
    }

    /** Native cells the wrappers below point into: kept reachable, else JavaCPP frees them. */
    private final List<PointerPointer<Pointer>> cells = new ArrayList<>();

    /**
     * What ORT holds: a C function address. JavaCPP calls a function through a struct whose first
     * field it is, so the wrapper gets a cell holding the address.
     */
    private PointerPointer<Pointer> function(String decimalAddress) {
        PointerPointer<Pointer> cell = new PointerPointer<Pointer>(1).put(0, at(Long.parseUnsignedLong(decimalAddress)));
        cells.add(cell);
        return cell;
    }

    private static Pointer at(long value) {
        return new Pointer() {
            {
                address = value;
            }
        };
    }

    @Test
    void withoutACudaBuildOfOnnxRuntimeCreateSaysWhatIsMissing() {
        assumeFalse(java.util.Arrays.stream(org.bytedeco.onnxruntime.global.onnxruntime.GetAvailableProviders().get())
                        .anyMatch(p -> p.getString().equals(BfcCudaProvider.CUDA_EXECUTION_PROVIDER)),
                "skipped: this ONNX Runtime build has the CUDA provider (-Pgpu), so nothing is missing");
        String reason = BfcCudaProvider.unavailableReason();
        System.out.println("unavailableReason: " + reason);
        assertThat(reason)
                .startsWith("This ONNX Runtime build has no CUDAExecutionProvider (it has [")
                .contains("CPUExecutionProvider")
                .contains("classifier linux-x86_64-gpu")
                .contains("-Dorg.bytedeco.javacpp.platform.extension=-gpu");
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("stand_in", 8 << 20)) {
            assertThatThrownBy(() -> BfcCudaProvider.create(hostStandIn(bfc)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage(reason);
        }
        assertThatThrownBy(() -> BfcCudaProvider.create((io.github.bfc4j.cuda.GpuBfcAllocator) null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("gpu=null (expected:");
    }

    /** For a child JVM: unavailableReason() twice, then create()'s failure, one per line. */
    public static final class PrintReasons {
        private PrintReasons() {
        }

        /**
         * Calls the entry points.
         *
         * @param args none
         */
        public static void main(String[] args) {
            for (int i = 0; i < 2; i++) {
                try {
                    System.out.println("reason: " + BfcCudaProvider.unavailableReason());
                } catch (Throwable t) {
                    System.out.println("reason threw: " + t);
                }
            }
            try {
                BfcCudaProvider.create(new BfcCudaProvider.DeviceMemory() {
                    @Override
                    public long allocate(long bytes) {
                        return 0;
                    }

                    @Override
                    public void free(long ptr) {
                    }

                    @Override
                    public int deviceId() {
                        return 0;
                    }

                    @Override
                    public String name() {
                        return "none";
                    }
                });
                System.out.println("create: made");
            } catch (Throwable t) {
                System.out.println("create threw: " + t);
            }
        }
    }

    /**
     * Without ONNX Runtime's natives for this platform, unavailableReason() gives a sentence (not
     * an UnsatisfiedLinkError, then a NoClassDefFoundError) and create() throws it.
     */
    @Test
    void withoutOnnxRuntimesNativesTheReasonIsASentenceEveryTime() throws Exception {
        String out = WithoutOrtNatives.run(PrintReasons.class);
        String sentence = WithoutOrtNatives.SENTENCE;
        assertThat(out.lines().filter(l -> l.contains(": ")).toList()).as(out).containsExactly(
                "reason: " + sentence, "reason: " + sentence,
                "create threw: java.lang.IllegalStateException: " + sentence);
    }

    @Test
    void withoutAGpuTheGpuAllocatorItselfCannotBeMade() {
        assumeFalse(CudaProbe.availability().isUsable(),
                "skipped: a usable CUDA GPU is here, so the GPU allocator can be made (BfcCudaProviderGpuTest runs on it)");
        assertThatThrownBy(() -> GpuBfcAllocators.create(0, GpuBfcOptions.builder().build()))
                .isInstanceOf(CudaUnavailableException.class)
                .hasMessageStartingWith("No usable CUDA GPU");
    }

    @Test
    void theThreeFunctionsOrtWouldCallReachTheAllocator() {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("device_stand_in", 8 << 20)) {
            BfcCudaProvider provider = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
            try {
                var options = provider.providerOptions();
                assertThat(options).containsOnlyKeys("device_id", "gpu_external_alloc", "gpu_external_free",
                        "gpu_external_empty_cache");
                assertThat(options.get("device_id")).isEqualTo("0");
                assertThat(List.of(options.get("gpu_external_alloc"), options.get("gpu_external_free"),
                        options.get("gpu_external_empty_cache"))).doesNotHaveDuplicates().doesNotContain("0");

                // Call the raw C functions at those addresses, as ORT's CUDAExternalAllocator would.
                var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(function(options.get("gpu_external_alloc")));
                var free = new OrtThreadWorkerFn(function(options.get("gpu_external_free")));
                var emptyCache = new OrtApi.BytePointer_GetBuildInfoString(function(options.get("gpu_external_empty_cache")));

                BytePointer p = alloc.call(new OrtCustomOp(at(5000)));
                assertThat(p).isNotNull();
                assertThat(bfc.requestedSize(p.address())).as("the size arrived as the argument").isEqualTo(5000);
                assertThat(provider.stats().liveAllocations()).isEqualTo(1);
                assertThat(alloc.call(new OrtCustomOp(at(64L << 20)))).as("out of memory: null").isNull();
                assertThat(provider.stats().failedAllocs()).isEqualTo(1);
                assertThat(provider.stats().lastError()).isEqualTo("'device_stand_in' could not allocate 67108864 bytes");
                assertThat(alloc.call(null)).as("0 bytes").isNull();

                assertThatThrownBy(provider::close).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("still holds 1 allocation from 'device_stand_in'");
                free.call(p);
                assertThat(bfc.bytesInUse()).isZero();
                free.call(at(0x1000));   // not ours: logged, counted, not thrown
                assertThat(provider.stats().callbackErrors()).isEqualTo(1);
                assertThat(provider.stats().lastError()).contains("gpu_external_free(0x1000) on 'device_stand_in' failed");
                emptyCache.call();
                assertThat(provider.stats().emptyCacheCalls()).isEqualTo(1);
                assertThat(provider.stats().allocCalls()).isEqualTo(3);
                assertThat(provider.stats().freeCalls()).isEqualTo(2);
            } finally {
                provider.close();
            }
            // A closed provider's functions answer null and return nothing.
            var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(
                    function(provider.providerOptions().get("gpu_external_alloc")));
            assertThat(alloc.call(new OrtCustomOp(at(100)))).isNull();
            assertThat(bfc.bytesInUse()).isZero();
            assertThatThrownBy(provider::options).isInstanceOf(IllegalStateException.class)
                    .hasMessage("BfcCudaProvider over 'device_stand_in' is closed");
        }
    }

    @Test
    void memoryServedButNeverHandedToOrtIsGivenBack() {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("never_handed", 8 << 20)) {
            BfcCudaProvider provider = BfcCudaProvider.bind(new Forwarding(hostStandIn(bfc)) {
                @Override
                public BytePointer handedToOrt(long ptr) {
                    throw new OutOfMemoryError("no heap left for the pointer");
                }
            }, (OrtApi) null);
            try {
                var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(
                        function(provider.providerOptions().get("gpu_external_alloc")));
                assertThat(alloc.call(new OrtCustomOp(at(4096)))).as("ORT gets null").isNull();
                assertThat(bfc.bytesInUse()).as("the allocation ONNX Runtime never got").isZero();
                assertThat(provider.stats().liveAllocations()).isZero();
                assertThat(provider.stats().failedAllocs()).isEqualTo(1);
                assertThat(provider.stats().lastError())
                        .isEqualTo("gpu_external_alloc(4096) on 'never_handed' failed: java.lang.OutOfMemoryError:"
                                + " no heap left for the pointer");
            } finally {
                if (provider.stats().liveAllocations() == 0) {   // else the failed assertion is the news
                    provider.close();
                }
            }
        }
    }

    @Test
    void anAllocationServedWhileCloseRunsIsGivenBackNotHandedToOrt() throws Exception {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("closed_meanwhile", 8 << 20)) {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            BfcCudaProvider provider = BfcCudaProvider.bind(new Forwarding(hostStandIn(bfc)) {
                @Override
                public long allocate(long bytes) {
                    long ptr = super.allocate(bytes);
                    inside.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return ptr;
                }
            }, (OrtApi) null);
            var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(
                    function(provider.providerOptions().get("gpu_external_alloc")));
            ExecutorService ort = Executors.newSingleThreadExecutor();
            try {
                // ORT's thread is past the closed check, in the allocator, when the provider closes.
                Future<BytePointer> served = ort.submit(() -> alloc.call(new OrtCustomOp(at(4096))));
                assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
                provider.close();   // nothing live yet: allowed
                release.countDown();
                assertThat(served.get(10, TimeUnit.SECONDS)).as("ORT gets nothing from a closed provider").isNull();
                assertThat(bfc.bytesInUse()).as("the memory served meanwhile").isZero();
                assertThat(provider.stats().liveAllocations()).isZero();
                assertThat(provider.stats().failedAllocs()).isEqualTo(1);
                assertThat(provider.stats().lastError()).isEqualTo("alloc(4096) on BfcCudaProvider over"
                        + " 'closed_meanwhile', which was closed while it was served: the memory is given back");
            } finally {
                release.countDown();
                ort.shutdownNow();
            }
        }
    }

    /**
     * A GpuBfcAllocator's close() takes back every allocation, ORT's too. A free ORT made after it
     * was logged as "not returned" and left the provider counting the allocation as live, so the
     * provider's close() was refused for good ("still holds 1 allocation") and its slot was lost.
     */
    @Test
    void aFreeAfterTheAllocatorsCloseTookTheMemoryBackLetsTheProviderClose() {
        BfcAllocator bfc = BfcAllocator.builder().name("closed_under_ort").memoryLimit(8 << 20)
                .allowRetryOnFailure(false).subAllocator(new AlignedHostSubAllocator())
                .closePolicy(ClosePolicy.FORCE).build();   // as a GpuBfcAllocator's close() does
        BfcCudaProvider provider = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
        var options = provider.providerOptions();
        var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(function(options.get("gpu_external_alloc")));
        var free = new OrtThreadWorkerFn(function(options.get("gpu_external_free")));
        BytePointer p = alloc.call(new OrtCustomOp(at(4096)));
        assertThat(p).isNotNull();
        bfc.close();
        assertThat(bfc.bytesInUse()).as("the close took it back").isZero();

        free.call(p);
        assertThat(provider.stats().liveAllocations()).isZero();
        assertThat(provider.stats().callbackErrors()).isEqualTo(1);
        assertThat(provider.stats().lastError()).isEqualTo("gpu_external_free(0x" + Long.toHexString(p.address())
                + ") after 'closed_under_ort' was closed while ONNX Runtime held the memory: its close already"
                + " took it back (close the sessions before the allocator)");
        provider.close();   // was refused: "still holds 1 allocation"
        assertThatThrownBy(provider::options).hasMessage("BfcCudaProvider over 'closed_under_ort' is closed");
    }

    @Test
    void appendToNullSaysWhatItTakesAndTheProviderStaysUsable() {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("append_to_null", 8 << 20)) {
            BfcCudaProvider provider = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
            try {
                for (int call = 0; call < 2; call++) {
                    assertThatThrownBy(() -> provider.appendTo(null))
                            .isInstanceOf(NullPointerException.class)
                            .hasMessage("sessionOptions=null (expected: the SessionOptions a session will be created"
                                    + " with, e.g. cuda.appendTo(new SessionOptions()))");
                }
                assertThat(provider.stats().allocCalls()).isZero();
                provider.options();   // still open
            } finally {
                provider.close();
            }
            assertThatThrownBy(() -> provider.appendTo(null)).as("closed, and null: the null is named first")
                    .isInstanceOf(NullPointerException.class).hasMessageStartingWith("sessionOptions=null");
        }
    }

    /**
     * Closed session options (their native address 0) are named as such, on an open provider,
     * which stays usable: JavaCPP's own {@code NullPointerException: This pointer address is
     * NULL.} said neither which argument nor what to do.
     */
    @Test
    void appendToClosedOptionsSaysSo() {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("append_to_closed", 8 << 20)) {
            BfcCudaProvider provider = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
            try {
                org.bytedeco.onnxruntime.SessionOptions closed = new org.bytedeco.onnxruntime.SessionOptions();
                closed.close();
                assertThatThrownBy(() -> provider.appendTo(closed)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("sessionOptions are closed (native address 0) (expected: open SessionOptions"
                                + " that a session will be created with, e.g. cuda.appendTo(new SessionOptions()))");
                provider.options();   // still open
            } finally {
                provider.close();
            }
        }
    }

    /**
     * A closed provider's functions are not handed to a provider over another allocator that is
     * still open: a session made with the closed provider's options (ORT keeps the function
     * addresses from the options it was made with) would have allocated from the other
     * allocator, on its device, and freed into it. The first free slot was reused whatever
     * allocator it had served.
     */
    @Test
    void aClosedProvidersFunctionsNeverReachAnotherOpenAllocator() {
        try (BfcAllocator gpu0 = BfcOrtAllocatorTest.hostAllocator("gpu0_stand_in", 8 << 20);
                BfcAllocator gpu1 = BfcOrtAllocatorTest.hostAllocator("gpu1_stand_in", 8 << 20)) {
            BfcCudaProvider old = BfcCudaProvider.bind(hostStandIn(gpu0, 0), (OrtApi) null);
            String oldAlloc = old.providerOptions().get("gpu_external_alloc");
            old.close();   // ORT holds nothing from it; a session made with its options lives on
            BfcCudaProvider other = BfcCudaProvider.bind(hostStandIn(gpu1, 1), (OrtApi) null);
            BfcCudaProvider same = null;
            try {
                assertThat(other.providerOptions().get("gpu_external_alloc")).as("a slot of its own")
                        .isNotEqualTo(oldAlloc);
                var staleAlloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(function(oldAlloc));
                assertThat(staleAlloc.call(new OrtCustomOp(at(4096)))).as("the old session's allocation").isNull();
                assertThat(gpu1.bytesInUse()).as("nothing of the other device's memory").isZero();
                assertThat(other.stats().allocCalls()).isZero();

                // Over the same allocator the slot is reused: the old session's memory then comes
                // from the allocator its options named, and counts for the provider now there.
                same = BfcCudaProvider.bind(hostStandIn(gpu0, 0), (OrtApi) null);
                assertThat(same.providerOptions().get("gpu_external_alloc")).isEqualTo(oldAlloc);
                BytePointer p = staleAlloc.call(new OrtCustomOp(at(4096)));
                assertThat(p).isNotNull();
                assertThat(gpu0.bytesInUse()).isEqualTo(4096);
                assertThat(same.stats().liveAllocations()).isEqualTo(1);
                new OrtThreadWorkerFn(function(same.providerOptions().get("gpu_external_free"))).call(p);
                assertThat(gpu0.bytesInUse()).isZero();
            } finally {
                other.close();
                if (same != null) {
                    same.close();
                }
            }
        }
    }

    /**
     * With every slot made and each free one last used over another allocator still open, a
     * provider over a new allocator is refused, saying why; once one of those allocators is
     * closed its slot is given out again.
     */
    @Test
    void aSlotOfAnotherOpenAllocatorIsGivenOutOnlyOnceThatAllocatorIsClosed() {
        List<BfcAllocator> allocators = new ArrayList<>();
        try {
            for (int i = 0; i < BfcCudaProvider.MAX_OPEN; i++) {
                allocators.add(BfcOrtAllocatorTest.hostAllocator("stand_in_" + i, 8 << 20));
            }
            List<BfcCudaProvider> providers = new ArrayList<>();
            try {
                for (BfcAllocator a : allocators) {
                    providers.add(BfcCudaProvider.bind(hostStandIn(a), (OrtApi) null));
                }
            } finally {
                for (BfcCudaProvider p : providers) {
                    p.close();
                }
            }
            try (BfcAllocator newcomer = BfcOrtAllocatorTest.hostAllocator("newcomer", 8 << 20)) {
                assertThatThrownBy(() -> BfcCudaProvider.bind(hostStandIn(newcomer), (OrtApi) null))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("no BfcCudaProvider slot for 'newcomer': 0 of the 10 are open and"
                                + " the rest were last used over other allocators that are still open");
                String freed = providers.get(4).providerOptions().get("gpu_external_alloc");
                allocators.get(4).close();
                BfcCudaProvider p = BfcCudaProvider.bind(hostStandIn(newcomer), (OrtApi) null);
                try {
                    assertThat(p.providerOptions().get("gpu_external_alloc")).isEqualTo(freed);
                } finally {
                    p.close();
                }
            }
        } finally {
            for (BfcAllocator a : allocators) {
                a.close();
            }
        }
    }

    @Test
    void atMostTenOpenAtATimeAndClosedSlotsAreReused() {
        try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("slots", 8 << 20)) {
            List<BfcCudaProvider> open = new ArrayList<>();
            try {
                for (int i = 0; i < BfcCudaProvider.MAX_OPEN; i++) {
                    open.add(BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null));
                }
                assertThatThrownBy(() -> BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("10 BfcCudaProviders are open");
                String freed = open.get(3).providerOptions().get("gpu_external_alloc");
                open.remove(3).close();
                BfcCudaProvider again = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
                open.add(again);
                assertThat(again.providerOptions().get("gpu_external_alloc")).isEqualTo(freed);
            } finally {
                for (BfcCudaProvider p : open) {
                    p.close();
                }
            }
        }
    }

    /**
     * For a child JVM: the process's first provider (its slot's three callbacks made then) bound
     * inside a JavaCPP {@code PointerScope}; once the scope is closed, its alloc and free functions
     * are called through their addresses, as ORT's CUDA provider would; one line per step.
     */
    public static final class BindInsideAPointerScope {
        private BindInsideAPointerScope() {
        }

        /**
         * Runs the steps.
         *
         * @param args none; or {@code deallocate}: the scope ends with {@code deallocate()}, which
         *     frees every pointer it took, whatever else retained them
         */
        public static void main(String[] args) {
            org.bytedeco.javacpp.Loader.load(org.bytedeco.onnxruntime.global.onnxruntime.class);
            BfcCudaProviderTest calls = new BfcCudaProviderTest();
            try (BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("scoped_device", 8 << 20)) {
                BfcCudaProvider provider;
                try (org.bytedeco.javacpp.PointerScope scope = new org.bytedeco.javacpp.PointerScope()) {
                    provider = BfcCudaProvider.bind(hostStandIn(bfc), (OrtApi) null);
                    if (args.length == 1 && args[0].equals("deallocate")) {
                        scope.deallocate();   // frees what it took, whatever else holds it
                    }
                }
                var options = provider.providerOptions();
                var alloc = new OrtCustomOp.GetExecutionProviderType_OrtCustomOp(
                        calls.function(options.get("gpu_external_alloc")));
                var free = new OrtThreadWorkerFn(calls.function(options.get("gpu_external_free")));
                try {
                    BytePointer p = alloc.call(new OrtCustomOp(at(5000)));
                    System.out.println("alloc: " + bfc.requestedSize(p.address()) + " bytes, "
                            + provider.stats().liveAllocations() + " live");
                    free.call(p);
                    System.out.println("free: " + bfc.bytesInUse() + " bytes in use");
                } catch (RuntimeException e) {
                    System.out.println("call threw: " + e);
                }
                provider.close();
            }
        }
    }

    /**
     * JavaCPP's {@code PointerScope} takes every pointer with a deallocator made while it is open
     * on the thread, callbacks included, and releases them when it closes. A provider slot's three
     * callbacks were not retained, so a provider made inside a scope had its C functions released
     * with it while ORT (a session made with its options) still called them: each call then threw
     * a C++ exception ("Unknown exception") where ORT expects a pointer, or, for a free inside
     * ORT's release of a buffer, ended the process.
     */
    @Test
    void aPointerScopeAroundTheFirstProviderDoesNotTakeItsFunctionsWithIt() throws Exception {
        bindInsideAPointerScope();
    }

    /**
     * As {@link #aPointerScopeAroundTheFirstProviderDoesNotTakeItsFunctionsWithIt}, the scope
     * ending with {@code PointerScope.deallocate()}, which frees every pointer it took whatever
     * their reference counts: the slot's callbacks, retained but still the scope's, were freed,
     * and each call then threw ("Unknown exception").
     */
    @Test
    void aPointerScopeDeallocatedAroundTheFirstProviderDoesNotTakeItsFunctionsWithIt() throws Exception {
        bindInsideAPointerScope("deallocate");
    }

    /** Runs {@link BindInsideAPointerScope} with {@code args} in a child JVM and checks its lines. */
    private static void bindInsideAPointerScope(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin",
                "java").toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), BindInsideAPointerScope.class.getName()));
        command.addAll(List.of(args));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        assertThat(child.status()).as("the child's exit status\n" + out).isZero();
        assertThat(out.lines().filter(l -> l.matches("^(alloc|free|call).*")).toList()).as(out)
                .containsExactly("alloc: 5000 bytes, 1 live", "free: 0 bytes in use");
    }
}
