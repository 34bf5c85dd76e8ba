//! Bindings for the `transform` world, generated from `wit/`. The `types`, `host` and `data`
//! interfaces are shared with the other worlds' crates so that plugin authors see one set of
//! types.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "transform",
    pub_export_macro: true,
    export_macro_name: "export_transform_world",
    default_bindings_module: "wharf_sdk::bindings::transform",
    with: {
        "wharf:connector/types@0.1.8": wharf_sdk_source_world::wharf::connector::types,
        "wharf:connector/host@0.1.8": wharf_sdk_source_world::wharf::connector::host,
        "wharf:connector/data@0.1.8": wharf_sdk_data_source_world::wharf::connector::data,
    },
});
