//! As-of answers: what the ledger says existed at a valid time T, as it
//! knew it at a system time T' (DESIGN "Time travel and ownership").
//!
//! - [`aliases`]: Argo CD server URLs resolved to registered cluster ids;
//! - [`coverage`]: when each cluster was heard from, its gaps, and
//!   which clusters are stale at T;
//! - [`diff`]: what changed between two instants;
//! - [`drift`]: writes to GitOps-owned objects outside Git, and whether
//!   they were reverted;
//! - [`history`]: every version of an object, who made it, and the
//!   blame of a field;
//! - [`inventory`]: the objects live at T on each cluster and who owned
//!   them (the [`inventory::AsOf`] binder of both clocks is here; every
//!   recovery gate takes one);
//! - [`revisions`]: the last-good revision of each (cluster, app);
//! - [`registry`]: the cluster registry, one version per registry event;
//! - [`managed_fields`]: field managers of an object version;
//! - [`live_object`]: what a plan reads from an object's live version;
//! - [`http`]: `GET /v1/inventory`.

pub mod aliases;
pub mod coverage;
pub mod diff;
pub mod drift;
pub mod history;
pub mod http;
pub mod inventory;
pub mod live_object;
pub mod managed_fields;
pub mod registry;
pub mod revisions;
