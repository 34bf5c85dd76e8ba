//! {{name}}: a Wharf transform plugin. It adds the header `transformed-by` (the plugin's name, as
//! bytes) to every record and keeps the record as it is otherwise. Replace that with your change;
//! a record answered with `None` is dropped.

wit_bindgen::generate!({ path: "wit", world: "transform" });

use exports::wharf::connector::transformer::{
    Guest, GuestTransform, Header, Part, Transform, TransformBatch, TransformInfo, TransformedBatch,
};
use wharf::connector::types::{Config, ConfigProblem, ConnectorError};

struct Plugin;

impl Guest for Plugin {
    type Transform = Tagger;

    fn describe() -> TransformInfo {
        TransformInfo {
            name: "{{name}}".into(),
            version: "0.1.0".into(),
            description: "Adds a header to every record (a template to start from)".into(),
            // Its settings, as a connector writes them after `transforms.<alias>.`.
            config: Vec::new(),
        }
    }

    fn validate(_config: Config) -> Vec<ConfigProblem> {
        Vec::new()
    }
}

struct Tagger;

impl GuestTransform for Tagger {
    /// One is opened for each task of a connector that names this plugin, with its settings.
    fn open(_config: Config) -> Result<Transform, ConnectorError> {
        Ok(Transform::new(Tagger))
    }

    /// One answer for each record, in order. Keys, values and header values that are data are
    /// indices into the batch's `schemas` and `values`; the answer keeps those tables, so a record
    /// kept as it is costs no copy. An error fails the whole batch.
    fn apply(&self, batch: TransformBatch) -> Result<TransformedBatch, ConnectorError> {
        let records = batch
            .records
            .into_iter()
            .map(|mut record| {
                let value = Some(Part::Raw(b"{{name}}".to_vec()));
                record.headers.push(Header { key: "transformed-by".into(), value });
                Some(record)
            })
            .collect();
        Ok(TransformedBatch { schemas: batch.schemas, values: batch.values, records })
    }

    fn close(&self) {}
}

export!(Plugin);
