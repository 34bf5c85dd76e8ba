// Runs cases through Kafka Connect's own converter classes and prints what they made of them, so
// that connect/tests/conformance.rs can compare Wharf's converters with the real thing.
//
// Input, one case per line (JSON): {"class": "...", "read": {settings}, "write": {settings},
// "bytes": "<input as text>"} or, for input that is not text, "base64": "<input>"; with
// "write_class", the data read is written back with that class instead. A header converter
// (one that is not a Converter, as SimpleHeaderConverter) reads and writes a header's value.
// Output, one line per case (JSON): {"read": <data>} or {"read_error": "<message>"}, and then
// "written": "<bytes as text>" (or "written_base64") or "write_error": "<message>", the data read
// being written back with the "write" settings.
//
// <data> is {"schema": <schema>, "value": <value>}, in a neutral form both sides build:
// a schema is {"type", "optional", "name", "version", "doc", "parameters", "default", "fields":
// [{"name", "schema"}], "keys", "values"} (absent parts left out); a value is null or
// {"<type>": ...}: numbers as text (floats as the hex of their bits), bytes as base64, an array's
// and a struct's values in order, a map's entries as [key, value] pairs sorted by their text.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Date;
import org.apache.kafka.connect.data.Decimal;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Time;
import org.apache.kafka.connect.data.Timestamp;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;

