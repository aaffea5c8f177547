package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.HistoryOptions;
import io.github.bfc4j.core.MemoryAnnotation;
import io.github.bfc4j.core.MemoryEvent;
import io.github.bfc4j.core.MemorySnapshot;
import io.github.bfc4j.core.MemoryStats;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.trace.SnapshotTraces;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.onnxruntime.Env;

/**
 * Records a sentence-embedding server's memory as a workload trace: all-MiniLM-L6-v2 on bfc4j
 * memory (1 GiB limit) with the allocator's history recorded (no stacks), a session created
 * (annotated {@value #SESSION_LOAD}), requests of 1 to 32 texts of 8 to 256 tokens served by
 * caller threads sharing it (each annotated with its batch size and length, its step the
 * request's number), the session closed; then the history written as a trace with
 * {@link SnapshotTraces}. What {@code bfc replay}, {@code whatif} and {@code report} then read
 * (docs/cli.md).
 *
 * <pre>
 * java -cp ... io.github.bfc4j.onnxruntime.RecordServingWorkload OUT.bfctrace.gz [REQUESTS [THREADS]]
 * </pre>
 */
public final class RecordServingWorkload {

    static final long LIMIT = 1L << 30;
    static final long SEED = 16;
    static final int[] BATCHES = {1, 2, 4, 8, 16, 32};
    static final int[] LENGTHS = {8, 16, 32, 64, 128, 256};
    static final int MAX_TOKENS = 2048;
    /** The annotation of the session's creation (its weights and initialization). */
    static final String SESSION_LOAD = "session/load";
    /** The caller threads' names: this and their number. */
    static final String THREAD = "server-";

    private RecordServingWorkload() {
    }

    /** What a bad command line prints after the line saying what was wrong. */
    static final String USAGE = "usage: RecordServingWorkload OUT.bfctrace[.gz] [REQUESTS [THREADS]]";

    /**
     * Records. Bad arguments, or an OUT that cannot be written, print one line saying what was
     * wrong and the usage, and exit with status 2, before anything is recorded.
     *
     * @param args {@code OUT [REQUESTS [THREADS]]} (defaults 60 requests, 2 threads)
     * @throws Exception if the trace cannot be written or a run fails
     */
    public static void main(String[] args) throws Exception {
        Path out;
        int requests;
        int threads;
        try {
            if (args.length < 1 || args.length > 3) {
                throw new IllegalArgumentException(args.length + " arguments (expected: OUT, then up to two counts)");
            }
            requests = args.length > 1 ? positive("REQUESTS", args[1]) : 60;
            threads = args.length > 2 ? positive("THREADS", args[2]) : 2;
            out = writableOutput(args[0]);
        } catch (IllegalArgumentException e) {
            System.err.println("RecordServingWorkload: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        Result r = record(out, requests, threads);
        System.out.println("wrote " + args[0] + ": " + r.allocs() + " allocations, " + r.frees() + " frees; live run: peak in use "
                + BfcAllocator.humanReadableNumBytes(r.peakBytesInUse()) + " (" + r.peakBytesInUse() + " bytes), peak reserved "
                + BfcAllocator.humanReadableNumBytes(r.peakReservedBytes()) + " (" + r.peakReservedBytes() + " bytes)");
    }

    private static int positive(String name, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(name + "=" + value + " (expected: a whole number from 1 to " + Integer.MAX_VALUE + ")");
    }

    /**
     * The trace file, once it is known that it can be written: the recording takes minutes, and
     * the trace is written at its end. A file is created beside it and deleted, as the trace's
     * writer writes a new file beside it and moves it over OUT.
     *
     * @throws IllegalArgumentException naming OUT and what is wrong: no path, a directory, a
     *     missing directory, a read-only file, or a directory where no file can be created
     */
    static Path writableOutput(String name) {
        String expected = " (expected: a trace file to create or replace in a directory you may write to)";
        Path out;
        try {
            out = Path.of(name);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("OUT=" + name + " is no path here (" + e.getReason() + ")" + expected, e);
        }
        if (Files.isDirectory(out)) {
            throw new IllegalArgumentException("OUT=" + name + " is a directory" + expected);
        }
        Path dir = out.toAbsolutePath().getParent();
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("OUT=" + name + ": no such directory: " + dir + expected);
        }
        if (Files.isRegularFile(out) && !Files.isWritable(out)) {
            throw new IllegalArgumentException("OUT=" + name + " exists and may not be written (read-only)" + expected);
        }
        try {
            Files.delete(Files.createTempFile(dir, ".record-", ".tmp"));
        } catch (IOException e) {
            String why = e instanceof AccessDeniedException ? "permission denied"
                    : e instanceof FileSystemException f && f.getReason() != null ? f.getReason()
                    : e.getClass().getSimpleName();
            throw new IllegalArgumentException("OUT=" + name + ": no file can be created in " + dir + " (" + why + ")"
                    + expected, e);
        }
        return out;
    }

    /** What a recording wrote, and what the live allocator saw. */
    record Result(long allocs, long frees, long allocationsTotal, long peakBytesInUse, long peakReservedBytes) {
    }

    static Result record(Path out, int requestCount, int threads) throws IOException, Exception {
        List<Encoding[]> requests = ServingWorkload.requests(EmbeddingModel.ALL_MINILM_L6_V2_Q, new Random(SEED),
                requestCount, BATCHES, LENGTHS, MAX_TOKENS);
        AtomicInteger threadNumber = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads,
                r -> new Thread(r, THREAD + threadNumber.getAndIncrement()));
        MemorySnapshot snapshot;
        MemoryStats stats;
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-record");
                BfcAllocator bfc = BfcAllocator.builder().name("ort_cpu").memoryLimit(LIMIT).allowRetryOnFailure(false)
                        .subAllocator(new AlignedHostSubAllocator()).build();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            // Before the session's first allocation, so that the history is complete (a trace);
            // about 220 events a request, room for four times that.
            bfc.recordHistory(HistoryOptions.builder().stacks(false)
                    .maxEntries((int) Math.min(1 << 24, 10_000 + 1_000L * requestCount)).build());
            EmbeddingSession session;
            try (MemoryAnnotation a = MemoryAnnotation.push(SESSION_LOAD)) {
                session = new EmbeddingSession(env, EmbeddingModel.ALL_MINILM_L6_V2_Q, EmbeddingSession.options(true));
            }
            try (session) {
                AtomicInteger next = new AtomicInteger();
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        for (int i = next.getAndIncrement(); i < requests.size(); i = next.getAndIncrement()) {
                            Encoding[] request = requests.get(i);
                            try (MemoryAnnotation a = MemoryAnnotation.push(ServingWorkload.annotation(request), i)) {
                                session.run(request);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : futures) {
                    f.get();
                }
            }
            snapshot = bfc.snapshot();
            stats = bfc.memoryStats();
        } finally {
            pool.shutdownNow();
        }
        SnapshotTraces.write(snapshot, out, "ort-minilm-serving: all-MiniLM-L6-v2 (quantized) on ONNX Runtime 1.22, "
                + requestCount + " requests from " + threads + (threads == 1 ? " thread" : " threads"));
        long allocs = 0;
        long frees = 0;
        for (MemoryEvent e : snapshot.history().events()) {
            allocs += e.kind() == MemoryEvent.Kind.ALLOC ? 1 : 0;
            frees += e.kind() == MemoryEvent.Kind.FREE ? 1 : 0;
        }
        return new Result(allocs, frees, stats.allocationsTotal(), stats.peakBytesInUse(), stats.peakReservedBytes());
    }
}
