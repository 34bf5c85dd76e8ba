//! The Rust plugins under sustained load (`wharf_e2e::soak`): a million records through one
//! instance of each, its memory flat.

use wharf_e2e::soak::{self, Plan};

#[test]
fn datagen_a_data_source() {
    soak::source(
        "target/plugins/datagen.wasm",
        &[("topic", "soak"), ("value.format", "struct")],
        Vec::new(),
        Plan::default(),
    );
}

#[test]
fn file_source_a_bytes_source() {
    soak::file_source("target/plugins/file-source.wasm", Plan::default());
}

#[test]
fn file_sink_a_bytes_sink() {
    soak::file_sink("target/plugins/file-sink.wasm", "bytes", Plan::default());
}

#[test]
fn a_transform() {
    soak::transform("target/test-plugins/test-transform.wasm", &[], Plan::default());
}
