//! Fuzz `--format eks-audit`: framing, unwrapping the cloud export, decoding the
//! audit event inside, redaction and validation must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    annal_fuzz::check("eks-audit", data);
});
