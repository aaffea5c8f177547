/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.BfcOutOfMemoryException;
import java.nio.ByteBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.junit.jupiter.api.Test;

/**
 * A {@code BytePointer} view of more than 2 GiB: JavaCPP cuts a {@code ByteBuffer} (and its
 * position) to {@code Integer.MAX_VALUE} bytes from the address, and a string to a
 * {@code byte[]}; the view refuses both instead of answering with a buffer that ends early or
 * whose position is not the pointer's. The 3 GiB are reserved, never touched (but one page).
 */
class LargePointerViewTest {

    private static final long BYTES = 3L << 30;

    @Test
    void aBufferOrStringPastTwoGibibytesIsRefusedNotCut() {
        try (BfcAllocator a = BfcAllocator.builder().name("large").memoryLimit(4L << 30)
                .subAllocator(new AlignedHostSubAllocator()).build()) {
            Allocation big;
            try {
                big = a.allocate(BYTES);
            } catch (BfcOutOfMemoryException e) {
                assumeTrue(false, "this machine does not reserve 3 GiB of address space: " + e.getMessage());
                return;
            }
            try (big) {
                BytePointer p = big.asPointer();
                long pos = BYTES - 16;
                p.position(pos).limit(BYTES);
                assertThatThrownBy(p::asByteBuffer).isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("a ByteBuffer of this pointer would span its first " + BYTES
                                + " bytes (position " + pos + ", limit " + BYTES + "), more than a ByteBuffer can")
                        .hasMessageContaining("take getPointer(offset).position(0).limit(n)");
                assertThatThrownBy(p::asBuffer).isInstanceOf(IllegalStateException.class);
                p.position(0).limit(0);
                assertThat(p.asByteBuffer().capacity()).as("one byte at position 0").isEqualTo(1);
                p.limit(Integer.MAX_VALUE);
                assertThat(p.asByteBuffer().capacity()).isEqualTo(Integer.MAX_VALUE);
                p.limit(Integer.MAX_VALUE + 1L);
                assertThatThrownBy(p::asByteBuffer).isInstanceOf(IllegalStateException.class);

                // The way the message points to: a buffer starting at the offset.
                p.position(0).limit(BYTES);
                p.putLong(pos, 0x1122334455667788L);
                ByteBuffer tail = p.getPointer(pos).position(0).limit(16).asByteBuffer();
                assertThat(tail.capacity()).isEqualTo(16);
                assertThat(tail.getLong(0)).isEqualTo(0x1122334455667788L);

                p.position(0).limit(BYTES);
                assertThatThrownBy(p::getStringBytes).isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("the string from position 0 is " + BYTES + " bytes, more than a"
                                + " byte[] can hold");
            }
            assertThat(a.bytesInUse()).isZero();
        }
    }
}
