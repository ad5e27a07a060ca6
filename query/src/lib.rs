//! The read side of annal: SQL over the ledger, and answers to "what
//! existed when".
//!
//! [`sql::session`] registers DataFusion tables over a [`annal_store::Store`]
//! (see [`tables`]), with filters on cluster, type, valid time and log
//! index pushed down to the store's indexes ([`pushdown`]). [`events::select`]
//! lists events for the CLI, and [`objects::live_at`] is the naive fold of
//! object events that DESIGN.md's version ordering defines: the reference
//! model the incremental version index is checked against.
#![deny(missing_docs)]

mod error;
pub mod events;
pub mod objects;
pub mod pushdown;
pub mod sql;
pub mod tables;

pub use error::QueryError;
