//! Zombie fencing of exactly-once source tasks (KIP-618). Each task writes under a transactional
//! id of its own, `<group.id>-<connector>-<task>`; a producer that initialises an id fences every
//! earlier producer under it, whose open transaction Kafka aborts and whose later commits it
//! refuses. Each task of a new generation of a connector's task configs fences its predecessor of
//! the same number as it initialises its id, before it writes; before the first one writes, the
//! leader fences the numbers the new generation no longer has (its task count fell), then records
//! the new task count in the config topic (`tasks-fencing-<connector>`). A task whose config did
//! not change goes on running unfenced, where Kafka Connect restarts every task of a new
//! generation.

use std::sync::Arc;

use rdkafka::producer::{BaseProducer, Producer};

use super::Worker;
use crate::config::ConnectorConfig;
use crate::kafka;
use crate::storage::kafka::STORE_TIMEOUT;

/// The transactional id of a source task under exactly-once support: Kafka Connect's.
pub fn task_transactional_id(group_id: &str, connector: &str, task: u32) -> String {
    format!("{group_id}-{connector}-{task}")
}

/// How a task asks the cluster's leader to fence its connector's earlier tasks, by connector
/// name; the herder gives the worker one. The error says what went wrong.
pub type Fencer = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

impl Worker {
    /// Lets this worker's transactional tasks ask for fencing.
    pub fn set_fencer(&self, fencer: Fencer) {
        let _ = self.fencer.set(fencer);
    }

    /// Fences the transactional producers of a connector's tasks of the numbers `tasks`,
    /// `FENCING_AT_ONCE` at a time, each within `STORE_TIMEOUT`: initialising an id bumps its
    /// epoch, so that whatever producer held it can commit nothing more. Blocking; the leader
    /// calls it. The first refusal ends it and is the answer.
    pub fn fence_producers(&self, connector: &ConnectorConfig, tasks: std::ops::Range<u32>) -> Result<(), String> {
        let Some(cluster) = &self.config.distributed else {
            return Err("Kafka Connect in standalone mode does not support exactly-once source connectors.".into());
        };
        tracing::info!(
            "connector {}: fencing the transactional producers of its tasks {}..{}, which its new task configs no \
             longer have",
            connector.name,
            tasks.start,
            tasks.end
        );
        let client_id = format!("wharf-{}-fencer", cluster.group_id);
        let base = kafka::producer_config(&self.config, &connector.client_overrides.producer, &client_id);
        let ids: Vec<String> =
            tasks.map(|task| task_transactional_id(&cluster.group_id, &connector.name, task)).collect();
        for (round, together) in ids.chunks(FENCING_AT_ONCE).enumerate() {
            fence_together(&base, together)?;
            if ids.len() > FENCING_AT_ONCE {
                let fenced = round * FENCING_AT_ONCE + together.len();
                tracing::info!(
                    "connector {}: fenced {fenced} of {} transactional producers",
                    connector.name,
                    ids.len()
                );
            }
        }
        Ok(())
    }
}

/// How many transactional ids the leader fences at once: each takes a Kafka client of its own
/// (threads and connections) for the round trips of its initialisation.
const FENCING_AT_ONCE: usize = 8;

/// Fences `ids` at once, a thread each; the first refusal is the answer.
fn fence_together(base: &rdkafka::ClientConfig, ids: &[String]) -> Result<(), String> {
    std::thread::scope(|scope| {
        let threads: Vec<_> = ids
            .iter()
            .map(|id| {
                let thread =
                    std::thread::Builder::new().name("wharf-fence".into()).spawn_scoped(scope, || fence(base, id));
                (id, thread)
            })
            .collect();
        // Every thread is joined (the scope would otherwise join it), then the first refusal told.
        let answers: Vec<Result<(), String>> = threads
            .into_iter()
            .map(|(id, thread)| match thread {
                Err(e) => Err(format!("cannot start a thread to fence transactional.id {id}: {e}")),
                Ok(thread) => thread.join().unwrap_or_else(|_| {
                    Err(format!(
                        "fencing transactional.id {id} stopped unexpectedly; the connector's tasks ask for it again \
                         when they are restarted"
                    ))
                }),
            })
            .collect();
        answers.into_iter().collect()
    })
}

/// Fences one transactional id by initialising it with a producer of its own.
fn fence(base: &rdkafka::ClientConfig, id: &str) -> Result<(), String> {
    let mut config = base.clone();
    config.set("transactional.id", id).set("enable.idempotence", "true");
    let producer: BaseProducer =
        config.create().map_err(|e| format!("cannot create a producer to fence transactional.id {id}: {e}"))?;
    producer.init_transactions(STORE_TIMEOUT).map_err(|e| {
        format!(
            "cannot fence transactional.id {id}: Kafka did not initialise it within {} s ({e}); the worker's \
             principal needs Write and Describe on that TransactionalId",
            STORE_TIMEOUT.as_secs()
        )
    })
}
