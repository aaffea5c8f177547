/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.Allocation;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.LeakDetection;
import io.github.bfc4j.core.NullSweep;
import io.github.bfc4j.core.SourceTree;
import java.nio.ByteBuffer;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every public constructor and method of bfc-cpu, and every method of the {@code BytePointer}
 * view {@link Allocation#asPointer()} gives (bfc-core's, reachable only over real memory),
 * refuses a null where it takes an object, as {@link NullSweep} says: a
 * {@link NullPointerException} or {@link IllegalArgumentException} whose message starts with
 * {@code name=null (expected: }, thrown before anything is read or written. The view's
 * parameters are named as JavaCPP's javadoc names them (the view's class is not public and
 * carries no javadoc of its own).
 */
class PublicApiNullSweepTest {

    private static final int BYTES = 1000;

    @TempDir
    Path tmp;

    private BfcAllocator allocator;

    @BeforeEach
    void open() {
        allocator = BfcAllocator.builder().name("sweep").memoryLimit(16L << 20)
                .subAllocator(new AlignedHostSubAllocator()).leakDetection(LeakDetection.DISABLED).build();
    }

    @AfterEach
    void close() {
        allocator.close();
    }

    private Allocation filled() {
        Allocation a = allocator.allocate(BYTES);
        ByteBuffer b = a.asByteBuffer();
        for (int i = 0; i < BYTES; i++) {
            b.put(i, (byte) i);
        }
        return a;
    }

    private static String bytesOf(Allocation a) {
        ByteBuffer b = a.asByteBuffer();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return Arrays.toString(out);
    }

    @Test
    void everyPublicConstructorAndMethodRefusesANullArgumentByName() {
        NullSweep s = new NullSweep(tmp, SourceTree.resolve("bfc-core/src/main/java"));
        s.sample(byte[].class, x -> new byte[] {1, 2, 3})
                .sample(String.class, x -> "sweep")
                .sample(Charset.class, x -> StandardCharsets.UTF_8)
                .sample(Pointer.class, x -> {
                    Allocation src = x.closeLater(filled());
                    return src.asPointer().limit(16);
                });
        Class<?> view;
        try (Allocation a = allocator.allocate(BYTES)) {
            view = a.asPointer().getClass();
        }
        s.receiver(view, e -> {
            Allocation a = s.closeLater(filled());
            BytePointer p = a.asPointer();
            return new NullSweep.Subject(p, () -> List.of(bytesOf(a), p.position(), p.limit(), p.capacity()), () -> {
                p.put(0, (byte) 7);
                assertThat(p.get(0)).isEqualTo((byte) 7);
            });
        });
        // The view overrides JavaCPP's methods; the names are JavaCPP's.
        s.name("ViewPointer.get(byte[])[0]", "array")
                .name("ViewPointer.put(byte[])[0]", "array")
                .name("ViewPointer.get(byte[],int,int)[0]", "array")
                .name("ViewPointer.put(byte[],int,int)[0]", "array")
                .name("ViewPointer.putString(String)[0]", "s")
                .name("ViewPointer.putString(String,Charset)[0]", "s")
                .name("ViewPointer.putString(String,Charset)[1]", "charset")
                .name("ViewPointer.putString(String,String)[0]", "s")
                .name("ViewPointer.putString(String,String)[1]", "charsetName")
                .name("ViewPointer.getString(String)[0]", "charsetName")
                .name("ViewPointer.getString(Charset)[0]", "charset")
                .name("ViewPointer.put(Pointer)[0]", "p")
                ;
        // C's p[i] = NULL: JavaCPP's BytePointer stores address 0 for a null Pointer, and so does the view.
        s.nullable("ViewPointer.putPointerValue(long,Pointer)[1]", "stores a null pointer (address 0)");
        List<Class<?>> classes = new ArrayList<>(NullSweep.publicClassesOf(AlignedHostSubAllocator.class));
        assertThat(classes).containsExactly(AlignedHostSubAllocator.class);
        classes.add(view);
        List<String> problems = s.run(classes);
        assertThat(s.calls()).as("calls made with a null").isGreaterThan(10);
        assertThat(problems).as("%d calls with a null", s.calls()).isEmpty();
    }
}
