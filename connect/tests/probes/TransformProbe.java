// Runs records through Kafka Connect's own transform and predicate classes and prints what they
// made of them, so that connect/tests/conformance.rs can compare Wharf's transforms with the real
// thing.
//
// Input, one case per line (JSON): {"transform": {"type": "...", settings...}, "predicate":
// {"type": "...", settings...} or absent, "negate": true|false, "record": {...}}. The predicate
// guards the transform as Connect's runtime applies one: the transform runs when test(record) !=
// negate. A record is {"topic": "...", "partition": n or null, "timestamp": n or null, "key": K,
// "value": V, "headers": [["key", H], ...]}, with "offset": n for a sink record (a source record
// otherwise). K and V are JsonConverter envelopes ({"schema": ..., "payload": ...}) or null; a
// header's H is a string (a header with a string schema) or an envelope.
// Output, one line per case (JSON): {"config_error": "..."}, {"apply_error": "..."},
// {"write_error": "..."}, {"dropped": true}, or {"topic": "...", "partition": n, "timestamp": n,
// "key": K, "value": V, "headers": [["key", "<schema type or null>", "<value in Connect's text
// form>"], ...]} with K and V as JsonConverter writes them (envelopes) or null.

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
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Values;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

public class TransformProbe {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonConverter KEYS = new JsonConverter();
    private static final JsonConverter VALUES = new JsonConverter();

    public static void main(String[] args) throws Exception {
        KEYS.configure(new HashMap<String, Object>(), true);
        VALUES.configure(new HashMap<String, Object>(), false);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            System.out.println(MAPPER.writeValueAsString(answer(MAPPER.readTree(line))));
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ObjectNode answer(JsonNode input) throws Exception {
        ObjectNode result = NODES.objectNode();
        Transformation transform;
        Predicate predicate = null;
        try {
            transform = configured(input.get("transform"), "org.apache.kafka.connect.transforms.");
            if (input.has("predicate")) {
                predicate = configured(input.get("predicate"), "org.apache.kafka.connect.transforms.predicates.");
            }
        } catch (Exception e) {
            result.put("config_error", String.valueOf(e.getMessage()));
            return result;
        }
        ConnectRecord record = record(input.get("record"));
        boolean negate = input.has("negate") && input.get("negate").asBoolean();
        ConnectRecord out;
        try {
            out = predicate == null || predicate.test(record) != negate ? (ConnectRecord) transform.apply(record) : record;
        } catch (Exception e) {
            result.put("apply_error", e.getClass().getSimpleName() + ": " + e.getMessage());
            return result;
        }
        if (out == null) {
            result.put("dropped", true);
            return result;
        }
        try {
            result.put("topic", out.topic());
            if (out.kafkaPartition() == null) result.putNull("partition"); else result.put("partition", out.kafkaPartition());
            if (out.timestamp() == null) result.putNull("timestamp"); else result.put("timestamp", out.timestamp());
            result.set("key", written(KEYS.fromConnectData(out.topic(), out.keySchema(), out.key())));
            result.set("value", written(VALUES.fromConnectData(out.topic(), out.valueSchema(), out.value())));
            ArrayNode list = result.putArray("headers");
            for (Object o : out.headers()) {
                Header h = (Header) o;
                ArrayNode entry = list.addArray();
                entry.add(h.key());
                if (h.schema() == null) entry.addNull(); else entry.add(h.schema().type().getName());
                entry.add(Values.convertToString(h.schema(), h.value()));
            }
        } catch (Exception e) {
            ObjectNode failed = NODES.objectNode();
            failed.put("write_error", e.getClass().getSimpleName() + ": " + e.getMessage());
            return failed;
        }
        return result;
    }

    private static JsonNode written(byte[] bytes) throws Exception {
        return bytes == null ? NODES.nullNode() : MAPPER.readTree(bytes);
    }

    private static SchemaAndValue read(JsonConverter converter, JsonNode envelope) throws Exception {
        if (envelope == null || envelope.isNull()) return SchemaAndValue.NULL;
        return converter.toConnectData("probe", MAPPER.writeValueAsBytes(envelope));
    }

    private static ConnectRecord<?> record(JsonNode given) throws Exception {
        ConnectHeaders headers = new ConnectHeaders();
        for (JsonNode h : given.get("headers")) {
            if (h.get(1).isTextual()) {
                headers.addString(h.get(0).asText(), h.get(1).asText());
            } else {
                SchemaAndValue header = read(VALUES, h.get(1));
                headers.add(h.get(0).asText(), header.value(), header.schema());
            }
        }
        SchemaAndValue key = read(KEYS, given.get("key"));
        SchemaAndValue value = read(VALUES, given.get("value"));
        String topic = given.get("topic").asText();
        JsonNode partition = given.get("partition");
        JsonNode timestamp = given.get("timestamp");
        Long time = timestamp == null || timestamp.isNull() ? null : timestamp.asLong();
        if (given.has("offset")) {
            return new SinkRecord(topic, partition.asInt(), key.schema(), key.value(), value.schema(), value.value(),
                given.get("offset").asLong(), time, time == null ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME,
                headers);
        }
        Integer kafkaPartition = partition == null || partition.isNull() ? null : partition.asInt();
        return new SourceRecord(null, null, topic, kafkaPartition, key.schema(), key.value(), value.schema(), value.value(),
            time, headers);
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
