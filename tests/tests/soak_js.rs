//! The JavaScript examples under sustained load (`wharf_e2e::soak`): a million records through
//! each.
//!
//! StarlingMonkey's garbage-collected heap grows in steps its collector's timing decides, towards
//! a working size it reaches after more than `PLATEAU_AT` records: through the transform, 75 MiB
//! after a hundred thousand records of a 40-byte string, 115 to 143 MiB after a million from one
//! run to the next, then 143 MiB at every reading up to four million; the order source held 87 to
//! 91 MiB. The instance's growth is reported and held to `wasm.memory.max.bytes` (256 MiB), not to
//! the 2 MiB of the other languages; the host's memory outside it is held to its bound. The HTTP sink's `fetch` keeps the host handles of
//! each request (request, bodies, streams, pollables: eight) until the collector runs, which a
//! small heap seldom needs: past `wasm.max.host.handles` (1,024, 128 requests) a call fails. It
//! runs as an operator runs it, with `wasm.instance.recycle.records` (here every 100 requests).

use wharf::runtime::Grants;
use wharf_e2e::soak::{self, Plan};

#[test]
fn orders_a_data_source() {
    soak::source(
        "target/example-plugins/js-orders-source.wasm",
        &[("topic", "soak")],
        Vec::new(),
        Plan::collected_heap(),
    );
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
        Plan { recycle: Some(100_000), collected_heap: true },
    );
}

#[test]
fn a_transform() {
    soak::transform("target/example-plugins/js-upper-transform.wasm", &[], Plan::collected_heap());
}
