/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
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
 * {@link IndexOutOfBoundsException} before the native call. As on every {@code BytePointer}, an
 * index counts bytes from the position. Once its allocation is closed (or its allocator closed
 * by force), they and {@code asByteBuffer()} throw {@link IllegalStateException}: a check, not
 * a lock, so an access racing the close may still land (in memory the region keeps mapped).
 * {@code getPointer(i)} gives a pointer of this class. What JavaCPP does with it outside its
 * own methods (its static functions such as {@code Pointer.memcpy} or {@code BytePointer.strcpy},
 * pointers derived by address such as {@code new BytePointer(p)} or
 * {@code getPointer(IntPointer.class, i)}) and what native code does with its address are not
 * checked.
 */
final class ViewPointer extends BytePointer {

    /** The pointer's size: no access reaches past it. */
    private final long bytes;
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
        this.owner = owner;
        this.anchor = anchor;
        this.pins = pins;
    }

    @Override
    public ByteBuffer asByteBuffer() {
        checkOwnerOpen();
        if (address != 0 && limit <= 0) {
            // JavaCPP's buffer then ends one byte past the position, whatever the capacity.
            at(0, 1);
        }
        ByteBuffer buffer = super.asByteBuffer();
        if (pins != null && buffer != null) {
            // This pointer is reachable, so its anchor still holds the region, and its owner
            // is reachable for leak detection.
            pins.pin(buffer, address);
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
        ViewPointer p = new ViewPointer(address == 0 ? 0 : address + i, bytes - i, owner, anchor, pins);
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

    /**
     * Checks that the pointer's allocation is open, that the pointer was not set to null and
     * that the {@code width} bytes at index {@code i} (from the position) lie in the pointer.
     *
     * @return {@code i}
     */
    private long at(long i, long width) {
        checkOwnerOpen();
        if (address == 0) {
            throw new NullPointerException("this pointer was set to null (setNull()): it reaches no memory");
        }
        if (i < -position || width > bytes - position || i > bytes - position - width) {
            throw new IndexOutOfBoundsException(width + " byte" + (width == 1 ? "" : "s") + " at index " + i
                    + " from position " + position + " are outside this pointer's " + bytes + " bytes: the"
                    + " pointer covers its allocation only");
        }
        return i;
    }

    // The accessors of one value: JavaCPP's native methods, checked first. The forms without an
    // index, and getUnsigned/putUnsigned, call these.

    @Override
    public byte get(long i) {
        return super.get(at(i, Byte.BYTES));
    }

    @Override
    public BytePointer put(long i, byte b) {
        return super.put(at(i, Byte.BYTES), b);
    }

    @Override
    public short getShort(long i) {
        return super.getShort(at(i, Short.BYTES));
    }

    @Override
    public BytePointer putShort(long i, short s) {
        return super.putShort(at(i, Short.BYTES), s);
    }

    @Override
    public char getChar(long i) {
        return super.getChar(at(i, Character.BYTES));
    }

    @Override
    public BytePointer putChar(long i, char c) {
        return super.putChar(at(i, Character.BYTES), c);
    }

    @Override
    public int getInt(long i) {
        return super.getInt(at(i, Integer.BYTES));
    }

    @Override
    public BytePointer putInt(long i, int j) {
        return super.putInt(at(i, Integer.BYTES), j);
    }

    @Override
    public long getLong(long i) {
        return super.getLong(at(i, Long.BYTES));
    }

    @Override
    public BytePointer putLong(long i, long j) {
        return super.putLong(at(i, Long.BYTES), j);
    }

    @Override
    public float getFloat(long i) {
        return super.getFloat(at(i, Float.BYTES));
    }

    @Override
    public BytePointer putFloat(long i, float f) {
        return super.putFloat(at(i, Float.BYTES), f);
    }

    @Override
    public double getDouble(long i) {
        return super.getDouble(at(i, Double.BYTES));
    }

    @Override
    public BytePointer putDouble(long i, double d) {
        return super.putDouble(at(i, Double.BYTES), d);
    }

    @Override
    public boolean getBool(long i) {
        return super.getBool(at(i, 1));
    }

    @Override
    public BytePointer putBool(long i, boolean b) {
        return super.putBool(at(i, 1), b);
    }

    // A native pointer is 8 bytes: bfc4j runs on 64-bit JVMs only (its addresses are longs).

    @Override
    public Pointer getPointerValue(long i) {
        return super.getPointerValue(at(i, Long.BYTES));
    }

    @Override
    public BytePointer putPointerValue(long i, Pointer p) {
        return super.putPointerValue(at(i, Long.BYTES), p);
    }

    // The copies: bounds of the pointer and of the Java array (JavaCPP checks neither).

    @Override
    public BytePointer get(byte[] array, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, array.length);
        at(0, length);
        return super.get(array, offset, length);
    }

    @Override
    public BytePointer put(byte[] array, int offset, int length) {
        Objects.checkFromIndexSize(offset, length, array.length);
        at(0, length);
        return super.put(array, offset, length);
    }

    /**
     * JavaCPP's {@code memcpy} of {@code p}'s bytes from its position to its limit (one element
     * if its limit is 0) to this pointer's position, checked first: the bytes must fit in this
     * pointer and, where {@code p} is a view of an allocation too, lie in {@code p}. Any other
     * source is read as JavaCPP reads it.
     */
    @Override
    public <P extends Pointer> P put(Pointer p) {
        if (p.limit() <= 0 || p.limit() >= p.position()) { // else JavaCPP throws, copying nothing
            final long length = copyLength(p);
            at(0, length);
            if (p instanceof ViewPointer) {
                ((ViewPointer) p).at(0, length);
            }
        }
        return super.put(p);
    }

    /** The bytes JavaCPP's {@code put(p)} copies, computed without overflow. */
    private long copyLength(Pointer p) {
        try {
            return Math.multiplyExact((long) p.sizeof(),
                    p.limit() <= 0 ? 1 : Math.subtractExact(p.limit(), p.position()));
        } catch (ArithmeticException e) {
            throw new IndexOutOfBoundsException("the source's " + p.sizeof() + "-byte elements from position "
                    + p.position() + " to limit " + p.limit() + " are more bytes than a long counts, and"
                    + " more than this pointer's " + bytes + " bytes: the pointer covers its allocation only");
        }
    }

    /**
     * JavaCPP's {@code memset} from the position to the limit (one byte if the limit is 0),
     * checked first.
     */
    @Override
    public <P extends Pointer> P fill(int b) {
        if (limit <= 0 || limit >= position) {
            at(0, limit <= 0 ? 1 : limit - position);
        }
        return super.fill(b);
    }

    /**
     * The bytes from the position to the limit, or, where the limit is not past the position,
     * to the first null byte, which must lie in the pointer (JavaCPP's {@code strlen} would read
     * on past it).
     */
    @Override
    public byte[] getStringBytes() {
        if (limit > position) {
            return super.getStringBytes();
        }
        long n = 0;
        while (get(n) != 0) { // get(n) throws past the pointer's bytes: no terminating null byte
            n++;
        }
        byte[] array = new byte[(int) Math.min(n, Integer.MAX_VALUE)];
        get(array);
        return array;
    }
}
