//! Worker and connector configuration.

pub mod ceiling;
pub mod clients;
pub mod connector;
pub mod converters;
pub mod files;
pub mod keys;
pub mod properties;
pub mod providers;
pub mod reserved;
pub mod security;
pub mod tolerance;
pub mod topic_creation;
pub mod worker;

pub use ceiling::GrantCeiling;
pub use connector::{ConnectorConfig, FolderGrant};
pub use converters::{ConverterChoice, ConverterOverrides, Converters};
pub use providers::ConfigProviders;
pub use reserved::ReservedTopics;
pub use tolerance::{DeadLetterQueue, ErrorPolicy, RetryTimeout};
pub use worker::{ExactlyOnceSource, Mode, WasmLimits, WorkerConfig};

/// The converters, transforms and predicates built into the worker, by full class name, with the
/// type Kafka Connect's plugin list gives each (`converter`, `header_converter`,
/// `transformation`, `predicate`); a class that is both kinds of converter is listed twice, as
/// Connect lists it.
pub fn built_in_plugins() -> Vec<(String, &'static str)> {
    let mut list = Vec::new();
    for (class, converts_records) in wharf_connect::convert::classes() {
        if converts_records {
            list.push((class.to_string(), "converter"));
        }
        list.push((class.to_string(), "header_converter"));
    }
    list.extend(wharf_connect::transform::transform_classes().into_iter().map(|c| (c, "transformation")));
    list.extend(wharf_connect::transform::predicate_classes().into_iter().map(|c| (c, "predicate")));
    list
}
