/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.AllocationAttributes;
import io.github.bfc4j.core.AllocatorStats;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import io.github.bfc4j.core.ClosePolicy;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.SharedCounter;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceHeader;
import io.github.bfc4j.trace.TraceReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bfc demo}: replays a training loop recorded from TensorFlow on real host memory, writing
 * every allocated byte, and prints what the allocator did. The calls are made as {@code bfc
 * replay --sub host} makes them, the timing counter included (a header's {@code
 * timing_counter=true}, {@code frontier} lines, {@code freed_before=}), so the allocator decides
 * as it does there; {@code clear_stats} lines are not made, so that the summary covers the whole
 * run.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "Replays a training loop recorded from TensorFlow 2.18 (a small ResNet, 20 steps; or --trace FILE)"
                    + " on real host memory through AlignedHostSubAllocator, writing every allocated byte,"
                    + " and prints a memory summary.",
            "Exit status: 0 done, 1 the replay failed (or needed more host memory than is available), 2 bad options"
                    + " or an unreadable trace."
        })
public final class DemoCommand implements Callable<Integer> {

    /** The bundled trace, a resource next to this class. */
    static final String BUNDLED_TRACE = "tf-resnet-train.bfctrace";

    @Spec
    private CommandSpec spec;

    @Option(names = "--trace", paramLabel = "FILE",
            description = "Replay this trace instead of the bundled training loop (- for standard input).")
    private Path trace;

    /** Creates the command; picocli fills its fields. */
    public DemoCommand() {
    }

    @Option(names = "--debug", description = "Print stack traces of errors.")
    private boolean debug;

    @Option(names = {"-v", "--verbose"}, description = "Keep the allocator's log output.")
    private boolean verbose;

    @Override
    public Integer call() {
        return CommandRunner.run(spec, debug, verbose, () -> {
            String cut;
            try (TraceReader reader = open()) {
                run(reader, spec.commandLine().getOut());
                cut = TraceInput.cutWarning(reader, "the demo replayed the lines read");
            } catch (HostMemoryExhausted e) {
                spec.commandLine().getErr().println("bfc demo: " + e.getMessage());
                return CommandRunner.EXIT_FAILED;
            }
            CommandRunner.warn(spec, cut);
            return CommandRunner.EXIT_OK;
        });
    }

    private TraceReader open() throws IOException {
        if (trace != null) {
            return TraceInput.of(trace).open("demo");
        }
        InputStream in = DemoCommand.class.getResourceAsStream(BUNDLED_TRACE);
        if (in == null) {
            throw new IOException("the bundled trace " + BUNDLED_TRACE + " is missing from the jar");
        }
        return TraceReader.open(in, BUNDLED_TRACE);
    }

    private static void run(TraceReader reader, PrintWriter out) throws IOException {
        TraceHeader h = reader.header();
        AlignedHostSubAllocator sub = HostMemory.subAllocator();
        // Every allocated byte is written: a limit above the memory the machine has available
        // gets a cap there, so that such a trace stops with a sentence, not the OOM killer.
        long available = AvailableMemoryGuard.availableBytes.getAsLong();
        AvailableMemoryGuard guard = available >= 0 && h.memoryLimit() > available - AvailableMemoryGuard.MARGIN_BYTES
                ? new AvailableMemoryGuard(sub, Math.max(0, available - AvailableMemoryGuard.MARGIN_BYTES)) : null;
        BfcAllocator allocator = BfcAllocator.builder().name(h.name()).memoryLimit(h.memoryLimit())
                .options(h.bfcOptions()).allowRetryOnFailure(false).subAllocator(guard != null ? guard : sub)
                .closePolicy(ClosePolicy.FORCE).leakDetection(LeakDetection.DISABLED).build();
        if (h.timingCounter()) {
            allocator.setTimingCounter(new SharedCounter());
        }
        Map<Long, Allocation> live = new HashMap<>();
        // Allocations made with freed_before= (raw: the Allocation API takes no attributes).
        Map<Long, long[]> liveRaw = new HashMap<>();
        long allocs = 0;
        long frees = 0;
        long ooms = 0;
        long requested = 0;
        long touched = 0;
        long peakRegions = 0;
        long start = System.nanoTime();
        for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
            switch (e.kind()) {
                case ALLOC -> {
                    if (e.bytes() == 0) {
                        continue; // upstream answers 0 bytes with a null pointer, nothing to touch
                    }
                    if (e.bytes() > BfcAllocator.MAX_ALLOCATION_BYTES - BfcAllocator.ALLOCATION_ALIGNMENT + 1) {
                        // More than any allocator serves: allocateRaw (what replay calls) answers
                        // null, where allocate refuses the argument.
                        ooms++;
                        continue;
                    }
                    if (guard != null) {
                        guard.refusedSinceReset();
                    }
                    if (e.freedBefore() != 0) {
                        long freedBefore = e.freedBefore();
                        long ptr = allocator.allocateRaw(e.alignment(), e.bytes(),
                                new AllocationAttributes(false, () -> freedBefore));
                        if (ptr == 0) {
                            stopIfHostMemoryRan(guard, allocator, reader, e, available);
                            ooms++;
                            continue;
                        }
                        allocs++;
                        requested += e.bytes();
                        touched += write(ptr, e.bytes(), e.id());
                        liveRaw.put(e.id(), new long[] {ptr});
                        peakRegions = Math.max(peakRegions, sub.liveRegions());
                        continue;
                    }
                    try {
                        Allocation a = allocator.allocate(e.bytes());
                        allocs++;
                        requested += e.bytes();
                        // Write every requested byte: the memory is real.
                        BytePointer p = a.asPointer();
                        Pointer.memset(p, (int) (a.allocationId() & 0x7f) | 1, a.requestedSize());
                        if (p.get(a.requestedSize() - 1) == 0) {
                            throw new IllegalStateException("a write to " + a + " did not stick");
                        }
                        touched += a.requestedSize();
                        live.put(e.id(), a);
                        peakRegions = Math.max(peakRegions, sub.liveRegions());
                    } catch (BfcOutOfMemoryException oom) {
                        stopIfHostMemoryRan(guard, allocator, reader, e, available);
                        ooms++;
                    }
                }
                case FREE -> {
                    Allocation a = live.remove(e.id());
                    long[] raw = liveRaw.remove(e.id());
                    if (a != null) {
                        a.close();
                        frees++;
                    } else if (raw != null) {
                        allocator.deallocateRaw(raw[0]);
                        frees++;
                    }
                }
                case FRONTIER -> allocator.setSafeFrontier(e.count());
                default -> {
                    // Expected answers, stats lines and clear_stats (the summary covers the whole
                    // run) play no part in the demo.
                }
            }
        }
        long leftLive = live.size() + liveRaw.size();
        AllocatorStats s = allocator.getStats();
        for (Allocation a : live.values()) {
            a.close();
        }
        for (long[] raw : liveRaw.values()) {
            allocator.deallocateRaw(raw[0]);
        }
        allocator.close();
        long heldForViews = allocator.bytesHeldForViews();
        double seconds = (System.nanoTime() - start) / 1e9;

