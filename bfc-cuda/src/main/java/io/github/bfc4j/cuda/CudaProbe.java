/*
 * Copyright 2026 The bfc4j Authors.
 * Licensed under the Apache License, Version 2.0.
 */
package io.github.bfc4j.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * Finds out, once per JVM, whether CUDA can be used here: are JavaCPP's CUDA presets on the class
 * path, does their JNI library load (it needs {@code libcuda.so.1} from the NVIDIA driver and
 * {@code libcudart.so.12}), does {@code cuInit} succeed, how many devices are visible. Each
 * failure becomes one sentence that says what is missing and what to do.
 */
public final class CudaProbe {

    private static final String PRESETS_CLASS = "org.bytedeco.cuda.global.cudart";
    /**
     * Read through the class loader: on the module path a class's own getResource looks only in
     * its module, while META-INF is no package and so readable in every module.
     */
    private static final String PRESETS_POM_PROPERTIES = "META-INF/maven/org.bytedeco/cuda/pom.properties";

    /** JavaCPP's outer error when it did not load the presets' JNI library, without the path. */
    private static final String JNI_NOT_LOADED = "no jnicudart in java.library.path";

    private static final Object LOCK = new Object();
    /** Guarded by LOCK. */
    private static Result cached;

    private CudaProbe() {
    }

    /**
     * The probe's findings, computed on the first call and cached.
     *
     * @return what was found; never throws
     */
    public static CudaAvailability availability() {
        return cachedResult().availability;
    }

    /**
     * The real driver, for the sub-allocators' public constructors.
     *
     * @return the driver over JavaCPP's presets
     * @throws CudaUnavailableException with the probe's sentence if CUDA is not usable here
     */
    static CudaDriver driver() {
        Result r = cachedResult();
        if (r.driver == null) {
            throw new CudaUnavailableException(r.availability.unavailableReason());
        }
        return r.driver;
    }

    private static Result cachedResult() {
        synchronized (LOCK) {
            if (cached == null) {
                String presets = presetsVersion();
                cached = probe(presets, () -> JavaCppCudaDriver.load(presets));
            }
            return cached;
        }
    }

