//! Reads the flat tables of a data batch (`wit/connector.wit`, interface `data`) into the host's
//! data model, enforcing the contract's rules: a schema refers only to schemas before it, every
//! value is used at most once, every index is in its table, nesting stays within
//! `MAX_DATA_DEPTH`. A batch that breaks a rule is refused whole, with the rule and the index.

use std::sync::Arc;

use super::bindings::data_source::wharf::connector::data as wit;
use wharf_connect::data::{Data, Decimal, Field, Schema, Type, Value};
use wharf_connect::model::Part;

/// How deep values and schemas may nest (arrays in structs in maps…).
pub(super) const MAX_DATA_DEPTH: usize = 256;

/// How many schemas of the last batch a task keeps, to hand out the same `Arc` for a schema that
/// comes again (converters cache by `Arc`).
pub(super) const MAX_KEPT_SCHEMAS: usize = 64;

/// How large a batch's schemas may be: a schema table is a graph a plugin chooses, whose shared
/// parts host code (comparisons, converters, drops) walks once per use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SchemaBounds {
    /// `wasm.max.schema.depth`: levels one schema may nest (a struct in an array in a map…).
    pub max_depth: usize,
    /// `wasm.max.schema.nodes`: schema nodes one batch may hold, a shared schema counted at
    /// each use, as a walk of the schemas meets it.
    pub max_nodes: u64,
}

#[cfg(test)]
impl SchemaBounds {
    /// The worker's defaults (`WasmLimits::default`).
    pub(super) const DEFAULT: SchemaBounds = SchemaBounds { max_depth: 64, max_nodes: 100_000 };
}

pub(super) struct BatchReader {
    schemas: Vec<Arc<Schema>>,
    /// For each schema: how deep it nests and how many nodes it has with every use counted.
    shapes: Vec<(usize, u64)>,
    /// Each taken when it is used, so that a second use is seen.
    values: Vec<Option<wit::Value>>,
}

/// A record's key, value and headers, read from a batch.
pub(super) type RecordParts = (Option<Part>, Option<Part>, Vec<wharf_connect::model::PartHeader>);

impl BatchReader {
    /// `known`: schemas of an earlier batch; one equal to a schema of this batch stands for it.
    pub(super) fn new(
        schemas: Vec<wit::Schema>,
        values: Vec<wit::Value>,
        known: &[Arc<Schema>],
        bounds: SchemaBounds,
    ) -> Result<Self, String> {
        let mut reader = BatchReader {
            schemas: Vec::with_capacity(schemas.len()),
            shapes: Vec::with_capacity(schemas.len()),
            values: values.into_iter().map(Some).collect(),
        };
        let mut total: u64 = 0;
        for (index, schema) in schemas.into_iter().enumerate() {
            let (depth, nodes) = reader.shape(index, &schema).map_err(|e| format!("schema {index}: {e}"))?;
            if depth > bounds.max_depth {
                return Err(format!(
                    "schema {index} nests {depth} levels, more than wasm.max.schema.depth={}",
                    bounds.max_depth
                ));
            }
            total = total.saturating_add(nodes);
            if total > bounds.max_nodes {
                return Err(format!(
                    "the batch's schemas up to schema {index} hold {total} nodes (a shared schema counted at each \
                     use), more than wasm.max.schema.nodes={}",
                    bounds.max_nodes
                ));
            }
            reader.shapes.push((depth, nodes));
            let built = reader.schema(index, schema).map_err(|e| format!("schema {index}: {e}"))?;
            // Within the bounds above, a comparison walks at most `max_nodes` nodes.
            let built = known.iter().find(|k| ***k == built).cloned().unwrap_or_else(|| Arc::new(built));
            reader.schemas.push(built);
        }
        Ok(reader)
    }

    /// How deep the schema at `index` nests and how many nodes it has, every use of a shared
    /// child counted, from its children's, which come before it.
    fn shape(&self, index: usize, s: &wit::Schema) -> Result<(usize, u64), String> {
        let children = s.fields.iter().map(|f| f.schema).chain(s.key_schema).chain(s.value_schema);
        let (mut depth, mut nodes) = (1usize, 1u64);
        for child in children {
            let Some(&(d, n)) = self.shapes.get(child as usize).filter(|_| (child as usize) < index) else {
                return Err(format!(
                    "refers to schema {child}, which is not listed before it (a schema may refer only to schemas \
                     before it)"
                ));
            };
            depth = depth.max(d + 1);
            nodes = nodes.saturating_add(n);
        }
        Ok((depth, nodes))
    }

