package io.github.bfc4j.onnxruntime;

import io.github.bfc4j.core.ChildProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
     * Runs {@code main} with {@code args} on this JVM's class path, its standard output and error
     * kept in {@code dir}; waits up to 5 minutes.
     */
    static Result run(Class<?> main, Path dir, String... args) throws IOException, InterruptedException {
        return run(main, dir, Duration.ofMinutes(5), args);
    }

    /**
     * Runs {@code main} with {@code args} on this JVM's class path, its standard input empty and
     * its standard output and error kept in {@code dir} (files, not pipes: a child that never ends
     * cannot block the reading, and one that writes much cannot block on a full pipe); waits up
     * to {@code limit}, then ends it and the processes it started.
     *
     * @throws AssertionError if it ran for longer than {@code limit} (it is ended first)
     */
    static Result run(Class<?> main, Path dir, Duration limit, String... args) throws IOException,
            InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "stdout-", ".txt");
        Path err = Files.createTempFile(dir, "stderr-", ".txt");
        Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        p.getOutputStream().close();
        if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            ChildProcess.end(p);
            throw new AssertionError(main.getSimpleName() + " " + String.join(" ", args) + " ran for " + limit
                    + "; ended. Its standard error: " + Files.readAllLines(err, StandardCharsets.UTF_8));
        }
        Result r = new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readAllLines(err, StandardCharsets.UTF_8));
        System.out.println(main.getSimpleName() + " " + String.join(" ", args) + ": exit " + r.status() + "; " + r.err());
        return r;
    }
}
