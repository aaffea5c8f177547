package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A recorded serving workload is a trace that replays to what the live allocator saw. */
class RecordServingWorkloadTest {

    /**
     * A count that is no number, or below 1, is one line naming it, then the usage, and exit 2,
     * before anything is run or written. It printed the stack trace of the
     * IllegalArgumentException that named it (exit 1).
     */
    @Test
    void aBadCountIsOneLineAndTheUsageAndExitTwo(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("never.bfctrace");
        String[][] cases = {{"x", "2"}, {"60", "0"}, {"60", "99999999999"}};
        for (String[] c : cases) {
            String which = c[0].equals("60") ? "THREADS=" + c[1] : "REQUESTS=" + c[0];
            ExampleJvm.Result r = ExampleJvm.run(RecordServingWorkload.class, dir, out.toString(), c[0], c[1]);
            assertThat(r.status()).as(r.err().toString()).isEqualTo(2);
            assertThat(r.err()).containsExactly("RecordServingWorkload: " + which + " (expected: a whole number from 1 to 2147483647)",
                    RecordServingWorkload.USAGE);
        }
        assertThat(out).doesNotExist();
    }

    /**
     * An OUT that cannot be written is one line saying why, then the usage, and exit 2, before the
     * recording (minutes): it was found out only when the trace was written at the end, with a
     * stack trace. Here a directory, a missing directory, a read-only file (unless root), and a
     * directory where no file can be created (root's /proc, whose permissions say yes).
     */
    @Test
    void anOutputThatCannotBeWrittenIsOneLineAndTheUsageAndExitTwoBeforeRecording(@TempDir Path dir)
            throws Exception {
        String expected = " (expected: a trace file to create or replace in a directory you may write to)";
        List<String[]> cases = new ArrayList<>();
        cases.add(new String[] {dir.toString(), "OUT=" + dir + " is a directory" + expected});
        Path missing = dir.resolve("missing/serving.bfctrace.gz");
        cases.add(new String[] {missing.toString(), "OUT=" + missing + ": no such directory: " + missing.getParent()
                + expected});
        Path readOnly = Files.writeString(dir.resolve("read-only.bfctrace"), "kept");
        readOnly.toFile().setWritable(false, false);
        if (!Files.isWritable(readOnly)) {
            cases.add(new String[] {readOnly.toString(), "OUT=" + readOnly + " exists and may not be written"
                    + " (read-only)" + expected});
        }
        Path proc = Path.of("/proc");
        if (Files.isDirectory(proc.resolve("self"))) {
            // As root: no file can be created in it (NoSuchFileException); as another user: permission denied.
            cases.add(new String[] {proc.resolve("serving.bfctrace.gz").toString(), "OUT=/proc/serving.bfctrace.gz:"
                    + " no file can be created in /proc ("});
        }
        for (String[] c : cases) {
            // 1 request on 1 thread: were OUT checked only after the recording, that is seconds.
            ExampleJvm.Result r = ExampleJvm.run(RecordServingWorkload.class, dir, c[0], "1", "1");
            assertThat(r.status()).as(r.err().toString()).isEqualTo(2);
            assertThat(r.err()).as(c[0]).hasSize(2).last().isEqualTo(RecordServingWorkload.USAGE);
            assertThat(r.err().get(0)).startsWith("RecordServingWorkload: " + c[1]).endsWith(expected);
            assertThat(r.out()).as("nothing wrote").isEmpty();
        }
        assertThat(readOnly).hasContent("kept");
        assertThat(cases).hasSizeGreaterThanOrEqualTo(2);
    }

    @Test
    void theRecordedTraceReplaysAsTheLiveRunWent(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("serving.bfctrace.gz");
        int requests = 8;
        // One caller thread. With several, the history holds their calls in the order the
        // allocator's lock served them (SnapshotTracesTest), but they interleave differently on
        // every run, and where two free chunks of one size tie, BFC takes the lower address: the
        // host's regions lie in descending order, the simulated ones ascending, so the replay's
        // peak may then differ from the live one by several percent.
        RecordServingWorkload.Result live = RecordServingWorkload.record(trace, requests, 1);
        assertThat(live.allocs()).as("every allocation of the run was recorded").isEqualTo(live.allocationsTotal());
        assertThat(live.frees()).as("and freed by the end").isEqualTo(live.allocs());

        long allocLines = 0;
        long freeLines = 0;
        long sessionLoad = 0;
        Set<Long> steps = new TreeSet<>();
        try (TraceReader reader = TraceReader.open(trace)) {
            assertThat(reader.header().isWorkload()).isTrue();
            assertThat(reader.header().memoryLimit()).isEqualTo(RecordServingWorkload.LIMIT);
            assertThat(reader.header().name()).startsWith("ort-minilm-serving: ").endsWith(requests
                    + " requests from 1 thread");
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                if (e.kind() == TraceEvent.Kind.FREE) {
                    freeLines++;
                    continue;
                }
                allocLines++;
                // Every allocation is the session's creation (on this thread) or a request's (on a
                // server thread), each a step of its own.
                assertThat(e.provenance()).as("line %d has its provenance", e.lineNumber()).isNotNull();
                String annotation = e.provenance().annotation();
                if (RecordServingWorkload.SESSION_LOAD.equals(annotation)) {
                    sessionLoad++;
                    assertThat(e.provenance().thread()).isEqualTo(Thread.currentThread().getName());
                } else {
                    assertThat(annotation).as("line %d", e.lineNumber()).matches("minilm/run batch=\\d+ len=\\d+");
                    assertThat(e.provenance().thread()).startsWith(RecordServingWorkload.THREAD);
                    steps.add(e.provenance().step());
                }
                assertThat(e.provenance().stack()).as("recorded without stacks").isEmpty();
            }
        }
        assertThat(allocLines).isEqualTo(live.allocs());
        assertThat(freeLines).isEqualTo(live.frees());
        assertThat(sessionLoad).as("the weights and initialization").isPositive();
        assertThat(steps).as("every request allocated").hasSize(requests).first().isEqualTo(0L);

        WorkloadResult replay;
        try (TraceReader reader = TraceReader.open(trace)) {
            replay = WorkloadRunner.forHeader(reader.header()).run(reader);
        }
        System.out.println("live: peak in use " + live.peakBytesInUse() + ", peak reserved " + live.peakReservedBytes()
                + "; replay: " + replay);
        assertThat(replay.oomCount()).isZero();
        assertThat(replay.allocations()).isEqualTo(live.allocs());
        // The same calls in the same order on the same options: the same chunks, except where
        // BFC breaks a tie between equal free chunks by address (host regions vs the sim's).
        assertThat((double) replay.peakBytesInUse()).isCloseTo(live.peakBytesInUse(), Percentage.withPercentage(5));
        assertThat(replay.peakPoolBytes()).isEqualTo(live.peakReservedBytes());
    }
}
