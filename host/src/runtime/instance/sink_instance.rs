//! A sink task's instance: `put` (with the records the plugin reported as errant), `flush`
//! and the partitions it is given, for the bytes world and the data world.

use super::*;

/// Bytes a sink record counts for in `wasm.max.bytes.per.call`.
fn sink_record_bytes(r: &SinkRecord) -> usize {
    r.topic.len()
        + r.key.as_ref().map_or(0, super::super::batch::part_bytes)
        + r.value.as_ref().map_or(0, super::super::batch::part_bytes)
        + r.headers
            .iter()
            .map(|h| h.key.len() + h.value.as_ref().map_or(0, super::super::batch::part_bytes))
            .sum::<usize>()
}

pub struct SinkInstance {
    pub(super) store: Store<TaskState>,
    pub(super) task: SinkTask,
    pub(super) limits: WasmLimits,
}

/// A sink task's bindings and resource, by what its records carry.
pub(super) enum SinkTask {
    Bytes(sink::SinkCore, ResourceAny),
    Data(data_sink::DataSinkCore, ResourceAny),
}

/// Calls one function of the sink task, whichever interface it exports.
macro_rules! sink_call {
    ($self:ident, $name:literal, |$task:ident, $s:ident, $t:ident| $bytes:expr, $data:expr) => {
        match &$self.task {
            SinkTask::Bytes(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_sink_task().task(), *task);
                call(&mut $self.store, &$self.limits, $name, async |$s| $bytes.await)
            }
            SinkTask::Data(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_data_sink_task().task(), *task);
                call(&mut $self.store, &$self.limits, $name, async |$s| $data.await)
            }
        }
    };
}

/// What a `put` came to: the plugin's answer, and the records it reported as errant.
pub struct Put {
    pub outcome: Result<(), PluginError>,
    pub reported: Vec<ErrantReport>,
}

impl SinkInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    /// The line the plugin reported through `progress.report` since the last call, if any.
    pub fn take_progress(&mut self) -> Option<String> {
        self.store.data_mut().take_progress()
    }

    pub fn max_records_per_call(&self) -> u32 {
        self.limits.max_records_per_call
    }

    /// Whether the plugin takes data (the `data-sink` world): the worker then reads keys and
    /// values with the connector's converters before `put`.
    pub fn takes_data(&self) -> bool {
        matches!(self.task, SinkTask::Data(..))
    }

    pub fn open_partitions(&mut self, partitions: &[TopicPartition]) -> Result<(), PluginError> {
        let wit_partitions: Vec<_> = partitions.iter().map(wit_convert::topic_partition_to_wit).collect();
        sink_call!(
            self,
            "open-partitions",
            |task, s, t| task.call_open_partitions(s, t, &wit_partitions),
            task.call_open_partitions(s, t, &wit_partitions)
        )
    }

    pub fn close_partitions(&mut self, partitions: &[TopicPartition]) -> Result<(), PluginError> {
        let wit_partitions: Vec<_> = partitions.iter().map(wit_convert::topic_partition_to_wit).collect();
        sink_call!(
            self,
            "close-partitions",
            |task, s, t| task.call_close_partitions(s, t, &wit_partitions),
            task.call_close_partitions(s, t, &wit_partitions)
        )
    }

    /// Whether records the plugin reports as errant are skipped (`errors.tolerance=all`) or fail
    /// the task: what `errant-records.report` answers the plugin.
    pub fn tolerate_errant(&mut self, tolerate: bool) {
        self.store.data_mut().tolerate_errant = tolerate;
    }

    /// Delivers records in as many `put` calls as `wasm.max.bytes.per.call` needs (one, usually);
    /// a record larger than the bound alone fails with the record named. The answer holds the
    /// records the plugin reported as errant during the put, in the order reported, whether the
    /// put succeeded or not.
    pub fn put(&mut self, records: Vec<SinkRecord>) -> Put {
        self.store.data_mut().putting =
            Some(Putting::of(records.iter().map(|r| (r.topic.as_str(), r.partition, r.offset))));
        let outcome = self.put_chunks(records);
        let reported = self.store.data_mut().putting.take().map(|p| p.reported).unwrap_or_default();
        Put { outcome, reported }
    }

    fn put_chunks(&mut self, records: Vec<SinkRecord>) -> Result<(), PluginError> {
        let max = self.limits.max_bytes_per_call;
        let mut chunk = Vec::with_capacity(records.len());
        let mut chunk_bytes = 0;
        for record in records {
            let bytes = sink_record_bytes(&record);
            if bytes > max {
                return Err(PluginError::RecordTooLarge {
                    topic: record.topic,
                    partition: record.partition,
                    offset: record.offset,
                    bytes,
                    max,
                });
            }
            if chunk_bytes + bytes > max {
                self.put_chunk(std::mem::take(&mut chunk), chunk_bytes)?;
                chunk_bytes = 0;
            }
            chunk_bytes += bytes;
            chunk.push(record);
        }
        if chunk.is_empty() {
            return Ok(());
        }
        self.put_chunk(chunk, chunk_bytes)
    }

    /// Puts one chunk of `bytes` (as `wasm.max.bytes.per.call` counts them).
    fn put_chunk(&mut self, records: Vec<SinkRecord>, bytes: usize) -> Result<(), PluginError> {
        crossed(&self.store, records.len(), bytes);
        match &self.task {
            SinkTask::Bytes(bindings, task) => {
                let task = *task;
                let records = records.into_iter().map(wit_convert::sink_record_to_wit).collect::<Option<Vec<_>>>();
                let Some(records) = records else {
                    return Err(PluginError::Fatal(
                        "the worker handed data to a sink that takes bytes; restart the task".into(),
                    ));
                };
                call(&mut self.store, &self.limits, "put", async |s| {
                    bindings.wharf_connector_sink_task().task().call_put(s, task, &records).await
                })
            }
            SinkTask::Data(bindings, task) => {
                let task = *task;
                let batch = super::super::batch::BatchWriter::sink_batch(records);
                call(&mut self.store, &self.limits, "put", async |s| {
                    bindings.wharf_connector_data_sink_task().task().call_put(s, task, &batch).await
                })
            }
        }
    }

    pub fn flush(&mut self, offsets: &[PartitionOffset]) -> Result<(), PluginError> {
        let offsets: Vec<_> = offsets.iter().map(wit_convert::partition_offset_to_wit).collect();
        sink_call!(self, "flush", |task, s, t| task.call_flush(s, t, &offsets), task.call_flush(s, t, &offsets))
    }

    pub fn close(mut self) -> Result<(), PluginError> {
        let closed = match &self.task {
            SinkTask::Bytes(bindings, task) => {
                let task = *task;
                call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_sink_task().task().call_close(s, task).await
                })
            }
            SinkTask::Data(bindings, task) => {
                let task = *task;
                call_infallible(&mut self.store, &self.limits, "close", async |s| {
                    bindings.wharf_connector_data_sink_task().task().call_close(s, task).await
                })
            }
        };
        let task = match &self.task {
            SinkTask::Bytes(_, task) | SinkTask::Data(_, task) => *task,
        };
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, task.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}
