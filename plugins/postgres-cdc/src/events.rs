//! Debezium's change events: each table's key, value and envelope schemas, the `source` block,
//! and the records of a snapshot row, an insert, an update, a delete, a truncate and a
//! heartbeat, with the offsets Debezium stores beside them.

use std::sync::Arc;

use wharf_sdk::{OffsetMap, Part, Scalar, Schema, SourceRecord, Value};

use crate::settings::Settings;
use crate::values::{self, Kind};

/// `source.version`: the Debezium release whose events these are.
pub const DEBEZIUM_VERSION: &str = "3.6.1.Final";

/// A column as the catalog describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogColumn {
    pub name: String,
    pub type_oid: u32,
    pub modifier: i32,
    pub not_null: bool,
    pub type_name: String,
    /// An enum's labels, in order, joined by commas.
    pub labels: Option<String>,
    /// The column's place in the primary key, from 1.
    pub key_position: Option<i32>,
    /// The default's expression, as `pg_get_expr` writes it.
    pub default: Option<String>,
}

/// A column of a captured table.
#[derive(Debug, Clone)]
pub struct TableColumn {
    pub name: String,
    /// None for a column left out: filtered by `column.*.list`, or of a type without a mapping.
    pub kind: Option<Kind>,
    pub optional: bool,
    /// The schema's default, from the column's (as Debezium reads it).
    pub default: Option<Value>,
}

/// A captured table: its topic and schemas.
#[derive(Debug, Clone)]
pub struct Table {
    pub schema: String,
    pub table: String,
    pub topic: String,
    /// Every column, in the table's order.
    pub columns: Vec<TableColumn>,
    /// Where the key's columns are in a row's value struct, in the key's order; empty for no
    /// key.
    key_fields: Vec<usize>,
    pub key_schema: Option<Arc<Schema>>,
    pub envelope: Arc<Schema>,
}

/// What a topic name may hold; Debezium writes `_` for anything else.
fn topic_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect()
}

impl Table {
    /// The table's schemas from its catalog columns, as the config asks: the columns
    /// `column.include.list` and `column.exclude.list` allow, the key `message.key.columns`
    /// gives (else the primary key), the value modes.
    pub fn new(
        settings: &Settings,
        source: &Arc<Schema>,
        schema: &str,
        table: &str,
        catalog: &[CatalogColumn],
    ) -> Result<Table, String> {
        let name = topic_safe(&format!("{}.{schema}.{table}", settings.prefix));
        let included = |column: &str| settings.columns.allows(&format!("{schema}.{table}.{column}"));
        let key_columns = settings.key_columns.of(&format!("{schema}.{table}"));
        let modes = &settings.modes;
        let mut columns = Vec::with_capacity(catalog.len());
        let mut value = Schema::structure().named(&format!("{name}.Value")).optional();
        for column in catalog {
            let kind = included(&column.name)
                .then(|| {
                    values::kind_with(
                        column.type_oid,
                        column.modifier,
                        &column.type_name,
                        column.labels.as_deref(),
                        modes,
                    )
                })
                .flatten();
            let default = kind.as_ref().and_then(|k| values::default_of(k, column.type_oid, column.default.as_deref()));
            if let Some(kind) = &kind {
                value = value.field(&column.name, values::schema_of(kind, !column.not_null, default.clone()));
            }
            columns.push(TableColumn { name: column.name.clone(), kind, optional: !column.not_null, default });
        }
        let key: Vec<usize> = match key_columns {
            Some(names) => names
                .iter()
                .map(|n| {
                    catalog.iter().position(|c| &c.name == n).ok_or_else(|| {
                        format!("message.key.columns names the column {n}, which {schema}.{table} does not have")
                    })
                })
                .collect::<Result<_, _>>()?,
            None => {
                let mut keyed: Vec<(i32, usize)> =
                    catalog.iter().enumerate().filter_map(|(i, c)| c.key_position.map(|p| (p, i))).collect();
                keyed.sort();
                keyed.into_iter().map(|(_, i)| i).collect()
            }
        };
        let key: Vec<usize> = key.into_iter().filter(|i| columns[*i].kind.is_some()).collect();
        let key_schema = (!key.is_empty()).then(|| {
            let mut schema = Schema::structure().named(&format!("{name}.Key"));
            for &i in &key {
                if let Some(kind) = &columns[i].kind {
                    let default = columns[i].default.clone();
                    schema = schema.field(&catalog[i].name, values::schema_of(kind, !catalog[i].not_null, default));
                }
            }
            schema.build()
        });
        // Each key column's place among the columns written.
        let key_fields = key.iter().map(|&i| columns[..i].iter().filter(|c| c.kind.is_some()).count()).collect();
        let value_schema = value.build();
        let block = Schema::structure()
            .named("event.block")
            .version(1)
            .optional()
            .field("id", Schema::string().build())
            .field("total_order", Schema::int64().build())
            .field("data_collection_order", Schema::int64().build())
            .build();
        let envelope = Schema::structure()
            .named(&format!("{name}.Envelope"))
            .version(2)
            .field("before", value_schema.clone())
            .field("after", value_schema.clone())
            .field("source", source.clone())
            .field("transaction", block)
            .field("op", Schema::string().build())
            .field("ts_ms", Schema::int64().optional().build())
            .field("ts_us", Schema::int64().optional().build())
            .field("ts_ns", Schema::int64().optional().build())
            .build();
        Ok(Table {
            schema: schema.to_string(),
            table: table.to_string(),
            topic: name,
            columns,
            key_fields,
            key_schema,
            envelope,
        })
    }

