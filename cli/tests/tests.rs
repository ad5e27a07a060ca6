//! End-to-end tests of the `annal` binary: real processes, real files.

mod util;

mod beside;
mod cloud_audit;
mod coverage;
mod crash;
mod diff;
mod docs;
mod drift;
mod drill;
mod gates;
mod history;
mod ingest;
mod kafka;
mod migration;
mod proofs;
mod prune;
mod read_only;
mod redaction;
mod reports;
mod serve;
mod serve_ingest;
mod sql;
mod tables;
mod takeover;
mod tamper;
mod tls;
mod ui;
