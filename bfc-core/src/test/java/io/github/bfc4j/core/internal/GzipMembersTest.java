/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;
import org.junit.jupiter.api.Test;

/**
 * {@link GzipMembers} against RFC 1952 and against {@code GZIPInputStream} on inputs both take:
 * members with every optional header field (FEXTRA, FNAME, FCOMMENT, FHCRC), empty members,
 * every buffer size across a member's end, and reads of every length.
 */
class GzipMembersTest {

    private static final int FHCRC = 2;
    private static final int FEXTRA = 4;
    private static final int FNAME = 8;
    private static final int FCOMMENT = 16;

    /** One gzip member of {@code data} with the header fields that {@code flags} names. */
    private static byte[] member(byte[] data, int flags, int level, Random rnd) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x1f);
        out.write(0x8b);
        out.write(8);
        out.write(flags);
        for (int i = 0; i < 6; i++) {
            out.write(rnd.nextInt(256)); // MTIME, XFL, OS: read past, whatever they are
        }
        if ((flags & FEXTRA) != 0) {
            int n = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(600);
            out.write(n & 0xff);
            out.write(n >>> 8);
            for (int i = 0; i < n; i++) {
                out.write(rnd.nextInt(256)); // zeros too: the extra field is counted, not terminated
            }
        }
        if ((flags & FNAME) != 0) {
            for (int i = rnd.nextInt(40); i > 0; i--) {
                out.write(1 + rnd.nextInt(255));
            }
            out.write(0);
        }
        if ((flags & FCOMMENT) != 0) {
            for (int i = rnd.nextInt(40); i > 0; i--) {
                out.write(1 + rnd.nextInt(255));
            }
            out.write(0);
        }
        if ((flags & FHCRC) != 0) {
            CRC32 headerCrc = new CRC32();
            byte[] header = out.toByteArray();
            headerCrc.update(header, 0, header.length);
            out.write((int) headerCrc.getValue() & 0xff);
            out.write((int) (headerCrc.getValue() >>> 8) & 0xff);
        }
        Deflater deflater = new Deflater(level, true);
        deflater.setInput(data);
        deflater.finish();
        byte[] chunk = new byte[4096];
        while (!deflater.finished()) {
            int n = deflater.deflate(chunk);
            out.write(chunk, 0, n);
        }
        deflater.end();
        CRC32 crc = new CRC32();
        crc.update(data, 0, data.length);
        writeIntLe(out, (int) crc.getValue());
        writeIntLe(out, data.length);
        return out.toByteArray();
    }

    private static void writeIntLe(ByteArrayOutputStream out, int v) {
        for (int i = 0; i < 4; i++) {
            out.write(v >>> (8 * i));
        }
    }

    private static byte[] data(Random rnd) {
        int kind = rnd.nextInt(5);
        int n = kind == 0 ? 0 : kind == 1 ? rnd.nextInt(16) : kind == 2 ? rnd.nextInt(5000) : rnd.nextInt(200_000);
        byte[] b = new byte[n];
        if (rnd.nextBoolean()) {
            rnd.nextBytes(b); // incompressible: stored blocks
        } else {
            for (int i = 0; i < n; i++) {
                b[i] = (byte) ('a' + rnd.nextInt(4)); // compressible
            }
        }
        return b;
    }

    /** Reads {@code in} to its end with reads of random lengths (at random offsets). */
    private static byte[] readAll(InputStream in, Random rnd) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] b = new byte[70_000];
        for (;;) {
            if (rnd.nextInt(8) == 0) {
                int c = in.read();
                if (c == -1) {
                    return out.toByteArray();
                }
                out.write(c);
                continue;
            }
            int off = rnd.nextInt(16);
            int len = 1 + rnd.nextInt(rnd.nextBoolean() ? 16 : b.length - off - 1);
            int n = in.read(b, off, len);
            if (n == -1) {
                return out.toByteArray();
            }
            assertThat(n).isBetween(1, len);
            out.write(b, off, n);
        }
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.write(p, 0, p.length);
        }
        return out.toByteArray();
    }

    @Test
    void randomMembersReadAsGzipInputStreamReadsThem() throws IOException {
        long seed = Long.getLong("bfc4j.test.seed", 20261127L);
        System.out.println("GzipMembersTest seed " + seed + " (-Dbfc4j.test.seed=" + seed + ")");
        Random rnd = new Random(seed);
        int[] bufferSizes = {1, 2, 3, 7, 10, 64, 511, 8192, 1 << 16};
        for (int round = 0; round < 150; round++) {
            int members = 1 + rnd.nextInt(4);
            byte[][] gz = new byte[members][];
            byte[][] plain = new byte[members][];
            for (int m = 0; m < members; m++) {
                plain[m] = data(rnd);
                gz[m] = member(plain[m], rnd.nextInt(32) & (FHCRC | FEXTRA | FNAME | FCOMMENT), rnd.nextInt(10), rnd);
            }
            byte[] compressed = concat(gz);
            byte[] expected = concat(plain);
            int size = bufferSizes[rnd.nextInt(bufferSizes.length)];
            String what = "seed " + seed + " round " + round + ", " + members + " members, buffer " + size;
            byte[] ours;
            try (GzipMembers in = new GzipMembers(new ByteArrayInputStream(compressed), size)) {
                ours = readAll(in, rnd);
                assertThat(in.read()).as(what + ": a read after the end").isEqualTo(-1);
            }
            byte[] jdk;
            try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(compressed))) {
                jdk = in.readAllBytes();
            }
            assertThat(jdk).as(what + ": GZIPInputStream").isEqualTo(expected);
            assertThat(ours).as(what).isEqualTo(expected);
        }
    }

    /** Each member's deflate data and trailer cut at every place by the buffer's end. */
    @Test
    void everyBufferSizeReadsEveryMember() throws IOException {
        Random rnd = new Random(3);
        byte[] a = "alloc 1 100 => 0x7f0000000000\n".getBytes(StandardCharsets.UTF_8);
        byte[] compressed = concat(member(a, 0, 6, rnd), member(new byte[0], FNAME | FHCRC, 6, rnd),
                member(a, FEXTRA | FCOMMENT, 0, rnd));
        for (int size = 1; size <= compressed.length + 1; size++) {
            try (GzipMembers in = new GzipMembers(new ByteArrayInputStream(compressed), size)) {
                assertThat(in.readAllBytes()).as("buffer %d", size).isEqualTo(concat(a, a));
            }
        }
    }

    @Test
    void aReadOfNoBytesReadsNothingAndAClosedStreamRefusesReads() throws IOException {
        Random rnd = new Random(4);
        byte[] compressed = member("abc".getBytes(StandardCharsets.UTF_8), 0, 6, rnd);
        GzipMembers in = new GzipMembers(new ByteArrayInputStream(compressed), 512);
        assertThat(in.read(new byte[4], 4, 0)).isZero();
        assertThat(in.readAllBytes()).containsExactly('a', 'b', 'c');
        assertThat(in.read(new byte[4], 0, 0)).isZero();
        assertThat(in.read(new byte[4], 0, 4)).isEqualTo(-1);
        in.close();
        in.close();
        assertThatThrownBy(in::read).isInstanceOf(IOException.class).hasMessage("Stream closed");
        assertThatThrownBy(() -> in.read(new byte[4], 0, 4)).isInstanceOf(IOException.class)
                .hasMessage("Stream closed");
    }

    @Test
    void aDamagedTrailerOrHeaderIsCorruptAndACutMemberEndsEarly() throws IOException {
        Random rnd = new Random(5);
        byte[] data = new byte[1000];
        rnd.nextBytes(data);
        byte[] good = member(data, FHCRC | FNAME, 6, rnd);
        for (int at : new int[] {good.length - 8, good.length - 5, good.length - 4, good.length - 1}) {
            byte[] bad = good.clone();
            bad[at] ^= 1;
            assertThatThrownBy(() -> readWhole(bad)).as("trailer byte %d", at).isInstanceOf(ZipException.class)
                    .hasMessage("Corrupt GZIP trailer");
        }
        byte[] badHeader = good.clone();
        badHeader[4] ^= 1; // MTIME, covered by the header's CRC
        assertThatThrownBy(() -> readWhole(badHeader)).isInstanceOf(ZipException.class)
                .hasMessage("Corrupt GZIP header");
        for (int keep = 1; keep < good.length; keep++) {
            byte[] cut = Arrays.copyOf(good, keep);
            assertThatThrownBy(() -> readWhole(cut)).as("%d bytes", keep).isInstanceOf(EOFException.class);
        }
    }

    /**
     * A stream whose first header is refused (no gzip data, or cut short) releases its
     * inflater's native memory at once: the constructor throws, so no caller can close it, and
     * the memory stayed until the garbage collector ran the inflater's cleaner, however many
     * such streams were opened (a directory of traces scanned, a server fed bad uploads).
     */
    @Test
    void aRefusedHeaderReleasesTheInflater() {
        for (byte[] bad : new byte[][] {{'a', 'b', 'c'}, {0x1f, (byte) 0x8b, 8}, {}}) {
            java.util.zip.Inflater inflater = new java.util.zip.Inflater(true);
            assertThatThrownBy(() -> new GzipMembers(new ByteArrayInputStream(bad), 64, inflater))
                    .as("%s", Arrays.toString(bad)).isInstanceOf(IOException.class);
            // An ended inflater refuses to be read: NullPointerException up to JDK 24,
            // IllegalStateException from JDK 25 on, with the same message.
            assertThatThrownBy(inflater::getBytesRead).as("the inflater of %s, ended", Arrays.toString(bad))
                    .isInstanceOfAny(NullPointerException.class, IllegalStateException.class)
                    .hasMessage("Inflater has been closed");
        }
    }

    private static byte[] readWhole(byte[] compressed) throws IOException {
        try (GzipMembers in = new GzipMembers(new ByteArrayInputStream(compressed), 97)) {
            return in.readAllBytes();
        }
    }
}