    /// A row's value struct from its cells (`None` for NULL) in the table's column order; a
    /// cell `Unchanged` is an unchanged TOASTed value.
    pub fn row(&self, cells: &[Cell<'_>]) -> Result<Value, String> {
        let mut fields = Vec::with_capacity(cells.len());
        for (column, cell) in self.columns.iter().zip(cells) {
            let Some(kind) = &column.kind else { continue };
            fields.push(match cell {
                // A column the change leaves out (an old row's non-key column) that may not be
                // null: the type's zero, as Debezium writes it.
                Cell::Null if !column.optional => column.default.clone().unwrap_or_else(|| values::fallback(kind)),
                Cell::Null => Value::Null,
                Cell::Unchanged => values::unavailable(kind),
                Cell::Text(text) => {
                    let value = values::value_of(kind, text)
                        .map_err(|e| format!("column {} of {}.{}: {e}", column.name, self.schema, self.table))?;
                    // A numeric NaN, which a decimal cannot hold, in a column that may not be null.
                    match value {
                        Value::Null if !column.optional => {
                            column.default.clone().unwrap_or_else(|| values::fallback(kind))
                        }
                        value => value,
                    }
                }
            });
        }
        if cells.len() != self.columns.len() {
            return Err(format!(
                "a row of {}.{} has {} columns and the table {}",
                self.schema,
                self.table,
                cells.len(),
                self.columns.len()
            ));
        }
        Ok(Value::Struct(fields))
    }

    /// The key struct of a row's value struct (as `row` made it); none for a table without a key.
    pub fn key_of(&self, row: &Value) -> Option<Value> {
        let Value::Struct(fields) = row else { return None };
        let schema = self.key_schema.as_ref()?;
        let mut values = Vec::with_capacity(schema.fields.len());
        values.extend(self.key_fields.iter().map(|&at| fields.get(at).cloned().unwrap_or(Value::Null)));
        Some(Value::Struct(values))
    }
}

/// One column's value in a row.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    Null,
    Unchanged,
    Text(&'a str),
}

/// The `source` block's schema (`io.debezium.connector.postgresql.Source`).
fn source_schema() -> Arc<Schema> {
    let optional = |s: Schema| s.optional().build();
    Schema::structure()
        .named("io.debezium.connector.postgresql.Source")
        .version(1)
        .field("version", Schema::string().build())
        .field("connector", Schema::string().build())
        .field("name", Schema::string().build())
        .field("ts_ms", Schema::int64().build())
        .field(
            "snapshot",
            Schema::string()
                .named("io.debezium.data.Enum")
                .version(1)
                .parameter(
                    "allowed",
                    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental",
                )
                .default_value("false")
                .optional()
                .build(),
        )
        .field("db", Schema::string().build())
        .field("sequence", optional(Schema::string()))
        .field("ts_us", optional(Schema::int64()))
        .field("ts_ns", optional(Schema::int64()))
        .field("schema", Schema::string().build())
        .field("table", Schema::string().build())
        .field("txId", optional(Schema::int64()))
        .field("lsn", optional(Schema::int64()))
        .field("xmin", optional(Schema::int64()))
        .field("origin", optional(Schema::string()))
        .field("origin_lsn", optional(Schema::int64()))
        .build()
}

/// Where a record stands: the `source` block's varying fields and the offset stored beside it.
#[derive(Debug, Clone, Default)]
pub struct Position {
    /// The commit's (streaming) or the snapshot's time, in microseconds from the epoch.
    pub ts_us: i64,
    pub tx_id: Option<i64>,
    pub lsn: Option<u64>,
    /// The last change completely processed (streaming).
    pub lsn_proc: Option<u64>,
    /// The end of the last transaction completely processed (streaming).
    pub lsn_commit: Option<u64>,
    /// `INSERT`, `UPDATE`, `DELETE`, `TRUNCATE`, `BEGIN`, `COMMIT` (streaming).
    pub message_type: Option<&'static str>,
    /// Snapshot rows: `first`, `true`, `last_in_data_collection`, …; none while streaming.
    pub snapshot: Option<&'static str>,
    /// With `provide.transaction.metadata`: the transaction's id (its xid) while one is open,
    /// and each table's count of its events so far, in the order they came.
    pub transaction_id: Option<String>,
    pub collection_orders: Vec<(String, i64)>,
    /// The event's `transaction` block: its id, its place in the transaction and in its table's
    /// events of the transaction.
    pub block: Option<(String, i64, i64)>,
}

impl Position {
    /// The offset Debezium stores for a record at this position.
    pub fn offset(&self) -> OffsetMap {
        let mut map: OffsetMap = vec![("ts_usec".into(), Scalar::Integer(self.ts_us))];
        if let Some(tx) = self.tx_id {
            map.push(("txId".into(), Scalar::Integer(tx)));
        }
        if let Some(lsn) = self.lsn {
            map.push(("lsn".into(), Scalar::Integer(lsn as i64)));
        }
        if let Some(marker) = self.snapshot {
            let last = marker == "last";
            map.push(("snapshot".into(), Scalar::Text("INITIAL".into())));
            map.push(("last_snapshot_record".into(), Scalar::Boolean(last)));
            map.push(("snapshot_completed".into(), Scalar::Boolean(last)));
        }
        if let Some(lsn) = self.lsn_proc {
            map.push(("lsn_proc".into(), Scalar::Integer(lsn as i64)));
        }
        if let Some(lsn) = self.lsn_commit {
            map.push(("lsn_commit".into(), Scalar::Integer(lsn as i64)));
        }
        if let Some(kind) = self.message_type {
            map.push(("messageType".into(), Scalar::Text(kind.into())));
        }
        if let (Some(id), None) = (&self.transaction_id, self.snapshot) {
            map.push(("transaction_id".into(), Scalar::Text(id.clone())));
            for (table, order) in &self.collection_orders {
                map.push((format!("transaction_data_collection_order_{table}"), Scalar::Integer(*order)));
            }
        }
        map
    }
}

/// The source partition of every record: `{"server": <topic.prefix>}`.
fn partition(prefix: &str) -> OffsetMap {
    vec![("server".into(), Scalar::Text(prefix.to_string()))]
}

/// What makes records: the config's names and the schemas every table shares, made once.
pub struct Events {
    pub prefix: String,
    pub database: String,
    pub source: Arc<Schema>,
    pub partition: OffsetMap,
    pub tombstones: bool,
    heartbeat_key: Arc<Schema>,
    heartbeat_value: Arc<Schema>,
    transaction_key: Arc<Schema>,
    transaction_value: Arc<Schema>,
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

impl Events {
    pub fn new(prefix: &str, database: &str, tombstones: bool) -> Events {
        let collection = Schema::structure()
            .named("event.collection")
            .version(1)
            .optional()
            .field("data_collection", Schema::string().build())
            .field("event_count", Schema::int64().build())
            .build();
        Events {
            prefix: prefix.to_string(),
            database: database.to_string(),
            source: source_schema(),
            partition: partition(prefix),
            tombstones,
            heartbeat_key: Schema::structure()
                .named("io.debezium.connector.common.ServerNameKey")
                .version(1)
                .field("serverName", Schema::string().build())
                .build(),
            heartbeat_value: Schema::structure()
                .named("io.debezium.connector.common.Heartbeat")
                .version(1)
                .field("ts_ms", Schema::int64().build())
                .build(),
            transaction_key: Schema::structure()
                .named("io.debezium.connector.common.TransactionMetadataKey")
                .version(1)
                .field("id", Schema::string().build())
                .build(),
            transaction_value: Schema::structure()
                .named("io.debezium.connector.common.TransactionMetadataValue")
                .version(1)
                .field("status", Schema::string().build())
                .field("id", Schema::string().build())
                .field("event_count", Schema::int64().optional().build())
                .field("data_collections", Schema::array(collection).optional().build())
                .field("ts_ms", Schema::int64().build())
                .build(),
        }
    }

