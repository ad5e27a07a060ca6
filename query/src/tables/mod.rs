//! DataFusion tables and table functions over the store.
//!
//! | name | rows |
//! |---|---|
//! | `events` | every log entry |
//! | `objects` | every object version, with valid_from/valid_to |
//! | `managed_fields` | per object version and field manager |
//! | `clusters` | registry versions, with valid_from/valid_to |
//! | `revisions` | last-good intervals per (cluster, app) |
//! | `syncs` | every `app.sync` entry (a view over the column sidecar) |
//! | `inventory_at(T [, known_at])` | objects live at T, with owners |
//! | `clusters_at(T [, known_at])` | each cluster's registry entry at T |
//! | `last_good_at(T [, known_at])` | last-good revision per (cluster, app) at T |
//! | `inventory_diff(T1, T2 [, known_at])` | objects that differ between T1 and T2 |
//! | `drift(since [, until])` | writes to GitOps-owned objects outside Git |
//! | `changes` | every object version with who made it and what it changed |
//! | `object_history(cluster, kind, namespace, name)` | one object's `changes` rows |
//!
//! Each table module holds only what is particular to it: a schema, the
//! filters its scan applies, and the scan, as an [`adapter::Source`]
//! behind the one DataFusion provider [`adapter::Table`]. The as-of table
//! functions bind their instants through one `AsOfFunction` (`args`).
//! Object tables scan cluster by cluster (`cluster_scan`); folded tables
//! (registry, revisions, field managers) produce JSON rows (`fold`).

pub mod adapter;
mod args;
mod cluster_scan;
pub mod clusters;
pub mod diff;
pub mod drift;
mod estimated;
pub mod events;
mod fold;
pub mod history;
pub mod inventory;
pub mod managed_fields;
mod object_batch;
pub mod objects;
pub mod pushdown;
pub mod regressions;
pub mod reports;
pub mod revisions;
mod stream;
pub mod syncs;

pub use events::EventsTable;
pub use objects::ObjectsTable;
