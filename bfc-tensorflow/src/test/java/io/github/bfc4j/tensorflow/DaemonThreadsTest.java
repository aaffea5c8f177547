/*
 * Copyright 2026 The bfc4j Authors. Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.tensorflow;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.bfc4j.core.BfcAllocator;
import io.github.bfc4j.core.ChildProcess;
import io.github.bfc4j.cpu.AlignedHostSubAllocator;
import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.tensorflow.ndarray.Shape;
import org.tensorflow.types.TFloat32;

/**
 * The daemon threads that the first tensor starts, bfc4j-core's cleaner ({@code bfc4j-cleaner},
 * for the buffer's view) and the one that keeps the memory of closed tensors mapped
 * ({@code bfc4j-tensor-pins}), hold nothing of the code that made that tensor, whose class loader
 * (a web application's, say) can go once that code is dropped.
 */
class DaemonThreadsTest {

    /**
     * Makes a tensor and closes it, leaving a value of its own for the threads its thread starts
     * (an inheritable thread local); the child JVM loads it with a class loader of its own.
     */
    public static final class MakesATensor implements Consumer<BfcTensors> {
        /** A value of the making thread's, which a thread started there inherits. */
        static final InheritableThreadLocal<Object> CONTEXT = new InheritableThreadLocal<>();

        /** Made by reflection, through the class loader of its own. */
        public MakesATensor() {
        }

        @Override
        public void accept(BfcTensors tensors) {
            CONTEXT.set(this);
            tensors.tensorOf(TFloat32.class, Shape.of(4)).close();
        }
    }

    /** A class loader that defines {@link MakesATensor} itself and asks its parent for the rest. */
    private static final class OwnLoader extends ClassLoader {
        OwnLoader(ClassLoader parent) {
            super("application", parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals(MakesATensor.class.getName())) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
                        byte[] b = in.readAllBytes();
                        c = defineClass(name, b, 0, b.length);
                    } catch (IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                return c;
            }
        }
    }

    /**
     * For a child JVM, where no tensor was made yet: the first tensor made on a thread whose
     * context class loader, stack and inheritable thread local are of another class loader; then
     * whether that loader is collected once that code is dropped. One line.
     */
    public static final class FirstTensorFromAnotherLoader {
        private FirstTensorFromAnotherLoader() {
        }

        /**
         * Makes the tensor and waits for the loader to be collected, 20 s at most.
         *
         * @param args none
         * @throws Exception if the tensor cannot be made
         */
        public static void main(String[] args) throws Exception {
            try (BfcAllocator bfc = BfcAllocator.builder().name("pins").memoryLimit(16L << 20)
                    .subAllocator(new AlignedHostSubAllocator()).build()) {
                // TensorFlow's natives and classes are loaded by one of its own tensors first: what
                // they start is theirs, and only bfc4j's first tensor is made by the other loader.
                TFloat32.scalarOf(0f).close();
                WeakReference<ClassLoader> loader = firstTensorOnAThreadOfAnotherLoader(new BfcTensors(bfc));
                boolean started = Thread.getAllStackTraces().keySet().stream()
                        .anyMatch(t -> t.getName().equals("bfc4j-tensor-pins") && t.isDaemon());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (loader.get() != null && System.nanoTime() < deadline) {
                    System.gc();
                    Thread.sleep(20);
                }
                System.out.println("left: pin thread started " + started + ", the application's class loader "
                        + (loader.get() == null ? "collected" : "still reachable"));
            }
        }

        private static WeakReference<ClassLoader> firstTensorOnAThreadOfAnotherLoader(BfcTensors tensors)
                throws Exception {
            ClassLoader own = new OwnLoader(FirstTensorFromAnotherLoader.class.getClassLoader());
            @SuppressWarnings("unchecked")
            Consumer<BfcTensors> maker = (Consumer<BfcTensors>) own.loadClass(MakesATensor.class.getName())
                    .getConstructor().newInstance();
            Thread application = new Thread(() -> maker.accept(tensors), "application");
            application.setContextClassLoader(own);
            application.start();
            application.join();
            return new WeakReference<>(own);
        }
    }

    /**
     * Each daemon thread took what the thread that started it had: its context class loader, its
     * inheritable thread locals, and (JDK 17 to 23) the access control context of the frames on
     * its stack; each of the three, in either thread, kept that code's class loader reachable for
     * the life of the JVM.
     */
    @Test
    void theDaemonThreadsKeepNoClassLoaderOfTheCodeThatMadeTheFirstTensor() throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString()));
        if (Runtime.version().feature() >= 22) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"),
                FirstTensorFromAnotherLoader.class.getName()));
        ChildProcess.Result child = ChildProcess.run(command, Duration.ofSeconds(60));
        String out = child.output();
        System.out.println(out);
        assertThat(child.status()).as("the child's exit status%n%s", out).isZero();
        assertThat(out.lines().filter(l -> l.startsWith("left"))).containsExactly(
                "left: pin thread started true, the application's class loader collected");
    }
}
