/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.Reference;
import java.io.UnsupportedEncodingException;
import java.nio.ByteBuffer;
import java.nio.charset.Charset;
import java.util.Objects;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

/**
 * The {@code BytePointer} of {@link Allocation#asPointer()}: a pointer at a given address, with
 * no deallocator, holding its allocation and an anchor of its region (see {@link ViewPins}). The
 * buffers made from it ({@code asByteBuffer()}, {@code asBuffer()}) hold the region as it does,
 * and leak detection watches them as it watches the allocation's own buffers.
 *
 * <p>Its own accessors check bounds, where JavaCPP's check none: every read and write through
 * it ({@code get(i)}, {@code putInt(i, v)}, the bulk copies, {@code fill}, {@code put(Pointer)},
 * a string without a terminating null byte) stays within its {@code bytes}, and its position,
 * limit and capacity stay between 0 and {@code bytes}; anything else throws
 * {@link IndexOutOfBoundsException} before the native call. A buffer that would end more than
 * {@code Integer.MAX_VALUE} bytes from its address, or a string longer than a {@code byte[]}
 * holds, is refused ({@link IllegalStateException}) where JavaCPP would cut it (or fail with
 * {@code OutOfMemoryError}); a null array, string, charset or source pointer gets a
 * {@link NullPointerException} naming it. As on every {@code BytePointer}, an
 * index counts bytes from the position. Once its allocation is closed (or its allocator closed
 * by force), they and {@code asByteBuffer()} throw {@link IllegalStateException}: a check, not
 * a lock, so an access racing the close may still land (in memory the region keeps mapped).
 *
 * <p>Each access reads the position once, checks the bytes it reaches from there, and reaches
 * them through a pointer of its own at a fixed address (JavaCPP's native accessors add the
 * pointer's position again, read anew): so a thread that moves the position (or calls
 * {@code setNull()}) while another accesses cannot carry that access outside the pointer's
 * bytes. A pointer shared by threads is still not thread-safe (which position an access uses
 * is a race), but every access stays within its allocation.
 * {@code getPointer(i)} gives a pointer of this class. What JavaCPP does with it outside its
 * own methods (its static functions such as {@code Pointer.memcpy} or {@code BytePointer.strcpy},
 * pointers derived by address such as {@code new BytePointer(p)} or
 * {@code getPointer(IntPointer.class, i)}) and what native code does with its address are not
 * checked.
 */
final class ViewPointer extends BytePointer {

    /** The longest {@code byte[]} every JVM makes (the JDK's own limit for growing arrays). */
    static final int MAX_ARRAY_LENGTH = Integer.MAX_VALUE - 8;

    // What a null argument is told (as the rest of bfc4j says it: name=null (expected: ...)).
    private static final String NULL_ARRAY = "array=null (expected: a byte[] to copy to or from, e.g. new byte[n])";
    private static final String NULL_STRING = "s=null (expected: a string to write, e.g. \"\")";
    private static final String NULL_CHARSET = "charset=null (expected: a Charset, e.g. StandardCharsets.UTF_8)";
    private static final String NULL_CHARSET_NAME = "charsetName=null (expected: a charset's name, e.g. \"UTF-8\")";

    /** The pointer's size: no access reaches past it. */
    private final long bytes;
    /** The address it was made with: every access is made from here ({@code setNull()} aside). */
    private final long start;
    /** A pointer at {@link #start} whose position stays 0: the per-value accessors go through it. */
    private final Raw fixed;
    /** Kept reachable (for leak detection); null for a plain buffer's pointer. */
    private final Allocation owner;
    @SuppressWarnings({"unused", "FieldCanBeLocal"}) // keeps the region
    private final Object anchor;
    /** Where the buffers made from this pointer hold the region; null: nowhere. */
    private final ViewPins pins;

    ViewPointer(long address, long bytes, Allocation owner, Object anchor, ViewPins pins) {
        super((Pointer) null);
        this.address = address;
        this.capacity = bytes;
        this.limit = bytes;
        this.bytes = bytes;
        this.start = address;
        this.fixed = new Raw(address);
        this.owner = owner;
        this.anchor = anchor;
        this.pins = pins;
    }

    /**
     * A plain pointer at an address, never handed out: JavaCPP's accessors on it reach
     * {@code address + i} exactly, whatever any other thread does.
     */
    private static final class Raw extends BytePointer {
        Raw(long address) {
            super((Pointer) null);
            this.address = address;
        }
    }

