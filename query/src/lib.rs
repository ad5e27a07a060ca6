//! The read side of annal: SQL over the ledger, answers to "what existed
//! when", and the recovery gates built on them. The folders follow
//! DESIGN.md:
//!
//! - [`tables`]: the DataFusion tables and table functions over the store,
//!   with filter pushdown to its indexes ([`tables::pushdown`]);
//! - [`sql`]: sessions over those tables, read-only and bounded, and
//!   `POST /v1/sql`;
//! - [`asof`]: inventory, ownership, revisions and registry at an instant
//!   under both clocks (valid time and as-known-at);
//! - [`recovery`]: takeover, prune, placement, fence, backup and rollout;
//! - [`report`]: cost and capacity attribution;
//! - [`proof`]: inclusion and consistency documents for auditors;
//! - [`export`]: Parquet for external engines;
//! - [`events`]: the event listing of `annal log`;
//! - [`timeline`]: events over time in buckets, for the UI's timeline;
//! - [`http`]: what every read route shares (errors, request parsing);
//!   each domain above exposes its own `router`.
#![deny(missing_docs)]

pub mod asof;
mod error;
pub mod events;
pub mod export;
pub mod http;
pub mod proof;
pub mod recovery;
pub mod report;
pub mod sql;
pub mod tables;
pub mod timeline;

pub use error::QueryError;
