//! Bindings for the `data-sink-with-connection-tls` world (the `data-sink` world,
//! `connection-grants` and `connection-tls`), generated from `wit/`. The `types`, `host` and `data`
//! interfaces are shared with the other worlds' crates so that plugin authors see one set of
//! types.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "data-sink-with-connection-tls",
    pub_export_macro: true,
    export_macro_name: "export_data_sink_with_connections_world",
    default_bindings_module: "wharf_sdk::bindings::data_sink",
    with: {
        "wharf:connector/types@0.1.8": wharf_sdk_source_world::wharf::connector::types,
        "wharf:connector/host@0.1.8": wharf_sdk_source_world::wharf::connector::host,
        "wharf:connector/progress@0.1.8": wharf_sdk_source_world::wharf::connector::progress,
        "wharf:connector/metrics@0.1.8": wharf_sdk_source_world::wharf::connector::metrics,
        "wharf:connector/data@0.1.8": wharf_sdk_data_source_world::wharf::connector::data,
        "wharf:connector/errant-records@0.1.8": wharf_sdk_sink_world::wharf::connector::errant_records,
    },
});
