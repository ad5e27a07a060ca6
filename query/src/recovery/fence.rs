//! Fence check: after the old control plane is fenced, did it (or anyone
//! with its credentials) still act? (DESIGN "Recovery questions").
//!
//! The fence is the `controlplane.fenced` event of the controller (its
//! principal and credential come from there, plus any principal the caller
//! names). Violations, up to the instant asked:
//!
//! - `write-after-fence`: an event at or after the fence time whose actor is
//!   the old controller or one of its principals (as principal or
//!   impersonated). Audit reads (`get`, `list`, `watch`) and refused
//!   requests (code ≥ 400: the fence working) are not writes, nor are
//!   heartbeats, health reports and metrics.
//! - `credential-not-revoked`: a credential issued to one of its principals
//!   (or named by the fence) with no revocation.
//! - `revoked-credential-used`: any event whose actor credential was
//!   revoked before the event's time, whoever holds it.

use std::collections::{BTreeMap, BTreeSet};

use annal_schemas::data::{AuditRequest, ClusterCredential, ControlplaneFenced};
use annal_schemas::{Envelope, EventType, Timestamp};
use annal_store::Store;
use serde::Serialize;

use crate::asof::inventory::AsOf;
use crate::QueryError;

/// The question.
#[derive(Clone, Debug)]
pub struct Request {
    /// The old controller.
    pub controller: String,
    /// The fence time (default: the controller's latest fence event).
    pub since: Option<Timestamp>,
    /// Further principals of the old controller.
    pub principals: Vec<String>,
}

/// One violation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// `write-after-fence`, `credential-not-revoked`, `revoked-credential-used`.
    pub code: &'static str,
    /// Log index of the event (none for an unrevoked credential).
    pub index: Option<u64>,
    /// Valid time of the event.
    pub time: Option<String>,
    /// Cluster of the event.
    pub cluster: Option<String>,
    /// The particulars.
    pub detail: String,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The old controller.
    pub controller: String,
    /// The fence time used.
    pub fenced_at: String,
    /// Its principals.
    pub principals: Vec<String>,
    /// Credential fingerprints held by them, and whether revoked.
    pub credentials: Vec<Credential>,
    /// What broke the fence.
    pub violations: Vec<Violation>,
}

/// A credential of the old controller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Credential {
    /// BLAKE3 fingerprint.
    pub fingerprint: String,
    /// Holder.
    pub principal: Option<String>,
    /// Cluster it was issued for.
    pub cluster: Option<String>,
    /// When it was revoked (`None`: never).
    pub revoked_at: Option<String>,
}

/// Event types that are observations, not actions.
const NOT_WRITES: [EventType; 3] = [
    EventType::ClusterHeartbeat,
    EventType::AppHealth,
    EventType::ControllerMetrics,
];

