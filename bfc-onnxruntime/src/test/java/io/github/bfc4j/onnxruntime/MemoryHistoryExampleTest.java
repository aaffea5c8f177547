/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the history example as a user would and checks the files it writes. */
class MemoryHistoryExampleTest {

    @TempDir
    Path dir;

    /**
     * A word given by mistake ({@code MemoryHistoryExample extra}, or an option such as
     * {@code --verbose}) was made a directory, and the example ran into it.
     */
    @Test
    void aDirectoryThatIsNotThereIsRefusedNotCreated() throws IOException {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8);
        for (String word : new String[] {"extra", "--verbose"}) {
            Path missing = dir.resolve(word);
            assertThatThrownBy(() -> MemoryHistoryExample.run(out, missing))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("DIR=" + missing + " does not exist (expected: an existing directory for"
                            + " snapshot.pickle and ort-minilm.bfctrace; create it first, or give none for the current"
                            + " directory)");
            assertThat(missing).doesNotExist();
        }
        Path file = Files.writeString(dir.resolve("notes.txt"), "x");
        assertThatThrownBy(() -> MemoryHistoryExample.run(out, file))
                .hasMessageStartingWith("DIR=" + file + " is not a directory (expected: ");
        assertThat(captured.size()).isZero();
    }

    @Test
    @SuppressWarnings("unchecked")
    void writesASnapshotForMemoryVizAndAReplayableTrace() throws IOException {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        MemoryHistoryExample.run(new PrintStream(captured, true, StandardCharsets.UTF_8), dir);
        String out = captured.toString(StandardCharsets.UTF_8);
        System.out.println(out);
        assertThat(out).contains("Largest holders (in use, by annotation, else innermost frame outside"
                + " org.bytedeco., else thread, else step, else runtime lent to):")
                .contains("session/load").contains("https://pytorch.org/memory_viz");

        Map<String, Object> s = (Map<String, Object>) new Unpickler()
                .loads(Files.readAllBytes(dir.resolve("snapshot.pickle")));
        List<Map<String, Object>> events = ((List<List<Map<String, Object>>>) s.get("device_traces")).get(0);
        // Every step's allocations carry their annotation and the Java frames that made ORT run.
        List<ai.djl.huggingface.tokenizers.Encoding[]> requests = MemoryHistoryExample.requests();
        for (int step = 0; step < MemoryHistoryExample.STEPS; step++) {
            String tag = ServingWorkload.annotation(requests.get(step)) + " (step " + step + ")";
            assertThat(events).anySatisfy(e -> {
                assertThat(e.get("action")).isEqualTo("alloc");
                assertThat(e.get("user_metadata")).isEqualTo(tag);
                List<Map<String, Object>> frames = (List<Map<String, Object>>) e.get("frames");
                assertThat(frames).anySatisfy(f -> assertThat(f.get("name"))
                        .isEqualTo(MemoryHistoryExample.class.getName() + ".run"));
            });
        }
        // The trace replays: ORT's calls, made again on the simulated address space.
        try (TraceReader r = TraceReader.open(dir.resolve("ort-minilm.bfctrace"))) {
            WorkloadResult w = WorkloadRunner.forHeader(r.header()).run(r);
            assertThat(w.allocations()).isPositive();
            assertThat(w.oomCount()).isZero();
        }
        try (TraceReader r = TraceReader.open(dir.resolve("ort-minilm.bfctrace"))) {
            int withProvenance = 0;
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC && e.provenance() != null
                        && e.provenance().annotation() != null) {
                    withProvenance++;
                }
            }
            assertThat(withProvenance).isPositive();
        }
    }
}
