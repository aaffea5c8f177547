package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
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
}
