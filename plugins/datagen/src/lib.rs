//! Generates synthetic records for demos and benchmarks: a fixed count or an endless stream, at
//! a set rate or as fast as the host takes them, with chosen key and value sizes. The same seed
//! gives the same records. Each task resumes after the last sequence number it stored.
//!
//! A value is one line of printable text: the 20-digit sequence number, a space, and letters
//! filling it up to `value.size` bytes. With `value.format=bytes` (the default) it goes to Kafka
//! as it is; `string` makes it Connect data with a string schema, and `struct` a struct of ten
//! fields (`wharf.datagen.Record`), both for the worker's value converter to write. With
//! `headers=true` each record also carries the headers `sequence` (an int64) and `created` (a
//! `Timestamp`) as data, for the header converter to write.

use std::sync::Arc;
use std::time::Instant;

use wharf_sdk::*;

struct Datagen;

impl Connector for Datagen {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "datagen".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Generates synthetic records (count or rate, key and value sizes, seed)".into(),
            kind: ConnectorKind::Source,
            config: vec![
                required_key("topic", ConfigType::String, "The topic to write to."),
                optional_key(
                    "count",
                    ConfigType::Long,
                    "-1",
                    "How many records in all, over every task; -1 never stops.",
                ),
                optional_key(
                    "rate",
                    ConfigType::Double,
                    "0",
                    "Records per second for each task; 0 is as fast as possible.",
                ),
                optional_key("key.size", ConfigType::Int, "0", "Key bytes; 0 sends no key."),
                optional_key("value.size", ConfigType::Int, "100", "Value bytes (at least 21)."),
                optional_key("seed", ConfigType::Long, "0", "Seed of the generated letters."),
                optional_key(
                    "value.format",
                    ConfigType::String,
                    "bytes",
                    "bytes (the line as it is), string (the line with a string schema) or struct (ten fields: \
                     sequence, task, name, text, even, ratio, score, small, tiny, created), for value.converter \
                     to write.",
                ),
                optional_key(
                    "headers",
                    ConfigType::Boolean,
                    "false",
                    "true adds the headers sequence (int64) and created (Timestamp) as data, for header.converter \
                     to write.",
                ),
            ],
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        match config.parse_or("value.size", 100u32) {
            Ok(size) if size < 21 => problems.push(ConfigProblem {
                name: "value.size".into(),
                message: "must be at least 21 bytes, to hold the sequence number".into(),
            }),
            Err(ConnectorError::Fatal(message) | ConnectorError::Retriable(message)) => {
                problems.push(ConfigProblem { name: "value.size".into(), message })
            }
            Ok(_) => {}
        }
        if let Err(ConnectorError::Fatal(message) | ConnectorError::Retriable(message)) = config.parse_or("rate", 0f64)
        {
            problems.push(ConfigProblem { name: "rate".into(), message });
        }
        if let Err(ConnectorError::Fatal(message) | ConnectorError::Retriable(message)) = Format::of(config) {
            problems.push(ConfigProblem { name: "value.format".into(), message });
        }
        problems
    }

    fn task_configs(config: &Config, max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        let tasks = max_tasks.max(1);
        Ok((0..tasks)
            .map(|index| {
                let mut task = config.clone();
                task.set("datagen.task.index", index.to_string());
                task.set("datagen.task.count", tasks.to_string());
                task
            })
            .collect())
    }
}

/// What a value is.
enum Format {
    Bytes,
    String(Arc<Schema>),
    Struct(Arc<Schema>),
}

impl Format {
    fn of(config: &Config) -> Result<Self, ConnectorError> {
        match config.get("value.format").map(str::trim).unwrap_or("bytes") {
            "bytes" => Ok(Format::Bytes),
            "string" => Ok(Format::String(Schema::string().build())),
            "struct" => Ok(Format::Struct(
                Schema::structure()
                    .named("wharf.datagen.Record")
                    .version(1)
                    .doc("A record made up by datagen")
                    .field("sequence", Schema::int64().build())
                    .field("task", Schema::int32().build())
                    .field("name", Schema::string().build())
                    .field("text", Schema::string().build())
                    .field("even", Schema::boolean().build())
                    .field("ratio", Schema::float64().build())
                    .field("score", Schema::float32().optional().build())
                    .field("small", Schema::int16().build())
                    .field("tiny", Schema::int8().build())
                    .field("created", Schema::timestamp().build())
                    .build(),
            )),
            other => Err(ConnectorError::Fatal(format!(
                "invalid value \"{other}\" for configuration \"value.format\": expected bytes, string or struct"
            ))),
        }
    }
}

struct DatagenTask {
    topic: String,
    format: Format,
    /// The schemas of the `sequence` and `created` headers, when there are headers.
    headers: Option<(Arc<Schema>, Arc<Schema>)>,
    /// Sequence numbers of this task are index, index + stride, index + 2·stride, …
    next: i64,
    stride: i64,
    count: i64,
    rate: f64,
    key_size: usize,
    value_size: usize,
    seed: u64,
    index: i64,
    started: Instant,
    emitted_since_start: u64,
}

