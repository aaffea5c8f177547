/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipException;

/**
 * The decompressed bytes of a gzip stream of one or more members (RFC 1952), each checked
 * against its trailer, to the end of the stream. {@code GZIPInputStream} looks for a next member
 * only where {@code available()} says more bytes are there, and takes a next member whose header
 * cannot be read for the end: a trace of two members read from a pipe whose second member had not
 * arrived yet, or a file cut inside its second member's header, read as a whole trace of the first
 * member's lines. Here the end is where the stream ends; a member cut short throws
 * {@link EOFException} and damaged data (or bytes after a member that are no member)
 * {@link ZipException}, with {@code GZIPInputStream}'s messages. Used for traces
 * ({@code TraceReader}) and for TensorFlow logs (bfc-cli's {@code import-tf-log}).
 */
public final class GzipMembers extends InputStream {
    private static final int FHCRC = 2;
    private static final int FEXTRA = 4;
    private static final int FNAME = 8;
    private static final int FCOMMENT = 16;

    private final InputStream in;
    private final byte[] buf;
    private int pos;
    private int lim;
    private final Inflater inflater;
    private final CRC32 crc = new CRC32();
    private final byte[] one = new byte[1];
    private boolean end;
    private boolean closed;

    /**
     * Reads the first member's header. If that throws, the inflater is released ({@code in} is
     * left to the caller, as it is not read further).
     *
     * @param in the compressed bytes
     * @param size the buffer's size
     * @throws EOFException if the header is cut short
     * @throws ZipException if it is no gzip header
     * @throws IOException if {@code in} cannot be read
     */
    public GzipMembers(InputStream in, int size) throws IOException {
        this(in, size, new Inflater(true));
    }

    /** {@link #GzipMembers(InputStream, int)} with the inflater given (a test's, to see it ended). */
    GzipMembers(InputStream in, int size, Inflater inflater) throws IOException {
        this.in = in;
        this.buf = new byte[size];
        this.inflater = inflater;
        try {
            readHeader(readByte());
        } catch (Throwable t) {
            // No caller can close a stream whose constructor threw: its native memory is
            // released here, not whenever the garbage collector runs the inflater's cleaner.
            inflater.end();
            throw t;
        }
    }

    @Override
    public int read() throws IOException {
        return read(one, 0, 1) == -1 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (closed) {
            throw new IOException("Stream closed");
        }
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        while (!end) {
            int n;
            try {
                n = inflater.inflate(b, off, len);
            } catch (DataFormatException e) {
                throw new ZipException(e.getMessage() != null ? e.getMessage() : "Invalid ZLIB data format");
            }
            if (n > 0) {
                crc.update(b, off, n);
                return n;
            }
            if (inflater.finished()) {
                pos = lim - inflater.getRemaining();
                memberEnd();
            } else if (inflater.needsDictionary()) {
                throw new ZipException("ZLIB dictionary missing");
            } else if (inflater.needsInput()) {
                if (pos == lim && fill() == -1) {
                    throw new EOFException("Unexpected end of ZLIB input stream");
                }
                inflater.setInput(buf, pos, lim - pos);
                pos = lim;
            }
        }
        return -1;
    }

    /** Checks a member's trailer, then reads the next member's header, or finds the end. */
    private void memberEnd() throws IOException {
        long size = inflater.getBytesWritten();
        if (readInt() != (int) crc.getValue() || readInt() != (int) size) {
            throw new ZipException("Corrupt GZIP trailer");
        }
        int b = readByte();
        if (b == -1) {
            end = true;
            return;
        }
        inflater.reset();
        crc.reset();
        readHeader(b);
    }

    /** Reads a member's header, whose first byte was {@code first}. */
    private void readHeader(int first) throws IOException {
        CRC32 headerCrc = new CRC32();
        int[] h = new int[10];
        h[0] = first;
        for (int i = 1; i < 10; i++) {
            h[i] = readByte();
        }
        // Bytes that are no gzip member are said as such, however few (not as a member cut short).
        if (h[0] != 0x1f || h[1] != -1 && h[1] != 0x8b) {
            throw new ZipException("Not in GZIP format");
        }
        for (int i = 0; i < 10; i++) {
            if (h[i] == -1) {
                throw new EOFException();
            }
            headerCrc.update(h[i]);
        }
        if (h[2] != 8) {
            throw new ZipException("Unsupported compression method");
        }
        int flags = h[3];
        if ((flags & FEXTRA) != 0) {
            int lo = headerByte(headerCrc);
            int n = lo | headerByte(headerCrc) << 8;
            for (int i = 0; i < n; i++) {
                headerByte(headerCrc);
            }
        }
        if ((flags & FNAME) != 0) {
            while (headerByte(headerCrc) != 0) {
                // the file's name
            }
        }
        if ((flags & FCOMMENT) != 0) {
            while (headerByte(headerCrc) != 0) {
                // a comment
            }
        }
        if ((flags & FHCRC) != 0) {
            int v = (int) headerCrc.getValue() & 0xffff;
            int lo = headerByte(headerCrc);
            if ((lo | headerByte(headerCrc) << 8) != v) {
                throw new ZipException("Corrupt GZIP header");
            }
        }
    }

    private int headerByte(CRC32 headerCrc) throws IOException {
        int b = readByte();
        if (b == -1) {
            throw new EOFException();
        }
        headerCrc.update(b);
        return b;
    }

    private int readInt() throws IOException {
        int v = 0;
        for (int i = 0; i < 4; i++) {
            int b = readByte();
            if (b == -1) {
                throw new EOFException("Unexpected end of ZLIB input stream");
            }
            v |= b << (8 * i);
        }
        return v;
    }

    /** The next compressed byte, or -1 at the end of the stream. */
    private int readByte() throws IOException {
        if (pos == lim && fill() == -1) {
            return -1;
        }
        return buf[pos++] & 0xff;
    }

    private int fill() throws IOException {
        int n = in.read(buf, 0, buf.length);
        while (n == 0) {
            n = in.read(buf, 0, buf.length);
        }
        if (n > 0) {
            pos = 0;
            lim = n;
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            inflater.end();
            in.close();
        }
    }
}