/// Checks the fence of `request.controller` up to `as_of`.
pub fn check(store: &Store, request: &Request, as_of: &AsOf) -> Result<Report, QueryError> {
    let mut principals: BTreeSet<String> = request.principals.iter().cloned().collect();
    let mut fence_credentials: BTreeSet<String> = BTreeSet::new();
    let mut fenced_at: Option<Timestamp> = None;
    for entry in as_of.events(store, EventType::ControlplaneFenced, None) {
        let entry = entry?;
        let Ok(f) = serde_json::from_value::<ControlplaneFenced>(entry.event.data.clone()) else {
            continue;
        };
        if f.controller != request.controller {
            continue;
        }
        principals.extend(f.principal);
        fence_credentials.extend(f.credential);
        fenced_at = fenced_at.max(Some(entry.event.time));
    }
    let since = request.since.or(fenced_at).ok_or_else(|| {
        QueryError::Sql(format!(
            "no controlplane.fenced event for {:?} by {}: give --since",
            request.controller, as_of.valid
        ))
    })?;

    // Credentials: issued (to its principals, or named by the fence) and
    // every revocation.
    let mut revoked: BTreeMap<String, Timestamp> = BTreeMap::new();
    for entry in as_of.events(store, EventType::ClusterCredentialRevoked, None) {
        let entry = entry?;
        if let Ok(c) = serde_json::from_value::<ClusterCredential>(entry.event.data.clone()) {
            let t = entry.event.time;
            revoked
                .entry(c.fingerprint)
                .and_modify(|r| *r = (*r).min(t))
                .or_insert(t);
        }
    }
    let mut credentials: BTreeMap<String, Credential> = fence_credentials
        .iter()
        .map(|f| {
            (
                f.clone(),
                Credential {
                    fingerprint: f.clone(),
                    principal: None,
                    cluster: None,
                    revoked_at: None,
                },
            )
        })
        .collect();
    for entry in as_of.events(store, EventType::ClusterCredentialIssued, None) {
        let entry = entry?;
        let Ok(c) = serde_json::from_value::<ClusterCredential>(entry.event.data.clone()) else {
            continue;
        };
        if principals.contains(&c.principal) || fence_credentials.contains(&c.fingerprint) {
            credentials.insert(
                c.fingerprint.clone(),
                Credential {
                    fingerprint: c.fingerprint,
                    principal: Some(c.principal),
                    cluster: entry.event.cluster.clone(),
                    revoked_at: None,
                },
            );
        }
    }
    let mut violations = Vec::new();
    for c in credentials.values_mut() {
        c.revoked_at = revoked.get(&c.fingerprint).map(|t| t.to_string());
        if c.revoked_at.is_none() {
            violations.push(Violation {
                code: "credential-not-revoked",
                index: None,
                time: None,
                cluster: c.cluster.clone(),
                detail: format!(
                    "credential {} of {} was never revoked",
                    c.fingerprint,
                    c.principal.as_deref().unwrap_or(&request.controller)
                ),
            });
        }
    }

    // Events: writes by the old controller after the fence, and any use of
    // a revoked credential after its revocation.
    let from = revoked.values().min().map_or(since, |r| (*r).min(since));
    for t in EventType::ALL {
        if NOT_WRITES.contains(&t) {
            continue;
        }
        for entry in as_of.events(store, t, Some(from)) {
            let entry = entry?;
            let e = &entry.event;
            let Some(actor) = &e.actor else { continue };
            let violation = |code, detail| Violation {
                code,
                index: Some(entry.index),
                time: Some(e.time.to_string()),
                cluster: e.cluster.clone(),
                detail,
            };
            if let Some(fp) = &actor.credential {
                if revoked.get(fp).is_some_and(|r| *r <= e.time) {
                    violations.push(violation(
                        "revoked-credential-used",
                        format!(
                            "{} by {} with revoked credential {fp}",
                            e.event_type.as_str(),
                            who(e)
                        ),
                    ));
                    continue;
                }
            }
            let by_old = actor.controller.as_deref() == Some(request.controller.as_str())
                || actor
                    .principal
                    .as_ref()
                    .is_some_and(|p| principals.contains(p))
                || actor
                    .impersonated
                    .as_ref()
                    .is_some_and(|p| principals.contains(p));
            if by_old && e.time >= since && is_write(e) {
                violations.push(violation(
                    "write-after-fence",
                    format!(
                        "{} by {} after the fence at {since}",
                        e.event_type.as_str(),
                        who(e)
                    ),
                ));
            }
        }
    }
    violations.sort_by(|a, b| (a.index, a.code).cmp(&(b.index, b.code)));
    Ok(Report {
        controller: request.controller.clone(),
        fenced_at: since.to_string(),
        principals: principals.into_iter().collect(),
        credentials: credentials.into_values().collect(),
        violations,
    })
}

/// Whether an event records a change (an audit read or a refused request
/// does not).
fn is_write(e: &Envelope) -> bool {
    if e.event_type != EventType::AuditRequest {
        return true;
    }
    match serde_json::from_value::<AuditRequest>(e.data.clone()) {
        Ok(a) => {
            !matches!(a.verb.as_str(), "get" | "list" | "watch") && a.code.is_none_or(|c| c < 400)
        }
        Err(_) => true,
    }
}

fn who(e: &Envelope) -> String {
    let a = e.actor.as_ref();
    a.and_then(|a| a.principal.clone().or_else(|| a.controller.clone()))
        .unwrap_or_else(|| "?".into())
}
