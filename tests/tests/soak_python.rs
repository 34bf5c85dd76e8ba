//! The Python examples under sustained load (`wharf_e2e::soak`): a million records through each.
//!
//! componentize-py (0.19 to 0.25) never frees the copy it makes of a `list<u8>` a plugin hands to
//! the host: the bytes of a raw key, value or header, data of type bytes, a decimal's digits.
//! A source or transform that returns such values grows by their size (and the allocator's
//! overhead, about 16 bytes) for each one; sinks, which only take them, stay flat. Those soaks
//! run as an operator runs such plugins, with `wasm.instance.recycle.records` (here every
//! 100,000 records), and what is bounded is each instance's span.

use wharf_e2e::soak::{self, Plan};

#[test]
fn jsonl_sink_a_data_sink_stays_flat_in_one_instance() {
    soak::file_sink("target/example-plugins/jsonl-sink.wasm", "struct", Plan::default());
}

#[test]
fn orders_a_data_source_with_decimals_recycled() {
    soak::source(
        "target/example-plugins/py-orders-source.wasm",
        &[("topic", "soak")],
        Vec::new(),
        Plan::recycled(100_000),
    );
}

#[test]
fn jsonl_source_a_source_of_raw_bytes_recycled() {
    soak::file_source("target/example-plugins/jsonl-source.wasm", Plan::recycled(100_000));
}

#[test]
fn a_transform_adding_a_bytes_header_recycled() {
    soak::transform("target/example-plugins/py-upper-transform.wasm", &[], Plan::recycled(100_000));
}
