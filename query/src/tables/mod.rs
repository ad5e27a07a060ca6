//! DataFusion tables over the store.

pub mod events;

pub use events::EventsTable;
