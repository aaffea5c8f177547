/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.trace.StatKey;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.WorkloadResult;
import io.github.bfc4j.trace.WorkloadRunner;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link WorkloadRunner} (what {@code bfc replay}, {@code whatif} and {@code report} measure with)
 * under each bundled trace's own options agrees with TensorFlow's answers in the trace: its
 * out-of-memory failures are exactly the {@code alloc ... => null} lines of at least one byte,
 * its regions obtained are exactly the {@code sub alloc ... => <address>} lines (same bytes,
 * made by the same call), its peak reserved is the peak of the pool those lines and the
 * {@code sub free} lines describe, and its peak in use is no lower than any {@code stats
 * bytes_in_use=} the trace states.
 */
class WorkloadRunnerConformanceTest {

    /** Every bundled trace: the generated ones, then the recorded ones. */
    static List<Path> allTraces() throws IOException, URISyntaxException {
        List<Path> all = new ArrayList<>();
        for (String d : new String[] {"traces", "recorded"}) {
            URL url = WorkloadRunnerConformanceTest.class.getResource("/" + d);
            assertThat(url).isNotNull();
            try (Stream<Path> files = Files.list(Path.of(url.toURI()))) {
                all.addAll(files.filter(Files::isRegularFile).sorted().toList());
            }
        }
        return all;
    }

    @TestFactory
    Stream<DynamicTest> agreesWithTheTracesAnswers() throws IOException, URISyntaxException {
        return allTraces().stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), p.toUri(), () -> {
            List<Long> oomLines = new ArrayList<>();
            List<Long> extendLines = new ArrayList<>();
            List<Long> extendBytes = new ArrayList<>();
            long calls = 0;
            long pool = 0;
            long peakPool = 0;
            long maxStatedInUse = 0;
            try (TraceReader r = TraceReader.open(p)) {
                long lastCall = 0;
                for (TraceEvent e = r.next(); e != null; e = r.next()) {
                    if (e.kind().isCall()) {
                        calls++;
                        lastCall = e.lineNumber();
                    }
                    switch (e.kind()) {
                        case ALLOC:
                            if (e.address() == 0 && e.bytes() > 0) {
                                oomLines.add(e.lineNumber());
                            }
                            break;
                        case SUB_ALLOC:
                            if (e.address() != 0) {
                                extendLines.add(lastCall);
                                extendBytes.add(e.bytes());
                                pool += e.bytes();
                                peakPool = Math.max(peakPool, pool);
                            }
                            break;
                        case SUB_FREE:
                            pool -= e.bytes();
                            break;
                        case STATS:
                            for (int i = 0; i < e.statCount(); i++) {
                                if (e.statKey(i) == StatKey.BYTES_IN_USE) {
                                    maxStatedInUse = Math.max(maxStatedInUse, e.statValue(i));
                                }
                            }
                            break;
                        default:
                            break;
                    }
                }
            }
            WorkloadResult w;
            try (TraceReader r = TraceReader.open(p)) {
                w = WorkloadRunner.forHeader(r.header()).run(r);
            }
            assertThat(w.calls()).isEqualTo(calls);
            List<Long> actualOoms = new ArrayList<>();
            for (int i = 0; i < w.oomCount(); i++) {
                actualOoms.add(w.oomLine(i));
            }
            assertThat(actualOoms).isEqualTo(oomLines);
            List<Long> actualExtendLines = new ArrayList<>();
            List<Long> actualExtendBytes = new ArrayList<>();
            for (int i = 0; i < w.extendCount(); i++) {
                actualExtendLines.add(w.extendLine(i));
                actualExtendBytes.add(w.extendBytes(i));
            }
            assertThat(actualExtendLines).isEqualTo(extendLines);
            assertThat(actualExtendBytes).isEqualTo(extendBytes);
            assertThat(w.peakPoolBytes()).isEqualTo(peakPool);
            assertThat(w.peakBytesInUse()).isGreaterThanOrEqualTo(maxStatedInUse);
            assertThat(w.fragmentationAtPeak()).isBetween(0.0, 1.0);
        }));
    }
}