    /// Whether the batch has no schemas.
    pub(super) fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }

    /// This batch's schemas (at most `MAX_KEPT_SCHEMAS`), to know in the next one.
    pub(super) fn kept_schemas(&self) -> Vec<Arc<Schema>> {
        self.schemas.iter().take(MAX_KEPT_SCHEMAS).cloned().collect()
    }

    /// A schema listed before `index`.
    fn earlier(&self, index: usize, child: u32) -> Result<Arc<Schema>, String> {
        let child = child as usize;
        if child >= index {
            return Err(format!(
                "refers to schema {child}, which is not listed before it (a schema may refer only to schemas \
                 before it)"
            ));
        }
        Ok(self.schemas[child].clone())
    }

    fn schema(&mut self, index: usize, s: wit::Schema) -> Result<Schema, String> {
        let kind = kind_from_wit(s.type_);
        let mut fields = Vec::with_capacity(s.fields.len());
        let mut names = std::collections::HashSet::with_capacity(s.fields.len());
        for field in s.fields {
            if !names.insert(field.name.clone()) {
                return Err(format!("has two fields named {:?}", field.name));
            }
            fields.push(Field { name: field.name, schema: self.earlier(index, field.schema)? });
        }
        let key = s.key_schema.map(|k| self.earlier(index, k)).transpose()?;
        let value = s.value_schema.map(|v| self.earlier(index, v)).transpose()?;
        let shape_ok = match kind {
            Type::Array => value.is_some() && key.is_none() && fields.is_empty(),
            Type::Map => value.is_some() && key.is_some() && fields.is_empty(),
            Type::Struct => value.is_none() && key.is_none(),
            _ => value.is_none() && key.is_none() && fields.is_empty(),
        };
        if !shape_ok {
            return Err(format!(
                "a {kind} schema has {}; an array has a value schema, a map a key and a value schema, a struct fields, \
                 and a primitive none of these",
                describe_children(&fields, &key, &value)
            ));
        }
        let mut schema = Schema {
            kind,
            optional: s.optional,
            default: None,
            name: s.name,
            version: s.version,
            doc: s.doc,
            parameters: s.parameters,
            fields,
            key,
            value,
        };
        if let Some(default) = s.default_value {
            let value = self.value(default, 0).map_err(|e| format!("its default: {e}"))?;
            if value != Value::Null {
                schema.default = Some(value);
            }
        }
        Ok(schema)
    }

    /// The value at `index`, taken from the table.
    fn value(&mut self, index: u32, depth: usize) -> Result<Value, String> {
        if depth > MAX_DATA_DEPTH {
            return Err(format!("values nest deeper than {MAX_DATA_DEPTH} levels"));
        }
        let len = self.values.len();
        let slot = self
            .values
            .get_mut(index as usize)
            .ok_or_else(|| format!("refers to value {index}, beyond the batch's {len} values"))?;
        let node = slot.take().ok_or_else(|| {
            format!(
                "value {index} is used a second time (every value may be used once: by one record, parent or default)"
            )
        })?;
        let children = |reader: &mut Self, indices: Vec<u32>| -> Result<Vec<Value>, String> {
            indices.into_iter().map(|i| reader.value(i, depth + 1)).collect()
        };
        Ok(match node {
            wit::Value::Null => Value::Null,
            wit::Value::Boolean(b) => Value::Boolean(b),
            wit::Value::Int8(n) => Value::Int8(n),
            wit::Value::Int16(n) => Value::Int16(n),
            wit::Value::Int32(n) => Value::Int32(n),
            wit::Value::Int64(n) => Value::Int64(n),
            wit::Value::Float32(x) => Value::Float32(x),
            wit::Value::Float64(x) => Value::Float64(x),
            wit::Value::String(s) => Value::String(s),
            wit::Value::Bytes(b) => Value::Bytes(b),
            wit::Value::Array(elements) => Value::Array(children(self, elements)?),
            wit::Value::Map(entries) => {
                let mut read = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    read.push((self.value(k, depth + 1)?, self.value(v, depth + 1)?));
                }
                Value::Map(read)
            }
            wit::Value::Struct(fields) => Value::Struct(children(self, fields)?),
            wit::Value::Decimal(d) => {
                Value::Decimal(Decimal::from_unscaled_bytes(&d.unscaled, d.scale).map_err(|e| e.message)?)
            }
        })
    }

    /// A record's key, value and headers; the error names the record (`index` in its batch) and
    /// the part.
    pub(super) fn record_parts(
        &mut self,
        index: usize,
        key: Option<wit::Part>,
        value: Option<wit::Part>,
        headers: Vec<wit::Header>,
    ) -> Result<RecordParts, String> {
        let key =
            key.map(|k| self.part(k).map_err(|e| format!("record {index} of the batch, its key: {e}"))).transpose()?;
        let value = value
            .map(|v| self.part(v).map_err(|e| format!("record {index} of the batch, its value: {e}")))
            .transpose()?;
        let headers = headers
            .into_iter()
            .map(|h| {
                let value = h
                    .value
                    .map(|v| {
                        self.part(v).map_err(|e| format!("record {index} of the batch, its header {:?}: {e}", h.key))
                    })
                    .transpose()?;
                Ok(wharf_connect::model::PartHeader { key: h.key, value })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok((key, value, headers))
    }

    pub(super) fn part(&mut self, part: wit::Part) -> Result<Part, String> {
        match part {
            wit::Part::Raw(bytes) => Ok(Part::Bytes(bytes)),
            wit::Part::Data(datum) => {
                let schema =
                    match datum.schema {
                        None => None,
                        Some(i) => Some(self.schemas.get(i as usize).cloned().ok_or_else(|| {
                            format!("refers to schema {i}, beyond the batch's {}", self.schemas.len())
                        })?),
                    };
                Ok(Part::Data(Data { schema, value: self.value(datum.value, 0)? }))
            }
        }
    }
}

fn describe_children(fields: &[Field], key: &Option<Arc<Schema>>, value: &Option<Arc<Schema>>) -> String {
    let mut parts = Vec::new();
    if !fields.is_empty() {
        parts.push(format!("{} fields", fields.len()));
    }
    if key.is_some() {
        parts.push("a key schema".to_string());
    }
    if value.is_some() {
        parts.push("a value schema".to_string());
    }
    if parts.is_empty() {
        "none of these".to_string()
    } else {
        parts.join(" and ")
    }
}

/// Lays records out as a data sink's batch: each schema once (by `Arc`: the converters hand out
/// one per distinct schema), every value in one table.
#[derive(Default)]
pub(super) struct BatchWriter {
    schemas: Vec<wit::Schema>,
    /// By address, with the `Arc` held so that no other schema takes the address meanwhile.
    known: std::collections::HashMap<*const Schema, (u32, Arc<Schema>)>,
    values: Vec<wit::Value>,
}

impl BatchWriter {
    fn schema(&mut self, schema: &Arc<Schema>) -> u32 {
        if let Some((index, _)) = self.known.get(&Arc::as_ptr(schema)) {
            return *index;
        }
        let fields =
            schema.fields.iter().map(|f| wit::Field { name: f.name.clone(), schema: self.schema(&f.schema) }).collect();
        let key_schema = schema.key.as_ref().map(|k| self.schema(k));
        let value_schema = schema.value.as_ref().map(|v| self.schema(v));
        let default_value = schema.default.as_ref().map(|d| self.value(d));
        self.schemas.push(wit::Schema {
            type_: kind_to_wit(schema.kind),
            optional: schema.optional,
            default_value,
            name: schema.name.clone(),
            version: schema.version,
            doc: schema.doc.clone(),
            parameters: schema.parameters.clone(),
            fields,
            key_schema,
            value_schema,
        });
        let index = (self.schemas.len() - 1) as u32;
        self.known.insert(Arc::as_ptr(schema), (index, schema.clone()));
        index
    }

    fn value(&mut self, value: &Value) -> u32 {
        let node = match value {
            Value::Null => wit::Value::Null,
            Value::Boolean(b) => wit::Value::Boolean(*b),
            Value::Int8(n) => wit::Value::Int8(*n),
            Value::Int16(n) => wit::Value::Int16(*n),
            Value::Int32(n) => wit::Value::Int32(*n),
            Value::Int64(n) => wit::Value::Int64(*n),
            Value::Float32(x) => wit::Value::Float32(*x),
            Value::Float64(x) => wit::Value::Float64(*x),
            Value::String(s) => wit::Value::String(s.clone()),
            Value::Bytes(b) => wit::Value::Bytes(b.clone()),
            Value::Array(elements) => wit::Value::Array(elements.iter().map(|e| self.value(e)).collect()),
            Value::Map(entries) => {
                wit::Value::Map(entries.iter().map(|(k, v)| (self.value(k), self.value(v))).collect())
            }
            Value::Struct(values) => wit::Value::Struct(values.iter().map(|v| self.value(v)).collect()),
            Value::Decimal(d) => {
                wit::Value::Decimal(wit::Decimal { unscaled: d.unscaled_bytes().to_vec(), scale: d.scale() })
            }
        };
        self.values.push(node);
        (self.values.len() - 1) as u32
    }

    fn part(&mut self, part: Part) -> wit::Part {
        match part {
            Part::Bytes(bytes) => wit::Part::Raw(bytes),
            Part::Data(data) => {
                let schema = data.schema.as_ref().map(|s| self.schema(s));
                wit::Part::Data(wit::Datum { schema, value: self.value(&data.value) })
            }
        }
    }

    fn headers(&mut self, headers: Vec<wharf_connect::model::PartHeader>) -> Vec<wit::Header> {
        headers.into_iter().map(|h| wit::Header { key: h.key, value: h.value.map(|v| self.part(v)) }).collect()
    }

    /// The batch of `records`.
    pub(super) fn sink_batch(records: Vec<wharf_connect::model::SinkRecord>) -> super::bindings::SinkBatch {
        let mut writer = BatchWriter::default();
        let records = records
            .into_iter()
            .map(|r| super::bindings::DataSinkRecord {
                topic: r.topic,
                partition: r.partition,
                offset: r.offset,
                key: r.key.map(|k| writer.part(k)),
                value: r.value.map(|v| writer.part(v)),
                headers: writer.headers(r.headers),
                timestamp: r.timestamp,
            })
            .collect();
        super::bindings::SinkBatch { schemas: writer.schemas, values: writer.values, records }
    }

    /// The batch of `records` for a transform plugin.
    pub(super) fn transform_batch(
        records: Vec<wharf_connect::model::ConnectRecord>,
    ) -> super::bindings::TransformBatch {
        let mut writer = BatchWriter::default();
        let records = records
            .into_iter()
            .map(|r| super::bindings::TransformRecord {
                topic: r.topic,
                partition: r.partition,
                key: r.key.map(|k| writer.part(k)),
                value: r.value.map(|v| writer.part(v)),
                headers: writer.headers(r.headers),
                timestamp: r.timestamp,
            })
            .collect();
        super::bindings::TransformBatch { schemas: writer.schemas, values: writer.values, records }
    }
}

/// Bytes a key or value counts for in `wasm.max.bytes.per.call`: its bytes, or its data's text
/// and bytes and 8 for each other value.
pub(super) fn part_bytes(part: &Part) -> usize {
    fn value_bytes(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len(),
            Value::Bytes(b) => b.len(),
            Value::Decimal(d) => d.unscaled_bytes().len() + 4,
            Value::Array(children) | Value::Struct(children) => children.iter().map(value_bytes).sum::<usize>() + 4,
            Value::Map(entries) => entries.iter().map(|(k, v)| value_bytes(k) + value_bytes(v)).sum::<usize>() + 4,
            _ => 8,
        }
    }
    match part {
        Part::Bytes(bytes) => bytes.len(),
        Part::Data(data) => value_bytes(&data.value),
    }
}

