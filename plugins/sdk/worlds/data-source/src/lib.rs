//! Bindings for the `data-source-with-connection-tls-exactly-once` world (the `data-source`
//! world, `connection-grants`, `connection-tls`, `exactly-once` and `transaction-context`),
//! generated from `wit/`. The `types` and `host`
//! interfaces are shared with the source world's crate so that plugin authors see one set of
//! types.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "data-source-with-connection-tls-exactly-once",
    pub_export_macro: true,
    export_macro_name: "export_data_source_with_connections_world",
    default_bindings_module: "wharf_sdk::bindings::data_source",
    with: {
        "wharf:connector/types@0.1.8": wharf_sdk_source_world::wharf::connector::types,
        "wharf:connector/host@0.1.8": wharf_sdk_source_world::wharf::connector::host,
        "wharf:connector/progress@0.1.8": wharf_sdk_source_world::wharf::connector::progress,
        "wharf:connector/metrics@0.1.8": wharf_sdk_source_world::wharf::connector::metrics,
    },
});
