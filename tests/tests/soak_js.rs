//! The JavaScript examples under sustained load (`wharf_e2e::soak`): a million records through
//! each.
//!
//! StarlingMonkey's garbage-collected heap grows to its working size over more records than
//! `PLATEAU_AT` when records are small (143 MiB after a million records of a 40-byte string
//! through the transform, then flat over four million): the transform's plateau is read after a
//! million records, and a million more follow. The HTTP sink's `fetch` keeps the host handles of
//! each request (request, bodies, streams, pollables: eight) until the collector runs, which a
//! small heap seldom needs: past `wasm.max.host.handles` (1,024, 128 requests) a call fails. It
//! runs as an operator runs it, with `wasm.instance.recycle.records` (here every 100 requests).

use wharf::runtime::Grants;
use wharf_e2e::soak::{self, Plan};

#[test]
fn orders_a_data_source() {
    soak::source("target/example-plugins/js-orders-source.wasm", &[("topic", "soak")], Vec::new(), Plan::default());
}

#[test]
fn http_sink_a_data_sink_recycled() {
    let address = soak::http_receiver();
    let url = format!("http://{address}/records");
    soak::sink(
        "target/example-plugins/http-sink.wasm",
        &[("url", &url)],
        |g| Grants { http: vec![address.clone()], max_sockets: 16, ..g },
        "string",
        Plan::recycled(100_000),
    );
}

#[test]
fn a_transform_after_its_heap_grew() {
    soak::transform("target/example-plugins/js-upper-transform.wasm", &[], Plan::warmed(1_000_000));
}
