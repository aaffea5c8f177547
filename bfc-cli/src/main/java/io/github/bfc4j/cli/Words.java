/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cli;

/**
 * Words of the command line as the CLI reads them and as its messages show them. A value is read
 * with its surrounding spaces ignored, and nothing else: a control character or a digit of
 * another script is part of the word (so {@code 1MiB<ESC>} or {@code ١MiB} is refused, not read
 * as {@code 1MiB}). A message shows a word with its control characters as escapes.
 */
final class Words {
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
     * A word of the command line as a message shows it: each control character (tab included)
     * as an escape, {@code \x1b}.
     *
     * @param text the word
     * @return the word, visible
     */
    static String shown(String text) {
        return CommandRunner.visible(text);
    }
}
