package io.github.bfc4j.onnxruntime;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Real sentences for the tests and the example: paraphrase pairs on unrelated topics. */
final class Sentences {

    /** Each pair says the same thing in other words; different pairs are about different things. */
    static final List<List<String>> PARAPHRASES = List.of(
            List.of("A man is playing a guitar on the stage.",
                    "Someone performs music with a guitar in front of an audience."),
            List.of("The cat sleeps on the warm windowsill.",
                    "A kitten is napping in the sun by the window."),
            List.of("How do I reset my password?",
                    "I forgot my password and need to change it."),
            List.of("The stock market fell sharply today.",
                    "Share prices dropped steeply on Wall Street this afternoon."),
            List.of("Heavy rain flooded the streets of the city overnight.",
                    "Overnight downpours left the town's roads under water."));

    private Sentences() {
    }

    /** Every sentence of {@link #PARAPHRASES}, pair by pair. */
    static List<String> all() {
        List<String> all = new ArrayList<>();
        PARAPHRASES.forEach(all::addAll);
        return all;
    }

    /**
     * A text of at least {@code words} words: sentences drawn from {@link #all()} and joined,
     * so that a tokenizer can cut it at any length up to a few hundred tokens.
     */
    static String text(Random random, int words) {
        List<String> all = all();
        StringBuilder sb = new StringBuilder();
        int n = 0;
        while (n < words) {
            String s = all.get(random.nextInt(all.size()));
            sb.append(sb.length() == 0 ? "" : " ").append(s);
            n += s.split(" ").length;
        }
        return sb.toString();
    }
}