    /**
     * JavaCPP's buffer (from the address to the limit, or to one byte past the position if the
     * limit is 0; its position the pointer's), checked first and made from one reading of the
     * position and the limit.
     */
    @Override
    public ByteBuffer asByteBuffer() {
        checkOwnerOpen();
        if (address == 0) {
            return null; // as JavaCPP's, for a null pointer
        }
        final long pos = position;
        final long lim = limit;
        checkLimit(pos, lim);
        offset(pos, 0, lim <= 0 ? 1 : lim - pos);
        final long end = lim <= 0 ? pos + 1 : lim;
        if (end > Integer.MAX_VALUE) {
            // JavaCPP would cut the buffer (and its position) to 2^31 - 1 bytes from the address,
            // silently: a buffer that ends early, or whose position is not the pointer's.
            throw new IllegalStateException("a ByteBuffer of this pointer would span its first " + end
                    + " bytes (position " + pos + ", limit " + lim + "), more than a ByteBuffer can ("
                    + Integer.MAX_VALUE + "): take getPointer(offset).position(0).limit(n) with n up to "
                    + Integer.MAX_VALUE + " first, a pointer whose buffer starts at the offset");
        }
        ByteBuffer buffer = new Raw(start).limit(lim).position(pos).asByteBuffer();
        if (pins != null && buffer != null) {
            // This pointer is reachable, so its anchor still holds the region, and its owner
            // is reachable for leak detection.
            pins.pin(buffer, start);
            owner.watch(buffer);
        }
        Reference.reachabilityFence(this);
        return buffer;
    }

    /**
     * JavaCPP's {@code getPointer(i)} (a pointer {@code i} bytes further on, with this one's
     * position, and its limit and capacity {@code i} smaller), as a pointer of this class over
     * the rest of the allocation: checked, holding the region and the allocation as this one
     * does.
     *
     * @throws IndexOutOfBoundsException if {@code i} is outside 0 to the pointer's bytes
     */
    @Override
    public BytePointer getPointer(long i) {
        checkOwnerOpen();
        inView("getPointer offset", i);
        ViewPointer p = new ViewPointer(address == 0 ? 0 : start + i, bytes - i, owner, anchor, pins);
        p.position = position;
        p.limit = Math.max(0, limit - i);
        p.capacity = Math.max(0, capacity - i);
        Reference.reachabilityFence(this);
        return p;
    }

    // Position, limit and capacity: between 0 and bytes.

    @Override
    public BytePointer position(long position) {
        return super.position(inView("position", position));
    }

    @Override
    public BytePointer limit(long limit) {
        return super.limit(inView("limit", limit));
    }

    @Override
    public BytePointer capacity(long capacity) {
        return super.capacity(inView("capacity", capacity));
    }

    /** @throws IllegalStateException once the pointer's allocation is closed */
    private void checkOwnerOpen() {
        if (owner != null) {
            owner.checkOpen();
        }
    }

    private long inView(String what, long value) {
        if (value < 0 || value > bytes) {
            throw new IndexOutOfBoundsException(what + " " + value + " is outside this pointer's "
                    + bytes + " bytes (0 to " + bytes + "): the pointer covers its allocation only");
        }
        return value;
    }

    /** JavaCPP's refusal of a limit below the position (a limit of 0 means none). */
    private static void checkLimit(long pos, long lim) {
        if (lim > 0 && lim < pos) {
            throw new IllegalArgumentException("limit < position: (" + lim + " < " + pos + ")");
        }
    }

    /**
     * Checks that the pointer's allocation is open, that the pointer was not set to null and
     * that the {@code width} bytes at index {@code i} from the current position lie in the
     * pointer.
     *
     * @return their offset from {@link #start}
     */
    private long at(long i, long width) {
        return offset(position, i, width);
    }

    /**
     * {@link #at} from the position {@code pos} (read once by the caller).
     *
     * @return {@code pos + i}, the offset from {@link #start}
     */
    private long offset(long pos, long i, long width) {
        checkOwnerOpen();
        if (address == 0) {
            throw new NullPointerException("this pointer was set to null (setNull()): it reaches no memory");
        }
        if (i < -pos || width > bytes - pos || i > bytes - pos - width) {
            throw new IndexOutOfBoundsException(width + " byte" + (width == 1 ? "" : "s") + " at index " + i
                    + " from position " + pos + " are outside this pointer's " + bytes + " bytes: the"
                    + " pointer covers its allocation only");
        }
        return pos + i;
    }

