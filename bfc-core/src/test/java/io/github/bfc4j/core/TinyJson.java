/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.core;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict RFC 8259 JSON parser for tests (objects become {@link LinkedHashMap}, arrays
 * {@link ArrayList}, numbers {@link BigDecimal}). Strict on purpose: a trailing comma, a bare
 * NaN or an unescaped control character fails the test that parses it.
 */
public final class TinyJson {
    private final String s;
    private int i;

    private TinyJson(String s) {
        this.s = s;
    }

    /**
     * @param text a JSON document
     * @return the value
     * @throws IllegalArgumentException if the text is not exactly one JSON value
     */
    public static Object parse(String text) {
        TinyJson p = new TinyJson(text);
        Object v = p.value();
        p.ws();
        if (p.i != text.length()) {
            throw p.error("trailing text");
        }
        return v;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(what + " at offset " + i + ": "
                + s.substring(Math.max(0, i - 30), Math.min(s.length(), i + 30)));
    }

    private void ws() {
        while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
    }

    private void expect(char c) {
        ws();
        if (i >= s.length() || s.charAt(i) != c) {
            throw error("expected '" + c + "'");
        }
        i++;
    }

    private Object value() {
        ws();
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        if (c == '{') {
            i++;
            Map<String, Object> m = new LinkedHashMap<>();
            ws();
            if (s.charAt(i) == '}') {
                i++;
                return m;
            }
            do {
                ws();
                String k = string();
                expect(':');
                if (m.put(k, value()) != null) {
                    throw error("duplicate key " + k);
                }
                ws();
            } while (s.charAt(i++) == ',');
            i--;
            expect('}');
            return m;
        }
        if (c == '[') {
            i++;
            List<Object> l = new ArrayList<>();
            ws();
            if (s.charAt(i) == ']') {
                i++;
                return l;
            }
            do {
                l.add(value());
                ws();
            } while (s.charAt(i++) == ',');
            i--;
            expect(']');
            return l;
        }
        if (c == '"') {
            return string();
        }
        if (s.startsWith("true", i)) {
            i += 4;
            return Boolean.TRUE;
        }
        if (s.startsWith("false", i)) {
            i += 5;
            return Boolean.FALSE;
        }
        if (s.startsWith("null", i)) {
            i += 4;
            return null;
        }
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        digits();
        if (i < s.length() && s.charAt(i) == '.') {
            i++;
            digits();
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            i++;
            if (s.charAt(i) == '+' || s.charAt(i) == '-') {
                i++;
            }
            digits();
        }
        return new BigDecimal(s.substring(start, i));
    }

    private void digits() {
        int start = i;
        while (i < s.length() && Character.isDigit(s.charAt(i))) {
            i++;
        }
        if (i == start) {
            throw error("expected a digit");
        }
    }

    private String string() {
        if (s.charAt(i) != '"') {
            throw error("expected a string");
        }
        i++;
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = s.charAt(i++);
            if (c == '"') {
                return sb.toString();
            }
            if (c < 0x20) {
                throw error("unescaped control character");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                }
                default -> throw error("bad escape \\" + e);
            }
        }
    }
}
