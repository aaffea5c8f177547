/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.micrometer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict parser of Prometheus's text exposition format 0.0.4 for tests: every line is a
 * {@code # HELP}, a {@code # TYPE} or a sample {@code name{label="value",...} value}; anything
 * else fails.
 */
final class PrometheusText {

    /** One sample line. */
    record Sample(String name, Map<String, String> labels, double value) {
    }

    /** The parsed text: samples in order and the declared TYPE of each family. */
    record Exposition(List<Sample> samples, Map<String, String> types) {
        List<Sample> named(String name) {
            return samples.stream().filter(s -> s.name().equals(name)).toList();
        }
    }

    private static final Pattern SAMPLE = Pattern.compile(
            "([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?");
    private static final Pattern LABEL = Pattern.compile(
            "([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\\\n]|\\\\[\\\\\"n])*)\"(,|$)");
    private static final Pattern TYPE = Pattern.compile(
            "# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)");

    private PrometheusText() {
    }

    static Exposition parse(String text) {
        List<Sample> samples = new ArrayList<>();
        Map<String, String> types = new LinkedHashMap<>();
        int lineNo = 0;
        for (String line : text.split("\n")) {
            lineNo++;
            if (line.isEmpty() || line.startsWith("# HELP ")) {
                continue;
            }
            Matcher t = TYPE.matcher(line);
            if (t.matches()) {
                types.put(t.group(1), t.group(2));
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            if (!m.matches()) {
                throw new IllegalArgumentException("line " + lineNo + " is not a sample: " + line);
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(2) != null && !m.group(2).isEmpty()) {
                Matcher l = LABEL.matcher(m.group(2));
                int end = 0;
                while (l.find() && l.start() == end) {
                    labels.put(l.group(1), l.group(2));
                    end = l.end();
                }
                if (end != m.group(2).length()) {
                    throw new IllegalArgumentException("line " + lineNo + " has bad labels: " + line);
                }
            }
            samples.add(new Sample(m.group(1), labels, parseValue(m.group(3))));
        }
        return new Exposition(samples, types);
    }

    private static double parseValue(String v) {
        return switch (v) {
            case "+Inf" -> Double.POSITIVE_INFINITY;
            case "-Inf" -> Double.NEGATIVE_INFINITY;
            case "NaN" -> Double.NaN;
            default -> Double.parseDouble(v);
        };
    }
}
