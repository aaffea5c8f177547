/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.micrometer.BfcAllocatorMetrics;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceFormatException;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code bfc serve --port P [--trace FILE [--loop]]}: one {@link BfcAllocator} on real host memory
 * ({@link AlignedHostSubAllocator}), its {@code bfc.allocator.*} meters served in Prometheus's
 * text format at {@code http://127.0.0.1:P/metrics} (also {@code /summary}: the memory summary,
 * and {@code /memory-map}: the memory map as JSON), while a trace is replayed on it.
 *
 * <p>Without a trace the allocator stays idle (all figures 0 except the limit). With one, its
 * header gives the limit and options; the calls are replayed once (or forever with
 * {@code --loop}, freeing what is live between passes), answers in the trace are not checked
 * (addresses differ on real memory). After a pass it prints
 * {@code replayed <calls> calls: live=<n> bytes_in_use=<b> pool_bytes=<p>}; without
 * {@code --loop} the live allocations are kept, so the figures stay put. Serves until killed.
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Serves an allocator's metrics in Prometheus text format at http://127.0.0.1:PORT/metrics"
                    + " (and its memory summary at /summary, its memory map as JSON at /memory-map)"
                    + " while replaying a trace on real host memory.",
            "Without --trace the allocator is idle. Runs until killed."
        })
public final class ServeCommand implements Callable<Integer> {

    @Spec
    private CommandSpec spec;

