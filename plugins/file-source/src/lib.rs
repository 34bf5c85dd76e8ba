//! Reads lines from a file and writes each as a record to one topic: Wharf's counterpart of
//! Kafka Connect's FileStreamSource, with the same configuration keys and offsets.
//!
//! The source partition is `{"filename": <file>}` and the offset `{"position": <byte>}`, the byte
//! just after the last line handed to the host. A restarted task resumes there; lines appended
//! to the file later are picked up. Only complete lines (ending in a newline) are read.
//!
//! A line is a string with a string schema, as FileStreamSource makes it, so that the worker's
//! value converter decides the bytes (JsonConverter writes a JSON string; ByteArrayConverter and
//! StringConverter the line itself). A line that is not UTF-8 goes to Kafka as the bytes it is,
//! rather than with its invalid sequences replaced.

use std::sync::Arc;

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Seek, SeekFrom};

use wharf_sdk::*;

const DEFAULT_BATCH_SIZE: u32 = 2000;
const READ_BUFFER_BYTES: usize = 64 * 1024;

struct FileSource;

impl Connector for FileSource {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "file-source".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Reads lines from a file into a Kafka topic (like FileStreamSource)".into(),
            kind: ConnectorKind::Source,
            config: vec![
                required_key(
                    "file",
                    ConfigType::String,
                    "The file to read. The worker grants reading its folder, if the folder is inside \
                     wasm.ceiling.fs.read.",
                ),
                required_key("topic", ConfigType::String, "The topic to write each line to."),
                optional_key("batch.size", ConfigType::Int, "2000", "The most lines returned by one poll."),
            ],
        }
    }

    fn validate(config: &Config) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        if let Some(topic) = config.get("topic") {
            if topic.contains(',') {
                problems.push(ConfigProblem {
                    name: "topic".into(),
                    message: "file-source writes to one topic only; remove the commas".into(),
                });
            }
        }
        problems
    }

    fn task_configs(config: &Config, _max_tasks: u32) -> Result<Vec<Config>, ConnectorError> {
        // One file has one reader: more tasks would duplicate every line.
        Ok(vec![config.clone()])
    }

    fn grants() -> Vec<KeyGrant> {
        vec![key_grant("file", Names::FileToRead)]
    }
}

struct FileSourceTask {
    path: String,
    topic: String,
    batch_size: u32,
    reader: Option<BufReader<File>>,
    /// Byte position just after the last complete line returned.
    position: u64,
    /// The start of a line whose newline has not been written yet.
    partial: Vec<u8>,
    warned_missing: bool,
    /// Connect's `Schema.STRING_SCHEMA`, shared by every line.
    schema: Arc<Schema>,
}

impl FileSourceTask {
    fn partition(&self) -> OffsetMap {
        vec![("filename".into(), Scalar::Text(self.path.clone()))]
    }

    /// Opens the file at the stored position, or reports that it does not exist yet.
    fn open_reader(&mut self) -> Result<bool, ConnectorError> {
        match File::open(&self.path) {
            Ok(mut file) => {
                let resume_at = self.position + self.partial.len() as u64;
                file.seek(SeekFrom::Start(resume_at)).map_err(|e| {
                    ConnectorError::Fatal(format!("cannot seek to byte {resume_at} of {}: {e}", self.path))
                })?;
                self.reader = Some(BufReader::with_capacity(READ_BUFFER_BYTES, file));
                Ok(true)
            }
            // No granted folder holds the path: waiting would never end.
            Err(e) if e.to_string().contains("pre-opened") => Err(ConnectorError::Fatal(format!(
                "cannot open {}: no folder granted to this connector holds it ({e}); the worker grants the folder of \
                 \"file\" when it lies inside wasm.ceiling.fs.read",
                self.path
            ))),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if !self.warned_missing {
                    log(Level::Warn, &format!("{} does not exist yet; waiting for it to appear", self.path));
                    self.warned_missing = true;
                }
                Ok(false)
            }
            Err(e) => Err(ConnectorError::Fatal(format!(
                "cannot open {}: {e}. A plugin sees only the folders granted to it: add the \
                 file's folder to wasm.fs.read in the connector config",
                self.path
            ))),
        }
    }
}

impl SourceTask for FileSourceTask {
    fn open(config: Config) -> Result<Self, ConnectorError> {
        let path = config.require("file")?.to_string();
        let topic = config.require("topic")?.to_string();
        let batch_size = config.parse_or("batch.size", DEFAULT_BATCH_SIZE)?.max(1);
        let mut task = FileSourceTask {
            path,
            topic,
            batch_size,
            reader: None,
            position: 0,
            partial: Vec::new(),
            warned_missing: false,
            schema: Schema::string().build(),
        };
        if let Some(offset) = committed_offset(&task.partition()) {
            task.position = offset_integer(&offset, "position").unwrap_or(0).max(0) as u64;
            log(Level::Info, &format!("resuming {} at byte {}", task.path, task.position));
        }
        Ok(task)
    }

    fn poll(&mut self, max_records: u32) -> Result<Vec<SourceRecord>, ConnectorError> {
        if self.reader.is_none() {
            // One look at the file's length tells whether anything was appended since the end
            // was reached, before the dearer open, seek and read: an idle task costs one call
            // to the host per poll. An error (no such file yet) is for `open_reader` to tell.
            let read_up_to = self.position + self.partial.len() as u64;
            if std::fs::metadata(&self.path).is_ok_and(|m| m.len() <= read_up_to) {
                return Ok(Vec::new());
            }
            if !self.open_reader()? {
                return Ok(Vec::new());
            }
        }
        let partition = self.partition();
        let limit = max_records.min(self.batch_size) as usize;
        let mut records = Vec::with_capacity(limit.min(4096));
        let Some(reader) = self.reader.as_mut() else { return Ok(Vec::new()) };
        while records.len() < limit {
            let read = reader
                .read_until(b'\n', &mut self.partial)
                .map_err(|e| ConnectorError::Retriable(format!("cannot read {}: {e}", self.path)))?;
            if read == 0 || self.partial.last() != Some(&b'\n') {
                // End of file for now; keep any partial line for the next poll. A WASI file
                // stream that reached the end stays there, so the next poll reopens the file
                // to see what was appended meanwhile.
                self.reader = None;
                break;
            }
            self.position += self.partial.len() as u64;
            let mut line = std::mem::take(&mut self.partial);
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let value = match String::from_utf8(line) {
                Ok(text) => Part::data(&self.schema, text),
                Err(not_text) => Part::Bytes(not_text.into_bytes()),
            };
            records.push(source_record(
                partition.clone(),
                vec![("position".into(), Scalar::Integer(self.position as i64))],
                &self.topic,
                value,
            ));
        }
        Ok(records)
    }
}

impl SourceConnector for FileSource {
    type Task = FileSourceTask;

    /// Exactly once for a file that is only appended to, as Kafka Connect's FileStreamSource
    /// answers: each line carries its end's byte position, and a task resumes exactly there.
    fn exactly_once_support(config: &Config) -> Option<Capability> {
        match config.get("file").is_some_and(|file| !file.trim().is_empty()) {
            true => Some(Capability::Supported),
            false => Some(Capability::Unsupported),
        }
    }
}

source_connector!(FileSource);
