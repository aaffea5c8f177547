package io.github.bfc4j.onnxruntime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The examples' child JVMs end, and what they wrote is read. */
class ExampleJvmTest {

    /** For a child JVM: writes a line to each stream, then sleeps {@code args[0]} seconds. */
    public static final class Sleeps {
        private Sleeps() {
        }

        /**
         * Writes, then sleeps.
         *
         * @param args the seconds to sleep
         * @throws InterruptedException never, in practice
         */
        public static void main(String[] args) throws InterruptedException {
            System.out.println("out");
            System.out.flush();
            System.err.println("err");
            Thread.sleep(Long.parseLong(args[0]) * 1000);
        }
    }

    /**
     * For a child JVM: starts {@code sleep 120}, says its process id on its standard error, then
     * sleeps {@code args[0]} seconds itself.
     */
    public static final class StartsASleep {
        private StartsASleep() {
        }

        /**
         * Starts the sleep, then sleeps.
         *
         * @param args the seconds to sleep
         * @throws IOException if sleep cannot be started
         * @throws InterruptedException never, in practice
         */
        public static void main(String[] args) throws IOException, InterruptedException {
            Process sleep = new ProcessBuilder("sleep", "120").redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            System.err.println("grandchild " + sleep.pid());
            Thread.sleep(Long.parseLong(args[0]) * 1000);
        }
    }

    /**
     * A child that does not end within the limit is ended, and the run says so: the run read the
     * child's standard output to its end before it waited with the limit, so a child that never
     * ended (nor closed its output) kept the test waiting for ever. The child here sleeps 120 s,
     * so that even without the limit it ends.
     */
    @Test
    void aChildThatDoesNotEndIsEndedAtTheLimit(@TempDir Path dir) {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> assertThatThrownBy(
                () -> ExampleJvm.run(Sleeps.class, dir, Duration.ofSeconds(3), "120"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("Sleeps 120 ran for PT3S; ended")
                .hasMessageContaining("[err]"));
    }

    /** A child that ends within the limit gives its status and both streams. */
    @Test
    void aChildThatEndsGivesItsStatusAndOutput(@TempDir Path dir) throws Exception {
        ExampleJvm.Result r = ExampleJvm.run(Sleeps.class, dir, Duration.ofSeconds(60), "0");
        assertThat(r.status()).isZero();
        assertThat(r.out()).isEqualTo("out" + System.lineSeparator());
        assertThat(r.err()).containsExactly("err");
    }

    /**
     * What the child started is ended with it at the limit: only the child was ended, so the
     * {@code sleep 120} it started ran on after the test.
     */
    @Test
    void whatAChildStartedIsEndedWithItAtTheLimit(@TempDir Path dir) throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/bin/sleep")) || Files.isExecutable(Path.of("/usr/bin/sleep")),
                "no sleep program here");
        AssertionError e = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> catchThrowableOfType(
                () -> ExampleJvm.run(StartsASleep.class, dir, Duration.ofSeconds(10), "120"), AssertionError.class));
        assertThat(e).hasMessageContaining("StartsASleep 120 ran for PT10S; ended");
        assertTheGrandchildEnded(e.getMessage());
    }

    /**
     * Checks that the sleep a {@link StartsASleep} child started, whose process id the child's
     * output in {@code failure} gives ({@code grandchild N}), was ended with the child.
     */
    static void assertTheGrandchildEnded(String failure) {
        Matcher m = Pattern.compile("grandchild (\\d+)").matcher(failure);
        assertThat(m.find()).as(failure).isTrue();
        Optional<ProcessHandle> grandchild = ProcessHandle.of(Long.parseLong(m.group(1)));
        try {
            assertThat(grandchild.filter(ProcessHandle::isAlive)).as("the child's sleep, once the child was ended")
                    .isEmpty();
        } finally {
            grandchild.ifPresent(ProcessHandle::destroyForcibly);
        }
    }
}
