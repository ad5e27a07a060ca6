//! Inputs the fuzz targets found, kept as regression tests.

use annal_ingest::pipeline::{self, Options};
use annal_ingest::Format;

/// Checks what `fuzz/src/lib.rs` checks, at both list thresholds.
fn check(format: Format, data: &[u8]) {
    for stream_lists_over in [annal_ingest::STREAM_LIST_BYTES, 64] {
        let options = Options {
            cluster: Some("fuzz".into()),
            stream_lists_over,
            ..Options::default()
        };
        let decoded = pipeline::decode_bytes(format, "fuzz", data, &options);
        for event in &decoded.events {
            event.validate().unwrap();
        }
        for r in &decoded.rejected {
            assert!(
                r.line.is_some_and(|l| l > 0),
                "rejection without a line: {r}"
            );
        }
    }
}

#[test]
fn yaml_with_control_characters_is_rejected_with_a_line() {
    check(
        Format::Auto,
        include_bytes!("fuzz/auto-control-characters.yaml"),
    );
}