    // The accessors of one value: JavaCPP's native methods on the fixed pointer, at the offset
    // checked. The forms without an index, and getUnsigned/putUnsigned, call these.

    @Override
    public byte get(long i) {
        return fixed.get(at(i, Byte.BYTES));
    }

    @Override
    public BytePointer put(long i, byte b) {
        fixed.put(at(i, Byte.BYTES), b);
        return this;
    }

    @Override
    public short getShort(long i) {
        return fixed.getShort(at(i, Short.BYTES));
    }

    @Override
    public BytePointer putShort(long i, short s) {
        fixed.putShort(at(i, Short.BYTES), s);
        return this;
    }

    @Override
    public char getChar(long i) {
        return fixed.getChar(at(i, Character.BYTES));
    }

    @Override
    public BytePointer putChar(long i, char c) {
        fixed.putChar(at(i, Character.BYTES), c);
        return this;
    }

    @Override
    public int getInt(long i) {
        return fixed.getInt(at(i, Integer.BYTES));
    }

    @Override
    public BytePointer putInt(long i, int j) {
        fixed.putInt(at(i, Integer.BYTES), j);
        return this;
    }

    @Override
    public long getLong(long i) {
        return fixed.getLong(at(i, Long.BYTES));
    }

    @Override
    public BytePointer putLong(long i, long j) {
        fixed.putLong(at(i, Long.BYTES), j);
        return this;
    }

    @Override
    public float getFloat(long i) {
        return fixed.getFloat(at(i, Float.BYTES));
    }

    @Override
    public BytePointer putFloat(long i, float f) {
        fixed.putFloat(at(i, Float.BYTES), f);
        return this;
    }

    @Override
    public double getDouble(long i) {
        return fixed.getDouble(at(i, Double.BYTES));
    }

    @Override
    public BytePointer putDouble(long i, double d) {
        fixed.putDouble(at(i, Double.BYTES), d);
        return this;
    }

    @Override
    public boolean getBool(long i) {
        return fixed.getBool(at(i, 1));
    }

    @Override
    public BytePointer putBool(long i, boolean b) {
        fixed.putBool(at(i, 1), b);
        return this;
    }

    // A native pointer is 8 bytes: bfc4j runs on 64-bit JVMs only (its addresses are longs).

    @Override
    public Pointer getPointerValue(long i) {
        return fixed.getPointerValue(at(i, Long.BYTES));
    }

    @Override
    public BytePointer putPointerValue(long i, Pointer p) {
        fixed.putPointerValue(at(i, Long.BYTES), p);
        return this;
    }

    // The copies: bounds of the pointer and of the Java array (JavaCPP checks neither), through
    // a pointer of their own at the checked address.

    @Override
    public BytePointer get(byte[] array) {
        return get(array, 0, Objects.requireNonNull(array, NULL_ARRAY).length);
    }

    @Override
    public BytePointer put(byte... array) {
        return put(array, 0, Objects.requireNonNull(array, NULL_ARRAY).length);
    }

