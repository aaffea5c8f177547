/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static io.github.bfc4j.trace.TraceReaderTest.WORKLOAD_HEADER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Provenance;
import io.github.bfc4j.core.StackFrame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The provenance extension: written by TraceWriter, read back by TraceReader, invisible to the body. */
class TraceProvenanceTest {

    private static final StackFrame JAVA = new StackFrame("com.example.Model", "forward", "Model.java", 42);
    private static final StackFrame CPP = new StackFrame("",
            "tensorflow::OpKernelContext::allocate_output(int, tensorflow::TensorShape const&, tensorflow::Tensor**)",
            null, -1);
    private static final StackFrame ODD = new StackFrame("-", "m=%20 x\t", "dir with space/\u00e9t\u00e9.java", 0);

    private static String write(List<Provenance> provenances) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = TraceWriter.of(out, false)) {
            w.header(TraceReaderTest.open(WORKLOAD_HEADER).header());
            for (int i = 0; i < provenances.size(); i++) {
                w.provenance(i + 1, provenances.get(i));
                w.workloadAlloc(i + 1, 1000 * (i + 1), 64, 0);
            }
            w.free(1);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static List<Provenance> read(String text) throws IOException {
        List<Provenance> got = new ArrayList<>();
        try (TraceReader r = TraceReaderTest.open(text)) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.kind() == TraceEvent.Kind.ALLOC) {
                    got.add(e.provenance());
                } else {
                    assertThat(e.provenance()).isNull();
                }
            }
        }
        return got;
    }

    @Test
    void writtenProvenanceReadsBackField() throws IOException {
        List<Provenance> in = List.of(
                new Provenance(1_700_000_000_000_000L, "main", "encoder/layer3/attention", 12, List.of(JAVA, CPP)),
                new Provenance(-1, "pool-1 thread=2", null, -1, List.of(JAVA, CPP)),
                new Provenance(1_700_000_000_000_005L, null, "odd name = 100%", 0, List.of(ODD, JAVA)), // times never go back
                Provenance.UNKNOWN);
        String text = write(in);
        List<Provenance> out = read(text);
        assertThat(out.subList(0, 3)).containsExactlyElementsOf(in.subList(0, 3));
        assertThat(out.get(3)).isNull(); // nothing known: nothing written
        // Each frame and stack is defined once: the second use of [JAVA, CPP] refers to stack 1.
        assertThat(text.lines().filter(l -> l.startsWith("#@ frame"))).hasSize(3);
        assertThat(text.lines().filter(l -> l.startsWith("#@ stack"))).hasSize(2);
        assertThat(text).contains("#@ alloc 2 thread=pool-1%20thread%3D2 stack=1\n");
    }

    @Test
    void anEmptyThreadNameReadsBackEmptyNotUnknown() throws IOException {
        // new Thread(task, "") is a thread with an empty name: it was known, and is not null.
        List<Provenance> in = List.of(
                new Provenance(7, "", null, -1, List.of()),
                new Provenance(8, null, "a", 3, List.of()),
                new Provenance(9, "-", "-", -1, List.of()));
        String text = write(in);
        assertThat(text).contains("#@ alloc 1 thread=- time_us=7\n", "#@ alloc 2 time_us=8 annotation=a step=3\n",
                "#@ alloc 3 thread=%2D time_us=9 annotation=%2D\n");
        assertThat(read(text)).containsExactlyElementsOf(in);
    }

    @Test
    void theExtensionIsCommentsToAReaderThatDoesNotKnowIt() throws IOException {
        String text = write(List.of(new Provenance(7, "t", "a", 1, List.of(JAVA))));
        // Every line of the extension is a comment of format version 1 ...
        assertThat(text.lines().filter(l -> l.startsWith("#@"))).isNotEmpty()
                .allMatch(l -> l.startsWith("#"));
        // ... and the body without them reads the same calls.
        String stripped = text.lines().filter(l -> !l.startsWith("#@")).map(l -> l + "\n").collect(Collectors.joining());
        assertThat(bodyOf(stripped)).isEqualTo(bodyOf(text));
        assertThat(read(stripped)).containsOnlyNulls();
    }

    private static String bodyOf(String text) throws IOException {
        StringBuilder sb = new StringBuilder();
        try (TraceReader r = TraceReaderTest.open(text)) {
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                sb.append(e).append('\n');
            }
        }
        return sb.toString();
    }

    @Test
    void aProvenanceLineTheReaderWouldRefuseIsNotWritten() throws IOException {
        // 700,000 characters that encode to 3 bytes each (a space is %20), past a line's 1 MiB.
        String spaces = " ".repeat(700_000);
        String wide = "\u00e9".repeat(600_000); // 2 bytes each in UTF-8: 1.2 MB
        StackFrame longFrame = new StackFrame("com.example.Long", "m" + "x".repeat(1 << 20), "L.java", 1);
        List<Provenance> tooLong = List.of(
                new Provenance(1, spaces, null, -1, List.of()),
                new Provenance(1, "main", wide, 3, List.of()),
                new Provenance(1, "main", "a", 3, List.of(JAVA, longFrame)));
        for (Provenance p : tooLong) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (TraceWriter w = TraceWriter.of(out, false)) {
                w.header(TraceReaderTest.open(WORKLOAD_HEADER).header());
                assertThatThrownBy(() -> w.provenance(7, p)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageStartingWith("provenance of alloc 7: a line of ")
                        .hasMessageContaining("bytes, longer than a trace line may be (1048576 bytes)");
                // Nothing of it was written or remembered: the next provenance, with the same
                // frame that came before the long one, defines it and reads back.
                Provenance ok = new Provenance(2, "main", "b", 4, List.of(JAVA));
                w.provenance(8, ok);
                w.workloadAlloc(8, 100, 64, 0);
                w.close();
                assertThat(read(out.toString(StandardCharsets.UTF_8))).containsExactly(ok);
            }
        }
        // At the limit exactly it is written, and read back.
        String head = "#@ alloc 9 thread=";
        Provenance widest = new Provenance(-1, "t".repeat(TraceReader.MAX_LINE_BYTES - head.length()), null, -1,
                List.of());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = TraceWriter.of(out, false)) {
            w.header(TraceReaderTest.open(WORKLOAD_HEADER).header());
            w.provenance(9, widest);
            w.workloadAlloc(9, 100, 64, 0);
        }
        assertThat(read(out.toString(StandardCharsets.UTF_8))).containsExactly(widest);
    }

    @Test
    void provenanceBelongsToTheNextAllocLineOnly() throws IOException {
        String text = WORKLOAD_HEADER
                + "#@ alloc 2 annotation=x\n"
                + "alloc 1 100\n" // another id: the pending line does not apply
                + "#@ alloc 2 annotation=y\n"
                + "alloc 2 100\n"
                + "#@ alloc 3 annotation=z\n"
                + "free 1\n" // a body line in between drops it
                + "alloc 3 100\n"
                + "#@ future-kind whatever it says\n"
                + "alloc 4 100\n";
        List<Provenance> got = read(text);
        assertThat(got).hasSize(4);
        assertThat(got.get(0)).isNull();
        assertThat(got.get(1).annotation()).isEqualTo("y");
        assertThat(got.get(2)).isNull();
        assertThat(got.get(3)).isNull();
    }

    @Test
    void copyingATraceEventByEventKeepsItsProvenance() throws IOException {
        String text = write(List.of(new Provenance(7, "t", "a", 1, List.of(JAVA, ODD)),
                new Provenance(8, "u", null, -1, List.of(ODD))));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceReader r = TraceReaderTest.open(text); TraceWriter w = TraceWriter.of(out, false)) {
            w.header(r.header());
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                w.write(e);
            }
        }
        assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo(text);
    }

    /**
     * An annotation whose text is empty or blank is none, as {@code annotation=-} is: the replay
     * runs, and the allocation names no annotation. {@code annotation=} stopped the replay at
     * the {@code alloc} line ({@code IllegalArgumentException: name=''} from
     * {@code MemoryAnnotation}), and {@code annotation=%20} made a holder named by a space.
     */
    @Test
    void anEmptyOrBlankAnnotationIsNone() throws IOException {
        for (String text : new String[] {"", "%20", "%09%20"}) {
            String trace = WORKLOAD_HEADER + "#@ alloc 1 thread=main annotation=" + text + " step=4 stack=1\n"
                    + "alloc 1 100\n";
            trace = trace.replace("#@ alloc 1", "#@ frame 1 com.example.A f A.java 3\n#@ stack 1 1\n#@ alloc 1");
            List<Provenance> got = read(trace);
            assertThat(got).as("annotation=" + text).containsExactly(
                    new Provenance(-1, "main", null, 4, List.of(new StackFrame("com.example.A", "f", "A.java", 3))));
            try (TraceReader r = TraceReaderTest.open(trace)) {
                WorkloadResult result = WorkloadRunner.forHeader(r.header()).run(r);
                assertThat(result.calls()).as("annotation=" + text + ": replayed").isEqualTo(1);
            }
        }
    }

    @Test
    void malformedLinesOfTheExtensionAreErrorsNamingTheLine() {
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1 stack=3\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("line 6")
                .hasMessageContaining("stack 3, which no earlier '#@ stack' line defines");
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ frame 1 a b c 1\n#@ frame 1 a b c 2\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("a second definition of frame 1");
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1 annotation=%4\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("percent-encoded");
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1 colour=red\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("the key 'colour'");
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ stack 1 9\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("frame 9");
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1  step=2\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("an empty token");
    }

    /**
     * Times that go back are refused, naming both lines' times: a replay would record the calls
     * after it at a time before the ones that came first. Equal times are kept (a microsecond
     * holds many calls), and so are lines that give no time.
     */
    @Test
    void aTimeThatGoesBackIsRefusedNamingBothTimes() throws IOException {
        String trace = WORKLOAD_HEADER + "#@ alloc 1 time_us=2000\nalloc 1 100\n"
                + "#@ alloc 2 time_us=2000\nalloc 2 100\n"
                + "alloc 3 100\n"
                + "#@ alloc 4 time_us=1999\nalloc 4 100\n";
        assertThatThrownBy(() -> read(trace)).isInstanceOf(TraceFormatException.class)
                .hasMessageStartingWith("t.bfctrace line 11: found time_us=1999, before time_us=2000 of line 8,"
                        + " expected times that never go back");
        assertThat(read(trace.replace("time_us=1999", "time_us=2000"))).extracting(p -> p == null ? -1 : p.timeMicros())
                .containsExactly(2000L, 2000L, -1L, 2000L);

        // The writer refuses to write such a trace, and writes nothing of the refused line.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (TraceWriter w = TraceWriter.of(out, false)) {
            w.header(TraceReaderTest.open(WORKLOAD_HEADER).header());
            w.provenance(1, new Provenance(2000, "main", null, -1, List.of()));
            w.workloadAlloc(1, 100, 64, 0);
            w.provenance(2, new Provenance(-1, "main", null, -1, List.of(JAVA))); // no time: any place
            w.workloadAlloc(2, 100, 64, 0);
            assertThatThrownBy(() -> w.provenance(3, new Provenance(1999, "main", null, -1, List.of(CPP))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("provenance.timeMicros()=1999 of allocation 3 (expected: no earlier than 2000, the"
                            + " time written before it: a trace's times never go back, or a reader refuses the"
                            + " trace). Nothing was written.");
            w.workloadAlloc(3, 100, 64, 0);
        }
        assertThat(read(out.toString(StandardCharsets.UTF_8))).extracting(p -> p == null ? -1 : p.timeMicros())
                .containsExactly(2000L, -1L, -1L);
    }

    @Test
    void aLongOrControlWordIsQuotedCutAndVisible() {
        // 300,000 bytes of a key, a step or a stack number: quoted to 200, as the reader's own.
        String x = "x".repeat(300_000);
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1 " + x + "=1\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageStartingWith("t.bfctrace line 6: found the key '"
                        + "x".repeat(200) + "...', expected thread, time_us, annotation, step or stack in ");
        String nines = "9".repeat(300_000);
        for (String line : new String[] {"#@ alloc 1 step=" + nines, "#@ alloc 1 stack=" + nines}) {
            assertThatThrownBy(() -> read(WORKLOAD_HEADER + line + "\nalloc 1 100\n"))
                    .isInstanceOf(TraceFormatException.class)
                    .hasMessageStartingWith("t.bfctrace line 6: found '" + "9".repeat(200) + "...', expected");
        }
        // An escape character is shown, not sent to the terminal.
        assertThatThrownBy(() -> read(WORKLOAD_HEADER + "#@ alloc 1 \u001b[2J=1\nalloc 1 100\n"))
                .isInstanceOf(TraceFormatException.class).hasMessageContaining("the key '\\x1b[2J'");
    }
}
