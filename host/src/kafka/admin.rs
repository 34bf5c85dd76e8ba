//! Creates the internal topics when they are missing and refuses to start when an existing one
//! would lose or disorder state.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientConfig;

/// What an internal topic must look like.
#[derive(Debug, Clone)]
pub struct TopicSpec {
    pub name: String,
    /// The worker property that names the topic, for messages.
    pub property: &'static str,
    /// Partitions when created; `exactly` refuses any other count on an existing topic.
    pub partitions: i32,
    pub exactly: bool,
    /// -1 for the broker's default.
    pub replication_factor: i32,
    pub replication_property: &'static str,
    /// What the topic holds, for messages ("connector configurations", …).
    pub holds: &'static str,
}

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

pub fn admin_client(config: &ClientConfig) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    config.create().map_err(|e| anyhow::anyhow!("cannot create a Kafka admin client (check admin.* settings): {e}"))
}

/// Makes sure `spec.name` exists with the right settings; returns its partition count.
pub async fn ensure_topic(admin: &Arc<AdminClient<DefaultClientContext>>, spec: &TopicSpec) -> anyhow::Result<i32> {
    let options = AdminOptions::new().request_timeout(Some(ADMIN_TIMEOUT));
    // librdkafka's metadata call blocks: on a blocking thread, never on the runtime's own.
    let (counting, name) = (admin.clone(), spec.name.clone());
    let existing = tokio::task::spawn_blocking(move || partition_count(&counting, &name))
        .await
        .map_err(|e| anyhow::anyhow!("reading the metadata of topic '{}' failed: {e}", spec.name))??;
    let admin = admin.as_ref();
    let partitions = match existing {
        Some(count) => {
            check_cleanup_policy(admin, spec, &options).await?;
            count
        }
        None => {
            let replication = TopicReplication::Fixed(spec.replication_factor);
            let topic = NewTopic::new(&spec.name, spec.partitions, replication).set("cleanup.policy", "compact");
            let results = admin
                .create_topics([&topic], &options)
                .await
                .map_err(|e| anyhow::anyhow!("cannot create topic '{}' ({}): {e}", spec.name, spec.property))?;
            for result in results {
                match result {
                    Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                    Err((_, code)) => anyhow::bail!(
                        "cannot create topic '{}' (named by {}) with {} partition(s) and {}={}: {code}. {}",
                        spec.name,
                        spec.property,
                        spec.partitions,
                        spec.replication_property,
                        spec.replication_factor,
                        if code == RDKafkaErrorCode::InvalidReplicationFactor {
                            format!(
                                "The cluster has fewer brokers than that: lower {} (-1 takes the broker's default)",
                                spec.replication_property
                            )
                        } else {
                            "Check the broker's log and the worker's admin.* settings".to_string()
                        }
                    ),
                }
            }
            tracing::info!(
                "created topic {} ({}): {} partition(s), replication factor {}, cleanup.policy=compact",
                spec.name,
                spec.property,
                spec.partitions,
                spec.replication_factor
            );
            // Created here with cleanup.policy=compact: no need to read it back (a topic this
            // new may not be described yet, which costs retries).
            spec.partitions
        }
    };
    if spec.exactly && partitions != spec.partitions {
        anyhow::bail!(
            "topic '{}' (named by {}) has {partitions} partitions, but it must have exactly {} so that \
             every worker reads {} in one total order. Point {} at a new topic name (the worker creates it), \
             or delete the topic and start again",
            spec.name,
            spec.property,
            spec.partitions,
            spec.holds,
            spec.property
        );
    }
    Ok(partitions)
}

/// Refuses an existing internal topic whose cleanup policy would delete records.
async fn check_cleanup_policy(
    admin: &AdminClient<DefaultClientContext>,
    spec: &TopicSpec,
    options: &AdminOptions,
) -> anyhow::Result<()> {
    let policy = cleanup_policy(admin, &spec.name, options).await?;
    compact_only(&spec.name, spec.property, spec.holds, &policy)
}

/// An error unless `policy` is exactly `compact`, saying what a topic of another policy loses.
fn compact_only(topic: &str, property: &str, holds: &str, policy: &str) -> anyhow::Result<()> {
    if policy.replace(' ', "") != "compact" {
        anyhow::bail!(
            "topic '{topic}' (named by {property}) has cleanup.policy={policy}, but it must be exactly \
             cleanup.policy=compact: otherwise Kafka deletes old {holds} and the cluster loses them. \
             Change it with kafka-configs --alter --entity-type topics --entity-name {topic} --add-config \
             cleanup.policy=compact, or point {property} at another topic"
        );
    }
    Ok(())
}

/// Refuses an existing topic that `property` names to hold `holds` when its cleanup policy
/// would delete records, as Kafka Connect refuses one (blocking).
pub fn refuse_uncompacted(
    worker: &crate::config::WorkerConfig,
    topic: &str,
    property: &str,
    holds: &str,
) -> anyhow::Result<()> {
    let mut config = super::client_config(worker, &worker.admin_overrides, &[]);
    config.set("allow.auto.create.topics", "false");
    let admin = admin_client(&config)?;
    let options = AdminOptions::new().request_timeout(Some(ADMIN_TIMEOUT));
    let policy = block_on(cleanup_policy(&admin, topic, &options))??;
    compact_only(topic, property, holds, &policy)
}

/// Attempts to read a new topic's settings: a topic just created may not be known to every
/// broker yet.
const DESCRIBE_ATTEMPTS: u32 = 25;
const DESCRIBE_BACKOFF: Duration = Duration::from_millis(200);

