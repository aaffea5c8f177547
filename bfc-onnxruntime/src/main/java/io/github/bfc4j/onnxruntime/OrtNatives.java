package io.github.bfc4j.onnxruntime;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.Loader;

/**
 * Whether ONNX Runtime's JNI library (the presets' natives, and those of the presets they inherit:
 * OpenCL, oneDNN) loads here and, if not, one sentence saying what JavaCPP could not find and
 * which jar to add: the one place that says it, for
 * {@link BfcOrtAllocator#register} and {@link BfcCudaProvider}.
 *
 * <p>A failed load cannot be tried again: JavaCPP loads the library in the static initializer of
 * the presets' classes, so the first touch throws {@code UnsatisfiedLinkError} and every later
 * one {@code NoClassDefFoundError: Could not initialize class ...}. The first failure's sentence
 * is kept and given on every later call.
 */
final class OrtNatives {

    /** Why the library could not be loaded, once that failed; null before. Class lock. */
    private static String loadFailure;
    /** Whether the library was loaded. Class lock. */
    private static boolean loaded;

    private OrtNatives() {
    }

    /**
     * Loads ORT's JNI library if not yet done.
     *
     * @return null if it is loaded, else why not: one sentence, the same on every call
     */
    static synchronized String loadFailure() {
        if (loaded) {
            return null;
        }
        if (loadFailure == null) {
            try {
                Loader.load(org.bytedeco.onnxruntime.global.onnxruntime.class);
                loaded = true;
                return null;
            } catch (LinkageError e) {
                // UnsatisfiedLinkError: the natives jar for this platform, or a library it needs,
                // is missing. NoClassDefFoundError: the presets' classes failed to initialize
                // before (something else touched them first).
                loadFailure = sentence(e);
            }
        }
        return loadFailure;
    }

    /**
     * Throws {@link #loadFailure()}'s sentence, if any.
     *
     * @throws IllegalStateException if ORT's JNI library cannot be loaded
     */
    static void check() {
        String failure = loadFailure();
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
    }

    /**
     * The JNI library JavaCPP names as not found ({@code Could not find jniOpenCL in ...},
     * {@code no jnidnnl in java.library.path}): group 1 is the presets' name, whose lower case is
     * their artifact's ({@code OpenCL} is {@code org.bytedeco:opencl}).
     */
    private static final Pattern MISSING_JNI = Pattern.compile("^(?:Could not find |no )jni(\\w+) in ");

    /** The sentence for a failure to load ORT's JNI library. */
    static String sentence(LinkageError e) {
        String failure = linkFailure(e);
        Matcher m = MISSING_JNI.matcher(failure);
        String presets = m.find() ? m.group(1).toLowerCase(Locale.ROOT) : "onnxruntime";
        if (!presets.equals("onnxruntime")) {
            // ORT's presets inherit others (OpenCL, oneDNN) and load their JNI libraries first.
            return "ONNX Runtime's JNI library could not be loaded (" + failure + "): add org.bytedeco:" + presets
                    + " with this platform's classifier (ONNX Runtime's presets load its natives too), see"
                    + " docs/integrations.md.";
        }
        return "ONNX Runtime's JNI library could not be loaded (" + failure + "): add org.bytedeco:onnxruntime"
                + " with this platform's classifier (linux-x86_64-gpu for the "
                + BfcCudaProvider.CUDA_EXECUTION_PROVIDER + ", with -Dorg.bytedeco.javacpp.platform.extension=-gpu),"
                + " see docs/integrations.md.";
    }

    /**
     * What JavaCPP could not find: the deepest cause's message, without the library file's path
     * that a dynamic linker's message starts with, without a final period. A static initializer's
     * failure seen again ({@code ExceptionInInitializerError: Exception java.lang.UnsatisfiedLinkError:
     * ... [in thread "main"]}) is reduced to the first failure's message.
     */
    static String linkFailure(Throwable e) {
        Throwable deepest = e;
        while (deepest.getCause() != null && deepest.getCause() != deepest) {
            deepest = deepest.getCause();
        }
        String m = deepest.getMessage() == null ? deepest.getClass().getSimpleName() : deepest.getMessage();
        if (deepest instanceof ExceptionInInitializerError && m.startsWith("Exception ")) {
            int colon = m.indexOf(": ");
            int thread = m.lastIndexOf(" [in thread ");
            if (colon >= 0 && thread > colon) {
                m = m.substring(colon + ": ".length(), thread);
            }
        }
        int so = m.indexOf(".so: ");
        m = so >= 0 ? m.substring(so + ".so: ".length()) : m;
        if (m.endsWith(".")) {
            m = m.substring(0, m.length() - 1);
        }
        return m;
    }
}
