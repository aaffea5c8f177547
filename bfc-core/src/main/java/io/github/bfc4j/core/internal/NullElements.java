/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core.internal;

import java.util.Collection;
import java.util.List;
import java.util.function.Function;

/**
 * Copies a collection a caller passed to the public API, refusing a null element by its
 * parameter's name and index ({@code stack[2]=null (expected: ...)}) before anything changes.
 * The elements are taken once ({@link List#copyOf}), so what is checked is what is kept, even if
 * the caller's collection changes meanwhile.
 */
public final class NullElements {

    private NullElements() {
    }

    /**
     * An unmodifiable copy of {@code c}, or a {@link NullPointerException} for its first null.
     *
     * @param <T> the element type
     * @param c the collection, not null
     * @param name the parameter's name, as its javadoc gives it
     * @param expected what each element is to be, for the message
     * @return the copy
     * @throws NullPointerException {@code name[i]=null (expected: expected)} for the first null
     */
    public static <T> List<T> copyOf(Collection<? extends T> c, String name, String expected) {
        return copyOf(c, name, expected, NullPointerException::new);
    }

    /**
     * An unmodifiable copy of {@code c}, or the exception {@code refusal} makes of the message
     * for its first null (for the API that documents {@link IllegalArgumentException} there).
     *
     * @param <T> the element type
     * @param c the collection, not null
     * @param name the parameter's name, as its javadoc gives it
     * @param expected what each element is to be, for the message
     * @param refusal makes the exception of the message
     * @return the copy
     * @throws RuntimeException {@code refusal}'s, with {@code name[i]=null (expected: expected)},
     *     for the first null
     */
    public static <T> List<T> copyOf(Collection<? extends T> c, String name, String expected,
            Function<String, ? extends RuntimeException> refusal) {
        try {
            // As before: a list that List.copyOf made (or List.of) is kept as it is, not copied.
            return List.copyOf(c);
        } catch (NullPointerException hasNull) {
            Object[] a = c.toArray();
            for (int i = 0; i < a.length; i++) {
                if (a[i] == null) {
                    throw refusal.apply(name + "[" + i + "]=null (expected: " + expected + ")");
                }
            }
            // The caller's collection changed meanwhile (another thread): no index to give.
            throw refusal.apply(name + " held a null element, and then none: it changed while it was copied"
                    + " (expected: " + expected + ", and no change until the call returns)");
        }
    }
}