async fn cleanup_policy(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
    options: &AdminOptions,
) -> anyhow::Result<String> {
    let resources = [ResourceSpecifier::Topic(topic)];
    let mut last_problem = String::new();
    for _ in 0..DESCRIBE_ATTEMPTS {
        let described = admin
            .describe_configs(&resources, options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot read the settings of topic '{topic}': {e}"))?;
        match described.into_iter().next() {
            Some(Ok(resource)) => match resource.get("cleanup.policy").and_then(|e| e.value.clone()) {
                Some(policy) => return Ok(policy),
                None => last_problem = "the broker reported no cleanup.policy".into(),
            },
            Some(Err(code)) => last_problem = format!("{code}"),
            None => last_problem = "the broker answered nothing".into(),
        }
        tokio::time::sleep(DESCRIBE_BACKOFF).await;
    }
    anyhow::bail!("cannot read cleanup.policy of topic '{topic}': {last_problem}")
}

/// The partitions of a topic that exists; an error for one that does not.
pub fn topic_partitions(worker: &crate::config::WorkerConfig, topic: &str) -> anyhow::Result<i32> {
    let mut config = super::client_config(worker, &worker.admin_overrides, &[]);
    config.set("allow.auto.create.topics", "false");
    let admin = admin_client(&config)?;
    partition_count(&admin, topic)?.ok_or_else(|| anyhow::anyhow!("topic {topic} does not exist"))
}

/// The partition count of a topic, or none if it does not exist.
fn partition_count(admin: &AdminClient<DefaultClientContext>, topic: &str) -> anyhow::Result<Option<i32>> {
    let metadata = admin
        .inner()
        .fetch_metadata(Some(topic), ADMIN_TIMEOUT)
        .map_err(|e| anyhow::anyhow!("cannot read metadata of topic '{topic}': {e}"))?;
    let Some(t) = metadata.topics().first() else { return Ok(None) };
    match t.error() {
        None => Ok(Some(t.partitions().len() as i32)),
        Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => Ok(None),
        Some(e) => anyhow::bail!("cannot read metadata of topic '{topic}': {:?}", RDKafkaErrorCode::from(e)),
    }
}

/// Runs an admin request to its end on the calling thread, which must not be one of an async
/// runtime's own (a task thread, or a REST request's blocking thread, is fine): the admin
/// client's answers need a timer, which a small runtime of the call's own gives.
fn block_on<T>(request: impl std::future::Future<Output = T>) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the admin client's runtime: {e}"))?;
    Ok(runtime.block_on(request))
}

/// As `delete_group`, blocking the calling thread (see `block_on`).
pub fn delete_group_blocking(admin: &AdminClient<DefaultClientContext>, group: &str) -> anyhow::Result<()> {
    block_on(delete_group(admin, group))?
}

/// Deletes a consumer group and with it every offset it committed; a group that does not exist
/// is fine. Kafka refuses while the group has members.
pub async fn delete_group(admin: &AdminClient<DefaultClientContext>, group: &str) -> anyhow::Result<()> {
    let options = AdminOptions::new().request_timeout(Some(ADMIN_TIMEOUT));
    let results = admin
        .delete_groups(&[group], &options)
        .await
        .map_err(|e| anyhow::anyhow!("cannot delete consumer group {group}: {e}"))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::GroupIdNotFound)) => {}
            Err((_, code)) => anyhow::bail!(
                "cannot delete consumer group {group}: {code}. The group must have no members, which takes a \
                 moment after the connector stopped"
            ),
        }
    }
    Ok(())
}

/// Makes sure a topic exists, creating it with `partitions` and `replication_factor` (-1 for the
/// broker's default) and the broker's other defaults when it is missing. Blocks the calling
/// thread, which must not be one of an async runtime's (a task thread, for a sink's dead-letter
/// queue).
///
/// `overrides` are a connector's `admin.override.*` settings, after the worker's `admin.*`.
pub fn ensure_plain_topic(
    worker: &crate::config::WorkerConfig,
    overrides: &[(String, String)],
    topic: &str,
    partitions: i32,
    replication_factor: i32,
    configs: &[(String, String)],
) -> anyhow::Result<()> {
    let mut config = super::client_config(worker, &worker.admin_overrides, overrides);
    // Asking for the topic's metadata must not have the broker create it with its defaults.
    config.set("allow.auto.create.topics", "false");
    let admin = admin_client(&config)?;
    if partition_count(&admin, topic)?.is_some() {
        return Ok(());
    }
    let options = AdminOptions::new().request_timeout(Some(ADMIN_TIMEOUT));
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication_factor));
    for (key, value) in configs {
        new = new.set(key, value);
    }
    let results = block_on(admin.create_topics([&new], &options))?
        .map_err(|e| anyhow::anyhow!("cannot create topic '{topic}': {e}"))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((_, RDKafkaErrorCode::InvalidReplicationFactor)) => anyhow::bail!(
                "cannot create topic '{topic}' with replication factor {replication_factor}: the cluster has fewer \
                 brokers than that; lower it (-1 takes the broker's default)"
            ),
            Err((_, RDKafkaErrorCode::InvalidConfig)) => {
                let given: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                anyhow::bail!("cannot create topic '{topic}': the broker refused its configs ({})", given.join(", "))
            }
            Err((_, code)) => anyhow::bail!("cannot create topic '{topic}': {code}; check the broker's log"),
        }
    }
    let shown = |n: i32| if n == -1 { "the broker's default".to_string() } else { n.to_string() };
    tracing::info!(
        "created topic {topic}: partitions {}, replication factor {}{}",
        shown(partitions),
        shown(replication_factor),
        configs.iter().map(|(k, v)| format!(", {k}={v}")).collect::<String>()
    );
    Ok(())
}
