//! What a herder request can fail with, by kind: REST maps each kind to its status code, and
//! nothing reads the message to tell them apart.

use crate::runtime::registry::COMPILE_WAIT;
use crate::storage::config::ConfigStoreError;
use crate::worker::offsets::OffsetsError;
use crate::worker::StartError;

#[derive(Debug, thiserror::Error)]
pub enum HerderError {
    #[error("Connector {0} not found")]
    NotFound(String),
    #[error("Connector {0} already exists")]
    Conflict(String),
    #[error("Task {1} of connector {0} not found")]
    TaskNotFound(String, u32),
    /// No plugin of `plugin.path` answers to the name (and version) asked for.
    #[error("{0}")]
    PluginNotFound(String),
    #[error("{0}")]
    BadConfig(String),
    #[error("{0}")]
    Store(String),
    /// Kafka did not answer, or refused: not the user's input.
    #[error("{0}")]
    Kafka(String),
    /// The plugin failed while it was asked (validate): not the user's input either.
    #[error("{0}")]
    Plugin(String),
    /// Only the leader writes; the caller retries (or the request is forwarded).
    #[error("{0}")]
    NotLeader(String),
    /// The herder's thread did not answer in time, or too much waits for it.
    #[error("{0}")]
    Busy(String),
    /// The host failed on a bug (caught): neither the user's input nor an outside failure.
    #[error("{0}")]
    Bug(String),
}

impl From<ConfigStoreError> for HerderError {
    fn from(e: ConfigStoreError) -> Self {
        match e {
            ConfigStoreError::NotLeader(why) => HerderError::NotLeader(why),
            other => HerderError::Store(other.to_string()),
        }
    }
}

impl HerderError {
    /// The error with every resolved secret in its message put back as its reference.
    pub(super) fn scrubbed(self, secrets: &crate::config::providers::Secrets) -> Self {
        use HerderError::*;
        let scrub = |text: String| secrets.scrub(&text);
        match self {
            PluginNotFound(m) => PluginNotFound(scrub(m)),
            BadConfig(m) => BadConfig(scrub(m)),
            Store(m) => Store(scrub(m)),
            Kafka(m) => Kafka(scrub(m)),
            Plugin(m) => Plugin(scrub(m)),
            NotLeader(m) => NotLeader(scrub(m)),
            Busy(m) => Busy(scrub(m)),
            Bug(m) => Bug(scrub(m)),
            other => other,
        }
    }
}

/// A start's failure by its kind: the plugin's or the store's is not the user's input.
impl From<StartError> for HerderError {
    fn from(e: StartError) -> Self {
        if e.waits_for_compile() {
            return HerderError::Busy(format!(
                "{e} (waited {} s); try again once they are compiled",
                COMPILE_WAIT.as_secs()
            ));
        }
        match e {
            StartError::Plugin { .. } => HerderError::Plugin(e.to_string()),
            StartError::Store { .. } => HerderError::Store(e.to_string()),
            StartError::Bug { .. } | StartError::Conflict { .. } => HerderError::Bug(e.to_string()),
            StartError::NoPlugin { .. } | StartError::Invalid { .. } => HerderError::BadConfig(e.to_string()),
        }
    }
}

impl From<OffsetsError> for HerderError {
    fn from(e: OffsetsError) -> Self {
        match e {
            OffsetsError::Store(m) => HerderError::Store(m),
            OffsetsError::Kafka(m) => HerderError::Kafka(m),
            wrong @ OffsetsError::WrongKind { .. } => HerderError::BadConfig(wrong.to_string()),
        }
    }
}
