/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.github.bfc4j.core.ChildProcess;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The probe's sentences (with loaders that fail the ways a machine without a GPU fails), and,
 * on a machine without a usable GPU (CI), that every public way to reach the GPU throws
 * {@link CudaUnavailableException} with the probe's sentence.
 */
class CudaProbeTest {

    private static final long G = 64 << 10;

    @Test
    void missingPresetsAreNamed() {
        CudaProbe.Result r = CudaProbe.probe(null, () -> {
            throw new AssertionError("must not load without the presets");
        });
        assertThat(r.availability().isUsable()).isFalse();
        assertThat(r.availability().unavailableReason())
                .isEqualTo("No usable CUDA GPU: JavaCPP's CUDA presets (org.bytedeco:cuda) are not on"
                        + " the class path; add them as docs/cuda.md says.");
        assertThat(r.driver()).isNull();
    }

    @Test
    void anAvailabilityWithoutItsDeviceListSaysWhatItTakes() {
        assertThatThrownBy(() -> new CudaAvailability("12.9-9.10-1.5.12", 12040, null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("devices=null (expected: the visible devices, List.of() if none)");
        CudaDeviceInfo h100 = new CudaDeviceInfo(0, "NVIDIA H100", 80L << 30, 9, 0, true);
        assertThatThrownBy(() -> new CudaAvailability("12.9-9.10-1.5.12", 12040, Arrays.asList(h100, null), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("devices[1]=null (expected: a CudaDeviceInfo for each visible device, no nulls)");
    }

    @Test
    void aJniLibraryThatDoesNotLoadIsNamedWithItsFirstLine() {
        CudaProbe.Result r = CudaProbe.probe("12.9-9.10-1.5.12", () -> {
            throw new UnsatisfiedLinkError("no jnicudart in java.library.path\nsecond line");
        });
        CudaAvailability a = r.availability();
        assertThat(a.presetsVersion()).isEqualTo("12.9-9.10-1.5.12");
        assertThat(a.unavailableReason()).isEqualTo("No usable CUDA GPU: the CUDA JNI library could not"
                + " be loaded (no jnicudart in java.library.path); it needs the NVIDIA driver's"
                + " libcuda.so.1 and the CUDA 12 runtime libcudart.so.12 (or org.bytedeco:cuda-redist),"
                + " see docs/cuda.md.");
    }

    @Test
    void theMissingLibraryBehindJavaCppsErrorIsNamed() {
        UnsatisfiedLinkError outer = new UnsatisfiedLinkError("no jnicudart in java.library.path: /usr/lib");
        outer.initCause(new UnsatisfiedLinkError("/root/.javacpp/cache/cuda.jar/org/bytedeco/cuda/"
                + "linux-x86_64/libjnicudart.so: libcuda.so.1: cannot open shared object file: No such file"
                + " or directory"));
        CudaProbe.Result r = CudaProbe.probe("v", () -> {
            throw outer;
        });
        assertThat(r.availability().unavailableReason()).startsWith("No usable CUDA GPU: the CUDA JNI"
                + " library could not be loaded (libcuda.so.1: cannot open shared object file: No such file"
                + " or directory); it needs");
    }

    @Test
    void noDeviceFromCuInitSaysSo() {
        CudaProbe.Result r = CudaProbe.probe("v", () -> {
            throw new CudaException(100, "CUDA_ERROR_NO_DEVICE", "cuInit(flags=0)");
        });
        assertThat(r.availability().unavailableReason()).isEqualTo("No usable CUDA GPU: the CUDA driver"
                + " sees no device (cuInit(flags=0) failed: CUDA_ERROR_NO_DEVICE (100)); check nvidia-smi"
                + " and CUDA_VISIBLE_DEVICES.");
    }

    @Test
    void anotherCuInitFailureSaysTheDriverFailed() {
        CudaProbe.Result r = CudaProbe.probe("v", () -> {
            throw new CudaException(35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "cuInit(flags=0)");
        });
        assertThat(r.availability().unavailableReason()).startsWith("No usable CUDA GPU: the CUDA driver"
                + " could not be initialised (cuInit(flags=0) failed: CUDA_ERROR_INSUFFICIENT_DRIVER (35))");
    }

    @Test
    void anyOtherLoadFailureIsASentenceToo() {
        CudaProbe.Result r = CudaProbe.probe("v", () -> {
            throw new IllegalStateException("cache directory not writable");
        });
        assertThat(r.availability().unavailableReason())
                .isEqualTo("No usable CUDA GPU: loading the CUDA driver failed (cache directory not writable).");
    }

    @Test
    void zeroDevicesSaysSo() {
        SimulatedCudaDriver none = new SimulatedCudaDriver(List.of(), G);
        CudaProbe.Result r = CudaProbe.probe("v", () -> none);
        assertThat(r.availability().unavailableReason()).isEqualTo("No usable CUDA GPU: the CUDA driver"
                + " (CUDA 12.9) reports no device; check nvidia-smi and CUDA_VISIBLE_DEVICES.");
        assertThat(r.availability().driverVersion()).isEqualTo(12090);
    }

    @Test
    void devicesAreListedWhenUsable() {
        SimulatedCudaDriver two = new SimulatedCudaDriver(List.of(
                new CudaDeviceInfo(0, "A", 16 * G, 9, 0, true),
                new CudaDeviceInfo(1, "B", 8 * G, 7, 5, false)), G);
        CudaProbe.Result r = CudaProbe.probe("v", () -> two);
        assertThat(r.availability().isUsable()).isTrue();
        assertThat(r.availability().devices()).extracting(CudaDeviceInfo::name).containsExactly("A", "B");
        assertThat(r.driver()).isSameAs(two);
    }

    @Test
    void theRealProbeIsCachedAndNeverThrows() {
        CudaAvailability a = CudaProbe.availability();
        assertThat(CudaProbe.availability()).isSameAs(a);
        // The presets are a dependency of this module, so they are on the test class path.
        assertThat(a.presetsVersion()).isEqualTo("12.9-9.10-1.5.12");
        System.out.println("CudaProbe.availability() here: " + a);
    }

    @Test
    void withoutAUsableGpuEveryWayInThrowsTheProbesSentence() {
        CudaAvailability a = CudaProbe.availability();
        assumeFalse(a.isUsable(), "this machine has a usable GPU: the no-GPU path cannot be tested here");
        String sentence = a.unavailableReason();
        assertThat(sentence).startsWith("No usable CUDA GPU: ").endsWith(".");
        assertThatThrownBy(() -> new CudaDeviceSubAllocator(0))
                .isInstanceOf(CudaUnavailableException.class).hasMessage(sentence);
        assertThatThrownBy(() -> new CudaHostSubAllocator(0))
                .isInstanceOf(CudaUnavailableException.class).hasMessage(sentence);
        assertThatThrownBy(() -> new CudaVirtualMemorySubAllocator(0, 1 << 30))
                .isInstanceOf(CudaUnavailableException.class).hasMessage(sentence);
        assertThatThrownBy(() -> GpuBfcAllocators.create(0, GpuBfcOptions.defaults()))
                .isInstanceOf(CudaUnavailableException.class).hasMessage(sentence);
    }

    /** Prints the real probe's sentence, twice (a second call must say the same), for a child JVM. */
    public static final class PrintSentence {
        private PrintSentence() {
        }

        /**
         * Runs the probe.
         *
         * @param args none
         */
        public static void main(String[] args) {
            if (Boolean.getBoolean("bfc4j.test.touchCudaFirst")) {
                // The application touched the presets before the probe: their class's failed
                // static initialiser leaves only a NoClassDefFoundError for the probe.
                try {
                    org.bytedeco.cuda.global.cudart.cudaGetDeviceCount(new int[1]);
                } catch (LinkageError expected) {
                    System.out.println("touched first: " + expected.getClass().getSimpleName());
                }
            }
            System.out.println(CudaProbe.availability().unavailableReason());
            System.out.println(CudaProbe.availability().unavailableReason());
            try {
                new CudaDeviceSubAllocator(0);
            } catch (CudaUnavailableException e) {
                System.out.println(e.getMessage());
            }
        }
    }

    /** The tests that leave natives out know only bfc-cuda's own: linux-x86_64's. */
    private static void assumeTheNativesDeclaredAreThisPlatforms() {
        assumeTrue(org.bytedeco.javacpp.Loader.getPlatform().equals("linux-x86_64"),
                "skipped: the natives bfc-cuda declares are linux-x86_64's, this is " + org.bytedeco.javacpp.Loader.getPlatform());
    }

    /**
     * The real probe in a JVM whose class path is this test's without the jars whose file names
     * match {@code leaveOut}: its sentence, which the probe must give three times alike.
     */
    private static String sentenceWithout(String leaveOut, String... jvmOptions) throws Exception {
        String[] entries = System.getProperty("java.class.path").split(File.pathSeparator);
        String cp = Arrays.stream(entries).filter(e -> !Path.of(e).getFileName().toString().matches(leaveOut))
                .collect(Collectors.joining(File.pathSeparator));
        if (!leaveOut.isEmpty()) {
            assertThat(cp.split(File.pathSeparator)).as("a jar to leave out").hasSizeLessThan(entries.length);
        }
        List<String> command = new java.util.ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-cp", cp, PrintSentence.class.getName()));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        assertThat(child.status()).as(out).isZero();
        List<String> lines = out.lines().filter(l -> l.startsWith("No usable CUDA GPU")).toList();
        assertThat(lines).as(out).hasSize(3).containsOnly(lines.get(0));
        System.out.println("without " + leaveOut + ": " + lines.get(0));
        return lines.get(0);
    }

    /**
     * Without the presets' natives jar (e.g. on linux-arm64, whose natives bfc-cuda does not
     * declare) nothing of the driver was tried: the sentence names the jar to add, not the
     * driver's libraries.
     */
    @Test
    void withoutThePresetsNativesForThisPlatformTheSentenceNamesTheJar() throws Exception {
        assumeTheNativesDeclaredAreThisPlatforms();
        String sentence = sentenceWithout("cuda-.*-linux-x86_64\\.jar");
        assertThat(sentence).isEqualTo("No usable CUDA GPU: the CUDA presets' JNI library for linux-x86_64 is not"
                + " on the class path (Could not find jnicudart in class, module, and library paths); add"
                + " org.bytedeco:cuda:12.9-9.10-1.5.12 and org.bytedeco:javacpp with classifier linux-x86_64,"
                + " see docs/cuda.md.");
    }

    /**
     * The same, where the application touched the presets first: the probe then gets only a
     * {@code NoClassDefFoundError} whose cause keeps the first error's text alone, not its cause
     * (the library JavaCPP could not find); the sentence still names the jar, not the driver.
     */
    @Test
    void withoutThePresetsNativesTouchedFirstTheSentenceStillNamesTheJar() throws Exception {
        assumeTheNativesDeclaredAreThisPlatforms();
        String sentence = sentenceWithout("cuda-.*-linux-x86_64\\.jar", "-Dbfc4j.test.touchCudaFirst=true");
        assertThat(sentence).isEqualTo("No usable CUDA GPU: the CUDA presets' JNI library for linux-x86_64 is not"
                + " on the class path (no jnicudart in java.library.path); add"
                + " org.bytedeco:cuda:12.9-9.10-1.5.12 and org.bytedeco:javacpp with classifier linux-x86_64,"
                + " see docs/cuda.md.");
    }

    /**
     * The natives jar is there but JavaCPP was told not to extract it: the sentence does not
     * claim that the jar is missing.
     */
    @Test
    void nativesThatJavaCppDoesNotExtractAreNotCalledMissing() throws Exception {
        assumeTheNativesDeclaredAreThisPlatforms();
        String sentence = sentenceWithout("", "-Dorg.bytedeco.javacpp.cacheLibraries=false");
        assertThat(sentence).isEqualTo("No usable CUDA GPU: the CUDA presets' JNI library for linux-x86_64 is on"
                + " the class path but JavaCPP did not load it (Could not find jnicudart in class, module, and"
                + " library paths); check JavaCPP's system properties (org.bytedeco.javacpp.cacheLibraries,"
                + " org.bytedeco.javacpp.cachedir), see docs/cuda.md.");
    }

    /**
     * On the module path the natives jars are platform modules that nothing requires: without
     * {@code --add-modules} the sentence names the modules to add.
     */
    @Test
    void onTheModulePathWithoutTheNativesModulesTheSentenceNamesThem() throws Exception {
        assumeTheNativesDeclaredAreThisPlatforms();
        Path cudaModule = Path.of(CudaProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path coreModule = Path.of(io.github.bfc4j.core.BfcAllocator.class.getProtectionDomain().getCodeSource()
                .getLocation().toURI());
        List<String> modulePath = new java.util.ArrayList<>(List.of(cudaModule.toString(), coreModule.toString()));
        String testClasses = null;
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String name = Path.of(e).getFileName().toString();
            if (name.matches("(cuda|javacpp)-[0-9].*\\.jar")) {
                modulePath.add(e);   // the presets and JavaCPP, with their linux-x86_64 natives jars
            }
            if (Path.of(e).equals(Path.of(PrintSentence.class.getProtectionDomain().getCodeSource().getLocation().toURI()))) {
                testClasses = e;
            }
        }
        List<String> command = new java.util.ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--module-path", String.join(File.pathSeparator, modulePath), "--add-modules", "io.github.bfc4j.cuda"));
        if (Runtime.version().feature() >= 22) {
            // As README says a module-path application runs from JDK 22 on: else the JVM warns.
            command.add("--enable-native-access=org.bytedeco.javacpp");
        }
        command.addAll(List.of("-cp", testClasses, io.github.bfc4j.cuda.modulepath.PrintProbeSentence.class.getName()));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println("on the module path: " + out);
        assertThat(out.lines().toList()).as(out).containsExactly("named module: true",
                "No usable CUDA GPU: the CUDA presets' JNI library for linux-x86_64 is in no module of the module"
                + " graph (Could not find jnicudart in class, module, and library paths); add --add-modules"
                + " org.bytedeco.cuda.linux.x86_64,org.bytedeco.javacpp.linux.x86_64 (jars"
                + " org.bytedeco:cuda:12.9-9.10-1.5.12 and org.bytedeco:javacpp with classifier linux-x86_64),"
                + " see docs/cuda.md.");
    }

    /** The presets without JavaCPP are there but cannot load: the sentence names JavaCPP. */
    @Test
    void withoutJavaCppTheSentenceNamesIt() throws Exception {
        String sentence = sentenceWithout("javacpp-[0-9.]+(-linux-x86_64)?\\.jar");
        assertThat(sentence).startsWith("No usable CUDA GPU: JavaCPP (org.bytedeco:javacpp), which the CUDA"
                + " presets need, is not on the class path (").endsWith("); add it as docs/cuda.md says.");
    }

    @Test
    void cudaExceptionCarriesCodeNameAndCall() {
        CudaException e = new CudaException(2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemCreate(size=2097152, device=0, flags=0)");
        assertThat(e).hasMessage("cuMemCreate(size=2097152, device=0, flags=0) failed: CUDA_ERROR_OUT_OF_MEMORY (2)");
        assertThat(e.code()).isEqualTo(2);
        assertThat(e.errorName()).isEqualTo("CUDA_ERROR_OUT_OF_MEMORY");
        assertThat(e.call()).isEqualTo("cuMemCreate(size=2097152, device=0, flags=0)");
        assertThat(e.isOutOfMemory()).isTrue();
        assertThat(new CudaException(1, "CUDA_ERROR_INVALID_VALUE", "x()").isOutOfMemory()).isFalse();
    }
}
