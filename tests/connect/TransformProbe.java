// Runs records through Kafka Connect's own transform and predicate classes and prints what they
// made of them, so that tests/tests/conformance.rs can compare Wharf's transforms with the real
// thing.
//
// Input, one case per line (JSON): {"transform": {"type": "...", settings...}, "predicate":
// {"type": "...", settings...} or absent, "negate": true|false, "record": {"topic": "...",
// "value": "text" or null, "headers": [["key", "text"], ...]}}. The predicate guards the
// transform as Connect's runtime applies one: the transform runs when test(record) != negate.
// Output, one line per case (JSON): {"config_error": "..."}, or {"dropped": true}, or {"topic":
// "...", "headers": [["key", "<schema type or null>", "<value in Connect's text form>"], ...]}.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Values;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

public class TransformProbe {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode input = mapper.readTree(line);
            ObjectNode result = NODES.objectNode();
            Transformation<SourceRecord> transform;
            Predicate<SourceRecord> predicate = null;
            try {
                transform = configured(input.get("transform"), "org.apache.kafka.connect.transforms.");
                if (input.has("predicate")) {
                    predicate = configured(input.get("predicate"), "org.apache.kafka.connect.transforms.predicates.");
                }
            } catch (Exception e) {
                result.put("config_error", String.valueOf(e.getMessage()));
                System.out.println(mapper.writeValueAsString(result));
                continue;
            }
            JsonNode given = input.get("record");
            ConnectHeaders headers = new ConnectHeaders();
            for (JsonNode h : given.get("headers")) headers.addString(h.get(0).asText(), h.get(1).asText());
            String value = given.get("value").isNull() ? null : given.get("value").asText();
            SourceRecord record = new SourceRecord(null, null, given.get("topic").asText(), null, null, null,
                value == null ? null : Schema.STRING_SCHEMA, value, null, headers);
            boolean negate = input.has("negate") && input.get("negate").asBoolean();
            SourceRecord out = predicate == null || predicate.test(record) != negate ? transform.apply(record) : record;
            if (out == null) {
                result.put("dropped", true);
            } else {
                result.put("topic", out.topic());
                ArrayNode list = result.putArray("headers");
                for (Header h : out.headers()) {
                    ArrayNode entry = list.addArray();
                    entry.add(h.key());
                    if (h.schema() == null) entry.addNull(); else entry.add(h.schema().type().getName());
                    entry.add(Values.convertToString(h.schema(), h.value()));
                }
            }
            System.out.println(mapper.writeValueAsString(result));
        }
    }

    @SuppressWarnings("unchecked")
    private static <T> T configured(JsonNode config, String pkg) throws Exception {
        String type = config.get("type").asText();
        String className = type.contains(".") ? type : pkg + type;
        Object made = Class.forName(className).getDeclaredConstructor().newInstance();
        Map<String, Object> settings = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = config.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getKey().equals("type")) settings.put(e.getKey(), e.getValue().asText());
        }
        if (made instanceof Transformation) ((Transformation<?>) made).configure(settings);
        else ((Predicate<?>) made).configure(settings);
        return (T) made;
    }
}
