/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOptions;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.micrometer.BfcAllocatorMetrics;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigInteger;
import java.net.BindException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
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
 *
 * <p>Requests are served by {@link LocalHttpServer}: a few at once, each client given
 * {@code --client-timeout} seconds to send its request, so a stalled client never stops the
 * scrapes of the others. Errors are one line, {@code bfc serve: ...}, exit status 2 for bad
 * options or an unreadable trace (docs/cli.md).
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Serves an allocator's metrics in Prometheus text format at http://127.0.0.1:PORT/metrics"
                    + " (and its memory summary at /summary, its memory map as JSON at /memory-map)"
                    + " while replaying a trace on real host memory.",
            "Without --trace the allocator is idle. Runs until killed.",
            "Exit status (when it stops by itself): 2 bad options, an unreadable trace or a port in use."
        })
public final class ServeCommand implements Callable<Integer> {

    /** Seconds a client has to send its request, unless {@code --client-timeout} says otherwise. */
    static final String DEFAULT_CLIENT_TIMEOUT = "10";

    @Spec
    private CommandSpec spec;

    @Option(names = "--port", required = true, paramLabel = "PORT",
            description = "TCP port on 127.0.0.1 (0: any free port; the chosen one is printed).")
    private BigInteger portArg; // any integer: one past a long's range gets this option's range
    private long port;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "Trace to replay (format version 1, plain or gzip; - for standard input); its header"
                    + " gives the memory limit and options.")
    private Path trace;

    @Option(names = "--loop", description = "Replay the trace again and again (frees what is live between passes).")
    private boolean loop;

    @Option(names = "--rate", paramLabel = "CALLS_PER_SECOND", defaultValue = "0",
            description = "Slow the replay of --trace to about this many calls per second (default: 0, as fast as"
                    + " possible).")
    private BigInteger rateArg;
    private long rate;

    @Option(names = "--memory-limit", paramLabel = "SIZE",
            description = "Memory limit, e.g. 16GiB (default: the trace's, or 1GiB without a trace).")
    private String memoryLimit;

    @Option(names = "--name", paramLabel = "NAME",
            description = "Allocator name, the allocator.name tag (default: the trace's name, or 'host_bfc').")
    private String name;

    @Option(names = "--client-timeout", paramLabel = "SECONDS", defaultValue = DEFAULT_CLIENT_TIMEOUT,
            description = "Seconds a client has to send its request before it is answered 408 and closed"
                    + " (default: " + DEFAULT_CLIENT_TIMEOUT + ").")
    private String clientTimeout;

    @Option(names = "--debug", description = "Print stack traces of errors.")
    private boolean debug;

    /** Calls replayed over all passes, and when the first began: the pace of {@code --rate}. */
    private long callsReplayed;
    private long replayStartNanos;
    /** Set by the shutdown: the replay stops at its next call, before the allocator is closed. */
    private volatile boolean stopping;
    /** Counted down when the replay has stopped (or there is none). */
    private final CountDownLatch replayDone = new CountDownLatch(1);

    /** Creates the command; picocli fills its fields. */
    public ServeCommand() {
    }

    @Override
    public Integer call() {
        // The allocator's log is kept: a server's out-of-memory warnings belong in its output.
        return CommandRunner.run(spec, debug, true, this::serve);
    }

    private int serve() throws Exception {
        port = WholeNumbers.inRange("--port", portArg, 0, 65535, "0 to 65535");
        rate = WholeNumbers.notNegative("--rate", rateArg);
        if (loop && trace == null) {
            throw new UsageException("--loop needs --trace FILE");
        }
        if (rate > 0 && trace == null) {
            // It paces a replay: without one it would be taken and do nothing.
            throw new UsageException("--rate needs --trace FILE (it paces the trace's replay; without a trace the"
                    + " allocator is idle)");
        }
        if (name != null && name.isBlank()) {
            throw new UsageException("--name='" + Words.shown(name) + "' (expected: a name that is not"
                    + " blank, the allocator.name tag, e.g. host_bfc)");
        }
        if (name != null && !CommandRunner.visible(name).equals(name)) {
            // A line break would split the summary's box and the line this command prints (the
            // metrics and the memory map escape it, but a name is one line of text).
            throw new UsageException("--name='" + Words.shown(name) + "' (expected: a name without line"
                    + " breaks, tabs or other control characters, the allocator.name tag, e.g. host_bfc)");
        }
        long timeoutMillis = parseTimeout(clientTimeout);
        Long limitOption = memoryLimit == null ? null : Sizes.parse("--memory-limit", memoryLimit);
        // Closed however the command ends: an error after it was opened (a bad header, a port in
        // use, a trace without calls) left its file open, and a copy of standard input on disk.
        try (TraceInput input = trace == null ? null : TraceInput.of(trace).rereadable()) {
            return serveAndReplay(input, timeoutMillis, limitOption);
        }
    }

    /** Serves, replaying {@code input} (null: none), until stopped; what it opens is closed if it fails. */
    private int serveAndReplay(TraceInput input, long timeoutMillis, Long limitOption) throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        TraceHeader header = null;
        if (input != null) {
            try (TraceReader reader = TraceReader.open(input.rawStream(), input.name())) {
                header = reader.header();
                RunConfig.checkThreshold(header.fragmentationFraction(), null,
                        limitOption != null ? limitOption : header.memoryLimit(),
                        limitOption != null ? "--memory-limit=" + Words.shown(memoryLimit) : null, reader);
            }
        }
        long limit = limitOption != null ? limitOption : header != null ? header.memoryLimit() : 1L << 30;
        BfcOptions opts = (header != null ? header.bfcOptions().toBuilder() : BfcOptions.builder())
                .allowRetryOnFailure(false).build();
        String allocatorName = name != null ? name
                : header != null ? RunConfig.allocatorName(header.name()) : "host_bfc";

        BfcAllocator allocator = new BfcAllocator(HostMemory.subAllocator(), limit, allocatorName, opts);
        if (header != null && header.timingCounter()) {
            allocator.setTimingCounter(new SharedCounter());
        }
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new BfcAllocatorMetrics(allocator).bindTo(registry);

        Map<String, LocalHttpServer.Route> routes = new HashMap<>();
        routes.put("/metrics", new LocalHttpServer.Route("text/plain; version=0.0.4; charset=utf-8",
                registry::scrape));
        routes.put("/summary", new LocalHttpServer.Route("text/plain; charset=utf-8", allocator::memorySummary));
        routes.put("/memory-map", new LocalHttpServer.Route("application/json",
                () -> allocator.memoryMap().toJson()));
        LocalHttpServer server;
        try {
            server = new LocalHttpServer((int) port, routes, timeoutMillis);
        } catch (BindException e) {
            allocator.close();
            throw new UsageException("--port=" + port + ": " + e.getMessage() + " (expected: a free port, or 0 for"
                    + " any)");
        } catch (IOException | RuntimeException e) {
            allocator.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        TraceInput spooled = input;
        Thread shutdown = new Thread(() -> {
            // The replay stops before the allocator and its input are closed under it (a call on
            // a closed allocator would end the command with an internal error).
            stopping = true;
            try {
                replayDone.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            try {
                server.close();
                if (spooled != null) {
                    spooled.close();
                }
            } catch (IOException ignored) {
                // stopping anyway
            }
            allocator.close();
            stopped.countDown();
        }, "bfc-serve-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdown);
        boolean serving = false;
        try {
            out.println("Serving http://127.0.0.1:" + server.port() + "/metrics for allocator '"
                    + allocatorName + "' (limit " + limit + " bytes" + (trace == null ? ", idle" : "") + ")");
            out.flush();
            if (input != null) {
                replayLoop(input, allocator, out);
            }
            serving = true;
        } finally {
            replayDone.countDown();
            if (!serving) {
                stopEarly(shutdown, server, allocator);
            }
        }
        stopped.await();
        return CommandRunner.EXIT_OK;
    }

    /**
     * Stops a server whose replay failed (a trace without calls for {@code --loop}, a file
     * changed under it): the command ends with its error, so the server, the allocator and the
     * shutdown hook that would close them go now, unless the JVM is already stopping, when that
     * hook closes them.
     */
    private static void stopEarly(Thread shutdown, LocalHttpServer server, BfcAllocator allocator) throws IOException {
        try {
            Runtime.getRuntime().removeShutdownHook(shutdown);
        } catch (IllegalStateException shuttingDown) {
            return;
        }
        try {
            server.close();
        } finally {
            allocator.close();
        }
    }

    /** Replays the trace once, or again and again with {@code --loop}, until stopped. */
    private void replayLoop(TraceInput input, BfcAllocator allocator, PrintWriter out) throws IOException {
        replayStartNanos = System.nanoTime();
        long lastPrintNanos = 0;
        long pass = 0;
        do {
            Map<Long, Long> live = new HashMap<>();
            long calls;
            String cut;
            try (TraceReader reader = TraceReader.open(input.rawStream(), input.name())) {
                calls = replay(reader, allocator, live);
                cut = TraceInput.cutWarning(reader, "each pass replays the lines read");
            }
            if (stopping) { // mid-pass: nothing to report
                for (long p : live.values()) {
                    allocator.deallocateRaw(p);
                }
                return;
            }
            pass++;
            if (pass == 1) {
                CommandRunner.warn(spec, cut);
                if (loop && calls == 0) {
                    // Passes of nothing, again and again, would spin a core.
                    throw new UsageException("--loop with " + input.name() + ", which has no calls (expected: a"
                            + " trace with alloc or free lines)");
                }
            }
            long now = System.nanoTime();
            if (pass == 1 || now - lastPrintNanos >= 10_000_000_000L) {
                // With --loop: one line every 10 s at most.
                AllocatorStats s = allocator.getStats();
                out.println("replayed " + Counts.of(calls, "call") + ": live=" + live.size() + " bytes_in_use="
                        + s.bytesInUse() + " pool_bytes=" + s.poolBytes() + (loop ? " (pass " + pass + ")" : ""));
                out.flush();
                lastPrintNanos = now;
            }
            if (loop) {
                for (long p : live.values()) {
                    allocator.deallocateRaw(p);
                }
            }
        } while (loop && !stopping);
    }

    /** {@code --client-timeout}: seconds, a decimal ({@link RunConfig#parseDecimal}) from 0.1 to 3600. */
    private static long parseTimeout(String text) {
        double seconds = RunConfig.parseDecimal(text);
        if (!(seconds >= 0.1 && seconds <= 3600)) {
            throw new UsageException("--client-timeout=" + Words.shown(text) + " (expected: seconds from 0.1 to 3600,"
                    + " a decimal like " + DEFAULT_CLIENT_TIMEOUT + " or 2.5)");
        }
        return Math.round(seconds * 1000);
    }

    /** Replays the trace's calls once; returns the number of calls. */
    private long replay(TraceReader reader, BfcAllocator allocator, Map<Long, Long> live) throws IOException {
        long calls = 0;
        for (TraceEvent e = reader.next(); e != null && !stopping; e = reader.next()) {
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
                // In slices, so that a stop is seen within 100 ms even at a slow rate.
                for (long left = sleepNanos; left > 1_000_000 && !stopping; left = dueNanos - System.nanoTime()) {
                    try {
                        Thread.sleep(Math.min(100, left / 1_000_000));
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        return calls;
                    }
                }
            }
        }
        return calls;
    }
}
