//! Appends the value of every record to a file, one line each: Wharf's counterpart of Kafka
//! Connect's FileStreamSink, with the same configuration keys. A record without a value is
//! written as `null`, as FileStreamSink does.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};

use wharf_sdk::*;

const WRITE_BUFFER_BYTES: usize = 256 * 1024;

struct FileSink;

impl Connector for FileSink {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "file-sink".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Appends record values to a file, one line each (like FileStreamSink)".into(),
            kind: ConnectorKind::Sink,
            config: vec![
                required_key(
                    "file",
                    ConfigType::String,
                    "The file to append to. The worker grants writing its folder, if the folder is inside \
                     wasm.ceiling.fs.write.",
                ),
                required_key("topics", ConfigType::List, "The topics to read, separated by commas."),
            ],
        }
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        // Several writers appending to one file would interleave lines unpredictably.
        Ok(vec![config.clone()])
    }

    fn grants() -> Vec<KeyGrant> {
        vec![key_grant("file", Names::FileToWrite)]
    }
}

struct FileSinkTask {
    path: String,
    out: BufWriter<File>,
    sync: bool,
}

impl FileSinkTask {
    fn write_error(&self, action: &str, e: std::io::Error) -> ConnectorError {
        ConnectorError::Fatal(format!("cannot {action} {}: {e}", self.path))
    }
}

impl SinkTask for FileSinkTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let path = config.require("file")?.to_string();
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(|e| {
            ConnectorError::Fatal(format!(
                "cannot open {path} for appending: {e}. A plugin sees only the folders granted \
                 to it: add the file's folder to wasm.fs.write in the connector config"
            ))
        })?;
        let sync = config.parse_or("file.sync", true)?;
        Ok(FileSinkTask { path, out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file), sync })
    }

    fn put(&mut self, records: Vec<SinkRecord>) -> Result<(), ConnectorError> {
        for record in records {
            // Bytes and strings are written as they are; the connector's value.converter decides
            // which a value is (StringConverter or ByteArrayConverter write any record's bytes).
            let value = match &record.value {
                None => b"null".as_slice(),
                Some(part) => part.as_bytes().ok_or_else(|| {
                    ConnectorError::Fatal(format!(
                        "the value of the record at {}-{} offset {} is {}, and file-sink writes strings and bytes \
                         only; set value.converter=org.apache.kafka.connect.storage.StringConverter for this connector \
                         to write the record's text as it is in Kafka",
                        record.topic,
                        record.partition,
                        record.offset,
                        part.describe()
                    ))
                })?,
            };
            self.out
                .write_all(value)
                .and_then(|_| self.out.write_all(b"\n"))
                .map_err(|e| self.write_error("write to", e))?;
        }
        // Like FileStreamSink, lines reach the file as they arrive; `flush` makes them durable.
        self.out.flush().map_err(|e| self.write_error("write to", e))
    }

    fn flush(&mut self, _offsets: Vec<PartitionOffset>) -> Result<(), ConnectorError> {
        self.out.flush().map_err(|e| self.write_error("flush", e))?;
        if self.sync {
            self.out.get_ref().sync_data().map_err(|e| self.write_error("sync", e))?;
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Err(e) = self.out.flush() {
            log(Level::Error, &format!("cannot flush {} on close: {e}", self.path));
        }
    }
}

impl SinkConnector for FileSink {
    type Task = FileSinkTask;
}

sink_connector!(FileSink);