    @Override
    public BytePointer get(byte[] array, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, Objects.requireNonNull(array, NULL_ARRAY).length);
        new Raw(start + at(0, length)).get(array, offset, length);
        return this;
    }

    @Override
    public BytePointer put(byte[] array, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, Objects.requireNonNull(array, NULL_ARRAY).length);
        new Raw(start + at(0, length)).put(array, offset, length);
        return this;
    }

    /**
     * JavaCPP's {@code putString(s)}: the bytes of {@code s} in the platform's charset and a
     * null byte, checked as {@link #put(byte[], int, int)} is.
     *
     * @throws NullPointerException if {@code s} is null
     */
    @Override
    public BytePointer putString(String s) {
        return super.putString(Objects.requireNonNull(s, NULL_STRING));
    }

    /**
     * JavaCPP's {@code putString(s, charset)}, checked as {@link #put(byte[], int, int)} is.
     *
     * @throws NullPointerException if {@code s} or {@code charset} is null
     */
    @Override
    public BytePointer putString(String s, Charset charset) {
        return super.putString(Objects.requireNonNull(s, NULL_STRING),
                Objects.requireNonNull(charset, NULL_CHARSET));
    }

    /**
     * JavaCPP's {@code putString(s, charsetName)}, checked as {@link #put(byte[], int, int)} is.
     *
     * @throws NullPointerException if {@code s} or {@code charsetName} is null
     * @throws UnsupportedEncodingException if no charset has that name
     */
    @Override
    public BytePointer putString(String s, String charsetName) throws UnsupportedEncodingException {
        return super.putString(Objects.requireNonNull(s, NULL_STRING),
                Objects.requireNonNull(charsetName, NULL_CHARSET_NAME));
    }

    /**
     * JavaCPP's {@code getString(charsetName)}, checked as {@link #getStringBytes()} is.
     *
     * @throws NullPointerException if {@code charsetName} is null
     * @throws UnsupportedEncodingException if no charset has that name
     */
    @Override
    public String getString(String charsetName) throws UnsupportedEncodingException {
        return super.getString(Objects.requireNonNull(charsetName, NULL_CHARSET_NAME));
    }

    /**
     * JavaCPP's {@code getString(charset)}, checked as {@link #getStringBytes()} is.
     *
     * @throws NullPointerException if {@code charset} is null
     */
    @Override
    public String getString(Charset charset) {
        return super.getString(Objects.requireNonNull(charset, NULL_CHARSET));
    }

    /**
     * JavaCPP's {@code memcpy} of {@code p}'s bytes from its position to its limit (one element
     * if its limit is 0) to this pointer's position, checked first: the bytes must fit in this
     * pointer and, where {@code p} is a view of an allocation too, lie in {@code p}. Any other
     * source is read as JavaCPP reads it, but not a null one.
     *
     * @throws NullPointerException if {@code p} is null or a null pointer (address 0)
     */
    @Override
    @SuppressWarnings("unchecked") // as JavaCPP's: this pointer, as the caller's type
    public <P extends Pointer> P put(Pointer p) {
        Objects.requireNonNull(p, "p=null (expected: a pointer to copy from)");
        final long srcPos = p.position();
        final long srcLim = p.limit();
        checkLimit(srcPos, srcLim);
        final long length = copyLength(p.sizeof(), srcPos, srcLim);
        final long dst = at(0, length);
        final long src;
        if (p instanceof ViewPointer) {
            ViewPointer v = (ViewPointer) p;
            src = v.start + v.offset(srcPos, 0, length);
        } else {
            if (p.isNull()) {
                throw new NullPointerException("the source pointer is null (address 0): it reaches no memory");
            }
            src = p.address() + srcPos * p.sizeof();
        }
        Pointer.memcpy(new Raw(start + dst), new Raw(src), length);
        Reference.reachabilityFence(p);
        return (P) this;
    }

    /** The bytes JavaCPP's {@code put(p)} copies, computed without overflow. */
    private long copyLength(int sizeof, long srcPos, long srcLim) {
        try {
            return Math.multiplyExact((long) sizeof, srcLim <= 0 ? 1 : Math.subtractExact(srcLim, srcPos));
        } catch (ArithmeticException e) {
            throw new IndexOutOfBoundsException("the source's " + sizeof + "-byte elements from position "
                    + srcPos + " to limit " + srcLim + " are more bytes than a long counts, and"
                    + " more than this pointer's " + bytes + " bytes: the pointer covers its allocation only");
        }
    }

    /**
     * JavaCPP's {@code memset} from the position to the limit (one byte if the limit is 0),
     * checked first.
     */
    @Override
    @SuppressWarnings("unchecked") // as JavaCPP's: this pointer, as the caller's type
    public <P extends Pointer> P fill(int b) {
        final long pos = position;
        final long lim = limit;
        checkLimit(pos, lim);
        final long n = lim <= 0 ? 1 : lim - pos;
        Pointer.memset(new Raw(start + offset(pos, 0, n)), b, n);
        return (P) this;
    }

    /**
     * The bytes from the position to the limit, or, where the limit is not past the position,
     * to the first null byte, which must lie in the pointer (JavaCPP's {@code strlen} would read
     * on past it).
     */
    @Override
    public byte[] getStringBytes() {
        final long pos = position;
        final long lim = limit;
        long n = lim - pos;
        if (n <= 0) {
            n = 0;
            while (fixed.get(offset(pos, n, 1)) != 0) { // throws past the pointer's bytes: no null byte
                n++;
            }
        }
        if (n > MAX_ARRAY_LENGTH) {
            throw new IllegalStateException("the string from position " + pos + " is " + n + " bytes, more than a"
                    + " byte[] can hold (" + MAX_ARRAY_LENGTH + "): set a limit at most that far past the position,"
                    + " or read it in pieces with get(byte[], offset, length)");
        }
        byte[] array = new byte[(int) n];
        new Raw(start + offset(pos, 0, array.length)).get(array, 0, array.length);
        return array;
    }
}
