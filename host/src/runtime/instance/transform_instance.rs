//! A transform plugin's instance: a batch of records a call.

use super::*;

/// A transform plugin's instance, one per task: it takes a batch and says what became of each
/// record.
pub struct TransformInstance {
    pub(super) store: Store<TaskState>,
    pub(super) bindings: transform::TransformCore,
    pub(super) transform: ResourceAny,
    pub(super) limits: WasmLimits,
    /// The schemas of the last batch it returned, handed out again for equal schemas of the next.
    pub(super) schemas: Vec<std::sync::Arc<wharf_connect::data::Schema>>,
}

impl TransformInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    /// The records through the plugin, in as many calls as `wasm.max.records.per.call` and
    /// `wasm.max.bytes.per.call` need: for each record given, in order, the record it became or
    /// none when dropped. A record larger than the bound alone fails with its topic named.
    pub fn apply(&mut self, records: Vec<ConnectRecord>) -> Result<Vec<Option<ConnectRecord>>, PluginError> {
        let max = self.limits.max_bytes_per_call;
        let max_records = self.limits.max_records_per_call as usize;
        let mut out = Vec::with_capacity(records.len());
        let mut chunk = Vec::new();
        let mut chunk_bytes = 0;
        for record in records {
            let bytes = connect_record_bytes(&record);
            if bytes > max {
                return Err(PluginError::Fatal(format!(
                    "a record for topic {} is {bytes} bytes, more than wasm.max.bytes.per.call={max} lets one call \
                     to the transform carry; raise the limit for this connector (and the worker)",
                    record.topic
                )));
            }
            if chunk_bytes + bytes > max || chunk.len() >= max_records {
                out.extend(self.apply_chunk(std::mem::take(&mut chunk))?);
                chunk_bytes = 0;
            }
            chunk_bytes += bytes;
            chunk.push(record);
        }
        if !chunk.is_empty() {
            out.extend(self.apply_chunk(chunk)?);
        }
        Ok(out)
    }

    fn apply_chunk(&mut self, records: Vec<ConnectRecord>) -> Result<Vec<Option<ConnectRecord>>, PluginError> {
        let given = records.len();
        let offsets: Vec<Option<i64>> = records.iter().map(|r| r.offset).collect();
        let batch = super::super::batch::BatchWriter::transform_batch(records);
        let (bindings, transform) = (&self.bindings, self.transform);
        let answer = call(&mut self.store, &self.limits, "apply", async |s| {
            bindings.wharf_connector_transformer().transform().call_apply(s, transform, &batch).await
        })?;
        if answer.records.len() != given {
            return Err(PluginError::Fatal(format!(
                "the transform's apply returned {} records for the {given} it was given; it must return one for each \
                 (none for a record it drops)",
                answer.records.len()
            )));
        }
        let bytes = wit_convert::transformed_batch_bytes(&answer);
        if bytes > self.limits.max_bytes_per_call {
            return Err(PluginError::TooLarge { call: "apply", bytes, max: self.limits.max_bytes_per_call });
        }
        let mut records =
            wit_convert::transformed_batch_from_wit(answer, &mut self.schemas, schema_bounds(&self.limits)).map_err(
                |e| PluginError::Fatal(format!("the transform's apply returned a batch that breaks the contract: {e}")),
            )?;
        // A sink record keeps its Kafka offset, which the contract does not carry.
        for (record, offset) in records.iter_mut().zip(offsets) {
            if let Some(record) = record {
                record.offset = offset;
            }
        }
        Ok(records)
    }

    pub fn close(mut self) -> Result<(), PluginError> {
        let (bindings, transform) = (&self.bindings, self.transform);
        let closed = call_infallible(&mut self.store, &self.limits, "close", async |s| {
            bindings.wharf_connector_transformer().transform().call_close(s, transform).await
        });
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, transform.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}

/// Bytes a record counts for in `wasm.max.bytes.per.call` on its way to a transform.
fn connect_record_bytes(r: &ConnectRecord) -> usize {
    r.topic.len()
        + r.key.as_ref().map_or(0, super::super::batch::part_bytes)
        + r.value.as_ref().map_or(0, super::super::batch::part_bytes)
        + r.headers
            .iter()
            .map(|h| h.key.len() + h.value.as_ref().map_or(0, super::super::batch::part_bytes))
            .sum::<usize>()
}
