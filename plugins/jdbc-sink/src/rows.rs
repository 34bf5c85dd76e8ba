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
    let table = table_of(settings, &record.topic)?;

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

/// The table a topic's records go to, by the name format.
pub fn table_of(settings: &Settings, topic: &str) -> Result<TableId, Refusal> {
    let topic_part = match settings.topic_dots_to_underscores {
        true => topic.replace('.', "_"),
        false => topic.to_string(),
    };
    let name = settings.table_format.replace("${topic}", &topic_part);
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
    }
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
        cells.push(Cell { name, schema: field.schema.clone(), value });
    }
    Ok(cells)
}
