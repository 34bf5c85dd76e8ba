//! The C examples under sustained load (`wharf_e2e::soak`): a million records through one
//! instance of each, its memory flat.

use wharf_e2e::soak::{self, Plan};

#[test]
fn orders_a_data_source() {
    soak::source("target/example-plugins/c-orders-source.wasm", &[("topic", "soak")], Vec::new(), Plan::default());
}

#[test]
fn lines_a_data_source_reading_a_file() {
    soak::file_source("target/example-plugins/lines-source.wasm", Plan::default());
}

#[test]
fn lines_a_data_sink_writing_a_file() {
    soak::file_sink("target/example-plugins/lines-sink.wasm", "string", Plan::default());
}

#[test]
fn a_transform() {
    soak::transform("target/example-plugins/c-upper-transform.wasm", &[], Plan::default());
}
