//! A task's converters at work, on the task thread: a source record's key and value, when they
//! are data, become bytes through the connector's `key.converter` and `value.converter` (bytes
//! pass through as they are) before the record is queued for Kafka; a sink record's key and
//! value, read from Kafka, become data before `put` when the plugin takes data (except through
//! `ByteArrayConverter`, whose parts stay bytes).

use crate::config::Converters;
use crate::convert::Converter;
use crate::model::{Part, PolledRecord, SinkRecord, SourceRecord};

/// One task's key and value converters (their caches are the task's own).
pub struct RecordConverters {
    key: (Converter, &'static str),
    value: (Converter, &'static str),
}

impl RecordConverters {
    pub fn new(chosen: &Converters) -> Self {
        RecordConverters {
            key: (chosen.key.build(), chosen.key.class),
            value: (chosen.value.build(), chosen.value.class),
        }
    }

    /// The record with bytes for its key and value; the error names the topic, the part, the
    /// converter and its reason.
    pub fn source_record(&mut self, polled: PolledRecord) -> Result<SourceRecord, String> {
        let PolledRecord { source_partition, source_offset, topic, partition, key, value, headers, timestamp } = polled;
        let convert = |(converter, class): &mut (Converter, &'static str), part: Option<Part>, what: &str| {
            match part {
            None => Ok(None),
            Some(Part::Bytes(bytes)) => Ok(Some(bytes)),
            Some(Part::Data(data)) => converter.from_owned_data(data).map_err(|e| {
                format!(
                    "{what}.converter={class} could not convert the {what} of a record for topic {topic} (source offset \
                     {source_offset:?}): {}",
                    e.message
                )
            }),
        }
        };
        let key = convert(&mut self.key, key, "key")?;
        let value = convert(&mut self.value, value, "value")?;
        Ok(SourceRecord { source_partition, source_offset, topic, partition, key, value, headers, timestamp })
    }

    /// Reads the record's key and value with the converters, in place; the error names the
    /// record (topic, partition, offset), the part, the converter and its reason.
    pub fn sink_record(&mut self, record: &mut SinkRecord) -> Result<(), String> {
        let at = format!("{}-{} offset {}", record.topic, record.partition, record.offset);
        for (what, (converter, class), part) in
            [("key", &mut self.key, &mut record.key), ("value", &mut self.value, &mut record.value)]
        {
            if converter.passes_bytes_through() {
                continue;
            }
            if let Some(Part::Bytes(bytes)) = part {
                let data = converter.to_data(Some(bytes)).map_err(|e| {
                    format!("{what}.converter={class} could not read the {what} of the record at {at}: {}", e.message)
                })?;
                *part = Some(Part::Data(data));
            }
        }
        Ok(())
    }
}
