//! Bindings for the `sink` world, generated from `wit/`. The `types` and `host` interfaces are
//! shared with the source world's crate so that plugin authors see one set of types.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "sink",
    pub_export_macro: true,
    export_macro_name: "export_sink_world",
    default_bindings_module: "wharf_sdk::bindings::sink",
    with: {
        "wharf:connector/types@0.1.8": wharf_sdk_source_world::wharf::connector::types,
        "wharf:connector/host@0.1.8": wharf_sdk_source_world::wharf::connector::host,
        "wharf:connector/progress@0.1.8": wharf_sdk_source_world::wharf::connector::progress,
        "wharf:connector/metrics@0.1.8": wharf_sdk_source_world::wharf::connector::metrics,
    },
});
