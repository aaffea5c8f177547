package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LocalHttpServerTest {

    /**
     * A page whose body fails with an Error (an OutOfMemoryError building a huge memory map) is
     * answered 500, saying what failed, as a RuntimeException is: the client got no answer at
     * all, and the worker thread died.
     */
    @Test
    void aPageThatFailsWithAnErrorIsAnswered500() throws Exception {
        Map<String, LocalHttpServer.Route> routes = Map.of(
                "/big", new LocalHttpServer.Route("text/plain", () -> {
                    throw new OutOfMemoryError("Java heap space");
                }),
                "/ok", new LocalHttpServer.Route("text/plain", () -> "fine\n"));
        try (LocalHttpServer server = new LocalHttpServer(0, routes, 5_000)) {
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            for (int i = 0; i < 2 * LocalHttpServer.WORKERS; i++) {
                HttpResponse<String> big = client.send(request(server, "/big"), HttpResponse.BodyHandlers.ofString());
                assertThat(big.statusCode()).as("request %d", i).isEqualTo(500);
                assertThat(big.body()).contains("OutOfMemoryError: Java heap space");
            }
            HttpResponse<String> ok = client.send(request(server, "/ok"), HttpResponse.BodyHandlers.ofString());
            assertThat(ok.statusCode()).isEqualTo(200);
            assertThat(ok.body()).isEqualTo("fine\n");
        }
    }

    private static HttpRequest request(LocalHttpServer server, String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .timeout(Duration.ofSeconds(10)).build();
    }

    /**
     * A request target in absolute form, as a client sends it to a proxy ('GET
     * http://127.0.0.1:9464/metrics HTTP/1.1'), which RFC 9112 has a server accept, names its
     * path: it was answered 404, 'no such path', for a path that is served.
     */
    @Test
    void aTargetInAbsoluteFormIsServedAsItsPath() throws Exception {
        Map<String, LocalHttpServer.Route> routes =
                Map.of("/ok", new LocalHttpServer.Route("text/plain", () -> "fine\n"));
        try (LocalHttpServer server = new LocalHttpServer(0, routes, 5_000)) {
            String authority = "127.0.0.1:" + server.port();
            for (String target : new String[] {"http://" + authority + "/ok", "HTTP://" + authority + "/ok?x=1",
                "https://" + authority + "/ok"}) {
                assertThat(rawGet(server, target)).as(target).startsWith("HTTP/1.1 200 OK\r\n")
                        .endsWith("\r\n\r\nfine\n");
            }
            for (String target : new String[] {"http://" + authority, "http://" + authority + "?x=1",
                "http://" + authority + "/other", "ftp://" + authority + "/ok"}) {
                assertThat(rawGet(server, target)).as(target).startsWith("HTTP/1.1 404 Not Found\r\n");
            }
        }
    }

    /** The response to {@code GET target HTTP/1.1}, sent on a socket of its own. */
    private static String rawGet(LocalHttpServer server, String target) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        }
    }

    /** The response to {@code request}, sent as it is on a socket of its own. */
    private static String raw(LocalHttpServer server, String request) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }

    private static final Map<String, LocalHttpServer.Route> OK =
            Map.of("/ok", new LocalHttpServer.Route("text/plain", () -> "fine\n"));

    /**
     * Empty lines before the request line are ignored, as RFC 9112 (section 2.2) asks of a
     * server: '\r\nGET /ok HTTP/1.1' was answered 400. They count towards the head's 8 KiB.
     */
    @Test
    void emptyLinesBeforeTheRequestLineAreIgnored() throws Exception {
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 10_000)) {
            for (String before : new String[] {"\r\n", "\n", "\r\n\r\n\r\n"}) {
                assertThat(raw(server, before + "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
                        .as("%s", before.replace("\r", "\\r").replace("\n", "\\n"))
                        .startsWith("HTTP/1.1 200 OK\r\n").endsWith("\r\n\r\nfine\n");
            }
            assertThat(raw(server, "\r\n".repeat(LocalHttpServer.MAX_HEAD_BYTES / 2 + 1) + "GET /ok HTTP/1.1\r\n\r\n"))
                    .startsWith("HTTP/1.1 431 ");
        }
    }

    /**
     * A bare CR (one that no LF follows) is no empty line, nor the end of one (RFC 9112, section
     * 2.2: it makes its element invalid): before the request line it was skipped as an empty line
     * ('\rGET /ok HTTP/1.1' and '\r\r\nGET /ok HTTP/1.1' were answered 200), and '\r\r\n' after
     * the request line ended the head. Each gets 400, wherever the bare CR is.
     */
    @Test
    void aBareCrIsNoLineEndAndGets400() throws Exception {
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 10_000)) {
            for (String request : new String[] {"\rGET /ok HTTP/1.1\r\n\r\n", "\r\r\nGET /ok HTTP/1.1\r\n\r\n",
                "\r\n\rGET /ok HTTP/1.1\r\n\r\n", "\n\rGET /ok HTTP/1.1\r\n\r\n", "GET /ok HTTP/1.1\r\n\r\r\n",
                "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\r\n\r\n", "GET /ok HTTP/1.1\r\nX: a\rb\r\n\r\n"}) {
                assertThat(raw(server, request)).as("%s", request.replace("\r", "\\r").replace("\n", "\\n"))
                        .startsWith("HTTP/1.1 400 Bad Request\r\n")
                        .endsWith("\r\n\r\na CR not followed by LF in the request head (expected: lines that end"
                                + " with CRLF, such as 'GET /metrics HTTP/1.1\\r\\n')\n");
            }
        }
    }

    /**
     * Only whitespace around the request line is ignored (RFC 9112, section 3: SP, HTAB, VT,
     * FF): a NUL or another control character before or after it got 200, since the line was
     * trimmed of every character up to a space.
     */
    @Test
    void controlCharactersAroundTheRequestLineGet400() throws Exception {
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 10_000)) {
            for (String request : new String[] {"\u0001GET /ok HTTP/1.1\r\n\r\n", "\u0000GET /ok HTTP/1.1\r\n\r\n",
                "GET /ok HTTP/1.1\u0000\r\n\r\n", "GET /ok HTTP/1.1\u001f\r\n\r\n"}) {
                assertThat(raw(server, request)).as("%s", request.replace("\u0000", "\\0"))
                        .startsWith("HTTP/1.1 400 Bad Request\r\n")
                        .endsWith("\r\n\r\nexpected a request line like 'GET /metrics HTTP/1.1'\n");
            }
            for (String request : new String[] {" GET /ok HTTP/1.1\r\n\r\n", "\tGET /ok HTTP/1.1 \u000b\f\r\n\r\n"}) {
                assertThat(raw(server, request)).as("whitespace around the line: %s", request)
                        .startsWith("HTTP/1.1 200 OK\r\n");
            }
        }
    }

    /**
     * A HEAD request's answer has headers only, whatever its status: its 400, 408 and 431
     * answers carried their bodies, which a client reads as the start of its next response.
     */
    @Test
    void headAnswersHaveNoBodyWhateverTheirStatus() throws Exception {
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 10_000)) {
            String[][] cases = {
                {"HEAD /ok HTTP/1.1\r\n\r\n", "200 OK"},
                {"HEAD /nothing HTTP/1.1\r\n\r\n", "404 Not Found"},
                {"HEAD /ok HTTP/2.0\r\n\r\n", "400 Bad Request"},
                {"HEAD /ok\r\n\r\n", "400 Bad Request"},
                {"HEAD /ok HTTP/1.1\r\nX: a\rb\r\n\r\n", "400 Bad Request"},
                {"HEAD /%zz HTTP/1.1\r\n\r\n", "400 Bad Request"},
                {"HEAD /ok HTTP/1.1\r\nX: " + "x".repeat(LocalHttpServer.MAX_HEAD_BYTES) + "\r\n\r\n",
                    "431 Request Header Fields Too Large"}};
            for (String[] c : cases) {
                assertHeadersOnly(raw(server, c[0]), c[1]);
            }
            // GET has the body HEAD leaves out.
            assertThat(raw(server, "GET /ok HTTP/2.0\r\n\r\n")).startsWith("HTTP/1.1 400 ")
                    .endsWith("expected a request line like 'GET /metrics HTTP/1.1'\n");
        }
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 200)) {
            // A HEAD request whose head never ends: 408 when its time is up.
            assertHeadersOnly(raw(server, "HEAD /ok HTTP/1.1\r\n"), "408 Request Timeout");
        }
    }

    private static void assertHeadersOnly(String response, String status) {
        assertThat(response).as(response).startsWith("HTTP/1.1 " + status + "\r\n").contains("\r\nContent-Length: ")
                .endsWith("\r\n\r\n");
        assertThat(response.indexOf("\r\n\r\n")).as(response).isEqualTo(response.length() - 4);
    }

    /**
     * A path's percent-escapes are decoded before it is looked up ('/%6Fk' is '/ok': it was
     * answered 404); a malformed escape, an encoded '/' or NUL gets 400, saying what is wrong.
     */
    @Test
    void percentEscapesInThePathAreDecoded() throws Exception {
        try (LocalHttpServer server = new LocalHttpServer(0, OK, 10_000)) {
            String authority = "http://127.0.0.1:" + server.port();
            for (String target : new String[] {"/%6Fk", "/%6f%6B", "/o%6b?x=%zz", authority + "/%6Fk"}) {
                assertThat(rawGet(server, target)).as(target).startsWith("HTTP/1.1 200 OK\r\n")
                        .endsWith("\r\n\r\nfine\n");
            }
            // Decoded, but no such path: a '?' escaped is part of the path, not a query.
            for (String target : new String[] {"/ok%3Fx", "/%C3%A9", "/ok%20"}) {
                assertThat(rawGet(server, target)).as(target).startsWith("HTTP/1.1 404 Not Found\r\n");
            }
            String[][] bad = {
                {"/%zz", "malformed percent-escape in the path at '%zz' (expected: % and two hexadecimal digits,"
                    + " such as %20)"},
                {"/ok%", "malformed percent-escape in the path at '%' (expected: % and two hexadecimal digits,"
                    + " such as %20)"},
                {"/ok%6", "malformed percent-escape in the path at '%6' (expected: % and two hexadecimal digits,"
                    + " such as %20)"},
                {"/%2Fok", "the path holds %2F, an encoded '/' (expected: a path such as /metrics)"},
                {"/%2fok", "the path holds %2f, an encoded '/' (expected: a path such as /metrics)"},
                {"/ok%00", "the path holds %00, an encoded NUL (expected: a path such as /metrics)"}};
            for (String[] b : bad) {
                assertThat(rawGet(server, b[0])).as(b[0]).startsWith("HTTP/1.1 400 Bad Request\r\n")
                        .endsWith("\r\n\r\n" + b[1] + "\n");
            }
        }
    }

    /**
     * With every worker busy and the queue full, a connection gets its 503 and an orderly close:
     * the 503 was written without the request being read, and closing the socket with the
     * request unread reset the connection (the client's next write failed with 'Broken pipe',
     * and a client that had not read the 503 yet could lose it).
     */
    @Test
    void aConnectionBeyondTheQueueGets503() throws Exception {
        CountDownLatch entered = new CountDownLatch(LocalHttpServer.WORKERS);
        CountDownLatch release = new CountDownLatch(1);
        LocalHttpServer.Route blocking = new LocalHttpServer.Route("text/plain", () -> {
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "done\n";
        });
        // A path per worker: requests for one path at once share one build.
        Map<String, LocalHttpServer.Route> routes = new java.util.HashMap<>();
        for (int w = 0; w < LocalHttpServer.WORKERS; w++) {
            routes.put("/block" + w, blocking);
        }
        List<Socket> held = new ArrayList<>();
        try (LocalHttpServer server = new LocalHttpServer(0, routes, 30_000)) {
            try {
                // Accepted in this order: the workers' requests first, then the queue's.
                for (int i = 0; i < LocalHttpServer.WORKERS + LocalHttpServer.QUEUE; i++) {
                    Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
                    s.setSoTimeout(30_000);
                    s.getOutputStream().write(("GET /block" + i % LocalHttpServer.WORKERS + " HTTP/1.1\r\nHost:"
                            + " 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    held.add(s);
                }
                assertThat(entered.await(30, TimeUnit.SECONDS)).as("every worker busy").isTrue();
                // All sent before any is read: most requests are there before the server answers
                // (one sent and read at a time, the server answered before the request came).
                List<Socket> refused = new ArrayList<>();
                try {
                    for (int i = 0; i < 20; i++) {
                        Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
                        refused.add(s);
                        s.setSoTimeout(30_000);
                        s.getOutputStream().write("GET /block0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                .getBytes(StandardCharsets.US_ASCII));
                    }
                    for (int i = 0; i < refused.size(); i++) {
                        Socket s = refused.get(i);
                        assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII))
                                .as("refused %d", i).startsWith("HTTP/1.1 503 Service Unavailable\r\n")
                                .endsWith("busy: 4 requests served and 32 waiting\n");
                        // Not reset: a reset connection fails the client's next write ('Broken
                        // pipe'), and where the reset comes before the answer is read (other
                        // kernels), the client loses the answer.
                        assertThatCode(() -> s.getOutputStream().write('\n')).as("refused %d: reset", i)
                                .doesNotThrowAnyException();
                        s.close();
                    }
                } finally {
                    for (Socket s : refused) {
                        s.close();
                    }
                }
                assertHeadersOnly(raw(server, "HEAD /block0 HTTP/1.1\r\n\r\n"), "503 Service Unavailable");
                release.countDown();
                for (Socket s : held) {
                    assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII))
                            .startsWith("HTTP/1.1 200 OK\r\n").endsWith("done\n");
                }
            } finally {
                release.countDown();
                for (Socket s : held) {
                    s.close();
                }
            }
        }
    }

    /**
     * Requests for a path that arrive while its page is being built share the next build, begun
     * after they arrived: each worker built its own, so four scrapes of /memory-map of an
     * allocator of a million chunks held four pages at once (135 MB of JSON each, and more than
     * twice that in heap while it is built).
     */
    @Test
    void requestsThatArriveDuringABuildShareTheNext() throws Exception {
        AtomicInteger builds = new AtomicInteger();
        CountDownLatch firstBuilding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Map<String, LocalHttpServer.Route> routes = Map.of("/page", new LocalHttpServer.Route("text/plain", () -> {
            int n = builds.incrementAndGet();
            if (n == 1) {
                firstBuilding.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return "build " + n + "\n";
        }));
        ExecutorService clients = Executors.newFixedThreadPool(LocalHttpServer.WORKERS);
        try (LocalHttpServer server = new LocalHttpServer(0, routes, 30_000)) {
            String get = "GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
            Future<String> first = clients.submit(() -> raw(server, get));
            assertThat(firstBuilding.await(30, TimeUnit.SECONDS)).as("the first build begun").isTrue();
            List<Future<String>> later = new ArrayList<>();
            for (int i = 1; i < LocalHttpServer.WORKERS; i++) {
                later.add(clients.submit(() -> raw(server, get)));
            }
            // The later requests wait for the next build (or, each building its own, are answered).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (workersWaitingIn("io.github.bfc4j.cli.SharedBuild") < later.size()
                    && !later.stream().allMatch(Future::isDone)) {
                assertThat(System.nanoTime() - deadline).as("the later requests neither wait nor are answered")
                        .isNegative();
                Thread.sleep(5);
            }
            release.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS)).startsWith("HTTP/1.1 200 OK\r\n").endsWith("\r\n\r\nbuild 1\n");
            for (Future<String> f : later) {
                assertThat(f.get(30, TimeUnit.SECONDS)).startsWith("HTTP/1.1 200 OK\r\n").endsWith("\r\n\r\nbuild 2\n");
            }
            assertThat(builds.get()).isEqualTo(2);
        } finally {
            release.countDown();
            clients.shutdownNow();
        }
    }

    /** The server's worker threads waiting with a frame of {@code owner} on their stack. */
    private static int workersWaitingIn(String owner) {
        int n = 0;
        for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
            Thread.State state = t.getKey().getState();
            if (t.getKey().getName().startsWith("bfc-serve-http-")
                    && (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING)
                    && java.util.Arrays.stream(t.getValue()).anyMatch(e -> e.getClassName().equals(owner))) {
                n++;
            }
        }
        return n;
    }
}
