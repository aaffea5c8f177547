/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExportSnapshotCommandTest {

    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @SuppressWarnings("unchecked")
    private static Map<String, Object> read(Path p) throws IOException {
        return (Map<String, Object>) new Unpickler().loads(Files.readAllBytes(p));
    }

    private static long num(Object o) {
        return ((Number) o).longValue();
    }

    @Test
    @SuppressWarnings("unchecked")
    void anImportedTensorFlowLogBecomesASnapshotWithItsStacks() throws IOException {
        Path trace = dir.resolve("tf.bfctrace");
        assertThat(cli.run("import-tf-log", Cli.TF_LOG, "--allocator", "bfc_cpu_allocator_for_gpu", "-o", trace))
                .isEqualTo(0);
        Path out = dir.resolve("snapshot.pickle");
        assertThat(cli.run("export-snapshot", trace, "-o", out, "--at", "peak")).as(cli.err).isEqualTo(0);
        assertThat(cli.out).contains("wrote " + out).contains("4 segments").contains("at the peak (call ")
                .contains("https://pytorch.org/memory_viz");
        Map<String, Object> s = read(out);
        List<Map<String, Object>> segments = (List<Map<String, Object>>) s.get("segments");
        assertThat(segments).hasSize(4);
        long active = 0;
        for (Map<String, Object> seg : segments) {
            for (Map<String, Object> b : (List<Map<String, Object>>) seg.get("blocks")) {
                if (b.get("state").equals("active_allocated")) {
                    active += num(b.get("size"));
                    // Each block in use has the stack its [mem-debug] line gave.
                    List<Map<String, Object>> frames = (List<Map<String, Object>>) b.get("frames");
                    assertThat(frames).isNotEmpty();
                    assertThat((String) frames.get(frames.size() - 1).get("name")).isEqualTo("TF_SessionRun");
                }
            }
        }
        // bfc replay of the same trace says the peak in use: the snapshot is taken there.
        assertThat(cli.run("replay", trace)).isEqualTo(0);
        assertThat(cli.out).contains("peak in use    " + Sizes.format(active) + " (" + active + " bytes)");
        List<Map<String, Object>> events = ((List<List<Map<String, Object>>>) s.get("device_traces")).get(0);
        assertThat(events.get(0).get("action")).isEqualTo("segment_alloc");
        assertThat(events).extracting(e -> e.get("action")).contains("alloc", "free_requested", "free_completed");
    }

    /**
     * A trace from standard input gives the snapshot the file gives, also at the peak (two passes
     * over one input), and a trace cut inside its last line is exported up to it with a warning,
     * as docs/cli.md says of every command that runs a trace.
     */
    @Test
    void standardInputAndACutTraceAreReadAsByTheOtherCommands() throws IOException {
        Path trace = Cli.TRACES.resolve("tiny-single.bfctrace");
        byte[] bytes = Files.readAllBytes(trace);
        for (String at : new String[] {"end", "peak"}) {
            Path fromFile = dir.resolve("file-" + at + ".pickle");
            Path fromStdin = dir.resolve("stdin-" + at + ".pickle");
            assertThat(cli.run("export-snapshot", trace, "-o", fromFile, "--at", at)).as(cli.err).isEqualTo(0);
            String fileSummary = cli.out.lines().findFirst().orElseThrow().replace(fromFile.toString(), "OUT");
            assertThat(cli.runWithStdin(bytes, "export-snapshot", "-", "-o", fromStdin, "--at", at)).as(cli.err)
                    .isEqualTo(0);
            assertThat(cli.out.lines().findFirst().orElseThrow().replace(fromStdin.toString(), "OUT"))
                    .isEqualTo(fileSummary);
            // The segments and blocks; the events carry the replay's clock (the trace gives no times).
            assertThat(read(fromStdin).get("segments")).usingRecursiveComparison()
                    .isEqualTo(read(fromFile).get("segments"));
        }
        Path cut = dir.resolve("cut.bfctrace");
        Files.write(cut, Arrays.copyOf(bytes, bytes.length - 3)); // its last line, a stats line, cut short
        long lines = Files.readAllLines(trace).size();
        assertThat(cli.run("export-snapshot", cut, "-o", dir.resolve("cut.pickle"))).as(cli.err).isEqualTo(0);
        assertThat(cli.err.lines()).containsExactly("bfc export-snapshot: warning: " + cut + " line " + lines
                + ": the last line has no line break after it: the file may be truncated (the snapshot covers the"
                + " lines read)");
    }

    @Test
    @SuppressWarnings("unchecked")
    void theEventsCarryTheTimesTheTraceRecorded() throws IOException {
        String header = "bfctrace 1\nname timed\nsource workload: test\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\n"
                + "suballocator sim base=0x100000000 capacity=2097152 gap=0 coalescing=false\n";
        Path timed = dir.resolve("timed.bfctrace");
        Files.writeString(timed, header
                + "#@ alloc 1 thread=main time_us=1000\nalloc 1 256\n"
                + "#@ alloc 2 time_us=2500\nalloc 2 512\n"
                + "free 1\n"
                + "#@ alloc 3 annotation=op\nalloc 3 1024\n" // no time of its own
                + "#@ alloc 4 time_us=4000\nalloc 4 2048\n");
        Path out = dir.resolve("timed.pickle");
        assertThat(cli.run("export-snapshot", timed, "-o", out)).as(cli.err).isEqualTo(0);
        List<Map<String, Object>> events = ((List<List<Map<String, Object>>>) read(out).get("device_traces")).get(0);
        // The region is obtained by alloc 1, free 1 and alloc 3 carry the latest time recorded before them.
        assertThat(events).extracting(e -> e.get("action") + "@" + num(e.get("time_us"))).containsExactly(
                "segment_alloc@1000", "alloc@1000", "alloc@2500", "free_requested@2500", "free_completed@2500",
                "alloc@2500", "alloc@4000");

        // A trace that recorded no time: the replay's clock.
        Path untimed = dir.resolve("untimed.bfctrace");
        Files.writeString(untimed, header + "alloc 1 256\nfree 1\n");
        long before = System.currentTimeMillis() * 1000;
        assertThat(cli.run("export-snapshot", untimed, "-o", out)).as(cli.err).isEqualTo(0);
        long after = System.currentTimeMillis() * 1000;
        events = ((List<List<Map<String, Object>>>) read(out).get("device_traces")).get(0);
        assertThat(events).hasSize(4);
        for (Map<String, Object> e : events) {
            assertThat(num(e.get("time_us"))).isBetween(before - 1000, after + 1000);
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void theEndOfATraceAndTheLatestEvents() throws IOException {
        Path out = dir.resolve("end.pickle");
        assertThat(cli.run("export-snapshot", Cli.RECORDED.resolve("tf-resnet-train.bfctrace"), "-o", out,
                "--max-entries", "100")).as(cli.err).isEqualTo(0);
        assertThat(cli.out).contains("100 events (the latest; ").contains("older dropped, see --max-entries)")
                .contains("at the end (5226 calls)");
        Map<String, Object> s = read(out);
        List<Map<String, Object>> events = ((List<List<Map<String, Object>>>) s.get("device_traces")).get(0);
        assertThat(events.size()).isBetween(100, 200); // a free is two entries
    }

    @Test
    void atThePeakOfATraceWithNothingEverInUseSaysItIsTheEnd() throws IOException {
        // Only a 0-byte allocation (null) and its free: no call has anything in use, no peak.
        Path t = Files.writeString(dir.resolve("zero.bfctrace"), "bfctrace 1\nname zero\nsource workload: a test\n"
                + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
                + " timing_counter=false\nsuballocator sim base=0x7f0000000000 capacity=69206016 gap=0"
                + " coalescing=true\nalloc 1 0\nfree 1\n");
        assertThat(cli.run("export-snapshot", t, "-o", dir.resolve("zero.pickle"), "--at", "peak")).as(cli.err)
                .isZero();
        assertThat(cli.out).contains("): 0 segments, 0 blocks, 0 events, at the end (2 calls: nothing was ever in"
                + " use, so there is no peak)\n");
    }

    @Test
    void badOptionsAreNamed() {
        assertThat(cli.run("export-snapshot", Cli.TRACES.resolve("tiny-single.bfctrace"), "-o", dir.resolve("x"),
                "--at", "middle")).isEqualTo(2);
        assertThat(cli.err).contains("--at=middle (expected: end or peak)");
        assertThat(cli.run("export-snapshot", Cli.TRACES.resolve("tiny-single.bfctrace"), "-o",
                dir.resolve("no/such/dir/x.pickle"))).isEqualTo(2);
        assertThat(cli.err).contains("expected: a file in an existing directory");
    }
}
