// A metalog HTTP client in plain Java (java.net.http, no dependencies).
//
//   java Client.java http://127.0.0.1:8080 [catalog]
//
// Creates a table, races two writes conditioned on the same resource_version
// (If-Match: one commits, one is a 409 problem), then watches from before the
// table was created and checks it sees both changes in order. Exits 0 when all
// of that holds, 1 otherwise. It parses the few fields it needs by hand.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Client {
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\":\\s*(-?\\d+)").matcher(json);
        if (!m.find()) throw new IllegalStateException("no " + field + " in " + json);
        return Long.parseLong(m.group(1));
    }

    static HttpRequest post(String url, String body, String ifMatch) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(30))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
        if (ifMatch != null) b.header("If-Match", "\"" + ifMatch + "\"");
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String base = args[0] + "/v1/catalogs/" + (args.length > 1 ? args[1] : "greptime");
        String state = HTTP.send(HttpRequest.newBuilder(URI.create(base)).build(),
            HttpResponse.BodyHandlers.ofString()).body();
        long before = number(state, "resource_version");

        String create = "{\"schema_name\":\"public\",\"table_name\":\"java_orders\","
            + "\"columns\":[{\"name\":\"id\",\"data_type\":\"Int64\"}]}";
        HttpResponse<String> made = HTTP.send(post(base + "/commands/CreateTable", create, null),
            HttpResponse.BodyHandlers.ofString());
        if (made.statusCode() != 200) fail("create: " + made.statusCode() + " " + made.body());
        long created = number(made.body(), "resource_version");

        String alter = "{\"schema_name\":\"public\",\"table_name\":\"java_orders\","
            + "\"set_options\":{\"ttl\":\"7d\"}}";
        CompletableFuture<HttpResponse<String>> a = HTTP.sendAsync(
            post(base + "/commands/AlterTable", alter, Long.toString(created)),
            HttpResponse.BodyHandlers.ofString());
        CompletableFuture<HttpResponse<String>> b = HTTP.sendAsync(
            post(base + "/commands/AlterTable", alter, Long.toString(created)),
            HttpResponse.BodyHandlers.ofString());
        List<HttpResponse<String>> race = List.of(a.get(), b.get());
        long won = race.stream().filter(r -> r.statusCode() == 200).count();
        long lost = race.stream().filter(r -> r.statusCode() == 409).count();
        if (won != 1 || lost != 1) fail("race: " + race.get(0).statusCode() + " " + race.get(1).statusCode());
        HttpResponse<String> loser = race.stream().filter(r -> r.statusCode() == 409).findFirst().get();
        if (!loser.body().contains("\"error\":\"VersionConflict\"")
                || !loser.headers().firstValue("content-type").orElse("").equals("application/problem+json")) {
            fail("409 body: " + loser.body());
        }
        long altered = number(race.stream().filter(r -> r.statusCode() == 200).findFirst().get().body(),
            "resource_version");
        System.out.println("race: one write at " + altered + ", one 409 at current "
            + number(loser.body(), "current_resource_version"));

        HttpRequest watch = HttpRequest.newBuilder(URI.create(
                base + "/watch?resourceVersion=" + before + "&keyPrefix=__table_info/"))
            .timeout(Duration.ofSeconds(60)).build();
        HttpResponse<java.io.InputStream> stream = HTTP.send(watch, HttpResponse.BodyHandlers.ofInputStream());
        List<String> seen = new ArrayList<>();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream.body()))) {
            String line;
            while (seen.size() < 2 && (line = lines.readLine()) != null) {
                if (line.contains("\"type\":\"BOOKMARK\"")) continue;
                Matcher t = Pattern.compile("\"type\":\"([A-Z]+)\"").matcher(line);
                t.find();
                seen.add(t.group(1) + "@" + number(line, "resourceVersion"));
            }
        }
        List<String> expected = List.of("ADDED@" + created, "MODIFIED@" + altered);
        if (!seen.equals(expected)) fail("watch saw " + seen + ", expected " + expected);
        System.out.println("watch: " + seen);
        System.exit(0);
    }

    static void fail(String why) {
        System.err.println("FAIL " + why);
        System.exit(1);
    }
}
