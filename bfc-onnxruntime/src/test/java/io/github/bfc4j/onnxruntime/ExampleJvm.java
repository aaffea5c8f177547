package io.github.bfc4j.onnxruntime;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs an example's main in a JVM of its own, as a user would: its exit status is the point. */
final class ExampleJvm {

    /** What the run left: its exit status, its standard output and its standard error's lines. */
    record Result(int status, String out, List<String> err) {
    }

    private ExampleJvm() {
    }

    /**
     * Runs {@code main} with {@code args} on this JVM's class path, its standard error kept in
     * {@code dir}; waits up to 5 minutes.
     */
    static Result run(Class<?> main, Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Path err = Files.createTempFile(dir, "stderr-", ".txt");
        Process p = new ProcessBuilder(command).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError(main.getSimpleName() + " " + String.join(" ", args) + " ran for 5 minutes");
        }
        Result r = new Result(p.exitValue(), out, Files.readAllLines(err, StandardCharsets.UTF_8));
        System.out.println(main.getSimpleName() + " " + String.join(" ", args) + ": exit " + r.status() + "; " + r.err());
        return r;
    }
}
