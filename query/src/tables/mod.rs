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

mod args;
mod cluster_scan;
pub mod clusters;
mod estimated;
pub mod events;
mod fold;
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
pub use inventory::InventoryAt;
pub use objects::ObjectsTable;
