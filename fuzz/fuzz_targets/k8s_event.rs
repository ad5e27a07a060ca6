//! Fuzz `--format k8s-event`: framing (JSON or YAML), decoding, redaction and
//! validation must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    annal_fuzz::check("k8s-event", data);
});
