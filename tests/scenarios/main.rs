//! Cross-crate scenarios, one test binary: sources through the ingest
//! pipeline into the store and back out through the query crate.

mod aliases;
mod arrival_order;
mod as_of;
mod conformance;
mod coverage;
mod framing;
mod ownership;
