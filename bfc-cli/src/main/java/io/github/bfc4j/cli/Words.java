/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

import java.nio.charset.StandardCharsets;

/**
 * Words of the command line as the CLI reads them and as its messages show them. A value is read
 * with its surrounding spaces ignored, and nothing else: a control character or a digit of
 * another script is part of the word (so {@code 1MiB<ESC>} or {@code ١MiB} is refused, not read
 * as {@code 1MiB}). A message shows a word with its control characters as escapes, and no more
 * than its first {@value #QUOTE_BYTES} bytes, as it quotes a file's lines and words.
 */
final class Words {
    /** The most bytes (UTF-8) of a word that a message shows; a longer one is cut, then {@code ...}. */
    static final int QUOTE_BYTES = 200;

    private Words() {
    }

    /**
     * The word without the spaces (U+0020 only) around it.
     *
     * @param text a word of the command line
     * @return the word without leading and trailing spaces
     */
    static String strip(String text) {
        int start = 0;
        int end = text.length();
        while (start < end && text.charAt(start) == ' ') {
            start++;
        }
        while (end > start && text.charAt(end - 1) == ' ') {
            end--;
        }
        return text.substring(start, end);
    }

    /**
     * Whether {@code c} is one of the ASCII digits {@code 0} to {@code 9} (not another script's,
     * which {@link Character#isDigit} also takes).
     *
     * @param c a character
     * @return whether it is an ASCII digit
     */
    static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /**
     * A word of the command line as a message shows it: its first {@value #QUOTE_BYTES} bytes
     * (then {@code ...}), each control character (tab included) as an escape, {@code \x1b}.
     *
     * @param text the word
     * @return the word, short and visible
     */
    static String shown(String text) {
        return CommandRunner.visible(cut(text));
    }

    /**
     * The word itself if it is at most {@value #QUOTE_BYTES} bytes long in UTF-8, else as many
     * of its first characters as fit in that many bytes, then {@code ...}.
     *
     * @param text the word
     * @return the word, or its start and {@code ...}
     */
    static String cut(String text) {
        if (text.length() * 3 <= QUOTE_BYTES || text.getBytes(StandardCharsets.UTF_8).length <= QUOTE_BYTES) {
            return text;
        }
        int bytes = 0;
        int end = 0;
        while (end < text.length()) {
            int cp = text.codePointAt(end);
            int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            if (bytes + n > QUOTE_BYTES) {
                break;
            }
            bytes += n;
            end += Character.charCount(cp);
        }
        return text.substring(0, end) + "...";
    }

    /**
     * A message in which every word of {@code args} longer than {@value #QUOTE_BYTES} bytes, and
     * every such value of an {@code --option=value} word, is {@link #cut}: for the messages
     * picocli writes, which quote the words whole.
     *
     * @param message the message
     * @param args the command line
     * @return the message, its long words cut
     */
    static String cutIn(String message, String[] args) {
        String m = message;
        for (String a : args) {
            int eq = a.startsWith("-") ? a.indexOf('=') : -1;
            for (String w : eq < 0 ? new String[] {a} : new String[] {a, a.substring(eq + 1)}) {
                String c = cut(w);
                if (!c.equals(w)) {
                    m = m.replace(w, c);
                }
            }
        }
        return m;
    }
}