    @Option(names = "--port", required = true, paramLabel = "PORT",
            description = "TCP port on 127.0.0.1 (0: any free port; the chosen one is printed).")
    private int port;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "Trace to replay (format version 1, plain or gzip); its header gives the"
                    + " memory limit and options.")
    private Path trace;

    @Option(names = "--loop", description = "Replay the trace again and again (frees what is live between passes).")
    private boolean loop;

    @Option(names = "--rate", paramLabel = "CALLS_PER_SECOND", defaultValue = "0",
            description = "Slow the replay to about this many calls per second (default: 0, as fast as possible).")
    private long rate;

    @Option(names = "--memory-limit", paramLabel = "BYTES",
            description = "Memory limit (default: the trace's, or 1 GiB without a trace).")
    private Long memoryLimit;

    @Option(names = "--name", paramLabel = "NAME",
            description = "Allocator name, the allocator.name tag (default: the trace's name, or 'host_bfc').")
    private String name;

    /** Calls replayed over all passes, and when the first began: the pace of {@code --rate}. */
    private long callsReplayed;
    private long replayStartNanos;

    /** Creates the command; picocli fills its fields. */
    public ServeCommand() {
    }

    @Override
    public Integer call() throws Exception {
        if (port < 0 || port > 65535) {
            throw new ParameterException(spec.commandLine(), "--port=" + port + " (expected: 0 to 65535)");
        }
        if (rate < 0) {
            throw new ParameterException(spec.commandLine(), "--rate=" + rate + " (expected: >= 0)");
        }
        if (loop && trace == null) {
            throw new ParameterException(spec.commandLine(), "--loop needs --trace FILE");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TraceHeader header = null;
        if (trace != null) {
            try (TraceReader reader = TraceReader.open(trace)) {
                header = reader.header();
            } catch (NoSuchFileException e) {
                err.println("ERROR " + trace + ": no such file");
                err.flush();
                return 2;
            } catch (TraceFormatException e) {
                err.println("ERROR " + e.getMessage());
                err.flush();
                return 2;
            }
        }
        long limit = memoryLimit != null ? memoryLimit : header != null ? header.memoryLimit() : 1L << 30;
        if (limit < 0) {
            throw new ParameterException(spec.commandLine(), "--memory-limit=" + limit + " (expected: >= 0)");
        }
        BfcOptions opts = (header != null ? header.bfcOptions().toBuilder() : BfcOptions.builder())
                .allowRetryOnFailure(false).build();
        String allocatorName = name != null ? name : header != null ? firstWord(header.name()) : "host_bfc";

        BfcAllocator allocator = new BfcAllocator(new AlignedHostSubAllocator(), limit, allocatorName, opts);
        if (header != null && header.timingCounter()) {
            allocator.setTimingCounter(new SharedCounter());
        }
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new BfcAllocatorMetrics(allocator).bindTo(registry);

        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 16);
        server.createContext("/metrics", ex -> respond(ex, "text/plain; version=0.0.4; charset=utf-8", registry::scrape));
        server.createContext("/summary", ex -> respond(ex, "text/plain; charset=utf-8", allocator::memorySummary));
        server.createContext("/memory-map", ex -> respond(ex, "application/json",
                () -> allocator.memoryMap().toJson()));
        server.start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop(0);
            allocator.close();
            stopped.countDown();
        }, "bfc-serve-shutdown"));
        out.println("Serving http://127.0.0.1:" + server.getAddress().getPort() + "/metrics for allocator '"
                + allocatorName + "' (limit " + limit + " bytes" + (trace == null ? ", idle" : "") + ")");
        out.flush();

        if (trace != null) {
            replayStartNanos = System.nanoTime();
            long lastPrintNanos = 0;
            long pass = 0;
            do {
                Map<Long, Long> live = new HashMap<>();
                long calls = replay(allocator, live);
                pass++;
                long now = System.nanoTime();
                if (pass == 1 || now - lastPrintNanos >= 10_000_000_000L) {
                    // With --loop: one line every 10 s at most.
                    AllocatorStats s = allocator.getStats();
                    out.println("replayed " + calls + " calls: live=" + live.size() + " bytes_in_use="
                            + s.bytesInUse() + " pool_bytes=" + s.poolBytes() + (loop ? " (pass " + pass + ")" : ""));
                    out.flush();
                    lastPrintNanos = now;
                }
                if (loop) {
                    for (long p : live.values()) {
                        allocator.deallocateRaw(p);
                    }
                }
            } while (loop);
        }
        stopped.await();
        return 0;
    }

    /** Replays the trace's calls once; returns the number of calls. */
    private long replay(BfcAllocator allocator, Map<Long, Long> live) throws IOException {
        long calls = 0;
        try (TraceReader reader = TraceReader.open(trace)) {
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                switch (e.kind()) {
                    case ALLOC -> {
                        long freedBefore = e.freedBefore();
                        AllocationAttributes attr = freedBefore == 0 ? AllocationAttributes.NO_RETRY
                                : new AllocationAttributes(false, () -> freedBefore);
                        long p = allocator.allocateRaw(e.alignment(), e.bytes(), attr);
                        if (p != 0) {
                            live.put(e.id(), p);
                        }
                    }
                    case FREE -> {
                        Long p = live.remove(e.id());
                        if (p != null) {
                            allocator.deallocateRaw(p);
                        }
                    }
                    case FRONTIER -> allocator.setSafeFrontier(e.count());
                    case CLEAR_STATS -> allocator.clearStats();
                    default -> {
                        continue; // expected answers: not checked on real memory
                    }
                }
                calls++;
                callsReplayed++;
                if (rate > 0) {
                    long dueNanos = replayStartNanos + (long) (callsReplayed * 1e9 / rate);
                    long sleepNanos = dueNanos - System.nanoTime();
                    if (sleepNanos > 1_000_000) {
                        try {
                            Thread.sleep(sleepNanos / 1_000_000, (int) (sleepNanos % 1_000_000));
                        } catch (InterruptedException ie) {
                            Thread.currentThread().interrupt();
                            return calls;
                        }
                    }
                }
            }
        }
        return calls;
    }

    private static String firstWord(String traceName) {
        int end = 0;
        while (end < traceName.length() && traceName.charAt(end) != ':' && traceName.charAt(end) != ' ') {
            end++;
        }
        return end == 0 ? "replay" : traceName.substring(0, end);
    }

    private static void respond(HttpExchange ex, String contentType, Supplier<String> body) throws IOException {
        try (ex) {
            if (!"GET".equals(ex.getRequestMethod()) && !"HEAD".equals(ex.getRequestMethod())) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            byte[] bytes = body.get().getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", contentType);
            if ("HEAD".equals(ex.getRequestMethod())) {
                ex.sendResponseHeaders(200, -1);
                return;
            }
            ex.sendResponseHeaders(200, bytes.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(bytes);
            }
        }
    }
}
