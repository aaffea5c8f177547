/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.TestThreads;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code BytePointer} view checks bounds: every access through its own methods stays within
 * the requested bytes or throws {@link IndexOutOfBoundsException}, and the next allocation's
 * bytes are never touched (without the checks, the refused writes land in the chunk's 24 bytes
 * of padding or in the next allocation).
 */
class PointerBoundsTest {

    private static final int BYTES = 1000; // in a 1024-byte chunk: 24 bytes of padding follow

    private BfcAllocator allocator;
    private Allocation x;
    private Allocation next;

    @BeforeEach
    void allocate() {
        allocator = BfcAllocator.builder().name("bounds").memoryLimit(16L << 20)
                .subAllocator(new AlignedHostSubAllocator()).leakDetection(LeakDetection.DISABLED).build();
        x = allocator.allocate(BYTES);
        next = allocator.allocate(1024);
        assertThat(next.address()).as("the next chunk follows").isEqualTo(x.address() + 1024);
        ByteBuffer n = next.asByteBuffer();
        for (int i = 0; i < n.capacity(); i++) {
            n.put(i, (byte) 0x5a);
        }
    }

    @AfterEach
    void nothingOutsideWasTouched() {
        ByteBuffer n = next.asByteBuffer();
        for (int i = 0; i < n.capacity(); i++) {
            assertThat(n.get(i)).as("byte %d of the next allocation", i).isEqualTo((byte) 0x5a);
        }
        x.close();
        next.close();
        allocator.close();
    }

