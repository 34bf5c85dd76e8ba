//! Host-side bindings generated from `wit/`, and the names the rest of `runtime/` knows them
//! by; nothing else (`wit_convert.rs` turns them into the domain's types). Nothing outside
//! `runtime/` uses the generated types.

pub(super) mod source {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "source-core",
        // Calls into the plugin are futures, so that a deadline also ends time spent waiting
        // inside WASI (clocks, pollables, sockets, wasi:http); the `host` imports stay plain calls.
        exports: { default: async },
        // A plugin may ask for at most `MAX_OFFSET_LOOKUPS` partitions at once; more traps.
        imports: { "wharf:connector/host.committed-offsets": trappable },
    });
}

pub(super) mod sink {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "sink-core",
        exports: { default: async },
        // A report beyond the batch's size traps.
        imports: { "wharf:connector/errant-records.report": trappable },
        with: {
            "wharf:connector/types": super::source::wharf::connector::types,
            "wharf:connector/host": super::source::wharf::connector::host,
            "wharf:connector/progress": super::source::wharf::connector::progress,
            "wharf:connector/metrics": super::source::wharf::connector::metrics,
        },
    });
}

/// Sources whose records carry data (0.1.2 and later).
pub(super) mod data_source {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "data-source-core",
        exports: { default: async },
        with: {
            "wharf:connector/types": super::source::wharf::connector::types,
            "wharf:connector/host": super::source::wharf::connector::host,
            "wharf:connector/progress": super::source::wharf::connector::progress,
            "wharf:connector/metrics": super::source::wharf::connector::metrics,
        },
    });
}

/// Sinks whose records carry data (0.1.2 and later).
pub(super) mod data_sink {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "data-sink-core",
        exports: { default: async },
        with: {
            "wharf:connector/types": super::source::wharf::connector::types,
            "wharf:connector/host": super::source::wharf::connector::host,
            "wharf:connector/progress": super::source::wharf::connector::progress,
            "wharf:connector/metrics": super::source::wharf::connector::metrics,
            "wharf:connector/data": super::data_source::wharf::connector::data,
            "wharf:connector/errant-records": super::sink::wharf::connector::errant_records,
        },
    });
}

/// Transform plugins (0.1.3 and later).
pub(super) mod transform {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "transform-core",
        exports: { default: async },
        with: {
            "wharf:connector/types": super::source::wharf::connector::types,
            "wharf:connector/host": super::source::wharf::connector::host,
            "wharf:connector/data": super::data_source::wharf::connector::data,
        },
    });
}

/// The `grants` export, which plugins of 0.1.0 lack: looked up apart from the worlds above.
pub(super) mod declared {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "declared-grants",
        exports: { default: async },
    });
}

/// The `connection-grants` export (0.1.4 and later), looked up apart as `grants` is.
pub(super) mod declared_connections {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "declared-connection-grants",
        exports: { default: async },
    });
}

/// The `connection-tls` export (0.1.5 and later), looked up apart as `grants` is.
pub(super) mod declared_tls {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "declared-connection-tls",
        exports: { default: async },
    });
}

/// The `exactly-once` export and the `transaction-context` import (0.1.8 and later): the export
/// is looked up apart as `grants` is; the import is linked for every plugin.
pub(super) mod exactly_once {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "exactly-once-source",
        exports: { default: async },
        with: {
            "wharf:connector/types": super::source::wharf::connector::types,
        },
    });
}

pub(super) use data_sink::exports::wharf::connector::data_sink_task::{SinkBatch, SinkRecord as DataSinkRecord};
pub(super) use data_source::exports::wharf::connector::data_source_task::SourceBatch;
pub(super) use exactly_once::exports::wharf::connector::exactly_once::Capability as WitCapability;
pub(super) use exactly_once::wharf::connector::transaction_context as wit_transactions;
pub(super) use sink::wharf::connector::errant_records as wit_errant;
pub(super) use source::wharf::connector::host as wit_host;
pub(super) use source::wharf::connector::progress as wit_progress;
pub(super) use source::wharf::connector::types as wit;
pub(super) use transform::exports::wharf::connector::transformer::{TransformBatch, TransformRecord, TransformedBatch};
