//! The read side of annal.
//!
//! For now this crate answers two questions straight from the log:
//! [`events::select`] lists events by cluster, type and valid-time window
//! through the store's derived indexes, and [`objects::live_at`] folds
//! object events into the objects that exist at an instant. The fold is the
//! naive full scan that DESIGN.md's version ordering defines; the DataFusion
//! tables and the incremental version index replace it with the query-layer
//! work, and keep it as their reference model.
#![deny(missing_docs)]

pub mod events;
pub mod objects;
