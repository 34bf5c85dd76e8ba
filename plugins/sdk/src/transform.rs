//! Transform plugins: a single message transform of one's own, which a connector config names
//! as Kafka Connect's transforms are named (`transforms.a.type=<your plugin's name>`). Implement
//! [`Transform`] and export it with [`transform_plugin!`](crate::transform_plugin).
//!
//! ```ignore
//! use wharf_sdk::*;
//!
//! struct Upper;
//!
//! impl Transform for Upper {
//!     fn describe() -> TransformInfo {
//!         TransformInfo { name: "upper".into(), version: "0.1.0".into(), description: "Upper-cases string values".into(), config: vec![] }
//!     }
//!     fn open(_settings: Config) -> Result<Self, ConnectorError> { Ok(Upper) }
//!     fn apply(&mut self, mut record: TransformRecord) -> Result<Option<TransformRecord>, ConnectorError> {
//!         if let Some(Part::Data { value: Value::String(s), .. }) = &mut record.value { *s = s.to_uppercase(); }
//!         Ok(Some(record))
//!     }
//! }
//!
//! transform_plugin!(Upper);
//! ```

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::bindings::transform::exports::wharf::connector::transformer as exports;
use crate::{data, Config, ConfigProblem, ConnectorError, Header, Part};

pub use exports::TransformInfo;

/// A record as a transform sees it (Kafka Connect's `ConnectRecord`): a source's before the
/// worker's converters, a sink's after them.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformRecord {
    /// The topic it goes to (a source's) or came from (a sink's); a transform may change it.
    pub topic: String,
    /// A source record's fixed partition (none: the key chooses), or a sink record's.
    pub partition: Option<i32>,
    /// None for a null key.
    pub key: Option<Part>,
    /// None for a null value (a tombstone).
    pub value: Option<Part>,
    /// Its headers, in order.
    pub headers: Vec<Header>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: Option<i64>,
}

/// A transform plugin. One is opened for each task of a connector that names it.
pub trait Transform: Sized + 'static {
    /// Name, version, description and settings (the keys after `transforms.<alias>.`).
    fn describe() -> TransformInfo;

    /// Problems with settings beyond what the definition checks. None by default.
    fn validate(_settings: &Config) -> Vec<ConfigProblem> {
        Vec::new()
    }

    /// Starts with the transform's settings (the definition's defaults filled in).
    fn open(settings: Config) -> Result<Self, ConnectorError>;

    /// One record: what it becomes (`Some`, changed or not), or `None` to drop it. An error
    /// fails the record (and, through `apply_batch`, its batch: the worker then gives the records
    /// one at a time when `errors.tolerance=all`, to skip only those that fail).
    fn apply(&mut self, record: TransformRecord) -> Result<Option<TransformRecord>, ConnectorError>;

    /// A batch, one answer for each record in order. By default each record through
    /// [`Transform::apply`]; override it to work on the batch as a whole.
    fn apply_batch(&mut self, records: Vec<TransformRecord>) -> Result<Vec<Option<TransformRecord>>, ConnectorError> {
        records.into_iter().map(|r| self.apply(r)).collect()
    }

    /// The transform stops. Nothing to do by default.
    fn close(&mut self) {}
}

#[doc(hidden)]
pub struct TransformExports<T>(PhantomData<T>);

#[doc(hidden)]
pub struct TransformCell<T>(RefCell<T>);

impl<T: Transform> exports::Guest for TransformExports<T> {
    type Transform = TransformCell<T>;

    fn describe() -> TransformInfo {
        T::describe()
    }

    fn validate(config: Vec<(String, String)>) -> Vec<ConfigProblem> {
        T::validate(&Config::new(config))
    }
}

impl<T: Transform> exports::GuestTransform for TransformCell<T> {
    fn open(config: Vec<(String, String)>) -> Result<exports::Transform, ConnectorError> {
        let transform = T::open(Config::new(config))?;
        Ok(exports::Transform::new(TransformCell(RefCell::new(transform))))
    }

    fn apply(&self, batch: exports::TransformBatch) -> Result<exports::TransformedBatch, ConnectorError> {
        let broken = |e: String| ConnectorError::Fatal(format!("the host sent a batch this SDK cannot read: {e}"));
        let mut reader = data::BatchReader::new(batch.schemas, batch.values).map_err(broken)?;
        let mut records = Vec::with_capacity(batch.records.len());
        for r in batch.records {
            let (key, value, headers) = reader.record_parts(r.key, r.value, r.headers).map_err(broken)?;
            records.push(TransformRecord {
                topic: r.topic,
                partition: r.partition,
                key,
                value,
                headers,
                timestamp: r.timestamp,
            });
        }
        let given = records.len();
        let out = self.0.borrow_mut().apply_batch(records)?;
        if out.len() != given {
            return Err(ConnectorError::Fatal(format!(
                "apply_batch returned {} answers for {given} records; it must return one for each, in order",
                out.len()
            )));
        }
        let mut writer = data::BatchWriter::default();
        let records = out
            .into_iter()
            .map(|r| {
                r.map(|r| exports::TransformRecord {
                    topic: r.topic,
                    partition: r.partition,
                    key: r.key.map(|k| writer.part(k)),
                    value: r.value.map(|v| writer.part(v)),
                    headers: writer.headers(r.headers),
                    timestamp: r.timestamp,
                })
            })
            .collect();
        let (schemas, values) = writer.into_tables();
        Ok(exports::TransformedBatch { schemas, values, records })
    }

    fn close(&self) {
        self.0.borrow_mut().close()
    }
}

/// Exports a [`Transform`] as this component's plugin. Invoke it once, at the crate root.
#[macro_export]
macro_rules! transform_plugin {
    ($transform:ty) => {
        type __WharfTransformExports = $crate::transform::TransformExports<$transform>;
        $crate::bindings::transform::export_transform_world!(
            __WharfTransformExports with_types_in $crate::bindings::transform
        );
    };
}
