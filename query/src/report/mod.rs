//! Cost and capacity attribution reports over the ledger.
//!
//! [`cost`] says what each cluster, app, tenant, team or environment cost
//! the delivery platform per step (syncs, sync and render time, API
//! requests, applied bytes, object-hours, ledger bytes, and their price);
//! [`capacity`] gives each cluster's fan-out, API and 429 rates and queue
//! age per step, flagging the steps that break a budget. Both are computed
//! from the log and the object version index alone, and are also SQL table
//! functions (`cost_report`, `capacity_report`). [`html`] renders them as
//! one self-contained page with SVG charts.

mod buckets;
pub mod capacity;
pub mod cost;
mod groups;
pub mod html;
mod prices;

pub use capacity::{capacity, Budgets, CapacityReport, CapacityRequest, CapacityRow};
pub use cost::{cost, CostReport, CostRequest, CostRow, Measures};
pub use groups::GroupBy;
pub use prices::{PriceTable, MEASURES};

use crate::QueryError;

/// A step like `30m`, `1h`, `6h` or `1d`, in seconds.
pub fn parse_step(s: &str) -> Result<u64, QueryError> {
    match annal_schemas::duration_seconds(s) {
        Some(0) | None => Err(QueryError::BadInput(format!(
            "{s:?} is not a step like 30m, 1h or 1d"
        ))),
        Some(seconds) => Ok(seconds),
    }
}
