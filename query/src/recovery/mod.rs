//! The recovery gates (DESIGN "Recovery questions"): the answers a team
//! needs before a new control plane turns on auto-sync. Each takes an
//! [`crate::asof::inventory::AsOf`] and returns a plan or report with its
//! verdict; the CLI turns the verdict into exit code 3, HTTP into
//! `needs_approval`.
//!
//! - [`takeover`]: ADOPT / CONFLICT / ORPHAN / MISSING per object;
//! - [`prune`]: what a pruning sync would delete, and what is protected;
//! - [`placement`]: a cluster selector at two instants, or a proposed one;
//! - [`fence`]: did the fenced control plane still act;
//! - [`backup`]: an `argocd admin export` against the ledger;
//! - [`rollout`]: a revision's progress by cohort, and regressions;
//! - [`http`]: the routes of all of them.

pub mod backup;
pub mod fence;
pub mod http;
pub mod placement;
pub mod prune;
pub mod rollout;
pub mod takeover;
