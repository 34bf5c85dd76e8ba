//! Records as rows: which table, which operation, which key columns and which value columns, by
//! the primary key mode and the field filters, with Debezium's change events (`before`, `after`,
//! `op`) read as Debezium's JDBC sink reads them.

use std::sync::Arc;

use wharf_sdk::data::{Schema, Type, Value};
use wharf_sdk::{Part, SinkRecord};

use crate::settings::{Flavor, InsertMode, PkMode, Quoting, Settings};

/// A table, by schema (none: the connection's current schema) and name, as the SQL will name it
/// before quoting.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableId {
    pub schema: Option<String>,
    pub name: String,
}

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// One column's value in a row, with the schema its type comes from.
#[derive(Debug, Clone)]
pub struct Cell {
    pub name: String,
    pub schema: Arc<Schema>,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// By `insert.mode`.
    Write,
    Delete,
    Truncate,
}

/// One record, as a row to write.
#[derive(Debug, Clone)]
pub struct Row {
    pub table: TableId,
    pub op: Op,
    pub key: Vec<Cell>,
    pub values: Vec<Cell>,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// What became of a record.
pub enum Read {
    Row(Row),
    /// Nothing to write, and why (for the log, once).
    Skip(&'static str),
}

/// Why a record cannot be written (the errant record reporter's reason).
pub type Refusal = String;

/// Reads one record.
pub fn read(settings: &Settings, record: &SinkRecord) -> Result<Read, Refusal> {
    let place = || format!("{}-{} offset {}", record.topic, record.partition, record.offset);
    let value = match &record.value {
        None => None,
        Some(Part::Bytes(_)) => {
            return Err(format!(
                "the record at {} has a value of bytes without a schema; jdbc-sink writes records with schemas, as \
                 Debezium's and Confluent's JDBC sinks do: use a converter that reads schemas (JsonConverter with \
                 schemas.enable=true, or Avro)",
                place()
            ))
        }
        Some(Part::Data { schema: None, .. }) => {
            return Err(format!(
            "the record at {} has a value without a schema; jdbc-sink writes records with schemas, as Debezium's and \
                 Confluent's JDBC sinks do (JsonConverter needs value.converter.schemas.enable=true)",
            place()
        ))
        }
        Some(Part::Data { schema: Some(schema), value }) => Some((schema.clone(), value)),
    };
    // Debezium's `${source.…}` names the table after the change event's source block; a record
    // without one is skipped, as Debezium skips it.
    let table =
        match settings.table_format.contains("${source.") {
            false => table_of(settings, &record.topic, None)?,
            true => match value.as_ref().and_then(|(schema, value)| source_block(schema, value)) {
                Some(source) => {
                    table_of(settings, &record.topic, Some(source)).map_err(|e| format!("{e} (record {})", place()))?
                }
                None => return Ok(Read::Skip(
                    "a record that is not a Debezium change event, while collection.name.format takes the table name \
                     from an event's source block (${source.…})",
                )),
            },
        };

    // A Debezium change event: its `after` is the row, its `op` the operation.
    let (op, row_value) = match value {
        None => match settings.delete_enabled {
            true => (Op::Delete, None),
            false if settings.flavor == Flavor::Debezium => {
                return Ok(Read::Skip("a tombstone (delete.enabled=false)"))
            }
            false => {
                return Err(format!(
                "the record at {} has a null value (a tombstone), and delete.enabled=false: set delete.enabled=true \
                     (with pk.mode=record_key) to delete rows, or drop tombstones with a Filter transform",
                place()
            ))
            }
        },
        // Confluent's sink writes an envelope as any struct; Debezium's reads its change.
        Some((schema, value)) => match envelope(&schema, value).filter(|_| settings.flavor == Flavor::Debezium) {
            Some(event) => match event.op.as_str() {
                "c" | "r" | "u" => match event.after {
                    Some(after) => (Op::Write, Some(after)),
                    None => return Err(format!("the change event at {} has op={} and no after", place(), event.op)),
                },
                "d" if settings.delete_enabled => (Op::Delete, None),
                "d" => return Ok(Read::Skip("a delete event (delete.enabled=false)")),
                "t" if settings.truncate_enabled => (Op::Truncate, None),
                "t" => return Ok(Read::Skip("a truncate event (truncate.enabled=false)")),
                other => {
                    return Err(format!("the change event at {} has op={other}, which is not c, r, u, d or t", place()))
                }
            },
            None => (Op::Write, Some((schema, value.clone()))),
        },
    };
    if op == Op::Truncate {
        return Ok(Read::Row(Row {
            table,
            op,
            key: Vec::new(),
            values: Vec::new(),
            topic: record.topic.clone(),
            partition: record.partition,
            offset: record.offset,
        }));
    }

    let key = key_cells(settings, record, row_value.as_ref())?;
    let mut values = Vec::new();
    if op == Op::Write {
        let Some((schema, value)) = row_value else {
            return Err(format!("the record at {} has no value to write", place()));
        };
        values = value_cells(settings, record, &schema, value, &key)?;
    }
    if settings.insert_mode != InsertMode::Insert && key.is_empty() && op == Op::Write {
        return Err(format!("the record at {} gives no primary key for insert.mode upsert or update", place()));
    }
    if op == Op::Delete && key.is_empty() {
        return Err(format!("the record at {} is a delete and has no key to find its row by", place()));
    }
    Ok(Read::Row(Row {
        table,
        op,
        key,
        values,
        topic: record.topic.clone(),
        partition: record.partition,
        offset: record.offset,
    }))
}

/// A change event's `source` block: its schema's fields and their values.
type Source<'a> = (&'a Schema, &'a [Value]);

/// The `source` block of a Debezium change event (Debezium takes any struct whose schema's name
/// contains `Envelope` for one).
fn source_block<'a>(schema: &'a Arc<Schema>, value: &'a Value) -> Option<Source<'a>> {
    if schema.kind != Type::Struct || !schema.name.as_deref().is_some_and(|n| n.contains("Envelope")) {
        return None;
    }
    let Value::Struct(fields) = value else { return None };
    let i = schema.fields.iter().position(|f| f.name == "source")?;
    match (&schema.fields[i].schema, fields.get(i)) {
        (source, Some(Value::Struct(values))) if source.kind == Type::Struct => Some((source, values)),
        _ => None,
    }
}

/// The table a topic's records go to, by the name format: `${topic}`, and Debezium's
/// `${source.<field>}` from a change event's source block (a field of text).
pub fn table_of(settings: &Settings, topic: &str, source: Option<Source<'_>>) -> Result<TableId, Refusal> {
    let topic_part = match settings.topic_dots_to_underscores {
        true => topic.replace('.', "_"),
        false => topic.to_string(),
    };
    let mut name = settings.table_format.replace("${topic}", &topic_part);
    if let Some((schema, values)) = source {
        // Left to right over the format's own text: a value that reads like a placeholder stays.
        let mut resolved = String::with_capacity(name.len());
        let mut rest = name.as_str();
        while let Some(start) = rest.find("${source.") {
            let Some(length) = rest[start..].find('}') else { break };
            let field = &rest[start + "${source.".len()..start + length];
            let text = match schema.fields.iter().position(|f| f.name == field) {
                None => Err("which the event's source block lacks"),
                Some(i) if schema.fields[i].schema.kind != Type::String => Err("which is not text"),
                Some(i) => match values.get(i) {
                    Some(Value::String(text)) => Ok(text.as_str()),
                    _ => Err("which is null in this event"),
                },
            }
            .map_err(|why| {
                format!("the table name format {} names the source field {field}, {why}", settings.table_format)
            })?;
            resolved.push_str(&rest[..start]);
            resolved.push_str(text);
            rest = &rest[start + length + 1..];
        }
        resolved.push_str(rest);
        name = resolved;
    }
    let mut parts: Vec<String> = name.split('.').map(str::to_string).collect();
    if parts.iter().any(String::is_empty) || parts.len() > 3 {
        return Err(format!(
            "the table name \"{name}\" (from the table name format and topic {topic}) is not table, schema.table or \
             database.schema.table"
        ));
    }
    if settings.quoting == Quoting::Lowered || settings.quoting == Quoting::Never {
        parts.iter_mut().for_each(|p| *p = p.to_lowercase());
    }
    let table = parts.pop().unwrap_or_default();
    let schema = parts.pop();
    Ok(TableId { schema, name: table })
}

/// A Debezium change event's parts.
struct Event {
    op: String,
    after: Option<(Arc<Schema>, Value)>,
}

/// The event, when `schema` is a Debezium envelope (a struct named `….Envelope` with `op`).
fn envelope(schema: &Arc<Schema>, value: &Value) -> Option<Event> {
    if schema.kind != Type::Struct || !schema.name.as_deref().is_some_and(|n| n.ends_with(".Envelope")) {
        return None;
    }
    let Value::Struct(fields) = value else { return None };
    let index = |name: &str| schema.fields.iter().position(|f| f.name == name);
    let op = match fields.get(index("op")?) {
        Some(Value::String(op)) => op.clone(),
        _ => return None,
    };
    let after = index("after").and_then(|i| match fields.get(i) {
        Some(Value::Null) | None => None,
        Some(v) => Some((schema.fields[i].schema.clone(), v.clone())),
    });
    Some(Event { op, after })
}

fn column_name(settings: &Settings, name: &str) -> String {
    match settings.quoting {
        Quoting::Lowered => name.to_lowercase(),
        Quoting::Always | Quoting::Never => name.to_string(),
    }
}

fn key_cells(
    settings: &Settings,
    record: &SinkRecord,
    value: Option<&(Arc<Schema>, Value)>,
) -> Result<Vec<Cell>, Refusal> {
    let place = || format!("{}-{} offset {}", record.topic, record.partition, record.offset);
    let pk_key = match settings.flavor {
        Flavor::Debezium => "primary.key.fields",
        Flavor::Confluent => "pk.fields",
    };
    match settings.pk_mode {
        PkMode::None => Ok(Vec::new()),
        PkMode::Kafka => {
            let names: Vec<String> = match settings.pk_fields.len() {
                3 if settings.flavor == Flavor::Confluent => settings.pk_fields.clone(),
                _ => vec!["__connect_topic".into(), "__connect_partition".into(), "__connect_offset".into()],
            };
            Ok(vec![
                Cell {
                    name: column_name(settings, &names[0]),
                    schema: Schema::string().build(),
                    value: Value::String(record.topic.clone()),
                },
                Cell {
                    name: column_name(settings, &names[1]),
                    schema: Schema::int32().build(),
                    value: Value::Int32(record.partition),
                },
                Cell {
                    name: column_name(settings, &names[2]),
                    schema: Schema::int64().build(),
                    value: Value::Int64(record.offset),
                },
            ])
        }
        PkMode::RecordKey => {
            let (schema, value) = match &record.key {
                Some(Part::Data { schema: Some(schema), value }) => (schema.clone(), value),
                Some(_) => {
                    return Err(format!(
                        "the record at {} has a key without a schema, and the primary key comes from the record key; use a \
                         key.converter that reads schemas",
                        place()
                    ))
                }
                None => return Err(format!("the record at {} has no key, and the primary key comes from the record key", place())),
            };
            if schema.kind == Type::Struct {
                struct_cells(settings, &schema, value, &settings.pk_fields, pk_key, "key", &place())
            } else {
                match settings.pk_fields.as_slice() {
                    [name] => Ok(vec![Cell { name: column_name(settings, name), schema, value: value.clone() }]),
                    _ => Err(format!(
                        "the record at {} has a key that is not a struct: name its column in {pk_key} (one name)",
                        place()
                    )),
                }
            }
        }
        PkMode::RecordValue => match value {
            Some((schema, value)) if schema.kind == Type::Struct => {
                struct_cells(settings, schema, value, &settings.pk_fields, pk_key, "value", &place())
            }
            Some(_) => Err(format!(
                "the record at {} has a value that is not a struct, and the primary key comes from it",
                place()
            )),
            None => Err(format!("the record at {} has no value, and the primary key comes from it", place())),
        },
        PkMode::RecordHeader => header_cells(settings, record, pk_key, &place()),
    }
}

/// Debezium's `record_header` key: each header a field of the key (the ones `wanted` names, all
/// when empty), with the schema the header converter read it with.
fn header_cells(settings: &Settings, record: &SinkRecord, wanted_key: &str, place: &str) -> Result<Vec<Cell>, Refusal> {
    if record.headers.is_empty() {
        return Err(format!(
            "the record at {place} has no headers, and the primary key comes from them (primary.key.mode=record_header)"
        ));
    }
    let wanted = &settings.pk_fields;
    let mut cells: Vec<Cell> = Vec::new();
    for (i, header) in record.headers.iter().enumerate() {
        if record.headers[..i].iter().any(|h| h.key == header.key) {
            return Err(format!(
                "the record at {place} has the header {} twice; the primary key takes each header as a field of its own                  (primary.key.mode=record_header)",
                header.key
            ));
        }
        if !wanted.is_empty() && !wanted.contains(&header.key) {
            continue;
        }
        match &header.value {
            Some(Part::Data { schema: Some(schema), value }) => cells.push(Cell {
                name: column_name(settings, &header.key),
                schema: schema.clone(),
                value: value.clone(),
            }),
            _ => {
                return Err(format!(
                    "the record at {place} has the header {} without a schema (a null, or bytes no header converter read), \
                     and the primary key comes from the headers; use header.converter=SimpleHeaderConverter (the \
                     default) and give the header a value",
                    header.key
                ))
            }
        }
    }
    if let Some(missing) = wanted.iter().find(|name| !record.headers.iter().any(|h| &h.key == *name)) {
        let known: Vec<&str> = record.headers.iter().map(|h| h.key.as_str()).collect();
        return Err(format!(
            "{wanted_key} names the header {missing}, which the record at {place} lacks (it has {})",
            known.join(", ")
        ));
    }
    Ok(cells)
}

/// The fields of a struct named in `wanted` (all when empty), as cells.
fn struct_cells(
    settings: &Settings,
    schema: &Arc<Schema>,
    value: &Value,
    wanted: &[String],
    wanted_key: &str,
    what: &str,
    place: &str,
) -> Result<Vec<Cell>, Refusal> {
    let Value::Struct(fields) = value else {
        return Err(format!("the record at {place} has a {what} whose value does not match its struct schema"));
    };
    for name in wanted {
        if !schema.fields.iter().any(|f| &f.name == name) {
            let known: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(format!(
                "{wanted_key} names the field {name}, which the record {what} at {place} lacks (it has {})",
                known.join(", ")
            ));
        }
    }
    Ok(schema
        .fields
        .iter()
        .zip(fields)
        .filter(|(f, _)| wanted.is_empty() || wanted.contains(&f.name))
        .map(|(f, v)| Cell { name: column_name(settings, &f.name), schema: f.schema.clone(), value: v.clone() })
        .collect())
}

/// A field of Confluent's `timestamp.fields.list`: an int64, or its decimal text, counting
/// `timestamp.precision.mode` units since the epoch, as a timestamp column's cell.
fn epoch_timestamp(settings: &Settings, schema: &Schema, value: Value) -> Result<(Arc<Schema>, Value), String> {
    use crate::dialect::names::{EPOCH_MICROS, EPOCH_NANOS};
    let nanos = settings.timestamp_units == 1_000_000_000;
    let micros_of_text = |text: &str| -> Result<i64, String> {
        let bad = || {
            format!("is in timestamp.fields.list, and its text {text:?} is not a whole number of units since the epoch")
        };
        match nanos {
            false => text.parse::<i64>().map_err(|_| bad()),
            true => {
                let nanos = text.parse::<i128>().map_err(|_| bad())?;
                i64::try_from(nanos.div_euclid(1_000)).map_err(|_| bad())
            }
        }
    };
    let (unit, value) = match value {
        Value::Null => (EPOCH_MICROS, Value::Null),
        Value::Int64(n) => (if nanos { EPOCH_NANOS } else { EPOCH_MICROS }, Value::Int64(n)),
        Value::String(text) => (EPOCH_MICROS, Value::Int64(micros_of_text(&text)?)),
        _ => return Err("is in timestamp.fields.list and holds a value that does not match its schema".into()),
    };
    Ok((epoch_schema(unit == EPOCH_NANOS, schema.optional), value))
}

/// The schema of a `timestamp.fields.list` cell, made once for each unit and nullability rather
/// than for each record.
fn epoch_schema(nanos: bool, optional: bool) -> Arc<Schema> {
    use crate::dialect::names::{EPOCH_MICROS, EPOCH_NANOS};
    static SCHEMAS: std::sync::OnceLock<[Arc<Schema>; 4]> = std::sync::OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| {
        let make = |unit: &str, optional: bool| {
            let marked = Schema::int64().named(unit);
            match optional {
                true => marked.optional().build(),
                false => marked.build(),
            }
        };
        [make(EPOCH_MICROS, false), make(EPOCH_MICROS, true), make(EPOCH_NANOS, false), make(EPOCH_NANOS, true)]
    });
    schemas[usize::from(nanos) * 2 + usize::from(optional)].clone()
}

fn value_cells(
    settings: &Settings,
    record: &SinkRecord,
    schema: &Arc<Schema>,
    value: Value,
    key: &[Cell],
) -> Result<Vec<Cell>, Refusal> {
    let place = format!("{}-{} offset {}", record.topic, record.partition, record.offset);
    if schema.kind != Type::Struct {
        if settings.flavor == Flavor::Confluent && schema.kind == Type::String {
            let name = column_name(settings, &settings.string_value_column);
            return Ok(vec![Cell { name, schema: schema.clone(), value }]);
        }
        return Err(format!(
            "the record at {place} has a value that is not a struct; jdbc-sink writes a struct's fields as columns (a \
             Debezium change event's after)"
        ));
    }
    let Value::Struct(fields) = value else {
        return Err(format!("the record at {place} has a value that does not match its struct schema"));
    };
    let kept = |name: &str| -> bool {
        let named = |list: &[String]| {
            list.iter().any(|e| e == name || e.split_once(':').is_some_and(|(t, f)| t == record.topic && f == name))
        };
        (settings.include.is_empty() || named(&settings.include)) && !named(&settings.exclude)
    };
    let mut cells = Vec::new();
    for (field, value) in schema.fields.iter().zip(fields) {
        let name = column_name(settings, &field.name);
        if key.iter().any(|k| k.name == name) || !kept(&field.name) {
            continue;
        }
        let value = match (&value, &field.schema.default) {
            (Value::Null, Some(default)) if settings.replace_null_with_default => default.clone(),
            _ => value,
        };
        if settings.timestamp_fields.contains(&field.name) && matches!(field.schema.kind, Type::Int64 | Type::String) {
            let (schema, value) = epoch_timestamp(settings, &field.schema, value)
                .map_err(|e| format!("the field {} of the record at {place} {e}", field.name))?;
            cells.push(Cell { name, schema, value });
            continue;
        }
        cells.push(Cell { name, schema: field.schema.clone(), value });
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a failed unwrap is a failed test

    use super::*;
    use wharf_sdk::Header;

    fn debezium(extra: &[(&str, &str)]) -> Settings {
        let mut pairs = vec![
            ("connector.class".to_string(), "io.debezium.connector.jdbc.JdbcSinkConnector".to_string()),
            ("connection.url".to_string(), "jdbc:postgresql://db:5432/wharf".to_string()),
            ("connection.username".to_string(), "wharf".to_string()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        crate::settings::read(&pairs).unwrap()
    }

    fn data(schema: Arc<Schema>, value: Value) -> Part {
        Part::Data { schema: Some(schema), value }
    }

    fn record(value: Option<Part>, headers: Vec<Header>) -> SinkRecord {
        SinkRecord {
            topic: "server.inventory.items".into(),
            partition: 0,
            offset: 7,
            key: None,
            value,
            headers,
            timestamp: None,
        }
    }

    fn row_value(id: i32) -> Part {
        let schema = Schema::structure().field("id", Schema::int32()).field("name", Schema::string()).build();
        data(schema, Value::Struct(vec![Value::Int32(id), Value::String("n".into())]))
    }

    /// A change event whose source block names `table` (none: a null table).
    fn event(table: Option<&str>) -> Part {
        let row = Schema::structure().field("id", Schema::int32()).optional().build();
        let source = Schema::structure()
            .field("connector", Schema::string())
            .field("table", Schema::string().optional())
            .field("ts_ms", Schema::int64())
            .build();
        let schema = Schema::structure()
            .named("server.inventory.items.Envelope")
            .field("before", row.clone())
            .field("after", row)
            .field("source", source)
            .field("op", Schema::string())
            .build();
        let source = Value::Struct(vec![
            Value::String("postgresql".into()),
            table.map_or(Value::Null, |t| Value::String(t.into())),
            Value::Int64(1),
        ]);
        data(
            schema,
            Value::Struct(vec![Value::Null, Value::Struct(vec![Value::Int32(1)]), source, Value::String("c".into())]),
        )
    }

    fn row(read: Result<Read, Refusal>) -> Row {
        match read.unwrap() {
            Read::Row(row) => row,
            Read::Skip(why) => panic!("skipped: {why}"),
        }
    }

    #[test]
    fn a_record_header_key_takes_each_header_as_a_field_with_its_schema() {
        let settings = debezium(&[("primary.key.mode", "record_header"), ("insert.mode", "upsert")]);
        let headers = vec![
            Header::new("tenant", data(Schema::string().build(), Value::String("acme".into()))),
            Header::new("id", data(Schema::int8().build(), Value::Int8(3))),
        ];
        let written = row(read(&settings, &record(Some(row_value(9)), headers.clone())));
        let names: Vec<&str> = written.key.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["tenant", "id"]);
        assert_eq!(written.key[1].schema.kind, Type::Int8);
        // The value's own `id` is the key's, from the header.
        let values: Vec<&str> = written.values.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(values, ["name"]);

        let only_tenant = debezium(&[("primary.key.mode", "record_header"), ("primary.key.fields", "tenant")]);
        let written = row(read(&only_tenant, &record(Some(row_value(9)), headers.clone())));
        assert_eq!(written.key.len(), 1);
        assert_eq!(written.values.len(), 2);

        let missing = debezium(&[("primary.key.mode", "record_header"), ("primary.key.fields", "region")]);
        let Err(e) = read(&missing, &record(Some(row_value(9)), headers.clone())) else { panic!("read") };
        assert!(e.contains("primary.key.fields names the header region") && e.contains("tenant, id"), "{e}");

        let Err(e) = read(&settings, &record(Some(row_value(9)), Vec::new())) else { panic!("read") };
        assert!(e.contains("has no headers") && e.contains("offset 7"), "{e}");

        let mut twice = headers.clone();
        twice.push(headers[0].clone());
        let Err(e) = read(&settings, &record(Some(row_value(9)), twice)) else { panic!("read") };
        assert!(e.contains("the header tenant twice"), "{e}");

        let raw = vec![Header { key: "tenant".into(), value: Some(Part::Bytes(b"acme".to_vec())) }];
        let Err(e) = read(&settings, &record(Some(row_value(9)), raw)) else { panic!("read") };
        assert!(e.contains("without a schema") && e.contains("header.converter"), "{e}");
    }

    #[test]
    fn a_source_name_format_takes_text_fields_of_the_events_source_block() {
        let settings = debezium(&[("collection.name.format", "${source.table}_of_${topic}")]);
        let written = row(read(&settings, &record(Some(event(Some("orders"))), Vec::new())));
        assert_eq!(written.table, TableId { schema: None, name: "orders_of_server_inventory_items".into() });

        // A value that reads like a placeholder is taken as it is, not resolved again (and its dot
        // separates a schema, as any dot in the name does).
        let written = row(read(&settings, &record(Some(event(Some("${source.table}"))), Vec::new())));
        let expected = TableId { schema: Some("${source".into()), name: "table}_of_server_inventory_items".into() };
        assert_eq!(written.table, expected);

        let schema_table = debezium(&[("collection.name.format", "archive.${source.table}")]);
        let written = row(read(&schema_table, &record(Some(event(Some("orders"))), Vec::new())));
        assert_eq!(written.table, TableId { schema: Some("archive".into()), name: "orders".into() });

        // Records that are not change events are skipped, as Debezium skips them.
        assert!(matches!(read(&settings, &record(Some(row_value(1)), Vec::new())).unwrap(), Read::Skip(_)));
        assert!(matches!(read(&settings, &record(None, Vec::new())).unwrap(), Read::Skip(_)));

        let Err(e) = read(&settings, &record(Some(event(None)), Vec::new())) else { panic!("read") };
        assert!(e.contains("source field table, which is null") && e.contains("offset 7"), "{e}");
        let missing = debezium(&[("collection.name.format", "${source.db}")]);
        let Err(e) = read(&missing, &record(Some(event(Some("orders"))), Vec::new())) else { panic!("read") };
        assert!(e.contains("source field db, which the event's source block lacks"), "{e}");
        let number = debezium(&[("collection.name.format", "${source.ts_ms}")]);
        let Err(e) = read(&number, &record(Some(event(Some("orders"))), Vec::new())) else { panic!("read") };
        assert!(e.contains("source field ts_ms, which is not text"), "{e}");
    }

    #[test]
    fn confluents_timestamp_fields_are_numbers_or_their_text_since_the_epoch() {
        let confluent = |mode: &str| {
            let pairs: Vec<(String, String)> = [
                ("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector"),
                ("connection.url", "jdbc:postgresql://db:5432/wharf"),
                ("connection.user", "wharf"),
                ("timestamp.fields.list", "at,text_at,count"),
                ("timestamp.precision.mode", mode),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            crate::settings::read(&pairs).unwrap()
        };
        let schema = Schema::structure()
            .field("at", Schema::int64())
            .field("text_at", Schema::string().optional())
            .field("count", Schema::int32())
            .field("other", Schema::int64())
            .build();
        let value = |text: &str| {
            data(
                schema.clone(),
                Value::Struct(vec![
                    Value::Int64(1_705_320_000_123_456),
                    Value::String(text.into()),
                    Value::Int32(7),
                    Value::Int64(5),
                ]),
            )
        };
        let written = row(read(&confluent("microseconds"), &record(Some(value("1705320000000001")), Vec::new())));
        let kinds: Vec<(Option<&str>, bool)> =
            written.values.iter().map(|c| (c.schema.name.as_deref(), c.schema.optional)).collect();
        assert_eq!(
            kinds,
            [
                (Some("wharf.jdbc.EpochMicros"), false),
                (Some("wharf.jdbc.EpochMicros"), true),
                (None, false),
                (None, false)
            ]
        );
        assert!(matches!(written.values[1].value, Value::Int64(1_705_320_000_000_001)));
        let in_nanos = row(read(&confluent("NANOSECONDS"), &record(Some(value("1705320000000001999")), Vec::new())));
        assert_eq!(in_nanos.values[0].schema.name.as_deref(), Some("wharf.jdbc.EpochNanos"));
        assert!(matches!(in_nanos.values[1].value, Value::Int64(1_705_320_000_000_001)));
        let Err(e) = read(&confluent("microseconds"), &record(Some(value("noon")), Vec::new())) else { panic!("read") };
        assert!(e.contains("the field text_at") && e.contains("\"noon\" is not a whole number"), "{e}");
    }
}
