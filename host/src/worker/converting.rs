//! A task's converters at work: a source record's key, value and header values, when they are
//! data, become bytes through the connector's `key.converter`, `value.converter` and
//! `header.converter` (bytes pass through as they are) before the record is queued for Kafka, on
//! the task thread; a sink record's, read from Kafka, become data before `put` when the plugin
//! takes data or the connector has transforms (except through `ByteArrayConverter`, whose parts
//! stay bytes), on the sink's fetch thread.

use crate::config::Converters;
use wharf_connect::convert::Converter;
use wharf_connect::model::{Header, Part, PartHeader, PolledRecord, SinkRecord, SourceRecord};

use super::tolerance::{RecordFailure, Stage};

/// The stage of a converter by the part it converts.
fn stage(role: &str) -> Stage {
    match role {
        "key" => Stage::KeyConverter,
        "value" => Stage::ValueConverter,
        _ => Stage::HeaderConverter,
    }
}

/// One task's key, value and header converters (their caches are the task's own).
pub(super) struct RecordConverters {
    key: (Converter, &'static str),
    value: (Converter, &'static str),
    header: (Converter, &'static str),
}

impl RecordConverters {
    pub(super) fn new(chosen: &Converters) -> Self {
        RecordConverters {
            key: (chosen.key.build(), chosen.key.class),
            value: (chosen.value.build(), chosen.value.class),
            header: (chosen.header.build(), chosen.header.class),
        }
    }

    /// The record with bytes for its key, value and header values; the error names the topic,
    /// the part, the converter and its reason.
    pub(super) fn source_record(&mut self, polled: PolledRecord) -> Result<SourceRecord, RecordFailure> {
        let PolledRecord { source_partition, source_offset, topic, partition, key, value, headers, timestamp } = polled;
        // `header` names a header's key; the message is only made when a conversion fails.
        let convert = |(converter, class): &mut (Converter, &'static str),
                       part: Option<Part>,
                       role: &str,
                       header: Option<&str>| {
            match part {
                None => Ok(None),
                Some(Part::Bytes(bytes)) => Ok(Some(bytes)),
                Some(Part::Data(data)) => converter.from_owned_data(data).map_err(|e| {
                    let what = header.map_or_else(|| role.to_string(), |key| format!("header {key:?}"));
                    RecordFailure {
                        stage: stage(role),
                        class: class.to_string(),
                        message: format!(
                            "{role}.converter={class} could not convert the {what} of a record for topic {topic} \
                             (source offset {source_offset:?}): {}",
                            e.message
                        ),
                    }
                }),
            }
        };
        let key = convert(&mut self.key, key, "key", None)?;
        let value = convert(&mut self.value, value, "value", None)?;
        let headers = headers
            .into_iter()
            .map(|h| {
                let value = convert(&mut self.header, h.value, "header", Some(&h.key))?;
                Ok(Header { key: h.key, value })
            })
            .collect::<Result<Vec<_>, RecordFailure>>()?;
        Ok(SourceRecord { source_partition, source_offset, topic, partition, key, value, headers, timestamp })
    }

    /// Reads the record's key, value and header values with the converters, in place; the error
    /// names the record (topic, partition, offset), the part, the converter and its reason.
    pub(super) fn sink_record(&mut self, record: &mut SinkRecord) -> Result<(), RecordFailure> {
        // What failed: the role, the header's key if it is a header, the class and the reason.
        type Failure = (&'static str, Option<String>, &'static str, String);
        let read = |(converter, class): &mut (Converter, &'static str),
                    part: &mut Option<Part>,
                    role: &'static str,
                    header: Option<&str>|
         -> Result<(), Failure> {
            if let Some(Part::Bytes(bytes)) = part {
                let data =
                    converter.to_data(Some(bytes)).map_err(|e| (role, header.map(String::from), *class, e.message))?;
                *part = Some(Part::Data(data));
            }
            Ok(())
        };
        let mut outcome = Ok(());
        if !self.key.0.passes_bytes_through() {
            outcome = outcome.and_then(|()| read(&mut self.key, &mut record.key, "key", None));
        }
        if !self.value.0.passes_bytes_through() {
            outcome = outcome.and_then(|()| read(&mut self.value, &mut record.value, "value", None));
        }
        if !self.header.0.passes_bytes_through() {
            for PartHeader { key, value } in &mut record.headers {
                outcome = outcome.and_then(|()| read(&mut self.header, value, "header", Some(key)));
            }
        }
        outcome.map_err(|(role, header, class, reason)| {
            let what = header.map_or_else(|| role.to_string(), |key| format!("header {key:?}"));
            RecordFailure {
                stage: stage(role),
                class: class.to_string(),
                message: format!(
                    "{role}.converter={class} could not read the {what} of the record at {}-{} offset {}: {reason}",
                    record.topic, record.partition, record.offset
                ),
            }
        })
    }

    /// For a sink that takes bytes, after the connector's transforms: the key, value and
    /// header values that are data written with the converters, as they would be written to
    /// Kafka (bytes that no converter read stay as they are).
    pub(super) fn sink_record_to_bytes(&mut self, record: &mut SinkRecord) -> Result<(), RecordFailure> {
        let SinkRecord { topic, partition, offset, key, value, headers, .. } = record;
        // Said only when a conversion fails: no message is built per record.
        let place = || format!("the record at {topic}-{partition} offset {offset}");
        let write = |(converter, class): &mut (Converter, &'static str),
                     part: &mut Option<Part>,
                     role: &'static str,
                     header: Option<&str>|
         -> Result<(), RecordFailure> {
            if let Some(Part::Data(data)) = part.take() {
                let bytes = converter.from_owned_data(data).map_err(|e| {
                    let what = header.map_or_else(|| role.to_string(), |key| format!("header {key:?}"));
                    RecordFailure {
                        stage: stage(role),
                        class: class.to_string(),
                        message: format!(
                            "{role}.converter={class} could not write the {what} that the transforms made of {}: {}",
                            place(),
                            e.message
                        ),
                    }
                })?;
                *part = bytes.map(Part::Bytes);
            }
            Ok(())
        };
        write(&mut self.key, key, "key", None)?;
        write(&mut self.value, value, "value", None)?;
        for PartHeader { key, value } in headers {
            write(&mut self.header, value, "header", Some(key))?;
        }
        Ok(())
    }
}