    /** Each accessor of one value: its last index works, one past it, and -1, throw. */
    @Test
    void everyAccessorOfOneValueStopsAtTheLastByte() {
        BytePointer p = x.asPointer();
        assertThat(p.sizeof()).isEqualTo(1);
        List<Accessor> accessors = List.of(
                new Accessor("get/put", 1, i -> p.put(i, (byte) 1), i -> p.get(i)),
                new Accessor("getUnsigned/putUnsigned", 1, i -> p.putUnsigned(i, 200), i -> p.getUnsigned(i)),
                new Accessor("getBool/putBool", 1, i -> p.putBool(i, true), i -> p.getBool(i)),
                new Accessor("getShort/putShort", 2, i -> p.putShort(i, (short) 1), i -> p.getShort(i)),
                new Accessor("getChar/putChar", 2, i -> p.putChar(i, 'c'), i -> p.getChar(i)),
                new Accessor("getInt/putInt", 4, i -> p.putInt(i, 1), i -> p.getInt(i)),
                new Accessor("getFloat/putFloat", 4, i -> p.putFloat(i, 1f), i -> p.getFloat(i)),
                new Accessor("getLong/putLong", 8, i -> p.putLong(i, 1L), i -> p.getLong(i)),
                new Accessor("getDouble/putDouble", 8, i -> p.putDouble(i, 1d), i -> p.getDouble(i)),
                new Accessor("getPointerValue/putPointerValue", 8, i -> p.putPointerValue(i, new Pointer()),
                        i -> p.getPointerValue(i)));
        for (Accessor a : accessors) {
            long last = BYTES - a.width;
            a.put.accept(last);
            a.get.accept(last);
            for (long bad : new long[] {last + 1, BYTES, -1, Long.MAX_VALUE, Long.MIN_VALUE}) {
                assertThatThrownBy(() -> a.put.accept(bad)).as("%s put at %d", a.name, bad)
                        .isInstanceOf(IndexOutOfBoundsException.class)
                        .hasMessageContaining("outside this pointer's 1000 bytes");
                assertThatThrownBy(() -> a.get.accept(bad)).as("%s get at %d", a.name, bad)
                        .isInstanceOf(IndexOutOfBoundsException.class);
            }
        }
        // The forms without an index read and write at the position.
        p.position(BYTES - 4).putInt(0x01020304);
        assertThat(p.getInt()).isEqualTo(0x01020304);
        assertThatThrownBy(p::getLong).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> p.putLong(7L)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** An index counts from the position, as on every BytePointer; the bound stays the same. */
    @Test
    void indexesCountFromThePositionAndTheBoundDoesNotMove() {
        BytePointer p = x.asPointer();
        ByteBuffer b = x.asByteBuffer();
        p.position(990);
        p.put(9, (byte) 42);
        assertThat(b.get(999)).isEqualTo((byte) 42);
        p.put(-990, (byte) 43);
        assertThat(b.get(0)).isEqualTo((byte) 43);
        assertThatThrownBy(() -> p.put(10, (byte) 1)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("at index 10 from position 990");
        assertThatThrownBy(() -> p.put(-991, (byte) 1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** Position, limit and capacity stay between 0 and the requested bytes. */
    @Test
    void positionLimitAndCapacityStayWithinTheAllocation() {
        BytePointer p = x.asPointer();
        assertThat(p.position(BYTES).position()).isEqualTo(BYTES);
        assertThat(p.limit(10).limit()).isEqualTo(10);
        assertThat(p.capacity(10).capacity()).isEqualTo(10);
        for (long bad : new long[] {BYTES + 1, 1024, -1}) {
            assertThatThrownBy(() -> p.position(bad)).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("position " + bad + " is outside this pointer's 1000 bytes");
            assertThatThrownBy(() -> p.limit(bad)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> p.capacity(bad)).isInstanceOf(IndexOutOfBoundsException.class);
        }
        // So the buffers made from it cannot reach past the allocation either.
        p.position(0).limit(BYTES).capacity(BYTES);
        assertThat(p.asByteBuffer().capacity()).isEqualTo(BYTES);
        // With capacity and limit 0, JavaCPP's buffer ends one byte past the position: not
        // past the allocation's end.
        p.capacity(0).limit(0).position(BYTES - 1);
        assertThat(p.asByteBuffer().capacity()).isEqualTo(BYTES);
        p.position(BYTES);
        assertThatThrownBy(p::asByteBuffer).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(p::asBuffer).isInstanceOf(IndexOutOfBoundsException.class);
        // JavaCPP ignores the capacity there: with limit 0 the buffer ends one byte past the
        // position whatever the capacity says.
        p.capacity(BYTES).limit(0).position(BYTES);
        assertThatThrownBy(p::asByteBuffer).isInstanceOf(IndexOutOfBoundsException.class);
        p.position(BYTES - 1);
        assertThat(p.asByteBuffer().capacity()).isEqualTo(BYTES);
        // A pointer further on keeps the position, which may then lie past its own end.
        p.position(BYTES).limit(BYTES);
        BytePointer q = p.getPointer(BYTES / 2).limit(0);
        assertThatThrownBy(q::asByteBuffer).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** The bulk copies check the pointer's bytes and the Java array's. */
    @Test
    void bulkCopiesCheckBothSides() {
        BytePointer p = x.asPointer();
        byte[] all = new byte[BYTES];
        p.put(all).get(all);
        assertThatThrownBy(() -> p.put(new byte[BYTES + 1])).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> p.get(new byte[BYTES + 1])).isInstanceOf(IndexOutOfBoundsException.class);
        p.position(BYTES - 10);
        p.put(new byte[10]);
        assertThatThrownBy(() -> p.put(new byte[11])).isInstanceOf(IndexOutOfBoundsException.class);
        p.position(0);
        // JavaCPP copies from a Java array without checking its bounds either.
        assertThatThrownBy(() -> p.put(new byte[16], 8, 9)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> p.get(new byte[16], -1, 4)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> p.get(new byte[16], 0, -4)).isInstanceOf(IndexOutOfBoundsException.class);

        // memcpy from another pointer and memset, through the pointer's own methods.
        try (BytePointer big = new BytePointer(2048)) {
            big.limit(BYTES + 1);
            assertThatThrownBy(() -> p.put(big)).isInstanceOf(IndexOutOfBoundsException.class);
            big.limit(BYTES);
            p.put(big);
        }
        // A source whose byte count overflows a long (JavaCPP's own product wraps around to a
        // small or negative count, which memcpy reads as a huge one).
        try (Pointer longs = new LongPointer(4)) {
            longs.limit((1L << 61) - 1);
            assertThatThrownBy(() -> p.put(longs)).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("more bytes than a long counts");
            longs.limit(1L << 61);
            assertThatThrownBy(() -> p.put(longs)).isInstanceOf(IndexOutOfBoundsException.class);
            longs.position(Long.MIN_VALUE + 1).limit(Long.MAX_VALUE);
            assertThatThrownBy(() -> p.put(longs)).isInstanceOf(IndexOutOfBoundsException.class);
        }
        // A source that is a view of an allocation is checked against its own bytes (and its
        // allocation's close), so that it is not read past its end.
        Allocation small = allocator.allocate(10);
        BytePointer src = small.asPointer();
        src.position(10).limit(0);
        assertThatThrownBy(() -> p.put(src)).isInstanceOf(IndexOutOfBoundsException.class);
        src.position(0).limit(10);
        p.position(0).put(src);
        small.close();
        assertThatThrownBy(() -> p.put(src)).isInstanceOf(IllegalStateException.class);
        p.position(0).limit(BYTES).fill(1);
        assertThat(x.asByteBuffer().get(BYTES - 1)).isEqualTo((byte) 1);
        // A limit of 0 means one element at the position: past the end when the position is.
        p.limit(0).position(BYTES);
        assertThatThrownBy(() -> p.fill(2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(p::zero).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** Strings: written only if they fit with their null byte, read only up to the last byte. */
    @Test
    void stringsStayWithinTheAllocation() {
        BytePointer p = x.asPointer();
        p.putString("hello");
        assertThat(p.limit()).isEqualTo(5);
        assertThat(p.getString()).isEqualTo("hello");
        p.limit(0);
        assertThat(p.getString()).as("up to the null byte").isEqualTo("hello");

        String fits = "a".repeat(BYTES - 1);
        p.limit(BYTES).putString(fits, StandardCharsets.US_ASCII);
        assertThat(p.limit(0).getString(StandardCharsets.US_ASCII)).isEqualTo(fits);
        assertThatThrownBy(() -> p.limit(BYTES).putString("a".repeat(BYTES)))
                .as("no room for the null byte").isInstanceOf(IndexOutOfBoundsException.class);

        // No null byte in the allocation: JavaCPP's strlen would read on past it.
        ByteBuffer b = x.asByteBuffer();
        for (int i = 0; i < BYTES; i++) {
            b.put(i, (byte) 'z');
        }
        p.position(0).limit(0);
        assertThatThrownBy(p::getString).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(p::getStringBytes).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /**
     * Null arrays, strings, charsets and source pointers are refused with a message that names
     * the argument and what it takes (JavaCPP's own methods read {@code array.length} or call
     * {@code s.getBytes()} and say only that), and nothing is written.
     */
    @Test
    void nullArgumentsSayWhatWasWrong() {
        BytePointer p = x.asPointer();
        p.put(new byte[] {1, 2, 3});
        List<Object[]> calls = List.of(
                new Object[] {(Runnable) () -> p.get((byte[]) null), "array=null (expected: a byte[]"},
                new Object[] {(Runnable) () -> p.put((byte[]) null), "array=null (expected: a byte[]"},
                new Object[] {(Runnable) () -> p.get(null, 0, 0), "array=null (expected: a byte[]"},
                new Object[] {(Runnable) () -> p.put(null, 0, 0), "array=null (expected: a byte[]"},
                new Object[] {(Runnable) () -> p.putString(null), "s=null (expected: a string"},
                new Object[] {(Runnable) () -> p.putString(null, StandardCharsets.UTF_8), "s=null (expected: a string"},
                new Object[] {(Runnable) () -> p.putString("x", (java.nio.charset.Charset) null),
                        "charset=null (expected: a Charset"},
                new Object[] {(Runnable) () -> p.getString((java.nio.charset.Charset) null),
                        "charset=null (expected: a Charset"},
                new Object[] {(Runnable) () -> {
                    try {
                        p.putString("x", (String) null);
                    } catch (java.io.UnsupportedEncodingException e) {
                        throw new AssertionError(e);
                    }
                }, "charsetName=null (expected: a charset's name"},
                new Object[] {(Runnable) () -> p.put((Pointer) null), "p=null (expected: a pointer"});
        for (Object[] call : calls) {
            assertThatThrownBy(((Runnable) call[0])::run).isInstanceOf(NullPointerException.class)
                    .hasMessageStartingWith((String) call[1]);
        }
        byte[] back = new byte[3];
        p.position(0).limit(BYTES).get(back);
        assertThat(back).as("nothing written").containsExactly(1, 2, 3);
    }

    /**
     * Once its allocation is closed, the pointer's own accessors refuse (its position, limit and
     * capacity stay readable and settable: they touch no memory).
     */
    @Test
    void thePointersAccessorsAreRefusedOnceItsAllocationIsClosed() {
        Allocation y = allocator.allocate(BYTES);
        BytePointer p = y.asPointer();
        p.putInt(0, 7);
        y.close();
        assertThatThrownBy(() -> p.getInt(0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed: it must not be used after close()");
        assertThatThrownBy(() -> p.put(0, (byte) 1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> p.put(new byte[4])).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> p.fill(0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(p::getString).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(p::asByteBuffer).isInstanceOf(IllegalStateException.class);
        assertThat(p.position(4).position()).isEqualTo(4);
    }

    /**
     * getPointer(i) answers as JavaCPP's does (i bytes further on, the same position, limit and
     * capacity i smaller), with a pointer that checks the rest of the allocation's bounds.
     */
    @Test
    void aPointerFurtherOnChecksTheRestOfTheAllocation() {
        BytePointer p = x.asPointer();
        p.position(4);
        BytePointer q = p.getPointer(990);
        assertThat(q.address()).isEqualTo(x.address() + 990);
        assertThat(q.position()).isEqualTo(4);
        assertThat(q.limit()).isEqualTo(10);
        assertThat(q.capacity()).isEqualTo(10);
        q.put(5, (byte) 9); // 990 + 4 + 5 = byte 999
        assertThat(x.asByteBuffer().get(999)).isEqualTo((byte) 9);
        assertThatThrownBy(() -> q.put(6, (byte) 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> q.position(11)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(p.getPointer().address()).isEqualTo(x.address());
        assertThat(p.getPointer(BYTES).capacity()).isZero();
        assertThatThrownBy(() -> p.getPointer(BYTES + 1)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> p.getPointer(-1)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    /** A pointer set to null (JavaCPP's setNull()) refuses, where JavaCPP would read address 0. */
    @Test
    void aPointerSetToNullRefusesItsAccessors() {
        BytePointer p = x.asPointer();
        p.setNull();
        assertThat(p.isNull()).isTrue();
        assertThatThrownBy(() -> p.get(0)).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("set to null");
        assertThatThrownBy(() -> p.putLong(8, 1L)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> p.get(new byte[4])).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> p.fill(0)).isInstanceOf(NullPointerException.class);
        assertThat(p.asByteBuffer()).as("JavaCPP's answer for a null pointer").isNull();
    }

    /**
     * One thread moves the position of the pointer another one writes through: each write is
     * checked against one reading of the position and lands there, so none reaches past the
     * pointer whatever the interleaving (JavaCPP's accessors read the position again: checked
     * against position 0 and made from position 999, they wrote into the next allocation, or
     * crashed the JVM further away). A null source is refused too, where JavaCPP's copy read
     * address 0.
     */
    @Test
    void aPositionMovedByAnotherThreadNeverCarriesAnAccessOutside() throws InterruptedException {
        BytePointer p = x.asPointer();
        byte[] bulk = new byte[100]; // fits from position 0, not from 999
        AtomicBoolean stop = new AtomicBoolean();
        Thread mover = new Thread(() -> {
            for (long k = 0; !stop.get(); k++) {
                p.position((k & 1) == 0 ? 0 : BYTES - 1);
            }
        }, "position-mover");
        mover.setDaemon(true);
        mover.start();
        long written = 0;
        long refused = 0;
        try {
            long end = System.nanoTime() + 2_000_000_000L;
            while (System.nanoTime() < end) {
                for (Runnable write : List.<Runnable>of(() -> p.put(BYTES - 1, (byte) 1),
                        () -> p.putInt(BYTES - 4, 1), () -> p.put(bulk, 0, bulk.length))) {
                    try {
                        write.run(); // fits from position 0 only
                        written++;
                    } catch (IndexOutOfBoundsException e) {
                        refused++;
                    }
                }
            }
        } finally {
            stop.set(true);
            TestThreads.joinOrFail(TestThreads.RUN_LIMIT, mover);
        }
        assertThat(written).as("writes made").isPositive();
        assertThat(refused).as("writes refused").isPositive();
        p.position(0);
        assertThatThrownBy(() -> p.put(new BytePointer())).isInstanceOf(NullPointerException.class)
                .hasMessageContaining("source pointer is null");
        // The next allocation untouched: nothingOutsideWasTouched().
    }

    private record Accessor(String name, int width, LongConsumer put, LongConsumer get) {
    }
}
