package io.github.bfc4j.onnxruntime;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Requests of a sentence-embedding server, tokenized in advance: each a batch of real texts cut
 * or padded to one length. Batch sizes and lengths are drawn from the given lists.
 */
final class ServingWorkload {

    private ServingWorkload() {
    }

    /**
     * Draws {@code count} requests.
     *
     * @param model     whose tokenizer cuts the texts
     * @param random    the draws
     * @param count     how many
     * @param batches   the batch sizes to draw from
     * @param lengths   the sequence lengths (tokens) to draw from
     * @param maxTokens the largest {@code batch * length} drawn (larger draws are drawn again)
     * @return the requests, each a padded batch
     */
    static List<Encoding[]> requests(EmbeddingModel model, Random random, int count, int[] batches, int[] lengths,
            int maxTokens) {
        Map<Integer, HuggingFaceTokenizer> tokenizers = new HashMap<>();
        try {
            List<Encoding[]> requests = new ArrayList<>();
            while (requests.size() < count) {
                int batch = batches[random.nextInt(batches.length)];
                int length = lengths[random.nextInt(lengths.length)];
                if (batch * length > maxTokens) {
                    continue;
                }
                requests.add(request(tokenizers.computeIfAbsent(length, model::fixedLengthTokenizer), random, batch,
                        length));
            }
            return requests;
        } finally {
            tokenizers.values().forEach(HuggingFaceTokenizer::close);
        }
    }

    /** A request's annotation ({@code MemoryAnnotation}): its batch size and sequence length. */
    static String annotation(Encoding[] request) {
        return "minilm/run batch=" + request.length + " len=" + request[0].getIds().length;
    }

    /** One request of {@code batch} texts of exactly {@code length} tokens. */
    static Encoding[] request(HuggingFaceTokenizer fixedLength, Random random, int batch, int length) {
        List<String> texts = new ArrayList<>();
        for (int b = 0; b < batch; b++) {
            texts.add(Sentences.text(random, length));
        }
        return EmbeddingModel.encode(fixedLength, texts);
    }
}
