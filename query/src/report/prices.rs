//! The price table: what one unit of each measure costs (TOML).
//!
//! ```toml
//! currency = "EUR"
//! [price]
//! syncs = 0.002            # per sync
//! sync_seconds = 0.0001    # per second a sync ran
//! render_seconds = 0.0004  # per second of manifest rendering
//! api_requests = 0.000002  # per Kubernetes API request
//! api_throttled = 0.00001  # per throttled (429) request
//! applied_bytes = 1e-10    # per byte applied
//! object_hours = 0.00001   # per object owned for an hour
//! ledger_bytes = 2e-11     # per byte of ledger entries
//! ```
//!
//! A measure missing from `[price]` costs nothing; an unknown one is an
//! error naming it, so a typo never silently prices a measure at zero.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::QueryError;

/// Every measure a price can be given for, in report column order.
pub const MEASURES: [&str; 8] = [
    "syncs",
    "sync_seconds",
    "render_seconds",
    "api_requests",
    "api_throttled",
    "applied_bytes",
    "object_hours",
    "ledger_bytes",
];

/// Prices per unit of measure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable {
    /// Currency label (free text, printed with costs).
    pub currency: String,
    /// Price per unit, by measure name.
    pub price: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    price: BTreeMap<String, f64>,
}

impl PriceTable {
    /// Reads a price table file.
    pub fn read(path: &Path) -> Result<Self, QueryError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| QueryError::BadInput(format!("price table {}: {e}", path.display())))?;
        Self::parse(&text)
            .map_err(|e| QueryError::BadInput(format!("price table {}: {e}", path.display())))
    }

    /// Parses price table text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        for (name, price) in &file.price {
            if !MEASURES.contains(&name.as_str()) {
                return Err(format!(
                    "[price] {name}: not a measure (one of {})",
                    MEASURES.join(", ")
                ));
            }
            if !price.is_finite() || *price < 0.0 {
                return Err(format!("[price] {name}: {price} is not a price"));
            }
        }
        Ok(PriceTable {
            currency: file.currency.unwrap_or_default(),
            price: file.price,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_and_typos_are_named() {
        let t = PriceTable::parse("currency = \"EUR\"\n[price]\nsyncs = 0.5\nobject_hours = 2\n")
            .unwrap();
        assert_eq!(t.currency, "EUR");
        assert_eq!(t.price["syncs"], 0.5);
        assert_eq!(t.price["object_hours"], 2.0);
        let err = PriceTable::parse("[price]\nsyncz = 1\n").unwrap_err();
        assert!(
            err.contains("syncz") && err.contains("not a measure"),
            "{err}"
        );
        let err = PriceTable::parse("[price]\nsyncs = -1\n").unwrap_err();
        assert!(err.contains("not a price"), "{err}");
        assert!(PriceTable::parse("[prices]\nsyncs = 1\n").is_err());
    }
}