    /// A record of this connector's partition, at `at`.
    fn record(
        &self,
        topic: &str,
        partition: Option<i32>,
        key: Option<Part>,
        value: Option<Part>,
        at: &Position,
    ) -> SourceRecord {
        SourceRecord {
            source_partition: self.partition.clone(),
            source_offset: at.offset(),
            topic: topic.to_string(),
            partition,
            key,
            value,
            headers: Vec::new(),
            timestamp: None,
        }
    }

    fn source(&self, table: &Table, at: &Position) -> Value {
        let string = |s: &str| Value::String(s.to_string());
        let lsn_text = |lsn: Option<u64>| lsn.map_or("null".to_string(), |l| format!("\"{l}\""));
        let sequence = Value::String(format!("[{},{}]", lsn_text(at.lsn_commit), lsn_text(at.lsn)));
        Value::Struct(vec![
            string(DEBEZIUM_VERSION),
            string("postgresql"),
            string(&self.prefix),
            Value::Int64(at.ts_us.div_euclid(1000)),
            at.snapshot.map_or(Value::Null, string),
            string(&self.database),
            sequence,
            Value::Int64(at.ts_us),
            Value::Int64(at.ts_us.saturating_mul(1000)),
            string(&table.schema),
            string(&table.table),
            at.tx_id.map_or(Value::Null, Value::Int64),
            at.lsn.map_or(Value::Null, |l| Value::Int64(l as i64)),
            Value::Null,
            Value::Null,
            Value::Null,
        ])
    }

