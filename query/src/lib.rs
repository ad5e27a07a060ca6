//! The read side of annal: SQL over the ledger, and answers to "what
//! existed when".
//!
//! [`sql::session`] registers DataFusion tables over a [`annal_store::Store`]
//! (see [`tables`]), with filters on cluster, type, valid time and log
//! index pushed down to the store's indexes ([`pushdown`]). [`events::select`]
//! lists events for the CLI, and [`inventory`] answers "which objects were
//! live, owned by whom, at T (as known at T')" from the store's incremental
//! object version index; `inventory_at(T [, known_at])` is the same answer
//! as a SQL table function.
#![deny(missing_docs)]

pub mod backup;
mod error;
pub mod events;
pub mod export;
pub mod fence;
pub mod http;
pub mod inventory;
pub mod live_object;
pub mod managed_fields;
pub mod placement;
pub mod proof;
pub mod prune;
pub mod pushdown;
pub mod registry;
pub mod report;
pub mod revisions;
pub mod rollout;
pub mod sql;
pub mod tables;
pub mod takeover;

pub use error::QueryError;
