//! Shared body of the fuzz targets: one per `--format`.

use annal_ingest::pipeline::{self, Options};

/// Decodes `data` as `format` and checks the invariants every output must
/// keep: each envelope validates, and rejections name a line. Runs twice:
/// with the default framing and with list streaming forced on (a 64-byte
/// threshold), so the streaming framers see every input too.
pub fn check(format: &str, data: &[u8]) {
    let format = format.parse().expect("known format");
    for stream_lists_over in [annal_ingest::STREAM_LIST_BYTES, 64] {
        let options = Options {
            cluster: Some("fuzz".into()),
            stream_lists_over,
            ..Options::default()
        };
        let decoded = pipeline::decode_bytes(format, "fuzz", data, &options);
        for event in &decoded.events {
            event
                .validate()
                .expect("decoders emit only valid envelopes");
        }
        for r in &decoded.rejected {
            assert!(
                r.line.is_some_and(|l| l > 0),
                "rejection without a line: {r}"
            );
        }
    }
}
