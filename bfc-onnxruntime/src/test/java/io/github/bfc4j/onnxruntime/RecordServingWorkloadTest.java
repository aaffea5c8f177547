package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A recorded serving workload is a trace that replays to what the live allocator saw. */
class RecordServingWorkloadTest {

    @Test
    void theRecordedTraceReplaysAsTheLiveRunWent(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("serving.bfctrace.gz");
        // One caller thread: the trace's order is then exactly the order the allocator served.
        RecordServingWorkload.Result live = RecordServingWorkload.record(trace, 8, 1);
        assertThat(live.allocs()).as("every allocation of the run was recorded").isEqualTo(live.allocationsTotal());
        assertThat(live.frees()).as("and freed by the end").isEqualTo(live.allocs());

        long allocLines = 0;
        long freeLines = 0;
        try (TraceReader reader = TraceReader.open(trace)) {
            assertThat(reader.header().isWorkload()).isTrue();
            assertThat(reader.header().memoryLimit()).isEqualTo(RecordServingWorkload.LIMIT);
            for (TraceEvent e = reader.next(); e != null; e = reader.next()) {
                allocLines += e.kind() == TraceEvent.Kind.ALLOC ? 1 : 0;
                freeLines += e.kind() == TraceEvent.Kind.FREE ? 1 : 0;
            }
        }
        assertThat(allocLines).isEqualTo(live.allocs());
        assertThat(freeLines).isEqualTo(live.frees());

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
        assertThat((double) replay.peakBytesInUse()).isCloseTo(live.peakBytesInUse(),
                org.assertj.core.data.Percentage.withPercentage(5));
        assertThat(replay.peakPoolBytes()).isEqualTo(live.peakReservedBytes());
    }
}
