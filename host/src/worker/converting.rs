//! A task's converters at work: a source record's key and value, when they are data, become
//! bytes through the connector's `key.converter` and `value.converter` (bytes pass through as
//! they are), on the task thread, before the record is queued for Kafka.

use crate::config::Converters;
use crate::convert::Converter;
use crate::model::{Part, PolledRecord, SourceRecord};

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
            Some(Part::Data(data)) => converter.from_data(&data).map_err(|e| {
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
}
