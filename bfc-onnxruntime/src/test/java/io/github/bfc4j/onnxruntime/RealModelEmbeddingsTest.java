package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.bytedeco.onnxruntime.global.onnxruntime.ORT_LOGGING_LEVEL_WARNING;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.MemoryStats;
import java.util.List;
import org.bytedeco.onnxruntime.Env;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Real public models give the same answers on bfc4j memory as on ORT's own arena, bit for bit,
 * and answers that mean what the models are documented to mean.
 */
class RealModelEmbeddingsTest {

    private static Env env;

    @BeforeAll
    static void createEnv() {
        env = new Env(ORT_LOGGING_LEVEL_WARNING, "bfc4j-test");
    }

    @AfterAll
    static void releaseEnv() {
        env.close();
    }

    @ParameterizedTest
    @EnumSource(EmbeddingModel.class)
    void sameHiddenStatesBitForBitAsOrtsArenaAndParaphrasesAreClosest(EmbeddingModel model) {
        List<String> sentences = Sentences.all().stream().map(model::passage).toList();
        try (HuggingFaceTokenizer tokenizer = model.tokenizer(128);
                BfcAllocator bfc = BfcOrtAllocatorTest.hostAllocator("ort_" + model.name().toLowerCase(), 1L << 30);
                BfcOrtAllocator ort = BfcOrtAllocator.register(bfc)) {
            Encoding[] batch = EmbeddingModel.encode(tokenizer, sentences);
            EmbeddingSession.Output onBfc;
            EmbeddingSession.Output onArena;
            EmbeddingSession.Output[] aloneOnBfc = new EmbeddingSession.Output[sentences.size()];
            try (EmbeddingSession withBfc = new EmbeddingSession(env, model, EmbeddingSession.options(true));
                    EmbeddingSession withArena = new EmbeddingSession(env, model, EmbeddingSession.options(false))) {
                MemoryStats created = bfc.memoryStats();
                assertThat(created.bytesInUse()).as("the weights live in bfc4j memory").isGreaterThan(1L << 20);
                long allocsBefore = ort.stats().allocCalls();
                onBfc = withBfc.run(batch);
                assertThat(ort.stats().allocCalls()).as("the run allocated through bfc4j").isGreaterThan(allocsBefore);
                long allocsAfterBfcRun = ort.stats().allocCalls();
                onArena = withArena.run(batch);
                assertThat(ort.stats().allocCalls()).as("the arena session never calls bfc4j").isEqualTo(allocsAfterBfcRun);
                for (int i = 0; i < sentences.size(); i++) {
                    Encoding[] one = EmbeddingModel.encode(tokenizer, List.of(sentences.get(i)));
                    aloneOnBfc[i] = withBfc.run(one);
                    assertThat(bits(aloneOnBfc[i].hidden())).as("sentence %d alone", i)
                            .isEqualTo(bits(withArena.run(one).hidden()));
                }
                assertThat(bfc.bytesInUse()).as("between runs only the weights are held").isEqualTo(created.bytesInUse());
            }
            assertThat(bits(onBfc.hidden())).as("the batch's last hidden state, bit for bit")
                    .isEqualTo(bits(onArena.hidden()));
            assertThat(bfc.bytesInUse()).isZero();
            assertThat(ort.stats().liveAllocations()).isZero();
            assertThat(ort.stats().callbackErrors()).isZero();
            bfc.checkInvariants();

            float[][] e = onBfc.embeddings();
            int pairs = Sentences.PARAPHRASES.size();
            StringBuilder table = new StringBuilder(model + ": cosine similarity\n");
            for (int i = 0; i < e.length; i++) {
                for (int j = 0; j < e.length; j++) {
                    table.append(String.format(java.util.Locale.ROOT, " %5.2f", EmbeddingSession.cosine(e[i], e[j])));
                }
                table.append('\n');
            }
            System.out.print(table);
            for (int p = 0; p < pairs; p++) {
                double paraphrase = EmbeddingSession.cosine(e[2 * p], e[2 * p + 1]);
                for (int q = 0; q < 2 * pairs; q++) {
                    if (q / 2 == p) {
                        continue;
                    }
                    for (int side = 0; side < 2; side++) {
                        assertThat(paraphrase).as("pair %d vs sentence %d", p, q)
                                .isGreaterThan(EmbeddingSession.cosine(e[2 * p + side], e[q]) + 0.1);
                    }
                }
                // Alone or padded in a batch, a sentence keeps its meaning. Not bit for bit: the
                // models quantize activations dynamically, scaled by the whole batch's range.
                float[] alone = aloneOnBfc[2 * p].embeddings()[0];
                assertThat(EmbeddingSession.cosine(alone, e[2 * p])).as("pair %d alone vs in the batch", p)
                        .isGreaterThan(0.98);
            }
        }
    }

    static int[] bits(float[] a) {
        int[] b = new int[a.length];
        for (int i = 0; i < a.length; i++) {
            b[i] = Float.floatToRawIntBits(a[i]);
        }
        return b;
    }
}
