//! DataFusion tables and table functions over the store.

mod args;
mod cluster_scan;
pub mod events;
pub mod inventory;
mod object_batch;
pub mod objects;

pub use events::EventsTable;
pub use inventory::InventoryAt;
pub use objects::ObjectsTable;