        out.println("bfc demo: " + CommandRunner.visible(h.name()));
        out.println("  " + CommandRunner.visible(h.source()));
        out.println("Replayed " + reader.lineNumber() + " lines on real host memory (AlignedHostSubAllocator, "
                + sub.alignment() + "-byte aligned regions), writing every allocated byte, in "
                + String.format(java.util.Locale.ROOT, "%.2f", seconds) + " s.");
        out.println();
        row(out, "allocations", Long.toString(allocs), "");
        row(out, "frees", Long.toString(frees), leftLive > 0 ? "(" + leftLive + " still live at the end, closed then)" : "");
        row(out, "out of memory", Long.toString(ooms), "");
        row(out, "bytes allocated", BfcAllocator.humanReadableNumBytes(requested), "(requested, over the whole run)");
        row(out, "bytes written", BfcAllocator.humanReadableNumBytes(touched), "");
        row(out, "peak in use", BfcAllocator.humanReadableNumBytes(s.peakBytesInUse()), "(rounded chunk sizes)");
        row(out, "peak reserved", BfcAllocator.humanReadableNumBytes(s.peakPoolBytes()),
                "(regions held from the sub-allocator, " + peakRegions + " at most)");
        row(out, "largest alloc", BfcAllocator.humanReadableNumBytes(s.largestAllocSize()), "");
        row(out, "memory limit", BfcAllocator.humanReadableNumBytes(s.bytesLimit()), "");
        // Read after heldForViews: a view collected since then only lowers what is left.
        long left = sub.liveBytes();
        row(out, "reserved at exit", BfcAllocator.humanReadableNumBytes(Math.max(0, left - heldForViews)),
                heldForViews == 0 ? "(all returned)" : "(all returned, but for the views' regions below)");
        if (heldForViews > 0) {
            row(out, "held for views", BfcAllocator.humanReadableNumBytes(heldForViews),
                    "(views of them are not yet collected: returned once they are)");
        }
    }

    /**
     * Stops the demo when the allocation that just failed had a region refused by the guard: the
     * machine's memory, not the trace's limit, ran out. The allocator is closed first (by force:
     * its live allocations go with it).
     */
    private static void stopIfHostMemoryRan(AvailableMemoryGuard guard, BfcAllocator allocator, TraceReader reader,
            TraceEvent e, long available) {
        if (guard == null || !guard.refusedSinceReset()) {
            return;
        }
        long held = allocator.reservedBytes();
        allocator.close();
        throw new HostMemoryExhausted("line " + reader.lineNumber() + " (alloc of " + e.bytes() + " bytes) needs a"
                + " region beyond the host memory this machine had available when the demo started: "
                + BfcAllocator.humanReadableNumBytes(held) + " of regions held, at most "
                + BfcAllocator.humanReadableNumBytes(guard.capBytes()) + " ("
                + BfcAllocator.humanReadableNumBytes(available) + " available less "
                + BfcAllocator.humanReadableNumBytes(AvailableMemoryGuard.MARGIN_BYTES) + "), under the trace's limit of "
                + BfcAllocator.humanReadableNumBytes(allocator.memoryLimit()) + ". The demo writes every byte it"
                + " allocates; replay this trace on simulated memory instead (bfc replay FILE), or free memory and"
                + " run it again");
    }

    /** The demo stopped: the machine's memory ran out before the trace's limit. */
    private static final class HostMemoryExhausted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HostMemoryExhausted(String message) {
            super(message);
        }
    }

    /** Writes every byte of a raw allocation, as the others are written through their views. */
    private static long write(long ptr, long bytes, long id) {
        BytePointer p = new BytePointer() {
            {
                address = ptr;
            }
        };
        Pointer.memset(p, (int) (id & 0x7f) | 1, bytes);
        if (p.get(bytes - 1) == 0) {
            throw new IllegalStateException("a write to 0x" + Long.toHexString(ptr) + " did not stick");
        }
        return bytes;
    }

    private static void row(PrintWriter out, String name, String value, String note) {
        out.println(String.format(java.util.Locale.ROOT, "  %-18s %12s  %s", name, value, note).stripTrailing());
    }
}
