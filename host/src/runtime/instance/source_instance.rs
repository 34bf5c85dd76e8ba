//! A source task's instance: `poll` and `commit`, for the bytes world and the data world.

use super::*;

pub struct SourceInstance {
    pub(super) store: Store<TaskState>,
    pub(super) task: SourceTask,
    pub(super) limits: WasmLimits,
    /// The schemas of the last data batch, handed out again for equal schemas of the next.
    pub(super) schemas: Vec<std::sync::Arc<wharf_connect::data::Schema>>,
    /// Whether the plugin understands `poll(0)` (built for 0.1.6 or later).
    pub(super) keeps_alive: bool,
}

/// A source task's bindings and resource, by what its records carry.
pub(super) enum SourceTask {
    Bytes(source::SourceCore, ResourceAny),
    Data(data_source::DataSourceCore, ResourceAny),
}

/// Calls one function of the source task through `$via` (`call` or `call_infallible`),
/// whichever interface it exports: the two worlds' task functions differ in their records only.
macro_rules! source_call {
    ($self:ident, $via:ident, $name:literal, |$task:ident, $s:ident, $t:ident| $call:expr) => {
        match &$self.task {
            SourceTask::Bytes(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_source_task().task(), *task);
                $via(&mut $self.store, &$self.limits, $name, async |$s| $call.await)
            }
            SourceTask::Data(bindings, task) => {
                let ($task, $t) = (bindings.wharf_connector_data_source_task().task(), *task);
                $via(&mut $self.store, &$self.limits, $name, async |$s| $call.await)
            }
        }
    };
}

impl SourceInstance {
    /// Bytes of linear memory the instance holds, across all of its memories (memory only
    /// grows: this is the most the plugin has needed so far).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().memory.used_bytes()
    }

    pub fn poll(&mut self) -> Result<Vec<PolledRecord>, PluginError> {
        self.poll_at_most(self.limits.max_records_per_call)
    }

    /// While the host holds records back: `poll(0)`, in which a plugin of 0.1.6 or later keeps
    /// its connections alive and returns nothing (a record returned breaks the contract). Older
    /// plugins are not called.
    pub fn keep_alive(&mut self) -> Result<(), PluginError> {
        if !self.keeps_alive {
            return Ok(());
        }
        match self.poll_at_most(0) {
            Ok(_) => Ok(()),
            Err(PluginError::TooMany { count, .. }) => Err(PluginError::Fatal(format!(
                "the plugin returned {count} record(s) from poll(0), by which the host (contract 0.1.6 and later) \
                 asks it to keep its connections alive and return none while Kafka takes no records; the plugin \
                 breaks the contract it was built for: fix its poll"
            ))),
            Err(other) => Err(other),
        }
    }

    /// The line the plugin reported through `progress.report` since the last call, if any.
    pub fn take_progress(&mut self) -> Option<String> {
        self.store.data_mut().take_progress()
    }

    /// Where the plugin asked the transactions of the batch its last poll returned, `count`
    /// records long, to end (`transaction-context`): nothing unless the task defines its
    /// transactions; a request that breaks the contract fails the task.
    pub fn transaction_ends(&mut self, count: usize) -> Result<crate::runtime::TransactionEnds, PluginError> {
        self.store.data_mut().transactions.take(count).map_err(|why| {
            PluginError::Fatal(format!("{why}; the plugin breaks the contract (transaction-context): fix its poll"))
        })
    }

    /// The commit or abort the plugin asked of the batch (`transaction-context`), taken alone:
    /// after a poll that failed, whose records' requests are forgotten with it.
    pub fn batch_end_asked(&mut self) -> Option<crate::runtime::End> {
        self.store.data_mut().transactions.take_batch_end()
    }

    fn poll_at_most(&mut self, max: u32) -> Result<Vec<PolledRecord>, PluginError> {
        self.store.data_mut().transactions.poll_begins(max);
        let polled = self.poll_within(max);
        self.store.data_mut().transactions.poll_ended();
        polled
    }

    fn poll_within(&mut self, max: u32) -> Result<Vec<PolledRecord>, PluginError> {
        let max_bytes = self.limits.max_bytes_per_call;
        let too_large = |bytes: usize| PluginError::TooLarge { call: "poll", bytes, max: max_bytes };
        let records = match &self.task {
            SourceTask::Bytes(bindings, task) => {
                let task = *task;
                let records = call(&mut self.store, &self.limits, "poll", async |s| {
                    bindings.wharf_connector_source_task().task().call_poll(s, task, max).await
                })?;
                if records.len() > max as usize {
                    return Err(PluginError::TooMany { call: "poll", count: records.len(), max });
                }
                let bytes: usize = records
                    .iter()
                    .map(|r| {
                        record_bytes(&r.topic, &r.source_partition, &r.source_offset)
                            + r.headers
                                .iter()
                                .map(|h| h.key.len() + h.value.as_ref().map_or(0, Vec::len))
                                .sum::<usize>()
                            + r.key.as_ref().map_or(0, Vec::len)
                            + r.value.as_ref().map_or(0, Vec::len)
                    })
                    .sum();
                if bytes > max_bytes {
                    return Err(too_large(bytes));
                }
                crossed(&self.store, records.len(), bytes);
                records.into_iter().map(wit_convert::source_record_from_wit).collect()
            }
            SourceTask::Data(bindings, task) => {
                let task = *task;
                let batch = call(&mut self.store, &self.limits, "poll", async |s| {
                    bindings.wharf_connector_data_source_task().task().call_poll(s, task, max).await
                })?;
                if batch.records.len() > max as usize {
                    return Err(PluginError::TooMany { call: "poll", count: batch.records.len(), max });
                }
                let bytes = wit_convert::source_batch_bytes(&batch);
                if bytes > max_bytes {
                    return Err(too_large(bytes));
                }
                crossed(&self.store, batch.records.len(), bytes);
                wit_convert::source_batch_from_wit(batch, &mut self.schemas, schema_bounds(&self.limits)).map_err(
                    |e| PluginError::Fatal(format!("the plugin's poll returned a batch that breaks the contract: {e}")),
                )?
            }
        };
        Ok(records)
    }

    pub fn commit(&mut self) -> Result<(), PluginError> {
        source_call!(self, call, "commit", |task, s, t| task.call_commit(s, t))
    }

    /// Tells the plugin to stop and releases the instance.
    pub fn close(mut self) -> Result<(), PluginError> {
        let task = match &self.task {
            SourceTask::Bytes(_, task) | SourceTask::Data(_, task) => *task,
        };
        let closed = source_call!(self, call_infallible, "close", |task, s, t| task.call_close(s, t));
        if self.store.data().abandoned.is_none() {
            if let Some(io) = self.store.data().io.clone() {
                let _ = block_on_until(&io, self.limits.call_timeout, task.resource_drop_async(&mut self.store));
            }
        }
        closed
    }
}
