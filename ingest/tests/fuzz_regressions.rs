//! Inputs the fuzz targets found, kept as regression tests. The checks are
//! the fuzz harness's own (`fuzz/src/lib.rs`), included rather than copied.

#[path = "../../fuzz/src/lib.rs"]
mod harness;

#[test]
fn yaml_with_control_characters_is_rejected_with_a_line() {
    harness::check("auto", include_bytes!("fuzz/auto-control-characters.yaml"));
}