    /// A change event: `op` r, c, u, d or t, with `before` and `after` rows (value structs).
    pub fn change(
        &self,
        table: &Table,
        op: &str,
        before: Option<Value>,
        after: Option<Value>,
        key: Option<Value>,
        at: &Position,
    ) -> SourceRecord {
        let now = now_micros();
        let value = Value::Struct(vec![
            before.unwrap_or(Value::Null),
            after.unwrap_or(Value::Null),
            self.source(table, at),
            at.block.as_ref().map_or(Value::Null, |(id, total, in_table)| {
                Value::Struct(vec![Value::String(id.clone()), Value::Int64(*total), Value::Int64(*in_table)])
            }),
            Value::String(op.to_string()),
            Value::Int64(now.div_euclid(1000)),
            Value::Int64(now),
            Value::Int64(now.saturating_mul(1000)),
        ]);
        let key = match (&table.key_schema, key) {
            (Some(schema), Some(key)) if op != "t" => Some(Part::data(schema, key)),
            _ => None,
        };
        self.record(&table.topic, None, key, Some(Part::data(&table.envelope, value)), at)
    }

    /// The tombstone after a delete: its key (none for a table without one, as Debezium writes
    /// it), no value.
    pub fn tombstone(&self, table: &Table, key: Option<Value>, at: &Position) -> SourceRecord {
        let key = match (&table.key_schema, key) {
            (Some(schema), Some(key)) => Some(Part::data(schema, key)),
            _ => None,
        };
        self.record(&table.topic, None, key, None, at)
    }

    /// A transaction's BEGIN or END (`provide.transaction.metadata`) to `topic`: END with its
    /// event count and each table's, in the order Debezium writes them.
    pub fn transaction(
        &self,
        topic: &str,
        id: String,
        ts_ms: i64,
        end: Option<(i64, Vec<(String, i64)>)>,
        at: &Position,
    ) -> SourceRecord {
        let (status, count, collections) = match end {
            None => ("BEGIN", Value::Null, Value::Null),
            Some((count, collections)) => (
                "END",
                Value::Int64(count),
                Value::Array(
                    values::java_hash_map_order(collections)
                        .into_iter()
                        .map(|(table, n)| Value::Struct(vec![Value::String(table), Value::Int64(n)]))
                        .collect(),
                ),
            ),
        };
        let value = Value::Struct(vec![
            Value::String(status.into()),
            Value::String(id.clone()),
            count,
            collections,
            Value::Int64(ts_ms),
        ]);
        let key = Part::data(&self.transaction_key, Value::Struct(vec![Value::String(id)]));
        self.record(topic, None, Some(key), Some(Part::data(&self.transaction_value, value)), at)
    }

    /// A heartbeat to `topic`, carrying the position reached.
    pub fn heartbeat(&self, topic: &str, at: &Position) -> SourceRecord {
        let key = Part::data(&self.heartbeat_key, Value::Struct(vec![Value::String(self.prefix.clone())]));
        let value = Part::data(&self.heartbeat_value, Value::Struct(vec![Value::Int64(now_micros().div_euclid(1000))]));
        self.record(topic, Some(0), Some(key), Some(value), at)
    }
}
