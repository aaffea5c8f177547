/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.zip.ZipException;

/**
 * Coverage-guided fuzzing of {@link TraceReader} (Jazzer). Any bytes in: the reader either
 * reads them to the end, or throws a {@link TraceFormatException} whose message names the file
 * and a line, or (only for input that starts with the gzip magic bytes) an {@link IOException}
 * of a corrupt gzip stream: naming the line being read, or a {@link ZipException} or
 * {@link EOFException} from the gzip header. Any other exception is a finding.
 *
 * <p>Kept crash inputs: {@code crash-585fffe6...}, a corrupt gzip stream whose error this test
 * first wrongly refused (the reader reports it as an {@code IOException} naming line 1).
 *
 * <p>{@code mvn verify} runs the seeds in {@code TraceReaderFuzzTestInputs/} (real traces) and
 * every crash input kept there. Fuzzing: {@code JAZZER_FUZZ=1 mvn -pl bfc-core test
 * -Dtest=TraceReaderFuzzTest} (docs/reliability.md).
 */
class TraceReaderFuzzTest {

    private static final String FILE = "fuzz.bfctrace";

    @FuzzTest(maxDuration = "30s")
    void traceReaderParsesOrRejectsCleanly(byte[] data) throws IOException {
        boolean gzip = data.length >= 2 && (data[0] & 0xff) == 0x1f && (data[1] & 0xff) == 0x8b;
        long lastLine = 0;
        try (TraceReader r = TraceReader.open(new ByteArrayInputStream(data), FILE)) {
            if (r.header() == null) {
                throw new AssertionError("opened without a header");
            }
            for (TraceEvent e = r.next(); e != null; e = r.next()) {
                if (e.lineNumber() <= lastLine) {
                    throw new AssertionError("line " + e.lineNumber() + " after line " + lastLine);
                }
                lastLine = e.lineNumber();
                e.toString();
            }
        } catch (TraceFormatException e) {
            if (e.lineNumber() < 1 || !e.getMessage().startsWith(FILE + " line " + e.lineNumber() + ": ")) {
                throw new AssertionError("a format error must name the file and a line: " + e.getMessage(), e);
            }
        } catch (ZipException | EOFException e) {
            // The gzip header itself is corrupt (thrown while opening, before any line).
            if (!gzip) {
                throw new AssertionError("a gzip error for input that is not gzip", e);
            }
        } catch (IOException e) {
            // A read error (a corrupt gzip stream) is reported with the line being read.
            if (!gzip || !e.getMessage().startsWith(FILE + " line ")) {
                throw new AssertionError("an I/O error must come from a gzip stream and name the"
                        + " line: " + e.getMessage(), e);
            }
        }
    }
}