/// A fast, well-mixed hash of a 64-bit number (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn letters(seed: u64, out: &mut Vec<u8>, len: usize) {
    let mut state = seed;
    while out.len() < len {
        state = mix(state);
        for byte in state.to_le_bytes() {
            if out.len() == len {
                break;
            }
            out.push(b'a' + byte % 26);
        }
    }
}

impl DatagenTask {
    fn partition(&self) -> OffsetMap {
        vec![("datagen.task".into(), Scalar::Integer(self.index))]
    }

    fn record(&self, seq: i64) -> SourceRecord {
        let mut value = Vec::with_capacity(self.value_size);
        value.extend_from_slice(format!("{seq:020} ").as_bytes());
        letters(self.seed ^ mix(seq as u64), &mut value, self.value_size);
        let key = (self.key_size > 0).then(|| {
            let mut key = Vec::with_capacity(self.key_size);
            letters(mix(self.seed) ^ seq as u64, &mut key, self.key_size);
            Part::Bytes(key)
        });
        let value = match &self.format {
            Format::Bytes => Part::Bytes(value),
            Format::String(schema) => Part::data(schema, String::from_utf8_lossy(&value).into_owned()),
            Format::Struct(schema) => {
                let text = String::from_utf8_lossy(&value[21..]).into_owned();
                let hash = mix(self.seed ^ seq as u64);
                Part::data(
                    schema,
                    Value::structure([
                        Value::Int64(seq),
                        Value::Int32(self.index as i32),
                        Value::String(format!("record-{seq}")),
                        Value::String(text),
                        Value::Boolean(seq % 2 == 0),
                        Value::Float64((hash % 10_000) as f64 / 100.0),
                        if seq % 10 == 9 { Value::Null } else { Value::Float32((hash % 1000) as f32 / 8.0) },
                        Value::Int16((hash % 30_000) as i16),
                        Value::Int8((seq % 100) as i8),
                        Value::Int64(1_700_000_000_000 + seq * 1000),
                    ]),
                )
            }
        };
        let headers = match &self.headers {
            Some((sequence, created)) => vec![
                Header::new("sequence", Part::data(sequence, Value::Int64(seq))),
                Header::new("created", Part::data(created, Value::Int64(1_700_000_000_000 + seq * 1000))),
            ],
            None => Vec::new(),
        };
        SourceRecord {
            key,
            headers,
            ..source_record(self.partition(), vec![("sequence".into(), Scalar::Integer(seq))], &self.topic, value)
        }
    }

    /// How many records the rate allows now.
    fn allowance(&self) -> u64 {
        if self.rate <= 0.0 {
            return u64::MAX;
        }
        let due = (self.started.elapsed().as_secs_f64() * self.rate) as u64;
        due.saturating_sub(self.emitted_since_start)
    }
}

impl SourceTask for DatagenTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let index = config.parse_or("datagen.task.index", 0i64)?;
        let stride = config.parse_or("datagen.task.count", 1i64)?.max(1);
        let mut task = DatagenTask {
            topic: config.require("topic")?.to_string(),
            format: Format::of(&config)?,
            headers: config.parse_or("headers", false)?.then(|| (Schema::int64().build(), Schema::timestamp().build())),
            next: index,
            stride,
            count: config.parse_or("count", -1i64)?,
            rate: config.parse_or("rate", 0f64)?,
            key_size: config.parse_or("key.size", 0usize)?,
            value_size: config.parse_or("value.size", 100usize)?.max(21),
            seed: config.parse_or("seed", 0u64)?,
            index,
            started: Instant::now(),
            emitted_since_start: 0,
        };
        if let Some(last) = committed_offset(&task.partition()).and_then(|o| offset_integer(&o, "sequence")) {
            task.next = last + stride;
            log(Level::Info, &format!("resuming after sequence number {last}"));
        }
        Ok(task)
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        let mut n = u64::from(max_records).min(self.allowance());
        if self.count >= 0 {
            let left = (self.count - self.next).max(0) as u64;
            n = n.min(left.div_ceil(self.stride as u64));
        }
        let records: Vec<SourceRecord> = (0..n as i64).map(|i| self.record(self.next + i * self.stride)).collect();
        self.next += n as i64 * self.stride;
        self.emitted_since_start += n;
        Ok(records)
    }
}

impl SourceConnector for Datagen {
    type Task = DatagenTask;

    /// Exactly once: each record carries its sequence number as its offset, and a task resumes
    /// right after the last one committed.
    fn exactly_once_support(_config: &Config) -> Option<Capability> {
        Some(Capability::Supported)
    }
}

source_connector!(Datagen);
