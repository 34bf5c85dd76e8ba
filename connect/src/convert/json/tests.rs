//! The bytes of Kafka Connect's JsonConverter for a few shapes; the suite's conformance test
//! compares a wider table with Connect's own classes.

use std::sync::Arc;

use super::*;
use crate::convert::Settings;
use crate::data::Field;

fn converter(pairs: &[(&str, &str)]) -> JsonConverter {
    let config: Vec<(String, String)> =
        pairs.iter().map(|(k, v)| (format!("value.converter.{k}"), v.to_string())).collect();
    JsonConverter::new(&Settings::under("value.converter", &config)).unwrap()
}

fn written(c: &mut JsonConverter, data: &Data) -> String {
    String::from_utf8(c.from_data(data).unwrap().unwrap()).unwrap()
}

fn person() -> Arc<Schema> {
    let mut age = Schema::of(Type::Int32).optional();
    age.default = Some(Value::Int32(18));
    Arc::new(Schema {
        name: Some("person".into()),
        ..Schema::structure(vec![
            Field { name: "name".into(), schema: Arc::new(Schema::of(Type::String)) },
            Field { name: "age".into(), schema: Arc::new(age) },
        ])
    })
}

#[test]
fn a_struct_is_written_in_an_envelope_with_its_schema_in_connects_member_order() {
    let mut c = converter(&[]);
    let data = Data::new(person(), Value::Struct(vec![Value::String("ada".into()), Value::Null]));
    assert_eq!(
        written(&mut c, &data),
        r#"{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"name"},{"type":"int32","optional":true,"default":18,"field":"age"}],"optional":false,"name":"person"},"payload":{"name":"ada","age":18}}"#
    );
    let mut keep_null = converter(&[("replace.null.with.default", "false")]);
    assert!(written(&mut keep_null, &data).ends_with(r#""payload":{"name":"ada","age":null}}"#));
}

#[test]
fn what_is_written_reads_back_the_same() {
    let mut c = converter(&[]);
    let data = Data::new(person(), Value::Struct(vec![Value::String("ada".into()), Value::Int32(36)]));
    let bytes = c.from_data(&data).unwrap().unwrap();
    let read = c.to_data(Some(&bytes)).unwrap();
    assert_eq!(read.value, data.value);
    assert_eq!(read.schema.as_deref(), data.schema.as_deref());
    // The second read of the same schema comes from the cache: the same Arc.
    let again = c.to_data(Some(&bytes)).unwrap();
    assert!(Arc::ptr_eq(read.schema.as_ref().unwrap(), again.schema.as_ref().unwrap()));
}

#[test]
fn schemaless_json_is_read_as_connect_reads_it() {
    let mut c = converter(&[("schemas.enable", "false")]);
    let read = c.to_data(Some(br#"{"a":1,"b":[2.5,"x",null,true]}"#)).unwrap();
    assert_eq!(read.schema, None);
    assert_eq!(
        read.value,
        Value::Map(vec![
            (Value::String("a".into()), Value::Int64(1)),
            (
                Value::String("b".into()),
                Value::Array(vec![Value::Float64(2.5), Value::String("x".into()), Value::Null, Value::Boolean(true)])
            ),
        ])
    );
    assert_eq!(written(&mut c, &read), r#"{"a":1,"b":[2.5,"x",null,true]}"#);
    assert_eq!(c.to_data(None).unwrap(), Data::NULL);
    assert_eq!(c.from_data(&Data::NULL).unwrap(), None);
}

#[test]
fn maps_with_keys_other_than_strings_are_arrays_of_pairs() {
    let mut c = converter(&[("schemas.enable", "false")]);
    let schema = Arc::new(Schema::map(Arc::new(Schema::of(Type::Int32)), Arc::new(Schema::of(Type::String))));
    let data = Data::new(schema, Value::Map(vec![(Value::Int32(1), Value::String("one".into()))]));
    assert_eq!(written(&mut c, &data), r#"[[1,"one"]]"#);
}

#[test]
fn decimals_are_base64_of_their_unscaled_bytes_or_numbers() {
    let data = Data::new(Arc::new(Schema::decimal(2)), Value::Decimal(Decimal::from_i64(-12345, 2)));
    let mut base64 = converter(&[("schemas.enable", "false")]);
    assert_eq!(written(&mut base64, &data), r#""z8c=""#);
    let mut numeric = converter(&[("schemas.enable", "false"), ("decimal.format", "numeric")]);
    assert_eq!(written(&mut numeric, &data), "-123.45");
    let mut enveloped = converter(&[]);
    assert_eq!(
        written(&mut enveloped, &data),
        r#"{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"z8c="}"#
    );
    let bytes = written(&mut enveloped, &data);
    let read = enveloped.to_data(Some(bytes.as_bytes())).unwrap();
    assert_eq!(read.value, data.value);
}

#[test]
fn numbers_narrow_as_java_narrows_them() {
    let mut c = converter(&[]);
    let read = |c: &mut JsonConverter, kind: &str, payload: &str| {
        c.to_data(Some(format!(r#"{{"schema":{{"type":"{kind}"}},"payload":{payload}}}"#).as_bytes())).unwrap().value
    };
    assert_eq!(read(&mut c, "int8", "300"), Value::Int8(44));
    assert_eq!(read(&mut c, "int16", "-1.9"), Value::Int16(-1));
    assert_eq!(read(&mut c, "int32", "1e2"), Value::Int32(100));
    assert_eq!(read(&mut c, "int64", "18446744073709551617"), Value::Int64(1));
    assert_eq!(read(&mut c, "double", "-0.0"), Value::Float64(0.0));
    assert_eq!(read(&mut c, "float", "0.1"), Value::Float32(0.1));
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let mut c = converter(&[]);
    let refused = |c: &mut JsonConverter, bytes: &str| c.to_data(Some(bytes.as_bytes())).unwrap_err().message;
    assert!(refused(&mut c, r#"{"a":1}"#).contains("schemas.enable=false"));
    assert!(refused(&mut c, "{").contains("serialization error"));
    assert!(refused(&mut c, r#"{"schema":{"type":"int32"},"payload":null}"#).contains("required INT32"));
    assert!(refused(&mut c, r#"{"schema":{"type":"int32"},"payload":"5"}"#).contains("cannot be read as int32"));
    assert!(refused(&mut c, r#"{"schema":{"type":"nope"},"payload":1}"#).contains("Unknown schema type: nope"));
    assert!(refused(
        &mut c,
        r#"{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"},"payload":"AA=="}"#
    )
    .contains("scale"));
    let required = Data::new(Arc::new(Schema::of(Type::String)), Value::Null);
    assert!(c.from_data(&required).unwrap_err().message.contains("required"));
    let wrong = Data::new(Arc::new(Schema::of(Type::String)), Value::Int32(1));
    assert!(c.from_data(&wrong).unwrap_err().message.contains("Invalid type for STRING"));
    let bad = Settings::under("value.converter", &[("value.converter.schemas.enable".into(), "yes".into())]);
    assert_eq!(
        JsonConverter::new(&bad).err().unwrap().message,
        "value.converter.schemas.enable=yes is not valid: expected true or false"
    );
}

#[test]
fn json_nested_as_deep_as_jackson_allows_reads_and_writes_on_a_task_threads_stack() {
    // Records come from Kafka: the deepest JSON the parser accepts must not overflow the stack
    // of a thread with the default size (a task's), reading it or writing it back.
    let depth = crate::convert::json_text::MAX_NESTING_DEPTH;
    let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let ran = std::thread::spawn(move || {
        let mut c = converter(&[("schemas.enable", "false")]);
        let read = c.to_data(Some(text.as_bytes())).unwrap();
        c.from_data(&read).unwrap().unwrap().len()
    })
    .join();
    assert_eq!(ran.ok(), Some(2 * depth + 1));
}
