//! A sink that appends record values to a file, one line each, but refuses every
//! `fail.every`-th call of `put` with a retriable error before writing anything. The host must
//! deliver the refused records again, and nothing after them first: the file then holds every
//! record exactly once, in order. With `headers=true` each line ends with the record's headers
//! as the sink received them: ` | key=Value` for data (`name:Value` under a named schema), `key=`
//! and the text for bytes. With `errant.marker` set, a record whose value holds that text is not
//! written but reported to the host as errant (the errant record reporter). With `refuse.marker`
//! set, every put whose batch holds a record whose value holds that text is refused with a
//! retriable error, as by a system that never takes that record. With `file.per.task=true` the
//! connector runs `tasks.max` tasks, task `i` appending to `<file>.<i>`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};

use wharf_sdk::*;

struct FlakySink;

impl Connector for FlakySink {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-flaky-sink".into(),
            version: "0.1.0".into(),
            description: "Refuses some puts with a retriable error (for tests)".into(),
            kind: ConnectorKind::Sink,
            config: vec![
                required_key("file", ConfigType::String, "The file to append to"),
                required_key("topics", ConfigType::List, "The topics to read"),
                optional_key("fail.every", ConfigType::Int, "3", "Refuse every n-th put"),
                optional_key("headers", ConfigType::Boolean, "false", "Write each record's headers after its value"),
                optional_key("errant.marker", ConfigType::String, "", "Report records whose value holds this text"),
                optional_key(
                    "refuse.marker",
                    ConfigType::String,
                    "",
                    "Refuse every put of a record whose value holds this text",
                ),
                optional_key(
                    "file.per.task",
                    ConfigType::Boolean,
                    "false",
                    "Run tasks.max tasks, task i appending to <file>.<i>",
                ),
            ],
        }
    }

    fn task_configs(config: &Config, max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        if !config.parse_or("file.per.task", false)? {
            return Ok(vec![config.clone()]);
        }
        let file = config.require("file")?.to_string();
        Ok((0..max_tasks.max(1))
            .map(|i| {
                let mut task = config.clone();
                task.set("file", format!("{file}.{i}"));
                task
            })
            .collect())
    }
}

struct FlakySinkTask {
    out: BufWriter<File>,
    fail_every: u64,
    puts: u64,
    headers: bool,
    errant_marker: Option<String>,
    refuse_marker: Option<String>,
}

/// A header as the line shows it.
fn describe(header: &Header) -> String {
    let value = match &header.value {
        None => "null".to_string(),
        Some(Part::Bytes(bytes)) => format!("bytes:{}", String::from_utf8_lossy(bytes)),
        Some(Part::Data { schema, value }) => match schema.as_ref().and_then(|s| s.name.as_deref()) {
            Some(name) => format!("{name}:{value:?}"),
            None => format!("{value:?}"),
        },
    };
    format!("{}={value}", header.key)
}

fn contains(value: &[u8], text: &str) -> bool {
    value.windows(text.len().max(1)).any(|w| w == text.as_bytes())
}

fn io_error(e: std::io::Error) -> ConnectorError {
    ConnectorError::Fatal(e.to_string())
}

impl SinkTask for FlakySinkTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let path = config.require("file")?;
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(io_error)?;
        let fail_every: u64 = config.parse_or("fail.every", 3)?;
        let headers = config.parse_or("headers", false)?;
        let marker = |key: &str| config.get(key).filter(|m| !m.is_empty()).map(String::from);
        Ok(FlakySinkTask {
            out: BufWriter::new(file),
            fail_every: fail_every.max(1),
            puts: 0,
            headers,
            errant_marker: marker("errant.marker"),
            refuse_marker: marker("refuse.marker"),
        })
    }

    fn put(&mut self, records: Vec<SinkRecord>) -> Result<(), ConnectorError> {
        self.puts += 1;
        if self.puts.is_multiple_of(self.fail_every) {
            return Err(ConnectorError::Retriable(format!("put number {} refused on purpose", self.puts)));
        }
        if let Some(marker) = &self.refuse_marker {
            let holds = |r: &SinkRecord| r.value.as_ref().and_then(Part::as_bytes).is_some_and(|v| contains(v, marker));
            if let Some(refused) = records.iter().find(|r| holds(r)) {
                return Err(ConnectorError::Retriable(format!(
                    "the record at offset {} holds {marker:?}, which is refused",
                    refused.offset
                )));
            }
        }
        for record in records {
            let value = record.value.as_ref().and_then(Part::as_bytes).unwrap_or(b"null");
            if let Some(marker) = &self.errant_marker {
                if String::from_utf8_lossy(value).contains(marker.as_str()) {
                    let reason = format!("the value holds {marker:?}");
                    report_errant(&record.topic, record.partition, record.offset, &reason)?;
                    continue;
                }
            }
            self.out.write_all(value).map_err(io_error)?;
            if self.headers {
                let shown: Vec<String> = record.headers.iter().map(describe).collect();
                write!(self.out, " | {}", shown.join(" ")).map_err(io_error)?;
            }
            self.out.write_all(b"\n").map_err(io_error)?;
        }
        self.out.flush().map_err(io_error)
    }

    fn flush(&mut self, _offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError> {
        self.out.flush().map_err(io_error)
    }

    fn close(&mut self) {
        let _ = self.out.flush();
    }
}

impl SinkConnector for FlakySink {
    type Task = FlakySinkTask;
}

sink_connector!(FlakySink);
