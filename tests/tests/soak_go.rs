//! The Go example under sustained load (`wharf_e2e::soak`): a million records through one
//! instance, its memory flat.

use wharf_e2e::soak::{self, Plan};

#[test]
fn sequence_a_bytes_source() {
    soak::source("target/example-plugins/sequence-source.wasm", &[("topic", "soak")], Vec::new(), Plan::default());
}
