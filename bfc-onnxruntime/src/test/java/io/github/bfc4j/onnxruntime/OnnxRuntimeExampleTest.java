package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Runs the example's main as a user would and checks what it prints. */
class OnnxRuntimeExampleTest {

    private static String runMain(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            OnnxRuntimeExample.main(args);
        } finally {
            System.setOut(saved);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        saved.println(out);
        return out;
    }

    @Test
    void printsTheModelsOutputAndTheMemorySummary() {
        String out = runMain();
        assertThat(out).startsWith("ONNX Runtime 1.22.0, CPU memory from bfc4j allocator 'ort_cpu' (limit 1.00GiB)");
        assertThat(out).contains("bfc4j memory summary: ort_cpu (HOST_PAGEABLE)");
        assertThat(out).contains("After closing the session: 0B in use, 0 allocations live");
        assertThat(out).containsPattern("ORT called the allocator: Alloc [1-9]\\d*, Reserve \\d+, Free [1-9]\\d*; 4"
                + " allocations live \\(the session's weights\\)");

        // The printed probabilities are the model's, computed here independently.
        OnnxModels.Mlp model = OnnxModels.mlp(64, 128, 10, 42);
        Random random = new Random(42);
        float[] x = new float[4 * 64];
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat() * 2 - 1;
        }
        float[] expected = Reference.mlp(model, x, 4);
        Matcher m = Pattern.compile("  example (\\d):((?: \\d\\.\\d{4}){10})  -> class (\\d)").matcher(out);
        int rows = 0;
        while (m.find()) {
            int n = Integer.parseInt(m.group(1));
            assertThat(n).isEqualTo(rows);
            List<String> values = Arrays.asList(m.group(2).trim().split(" "));
            int best = 0;
            for (int k = 0; k < 10; k++) {
                float e = expected[n * 10 + k];
                assertThat(Float.parseFloat(values.get(k))).as("example %d class %d", n, k).isCloseTo(e, within(1e-4f));
                best = e > expected[n * 10 + best] ? k : best;
            }
            assertThat(Integer.parseInt(m.group(3))).isEqualTo(best);
            rows++;
        }
        assertThat(rows).isEqualTo(4);
    }

    @Test
    void compareOptionPrintsBothAllocatorsLatencies() {
        String out = runMain("--compare", "5");
        assertThat(out).containsPattern("ONNX Runtime 1\\.22\\.0, \\d+ CPUs, 5 alternating rounds after 20 warm-up rounds");
        assertThat(out).containsPattern("MLP 256-1024-10, batch 32:\n  bfc4j allocator: +median [\\d.]+ us, p90 [\\d.]+ us\n"
                + "  ORT's own CPU arena: +median [\\d.]+ us, p90 [\\d.]+ us");
        assertThat(out).contains("Conv 3->16 3x3 + Relu, 32x32, batch 8:");
        assertThat(out).containsPattern("bfc4j: Alloc [1-9]\\d*, Reserve \\d+, Free [1-9]\\d*");
    }
}
