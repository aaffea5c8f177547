/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.trace;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.ClassPathDirectory;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

/**
 * Seeded mutations of real traces, read and replayed for a few seconds: every input is either
 * replayed or refused with a {@link TraceFormatException} (or, for gzip input, an
 * {@link IOException}) that names the file and a line. Nothing else may come out: no other
 * exception, and no {@link OutOfMemoryError} or {@link StackOverflowError} from a small file. The
 * mutations are the damage files meet (cut lines, a line repeated or lost, a number past
 * {@code Long.MAX_VALUE}, a sign, bytes flipped) and the large-count lines a reader must not
 * take on trust (an id of 2^62, a stack of many frames). Unlike {@link TraceReaderFuzzTest}
 * (coverage-guided, from bytes), it runs in every build, and prints its seed:
 * {@code -Dbfc4j.test.seed=N} repeats a run, {@code -Dbfc4j.test.millis=M} runs longer.
 */
class TraceReaderMutationTest {

    private static final String FILE = "mutant.bfctrace";

    private static final String PROVENANCE_SEED = "bfctrace 1\n"
            + "name provenance seed\n"
            + "source workload: hand-written\n"
            + "options memory_limit=1048576 allow_growth=true garbage_collection=false fragmentation_fraction=0"
            + " timing_counter=true\n"
            + "suballocator sim base=0x7f0000000000 capacity=4194304 gap=0 coalescing=true\n"
            + "#@ frame 1 com.example.Model forward Model.java 42\n"
            + "#@ frame 2 - tensorflow::Tensor::Tensor(tsl::Allocator*,%20int) - -\n"
            + "#@ stack 1 1 2\n"
            + "#@ alloc 1 thread=worker-1 time_us=100 annotation=dense/MatMul step=7 stack=1\n"
            + "alloc 1 4096 align=256\n"
            + "#@ alloc 2 thread=- time_us=200\n"
            + "alloc 2 1000 freed_before=1\n"
            + "free 1\n"
            + "frontier 1\n"
            + "free 2\n";

    private static final String[] NUMBERS = {"0", "-1", "1", "9223372036854775807", "9223372036854775808",
            "99999999999999999999999999", "4611686018427387904", "4194303", "4194304", "0x7fffffffffffffff",
            "0xffffffffffffffff", "0x10000000000000000", "-9223372036854775808", "+1", "01", "1e9", "256",
            "18446744073709551615", "2147483648"};

    @Test
    void mutatedTracesAreReadOrRefusedWithALine() throws IOException {
        long seed = Long.getLong("bfc4j.test.seed", System.nanoTime());
        long millis = Long.getLong("bfc4j.test.millis", 3000);
        System.out.println("TraceReaderMutationTest seed: -Dbfc4j.test.seed=" + seed);
        List<byte[]> seeds = seeds();
        Random rnd = new Random(seed);
        long end = System.nanoTime() + millis * 1_000_000;
        int runs = 0;
        // A mutant that leaves allocations live has its close() forced, and logged: quiet here.
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("io.github.bfc4j.core.BfcAllocator");
        java.util.logging.Level level = log.getLevel();
        log.setLevel(java.util.logging.Level.OFF);
        try {
            do {
                byte[] original = seeds.get(rnd.nextInt(seeds.size()));
                boolean gzip = rnd.nextInt(8) == 0;
                byte[] input = mutate(original, rnd);
                if (gzip) {
                    input = gzip(input);
                    if (rnd.nextInt(3) == 0) {
                        input = java.util.Arrays.copyOf(input, rnd.nextInt(input.length + 1));
                    }
                }
                check(input, gzip, "seed " + seed + ", run " + runs);
                runs++;
            } while (System.nanoTime() < end);
        } finally {
            log.setLevel(level);
        }
        System.out.println("TraceReaderMutationTest: " + runs + " mutants");
    }

    private static void check(byte[] input, boolean gzip, String which) {
        try (TraceReader r = TraceReader.open(new ByteArrayInputStream(input), FILE)) {
            TraceReplayer.replay(r);
        } catch (TraceFormatException e) {
            assertThat(e.getMessage()).as(which).startsWith(FILE + " line " + e.lineNumber() + ": ");
        } catch (IOException e) {
            assertThat(gzip).as(which + ": an I/O error from a plain text trace: " + e).isTrue();
            assertThat(e.getMessage()).as(which).startsWith(FILE);
        } catch (Throwable t) {
            throw new AssertionError(which + ": " + t + " for the input\n"
                    + new String(input, 0, Math.min(input.length, 4000), StandardCharsets.UTF_8), t);
        }
    }

