package io.github.bfc4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
}