/// The contract's types and the host's, one to one.
const KINDS: [(Type, wit::SchemaType); 12] = [
    (Type::Int8, wit::SchemaType::Int8),
    (Type::Int16, wit::SchemaType::Int16),
    (Type::Int32, wit::SchemaType::Int32),
    (Type::Int64, wit::SchemaType::Int64),
    (Type::Float32, wit::SchemaType::Float32),
    (Type::Float64, wit::SchemaType::Float64),
    (Type::Boolean, wit::SchemaType::Boolean),
    (Type::String, wit::SchemaType::String),
    (Type::Bytes, wit::SchemaType::Bytes),
    (Type::Array, wit::SchemaType::Array),
    (Type::Map, wit::SchemaType::Map),
    (Type::Struct, wit::SchemaType::Struct),
];

fn kind_to_wit(kind: Type) -> wit::SchemaType {
    KINDS.iter().find(|(k, _)| *k == kind).map_or(wit::SchemaType::Bytes, |(_, w)| *w)
}

fn kind_from_wit(kind: wit::SchemaType) -> Type {
    KINDS.iter().find(|(_, w)| *w == kind).map_or(Type::Bytes, |(k, _)| *k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(kind: wit::SchemaType) -> wit::Schema {
        wit::Schema {
            type_: kind,
            optional: false,
            default_value: None,
            name: None,
            version: None,
            doc: None,
            parameters: None,
            fields: Vec::new(),
            key_schema: None,
            value_schema: None,
        }
    }

    fn data(schema: Option<u32>, value: u32) -> wit::Part {
        wit::Part::Data(wit::Datum { schema, value })
    }

    #[test]
    fn a_struct_batch_reads_into_shared_schemas() {
        let person = wit::Schema {
            fields: vec![wit::Field { name: "name".into(), schema: 0 }, wit::Field { name: "age".into(), schema: 1 }],
            ..schema(wit::SchemaType::Struct)
        };
        let values = vec![
            wit::Value::String("ada".into()),
            wit::Value::Int32(36),
            wit::Value::Struct(vec![0, 1]),
            wit::Value::String("bob".into()),
            wit::Value::Int32(7),
            wit::Value::Struct(vec![3, 4]),
        ];
        let mut reader = BatchReader::new(
            vec![schema(wit::SchemaType::String), schema(wit::SchemaType::Int32), person],
            values,
            &[],
            SchemaBounds::DEFAULT,
        )
        .unwrap();
        let (Part::Data(a), Part::Data(b)) =
            (reader.part(data(Some(2), 2)).unwrap(), reader.part(data(Some(2), 5)).unwrap())
        else {
            panic!("data expected")
        };
        assert_eq!(a.value, Value::Struct(vec![Value::String("ada".into()), Value::Int32(36)]));
        assert!(Arc::ptr_eq(a.schema.as_ref().unwrap(), b.schema.as_ref().unwrap()));
        assert_eq!(a.schema.as_ref().unwrap().fields[1].schema.kind, Type::Int32);
        assert_eq!(reader.part(wit::Part::Raw(vec![1, 2])).unwrap(), Part::Bytes(vec![1, 2]));
    }

    #[test]
    fn a_schema_that_comes_again_in_a_later_batch_is_the_same_arc() {
        let first =
            BatchReader::new(vec![schema(wit::SchemaType::String)], Vec::new(), &[], SchemaBounds::DEFAULT).unwrap();
        let kept = first.kept_schemas();
        let second =
            BatchReader::new(vec![schema(wit::SchemaType::String)], Vec::new(), &kept, SchemaBounds::DEFAULT).unwrap();
        assert!(Arc::ptr_eq(&kept[0], &second.kept_schemas()[0]));
        let other =
            BatchReader::new(vec![schema(wit::SchemaType::Int8)], Vec::new(), &kept, SchemaBounds::DEFAULT).unwrap();
        assert!(!Arc::ptr_eq(&kept[0], &other.kept_schemas()[0]));
    }

    /// Schema `i` is an array of schema `i - 1`; schema 0 is a string.
    fn chain(length: usize) -> Vec<wit::Schema> {
        let mut schemas = vec![schema(wit::SchemaType::String)];
        for i in 1..length {
            schemas.push(wit::Schema { value_schema: Some(i as u32 - 1), ..schema(wit::SchemaType::Array) });
        }
        schemas
    }

    #[test]
    fn schema_depth_is_bounded_at_the_bound_and_refused_one_past_it() {
        let bounds = SchemaBounds::DEFAULT;
        assert!(BatchReader::new(chain(bounds.max_depth), Vec::new(), &[], bounds).is_ok());
        let e = BatchReader::new(chain(bounds.max_depth + 1), Vec::new(), &[], bounds).err().unwrap();
        assert!(e.contains("nests 65 levels, more than wasm.max.schema.depth=64"), "{e}");
        // A chain of half a million is refused as it is read, without deep recursion.
        let e = BatchReader::new(chain(500_000), Vec::new(), &[], bounds).err().unwrap();
        assert!(e.contains("wasm.max.schema.depth"), "{e}");
    }

    #[test]
    fn shared_schemas_count_at_each_use_and_the_total_is_bounded() {
        // Schema i is a struct of two fields, both schema i - 1: 2^(i+1) - 1 nodes when walked.
        let mut doubling = vec![schema(wit::SchemaType::Int8)];
        for i in 1..64u32 {
            doubling.push(wit::Schema {
                fields: vec![
                    wit::Field { name: "a".into(), schema: i - 1 },
                    wit::Field { name: "b".into(), schema: i - 1 },
                ],
                ..schema(wit::SchemaType::Struct)
            });
        }
        let e = BatchReader::new(doubling, Vec::new(), &[], SchemaBounds::DEFAULT).err().unwrap();
        assert!(e.contains("more than wasm.max.schema.nodes=100000"), "{e}");
        // Three schemas of 1, 2 and 3 nodes: 6 in all.
        let bounds = |max_nodes| SchemaBounds { max_depth: 64, max_nodes };
        assert!(BatchReader::new(chain(3), Vec::new(), &[], bounds(6)).is_ok());
        let e = BatchReader::new(chain(3), Vec::new(), &[], bounds(5)).err().unwrap();
        assert!(e.contains("hold 6 nodes"), "{e}");
    }

    #[test]
    fn many_fields_are_checked_for_duplicates_in_linear_time() {
        let fields: Vec<wit::Field> = (0..200_000).map(|i| wit::Field { name: format!("f{i}"), schema: 0 }).collect();
        let wide = wit::Schema { fields, ..schema(wit::SchemaType::Struct) };
        let bounds = SchemaBounds { max_depth: 64, max_nodes: 1_000_000 };
        assert!(BatchReader::new(vec![schema(wit::SchemaType::Int8), wide], Vec::new(), &[], bounds).is_ok());
    }

    #[test]
    fn batches_that_break_the_rules_are_refused_with_the_rule() {
        // A schema that refers forward (or to itself) could make a cycle.
        let forward = wit::Schema { value_schema: Some(0), ..schema(wit::SchemaType::Array) };
        let e = BatchReader::new(vec![forward], Vec::new(), &[], SchemaBounds::DEFAULT).err().unwrap();
        assert!(e.contains("not listed before it"), "{e}");
        // A value used twice could make a batch grow without bound as it is read.
        let values = vec![wit::Value::Int8(1), wit::Value::Array(vec![0, 0])];
        let mut reader = BatchReader::new(Vec::new(), values, &[], SchemaBounds::DEFAULT).unwrap();
        let e = reader.part(data(None, 1)).unwrap_err();
        assert!(e.contains("used a second time"), "{e}");
        let mut reader = BatchReader::new(Vec::new(), vec![wit::Value::Null], &[], SchemaBounds::DEFAULT).unwrap();
        assert!(reader.part(data(None, 5)).unwrap_err().contains("beyond"));
        assert!(reader.part(data(Some(0), 0)).unwrap_err().contains("refers to schema 0"));
        // Nesting deeper than the bound.
        let mut deep: Vec<wit::Value> = vec![wit::Value::Null];
        for i in 0..(MAX_DATA_DEPTH as u32 + 2) {
            deep.push(wit::Value::Array(vec![i]));
        }
        let top = deep.len() as u32 - 1;
        let mut reader = BatchReader::new(Vec::new(), deep, &[], SchemaBounds::DEFAULT).unwrap();
        assert!(reader.part(data(None, top)).unwrap_err().contains("nest deeper"));
        // A map schema without its key schema.
        let bad = wit::Schema { value_schema: Some(0), ..schema(wit::SchemaType::Map) };
        let e = BatchReader::new(vec![schema(wit::SchemaType::Int8), bad], Vec::new(), &[], SchemaBounds::DEFAULT)
            .err()
            .unwrap();
        assert!(e.contains("a map a key and a value schema"), "{e}");
        let empty = wit::Value::Decimal(wit::Decimal { unscaled: Vec::new(), scale: 0 });
        let mut reader = BatchReader::new(Vec::new(), vec![empty], &[], SchemaBounds::DEFAULT).unwrap();
        assert!(reader.part(data(None, 0)).unwrap_err().contains("empty"));
    }
}