    private static byte[] mutate(byte[] original, Random rnd) {
        List<String> lines = new ArrayList<>(List.of(new String(original, StandardCharsets.UTF_8).split("\n", -1)));
        int edits = 1 + rnd.nextInt(3);
        for (int k = 0; k < edits && !lines.isEmpty(); k++) {
            int i = rnd.nextInt(lines.size());
            String line = lines.get(i);
            switch (rnd.nextInt(10)) {
                case 0 -> lines.remove(i);
                case 1 -> lines.add(i, line);
                case 2 -> lines.set(i, line.substring(0, rnd.nextInt(line.length() + 1)));
                case 3 -> lines.set(i, replaceNumber(line, NUMBERS[rnd.nextInt(NUMBERS.length)], rnd));
                case 4 -> lines.set(i, replaceNumber(line, "-" + line.replaceAll("[^0-9]", "").replaceFirst("^$", "1"),
                        rnd));
                case 5 -> {
                    int j = rnd.nextInt(lines.size());
                    lines.set(i, lines.get(j));
                    lines.set(j, line);
                }
                case 6 -> lines.add(i, "#@ stack " + rnd.nextInt(4) + " 1" + " 1".repeat(rnd.nextInt(100_000)));
                case 7 -> lines.add(i, bigAlloc(rnd));
                case 8 -> {
                    byte[] b = line.getBytes(StandardCharsets.UTF_8);
                    if (b.length > 0) {
                        b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                    }
                    lines.set(i, new String(b, StandardCharsets.ISO_8859_1));
                }
                default -> {
                    // The end of the file cut anywhere.
                    String all = String.join("\n", lines);
                    return all.substring(0, rnd.nextInt(all.length() + 1)).getBytes(StandardCharsets.UTF_8);
                }
            }
        }
        return String.join("\n", lines).getBytes(StandardCharsets.UTF_8);
    }

    private static String bigAlloc(Random rnd) {
        String id = NUMBERS[rnd.nextInt(NUMBERS.length)];
        String bytes = NUMBERS[rnd.nextInt(NUMBERS.length)];
        return switch (rnd.nextInt(4)) {
            case 0 -> "alloc " + id + " " + bytes;
            case 1 -> "alloc " + id + " " + bytes + " align=" + NUMBERS[rnd.nextInt(NUMBERS.length)];
            case 2 -> "free " + id;
            default -> "frontier " + bytes;
        };
    }

    /** The line with one of its numbers (a run of digits) replaced by {@code by}. */
    private static String replaceNumber(String line, String by, Random rnd) {
        List<int[]> runs = new ArrayList<>();
        for (int i = 0; i < line.length(); ) {
            if (Character.isDigit(line.charAt(i))) {
                int s = i;
                while (i < line.length() && Character.isDigit(line.charAt(i))) {
                    i++;
                }
                runs.add(new int[] {s, i});
            } else {
                i++;
            }
        }
        if (runs.isEmpty()) {
            return line;
        }
        int[] r = runs.get(rnd.nextInt(runs.size()));
        return line.substring(0, r[0]) + by + line.substring(r[1]);
    }

    private static List<byte[]> seeds() throws IOException {
        List<byte[]> seeds = new ArrayList<>();
        seeds.add(PROVENANCE_SEED.getBytes(StandardCharsets.UTF_8));
        // From the class path (test-classes or the test jar), whatever the working directory.
        Map<String, byte[]> files = ClassPathDirectory.files(TraceReaderMutationTest.class,
                "io/github/bfc4j/trace/TraceReaderFuzzTestInputs/traceReaderParsesOrRejectsCleanly");
        for (Map.Entry<String, byte[]> f : files.entrySet()) {
            if (!f.getKey().contains(".bfctrace")) {
                continue;
            }
            byte[] b = f.getValue();
            if (f.getKey().endsWith(".gz")) {
                try (InputStream in = new GZIPInputStream(new ByteArrayInputStream(b))) {
                    b = in.readAllBytes();
                }
            }
            seeds.add(b);
        }
        assertThat(seeds).hasSizeGreaterThan(3);
        return seeds;
    }

    private static byte[] gzip(byte[] b) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(b);
        }
        return out.toByteArray();
    }
}
