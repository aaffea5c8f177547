/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.github.bfc4j.trace.ReplayResult;
import io.github.bfc4j.trace.TraceEvent;
import io.github.bfc4j.trace.TraceReader;
import io.github.bfc4j.trace.TraceReplayer;
import io.github.bfc4j.trace.TraceWriter;
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replays every bundled trace (test resources {@code traces/}: generated and answered by
 * TensorFlow's own {@code BFCAllocator}; {@code recorded/}: recorded from TensorFlow runs) on
 * the port, one dynamic test per trace named by its file, failing with the replayer's report
 * of the first difference. Also checks that every trace survives a read/write round trip.
 */
class TraceConformanceTest {

    /** The number of files in test resources {@code traces/}. */
    private static final int BUNDLED_TRACES = 48;
    /** The number of files in test resources {@code recorded/}. */
    private static final int BUNDLED_RECORDED = 9;

    @TempDir
    static Path scratch;

    /** The trace files of one resource directory, by name. */
    private static List<Path> traces(String directory) throws IOException, URISyntaxException {
        URL url = TraceConformanceTest.class.getResource("/" + directory);
        assertThat(url).as("test resource directory " + directory + "/").isNotNull();
        Path dir = Path.of(url.toURI());
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(Files::isRegularFile).sorted().toList();
        }
    }

    private static List<Path> allTraces() throws IOException, URISyntaxException {
        List<Path> all = new ArrayList<>(traces("traces"));
        all.addAll(traces("recorded"));
        return all;
    }

    @Test
    void everyBundledTraceIsFound() throws IOException, URISyntaxException {
        List<Path> generated = traces("traces");
        List<Path> recorded = traces("recorded");
        assertThat(generated).hasSize(BUNDLED_TRACES);
        assertThat(recorded).hasSize(BUNDLED_RECORDED);
        for (Path p : allTraces()) {
            assertThat(p.getFileName().toString()).matches(".*\\.bfctrace(\\.gz)?");
        }
        assertThat(allTraces()).extracting(p -> p.getFileName().toString())
                .contains("tiny-single.bfctrace", "big-random-1m-s71.bfctrace.gz", "tf-resnet-train.bfctrace")
                .doesNotHaveDuplicates();
    }

    @TestFactory
    Stream<DynamicTest> replay() throws IOException, URISyntaxException {
        return allTraces().stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), p.toUri(), () -> {
            ReplayResult r = TraceReplayer.replay(p);
            if (!r.passed()) {
                fail(p.getFileName() + " " + r.message(), r.error());
            }
            assertThat(r.calls()).isPositive();
        }));
    }

    /** Reading each trace and writing it back gives its lines, comments and blank lines left out. */
    @TestFactory
    Stream<DynamicTest> roundTrip() throws IOException, URISyntaxException {
        return allTraces().stream().map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), p.toUri(), () -> {
            Path copy = scratch.resolve(p.getFileName() + ".copy");
            try (TraceReader r = TraceReader.open(p); TraceWriter w = TraceWriter.create(copy, false)) {
                w.header(r.header());
                for (TraceEvent e = r.next(); e != null; e = r.next()) {
                    w.write(e);
                }
            }
            try (BufferedReader original = reader(p); BufferedReader written = reader(copy)) {
                long n = 0;
                for (String line = original.readLine(); line != null; line = original.readLine()) {
                    if (line.isEmpty() || line.startsWith("#")) {
                        continue;
                    }
                    n++;
                    String w = written.readLine();
                    if (!line.equals(w)) {
                        fail(p.getFileName() + ": non-comment line " + n + " written back as '" + w
                                + "', expected '" + line + "'");
                    }
                }
                assertThat(written.readLine()).as("lines written beyond the original's").isNull();
            } finally {
                Files.deleteIfExists(copy);
            }
        }));
    }

    private static BufferedReader reader(Path p) throws IOException {
        InputStream in = new BufferedInputStream(Files.newInputStream(p), 1 << 16);
        in.mark(2);
        boolean gzip = in.read() == 0x1f && in.read() == 0x8b;
        in.reset();
        if (gzip) {
            in = new GZIPInputStream(in, 1 << 16);
        }
        return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
    }
}