    /**
     * The presets' version from their jar's Maven metadata, or null if they are absent. A presets
     * class that is there but cannot be linked (JavaCPP missing) still counts as present: loading
     * the driver then names what is missing.
     */
    static String presetsVersion() {
        try {
            Class.forName(PRESETS_CLASS, false, CudaProbe.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            return null;
        } catch (LinkageError e) {
            // Present, but a class it needs is not: fall through to the version.
        }
        try (InputStream in = CudaProbe.class.getClassLoader().getResourceAsStream(PRESETS_POM_PROPERTIES)) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null) {
                    return v;
                }
            }
        } catch (IOException e) {
            // Fall through: the version is only informative.
        }
        return "unknown version";
    }

    /** A probe's outcome: what to report, and the driver when it is usable. */
    record Result(CudaAvailability availability, CudaDriver driver) {
    }

    /**
     * Runs the probe with the given way of loading a driver. Package-private so that the
     * sentences can be tested without a GPU.
     *
     * @param presetsVersion the presets' version, or null if they are not on the class path
     * @param loader loads the JNI library and calls {@code cuInit}
     * @return the findings
     */
    static Result probe(String presetsVersion, Supplier<CudaDriver> loader) {
        if (presetsVersion == null) {
            return unavailable(null, 0, "No usable CUDA GPU: JavaCPP's CUDA presets"
                    + " (org.bytedeco:cuda) are not on the class path; add them as docs/cuda.md says.");
        }
        CudaDriver driver;
        try {
            driver = loader.get();
        } catch (CudaException e) {
            if (e.code() == CudaException.CUDA_ERROR_NO_DEVICE) {
                return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA driver sees"
                        + " no device (" + e.getMessage() + "); check nvidia-smi and"
                        + " CUDA_VISIBLE_DEVICES.");
            }
            return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA driver could"
                    + " not be initialised (" + e.getMessage() + "); check that the NVIDIA"
                    + " driver is installed and supports CUDA 12.");
        } catch (LinkageError e) {
            // UnsatisfiedLinkError (a library is missing), NoClassDefFoundError (JavaCPP is
            // missing, or a second try after a failed static initialiser),
            // ExceptionInInitializerError.
            String failure = linkFailure(e);
            if (failure.contains("org/bytedeco/javacpp/") || failure.contains("org.bytedeco.javacpp.")) {
                return unavailable(presetsVersion, 0, "No usable CUDA GPU: JavaCPP (org.bytedeco:javacpp),"
                        + " which the CUDA presets need, is not on the class path (" + failure + "); add it as"
                        + " docs/cuda.md says.");
            }
            String platform = javacppPlatform();
            String jni = "org/bytedeco/cuda/" + platform + "/" + System.mapLibraryName("jnicudart");
            boolean jniOnClassPath = CudaProbe.class.getClassLoader().getResource(jni) != null;
            if (failure.endsWith(" in class, module, and library paths")
                    || failure.equals(JNI_NOT_LOADED) && !jniOnClassPath) {
                // JavaCPP found no JNI library for this platform: the natives jar (classifier =
                // platform) is missing, or JavaCPP was told not to extract it; the driver's
                // libraries were never tried. (JNI_NOT_LOADED: the application touched the
                // presets first, and the error left of that says only that the library was not
                // loaded; where the jar is missing, that is why.)
                if (jniOnClassPath) {
                    return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA presets' JNI library"
                            + " for " + platform + " is on the class path but JavaCPP did not load it (" + failure
                            + "); check JavaCPP's system properties (org.bytedeco.javacpp.cacheLibraries,"
                            + " org.bytedeco.javacpp.cachedir), see docs/cuda.md.");
                }
                if (CudaProbe.class.getModule().isNamed()) {
                    // On the module path the natives are platform modules that nothing requires.
                    String suffix = platform.replace('-', '.');
                    return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA presets' JNI library"
                            + " for " + platform + " is in no module of the module graph (" + failure + "); add"
                            + " --add-modules org.bytedeco.cuda." + suffix + ",org.bytedeco.javacpp." + suffix
                            + " (jars org.bytedeco:cuda:" + presetsVersion + " and org.bytedeco:javacpp with"
                            + " classifier " + platform + "), see docs/cuda.md.");
                }
                return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA presets' JNI library"
                        + " for " + platform + " is not on the class path (" + failure + "); add"
                        + " org.bytedeco:cuda:" + presetsVersion + " and org.bytedeco:javacpp with classifier "
                        + platform + ", see docs/cuda.md.");
            }
            return unavailable(presetsVersion, 0, "No usable CUDA GPU: the CUDA JNI library"
                    + " could not be loaded (" + failure + "); it needs the NVIDIA driver's"
                    + " libcuda.so.1 and the CUDA 12 runtime libcudart.so.12 (or"
                    + " org.bytedeco:cuda-redist), see docs/cuda.md.");
        } catch (RuntimeException e) {
            return unavailable(presetsVersion, 0, "No usable CUDA GPU: loading the CUDA driver"
                    + " failed (" + linkFailure(e) + ").");
        }
        int count;
        List<CudaDeviceInfo> devices = new ArrayList<>();
        try {
            count = driver.deviceCount();
            for (int i = 0; i < count; i++) {
                devices.add(driver.deviceInfo(i));
            }
        } catch (CudaException e) {
            return unavailable(presetsVersion, driver.driverVersion(), "No usable CUDA GPU:"
                    + " querying the devices failed (" + e.getMessage() + ").");
        }
        if (count == 0) {
            return unavailable(presetsVersion, driver.driverVersion(), "No usable CUDA GPU: the"
                    + " CUDA driver (" + versionString(driver.driverVersion()) + ") reports no"
                    + " device; check nvidia-smi and CUDA_VISIBLE_DEVICES.");
        }
        return new Result(new CudaAvailability(presetsVersion, driver.driverVersion(), devices, null), driver);
    }

    private static Result unavailable(String presets, int driverVersion, String sentence) {
        return new Result(new CudaAvailability(presets, driverVersion, List.of(), sentence), null);
    }

    /** JavaCPP's name of this platform (e.g. {@code linux-arm64}), its natives' classifier. */
    private static String javacppPlatform() {
        try {
            return JavaCppCudaDriver.platform();
        } catch (LinkageError | RuntimeException e) {
            return "this platform";
        }
    }

    /**
     * The most telling line of a load failure: JavaCPP's outer error says only "no jnicudart in
     * java.library.path"; its cause names the library that is missing
     * ({@code .../libjnicudart.so: libcuda.so.1: cannot open shared object file...}).
     */
    static String linkFailure(Throwable e) {
        Throwable deepest = e;
        while (deepest.getCause() != null && deepest.getCause() != deepest) {
            deepest = deepest.getCause();
        }
        String m = firstLine(deepest);
        if (deepest instanceof ExceptionInInitializerError && m.startsWith("Exception ")
                && m.contains(" " + JNI_NOT_LOADED + ": ")) {
            // A class whose initialiser failed before (the application touched the presets
            // first) keeps only that error's text: "Exception java.lang.UnsatisfiedLinkError:
            // no jnicudart in java.library.path: <the path> [in thread ...]", not its cause.
            return JNI_NOT_LOADED;
        }
        int so = m.indexOf(".so: ");
        return so >= 0 ? m.substring(so + ".so: ".length()) : m;
    }

    private static String firstLine(Throwable e) {
        String m = e.getMessage();
        if (m == null) {
            m = e.getClass().getSimpleName();
        }
        int nl = m.indexOf('\n');
        m = (nl >= 0 ? m.substring(0, nl) : m).strip();
        if (m.endsWith(".")) {
            m = m.substring(0, m.length() - 1);
        }
        return m.length() > 300 ? m.substring(0, 300) + "..." : m;
    }

    /**
     * A CUDA version number as text.
     *
     * @param version e.g. 12040
     * @return e.g. {@code CUDA 12.4}
     */
    static String versionString(int version) {
        return "CUDA " + version / 1000 + "." + (version % 1000) / 10;
    }
}
