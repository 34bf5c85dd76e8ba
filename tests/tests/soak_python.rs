//! The Python examples under sustained load (`wharf_e2e::soak`): a million records through each.
//!
//! componentize-py 0.17 kept every argument of every call (a sink died after some tens of
//! thousands of records); 0.25.1 frees them, and a sink given records that carry headers stays
//! flat in one instance. Its runtime (0.19 to 0.25.1) still keeps two things:
//! - the copy it makes of a `list<u8>` a plugin hands to the host (the bytes of a raw key, value
//!   or header, data of type bytes, a decimal's digits), never freed: a source or transform
//!   returning such values grows by their size and about 16 bytes for each;
//! - an empty list the host hands to the plugin (a record without headers, say): its
//!   `cabi_realloc` makes an allocation of zero bytes (16 in the allocator) that its bindings
//!   never free, since they free only lists of one byte or more.
//!
//! Those soaks run as an operator runs such plugins, with `wasm.instance.recycle.records` (here
//! every 100,000 records), and what is bounded is each instance's span.

use wharf_e2e::soak::{self, Plan};

#[test]
fn jsonl_sink_a_data_sink_stays_flat_in_one_instance_given_records_with_headers() {
    soak::file_sink("target/example-plugins/jsonl-sink.wasm", "struct+headers", Plan::default());
}

#[test]
fn jsonl_sink_a_data_sink_given_records_without_headers_recycled() {
    soak::file_sink("target/example-plugins/jsonl-sink.wasm", "struct", Plan::recycled(100_000));
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
