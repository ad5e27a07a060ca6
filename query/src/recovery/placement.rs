//! Placement diff: which clusters a selector picks, and how that changes
//! between two instants or under a proposed selector (DESIGN "Recovery
//! questions"). Answers name stable cluster ids only, never API addresses
//! or credentials.
//!
//! A selector is `key=value` terms joined by commas, all of which must hold
//! (as Kubernetes label selectors); `key!=value` negates one term. A key is
//! a registry field (`environment`, `region`, `fault_domain`, `tenant`,
//! `compliance`, `owner`, `lifecycle`, `state`, `display_name`) or a key of
//! the registration's `attributes`. An exclusion drops a cluster when any
//! of its terms holds.

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;

use crate::asof::inventory::AsOf;
use crate::asof::registry::{self, ClusterVersion};
use crate::QueryError;

/// A parsed selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    terms: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    key: String,
    value: String,
    equal: bool,
}

impl Selector {
    /// Parses `k=v,k2!=v2` (an empty text selects every cluster).
    pub fn parse(text: &str) -> Result<Selector, QueryError> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value, equal) = if let Some((k, v)) = part.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, v.strip_prefix('=').unwrap_or(v), true)
            } else {
                return Err(QueryError::Sql(format!(
                    "selector term {part:?} is not key=value or key!=value"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() {
                return Err(QueryError::Sql(format!(
                    "selector term {part:?} has no key"
                )));
            }
            terms.push(Term {
                key: key.to_string(),
                value: value.to_string(),
                equal,
            });
        }
        Ok(Selector { terms })
    }

    /// Whether every term holds for `c`.
    pub fn matches(&self, c: &ClusterVersion) -> bool {
        self.terms.iter().all(|t| t.holds(c))
    }

    /// Whether any term holds for `c` (an exclusion).
    pub fn any(&self, c: &ClusterVersion) -> bool {
        self.terms.iter().any(|t| t.holds(c))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| format!("{}{}{}", t.key, if t.equal { "=" } else { "!=" }, t.value))
            .collect();
        write!(f, "{}", parts.join(","))
    }
}

impl Term {
    fn holds(&self, c: &ClusterVersion) -> bool {
        (c.field(&self.key) == Some(self.value.as_str())) == self.equal
    }
}

/// One side of a diff: a selector at an instant.
#[derive(Clone, Debug)]
pub struct Side {
    /// What selects.
    pub selector: Selector,
    /// When (valid and system time).
    pub as_of: AsOf,
}

/// The diff.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// The selector before (and its instant).
    pub from: String,
    /// The selector after (and its instant).
    pub to: String,
    /// Clusters selected before.
    pub before: Vec<String>,
    /// Clusters selected after: the candidates.
    pub candidates: Vec<String>,
    /// Selected after, not before.
    pub added: Vec<String>,
    /// Selected before, not after.
    pub removed: Vec<String>,
}

/// The clusters `side` selects, minus `exclude`.
pub fn select(
    store: &annal_store::Store,
    side: &Side,
    exclude: &Selector,
) -> Result<BTreeSet<String>, QueryError> {
    Ok(registry::at(store, None, &side.as_of)?
        .into_iter()
        .filter(|c| side.selector.matches(c) && (exclude.terms.is_empty() || !exclude.any(c)))
        .map(|c| c.cluster)
        .collect())
}

/// Compares what `from` and `to` select.
pub fn diff(
    store: &annal_store::Store,
    from: &Side,
    to: &Side,
    exclude: &Selector,
) -> Result<Diff, QueryError> {
    let before = select(store, from, exclude)?;
    let after = select(store, to, exclude)?;
    let describe = |s: &Side| format!("{} at {}", s.selector, s.as_of.valid);
    Ok(Diff {
        from: describe(from),
        to: describe(to),
        added: after.difference(&before).cloned().collect(),
        removed: before.difference(&after).cloned().collect(),
        before: before.into_iter().collect(),
        candidates: after.into_iter().collect(),
    })
}

/// What in `d` needs approval: no candidate, more removals than
/// `max_remove`, more additions than `max_add`.
pub fn gate(d: &Diff, max_add: Option<u64>, max_remove: u64) -> Vec<String> {
    let mut flags = Vec::new();
    if d.candidates.is_empty() {
        flags.push("the selector picks no cluster".to_string());
    }
    if d.removed.len() as u64 > max_remove {
        flags.push(format!(
            "{} clusters removed, more than --max-remove {max_remove}",
            d.removed.len()
        ));
    }
    if let Some(max) = max_add {
        if d.added.len() as u64 > max {
            flags.push(format!(
                "{} clusters added, more than --max-add {max}",
                d.added.len()
            ));
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use annal_schemas::Timestamp;

    fn cluster(id: &str, env: &str, wave: &str) -> ClusterVersion {
        ClusterVersion {
            cluster: id.into(),
            display_name: None,
            environment: Some(env.into()),
            region: None,
            fault_domain: None,
            tenant: None,
            compliance: None,
            owner: None,
            lifecycle: None,
            state: None,
            attributes: [("wave".to_string(), wave.to_string())].into(),
            api_server: Some("https://10.0.0.1:6443".into()),
            ca_fingerprint: None,
            credential_fingerprint: None,
            valid_from: Timestamp::now(),
            valid_to: None,
            index: 0,
        }
    }

    #[test]
    fn terms_are_anded_and_read_fields_and_attributes() {
        let s = Selector::parse("environment=prod, wave=1").unwrap();
        assert!(s.matches(&cluster("a", "prod", "1")));
        assert!(!s.matches(&cluster("b", "prod", "2")));
        assert!(!s.matches(&cluster("c", "staging", "1")));
        let not = Selector::parse("wave!=1").unwrap();
        assert!(not.matches(&cluster("b", "prod", "2")));
        assert!(Selector::parse("")
            .unwrap()
            .matches(&cluster("x", "y", "z")));
    }

    #[test]
    fn an_exclusion_drops_on_any_term() {
        let ex = Selector::parse("wave=2,environment=staging").unwrap();
        assert!(ex.any(&cluster("b", "prod", "2")));
        assert!(ex.any(&cluster("c", "staging", "1")));
        assert!(!ex.any(&cluster("a", "prod", "1")));
    }

    #[test]
    fn malformed_terms_are_errors() {
        assert!(Selector::parse("environment").is_err());
        assert!(Selector::parse("=prod").is_err());
    }
}
