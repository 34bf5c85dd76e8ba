//! Bindings for the `source` world, generated from `wit/`. Each world lives in its own crate
//! because wit-bindgen exports helper macros at the crate root, named after the exported
//! interfaces, and both worlds export `connector`.

wit_bindgen::generate!({
    path: "../../../../wit",
    world: "source",
    pub_export_macro: true,
    export_macro_name: "export_source_world",
    default_bindings_module: "wharf_sdk::bindings::source",
});