public class ConverterProbe {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode input = mapper.readTree(line);
            ObjectNode result = NODES.objectNode();
            byte[] bytes = input.has("base64")
                ? Base64.getDecoder().decode(input.get("base64").asText())
                : input.has("bytes") ? input.get("bytes").asText().getBytes(StandardCharsets.UTF_8) : null;
            SchemaAndValue data = null;
            try {
                Object reader = converter(input, "class", "read");
                data = reader instanceof Converter
                    ? ((Converter) reader).toConnectData("topic", bytes)
                    : ((HeaderConverter) reader).toConnectHeader("topic", "header", bytes);
                if (data == null) data = new SchemaAndValue(null, null);
                ObjectNode dumped = NODES.objectNode();
                dumped.set("schema", schema(data.schema()));
                dumped.set("value", value(data.schema(), data.value()));
                result.set("read", dumped);
            } catch (Exception e) {
                result.put("read_error", String.valueOf(e.getMessage()));
            }
            if (data != null) {
                try {
                    Object writer = converter(input, input.has("write_class") ? "write_class" : "class", "write");
                    byte[] written = writer instanceof Converter
                        ? ((Converter) writer).fromConnectData("topic", data.schema(), data.value())
                        : ((HeaderConverter) writer).fromConnectHeader("topic", "header", data.schema(), data.value());
                    if (written == null) result.putNull("written");
                    else if (isUtf8Text(written)) result.put("written", new String(written, StandardCharsets.UTF_8));
                    else result.put("written_base64", Base64.getEncoder().encodeToString(written));
                } catch (Exception e) {
                    result.put("write_error", String.valueOf(e.getMessage()));
                }
            }
            System.out.println(mapper.writeValueAsString(result));
        }
    }

    private static boolean isUtf8Text(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        return java.util.Arrays.equals(text.getBytes(StandardCharsets.UTF_8), bytes);
    }

    private static Object converter(JsonNode input, String classKey, String side) throws Exception {
        Object converter = Class.forName(input.get(classKey).asText()).getDeclaredConstructor().newInstance();
        Map<String, Object> settings = new HashMap<>();
        JsonNode given = input.get(side);
        if (given != null) {
            Iterator<Map.Entry<String, JsonNode>> it = given.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                settings.put(e.getKey(), e.getValue().asText());
            }
        }
        if (converter instanceof Converter) ((Converter) converter).configure(settings, false);
        else ((HeaderConverter) converter).configure(settings);
        return converter;
    }

    private static JsonNode schema(Schema schema) {
        if (schema == null) return NODES.nullNode();
        ObjectNode out = NODES.objectNode();
        out.put("type", schema.type().getName());
        out.put("optional", schema.isOptional());
        if (schema.name() != null) out.put("name", schema.name());
        if (schema.version() != null) out.put("version", schema.version());
        if (schema.doc() != null) out.put("doc", schema.doc());
        if (schema.parameters() != null) {
            ArrayNode parameters = out.putArray("parameters");
            for (Map.Entry<String, String> p : schema.parameters().entrySet()) {
                parameters.add(NODES.arrayNode().add(p.getKey()).add(p.getValue()));
            }
        }
        if (schema.defaultValue() != null) out.set("default", value(schema, schema.defaultValue()));
        switch (schema.type()) {
            case STRUCT:
                ArrayNode fields = out.putArray("fields");
                for (Field f : schema.fields()) {
                    ObjectNode field = NODES.objectNode();
                    field.put("name", f.name());
                    field.set("schema", schema(f.schema()));
                    fields.add(field);
                }
                break;
            case MAP:
                out.set("keys", schema(schema.keySchema()));
                out.set("values", schema(schema.valueSchema()));
                break;
            case ARRAY:
                out.set("values", schema(schema.valueSchema()));
                break;
            default:
                break;
        }
        return out;
    }

    private static JsonNode value(Schema schema, Object value) {
        if (value == null) return NODES.nullNode();
        ObjectNode out = NODES.objectNode();
        String logical = schema == null ? null : schema.name();
        if (value instanceof BigDecimal) {
            BigDecimal d = (BigDecimal) value;
            ObjectNode decimal = out.putObject("decimal");
            decimal.put("unscaled", d.unscaledValue().toString());
            decimal.put("scale", d.scale());
        } else if (value instanceof java.util.Date) {
            java.util.Date d = (java.util.Date) value;
            if (Date.LOGICAL_NAME.equals(logical)) out.put("int32", Integer.toString(Date.fromLogical(schema, d)));
            else if (Time.LOGICAL_NAME.equals(logical)) out.put("int32", Integer.toString(Time.fromLogical(schema, d)));
            else out.put("int64", Long.toString(Timestamp.fromLogical(schema, d)));
        } else if (value instanceof Byte) {
            out.put("int8", value.toString());
        } else if (value instanceof Short) {
            out.put("int16", value.toString());
        } else if (value instanceof Integer) {
            out.put("int32", value.toString());
        } else if (value instanceof Long) {
            out.put("int64", value.toString());
        } else if (value instanceof Float) {
            out.put("float32", Integer.toHexString(Float.floatToRawIntBits((Float) value)));
        } else if (value instanceof Double) {
            out.put("float64", Long.toHexString(Double.doubleToRawLongBits((Double) value)));
        } else if (value instanceof Boolean) {
            out.put("boolean", (Boolean) value);
        } else if (value instanceof String) {
            out.put("string", (String) value);
        } else if (value instanceof byte[]) {
            out.put("bytes", Base64.getEncoder().encodeToString((byte[]) value));
        } else if (value instanceof Struct) {
            Struct struct = (Struct) value;
            ArrayNode values = out.putArray("struct");
            for (Field f : struct.schema().fields()) values.add(value(f.schema(), struct.getWithoutDefault(f.name())));
        } else if (value instanceof Collection) {
            ArrayNode values = out.putArray("array");
            Schema element = schema == null ? null : schema.valueSchema();
            for (Object e : (Collection<?>) value) values.add(value(element, e));
        } else if (value instanceof Map) {
            List<ArrayNode> entries = new ArrayList<>();
            Schema k = schema == null ? null : schema.keySchema();
            Schema v = schema == null ? null : schema.valueSchema();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                entries.add(NODES.arrayNode().add(value(k, e.getKey())).add(value(v, e.getValue())));
            }
            entries.sort((a, b) -> a.toString().compareTo(b.toString()));
            ArrayNode map = out.putArray("map");
            entries.forEach(map::add);
        } else {
            out.put("unknown", value.getClass().getName());
        }
        return out;
    }
}
