//! The closed set of envelope `type`s.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Every `type` an Envelope v1 may carry (DESIGN.md, "Envelope v1").
///
/// A closed enum rather than a string so that a typo in a producer is a
/// rejected record, not a silently unqueryable one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// A Kubernetes object as seen at `time`.
    #[serde(rename = "object.observed")]
    ObjectObserved,
    /// A Kubernetes object was deleted.
    #[serde(rename = "object.deleted")]
    ObjectDeleted,
    /// A GitOps application's declaration (source, destination, policy).
    #[serde(rename = "app.declared")]
    AppDeclared,
    /// One sync/reconcile operation of an application.
    #[serde(rename = "app.sync")]
    AppSync,
    /// An application's health assessment.
    #[serde(rename = "app.health")]
    AppHealth,
    /// The full set of objects an application manages (replaces the previous set).
    #[serde(rename = "app.inventory")]
    AppInventory,
    /// An explicit last-known-good revision marker.
    #[serde(rename = "app.revision.good")]
    AppRevisionGood,
    /// A cluster joined the registry.
    #[serde(rename = "cluster.registered")]
    ClusterRegistered,
    /// A cluster's registry attributes changed.
    #[serde(rename = "cluster.updated")]
    ClusterUpdated,
    /// A cluster's lifecycle state changed.
    #[serde(rename = "cluster.lifecycle")]
    ClusterLifecycle,
    /// A credential for a cluster was issued.
    #[serde(rename = "cluster.credential.issued")]
    ClusterCredentialIssued,
    /// A credential for a cluster was revoked.
    #[serde(rename = "cluster.credential.revoked")]
    ClusterCredentialRevoked,
    /// A cluster agent reported in.
    #[serde(rename = "cluster.heartbeat")]
    ClusterHeartbeat,
    /// The old control plane is fenced from `time` on.
    #[serde(rename = "controlplane.fenced")]
    ControlplaneFenced,
    /// A control-plane backup was taken.
    #[serde(rename = "controlplane.backup")]
    ControlplaneBackup,
    /// A controller's work and API cost over a window.
    #[serde(rename = "controller.metrics")]
    ControllerMetrics,
    /// One Kubernetes API request as the audit log or an admission webhook
    /// saw it: who did what, and whether it changed anything.
    #[serde(rename = "audit.request")]
    AuditRequest,
    /// A Kubernetes Event (core/v1 or events.k8s.io/v1) about an object.
    #[serde(rename = "k8s.event")]
    KubeEvent,
    /// The ledger's checkpoint key was rotated (written by `annal key
    /// rotate`, so the key history is itself in the verified log).
    #[serde(rename = "ledger.key.rotated")]
    LedgerKeyRotated,
}

impl EventType {
    /// Every type, in declaration order.
    pub const ALL: [EventType; 19] = [
        EventType::ObjectObserved,
        EventType::ObjectDeleted,
        EventType::AppDeclared,
        EventType::AppSync,
        EventType::AppHealth,
        EventType::AppInventory,
        EventType::AppRevisionGood,
        EventType::ClusterRegistered,
        EventType::ClusterUpdated,
        EventType::ClusterLifecycle,
        EventType::ClusterCredentialIssued,
        EventType::ClusterCredentialRevoked,
        EventType::ClusterHeartbeat,
        EventType::ControlplaneFenced,
        EventType::ControlplaneBackup,
        EventType::ControllerMetrics,
        EventType::AuditRequest,
        EventType::KubeEvent,
        EventType::LedgerKeyRotated,
    ];

    /// The wire name, e.g. `object.observed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::ObjectObserved => "object.observed",
            EventType::ObjectDeleted => "object.deleted",
            EventType::AppDeclared => "app.declared",
            EventType::AppSync => "app.sync",
            EventType::AppHealth => "app.health",
            EventType::AppInventory => "app.inventory",
            EventType::AppRevisionGood => "app.revision.good",
            EventType::ClusterRegistered => "cluster.registered",
            EventType::ClusterUpdated => "cluster.updated",
            EventType::ClusterLifecycle => "cluster.lifecycle",
            EventType::ClusterCredentialIssued => "cluster.credential.issued",
            EventType::ClusterCredentialRevoked => "cluster.credential.revoked",
            EventType::ClusterHeartbeat => "cluster.heartbeat",
            EventType::ControlplaneFenced => "controlplane.fenced",
            EventType::ControlplaneBackup => "controlplane.backup",
            EventType::ControllerMetrics => "controller.metrics",
            EventType::AuditRequest => "audit.request",
            EventType::KubeEvent => "k8s.event",
            EventType::LedgerKeyRotated => "ledger.key.rotated",
        }
    }

    /// Whether an envelope of this type must name its `cluster`.
    pub fn requires_cluster(&self) -> bool {
        let name = self.as_str();
        ["object.", "app.", "cluster.", "audit.", "k8s."]
            .iter()
            .any(|prefix| name.starts_with(prefix))
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`EventType`].
#[derive(Debug, thiserror::Error)]
#[error("unknown event type {0:?}")]
pub struct UnknownEventType(pub String);

impl FromStr for EventType {
    type Err = UnknownEventType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownEventType(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_through_serde_and_from_str() {
        for t in EventType::ALL {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
            assert_eq!(t.as_str().parse::<EventType>().unwrap(), t);
        }
        assert!("object.created".parse::<EventType>().is_err());
    }

    #[test]
    fn cluster_is_required_for_object_app_and_cluster_types_only() {
        assert!(EventType::ObjectDeleted.requires_cluster());
        assert!(EventType::AppRevisionGood.requires_cluster());
        assert!(EventType::ClusterHeartbeat.requires_cluster());
        assert!(EventType::AuditRequest.requires_cluster());
        assert!(EventType::KubeEvent.requires_cluster());
        assert!(!EventType::ControlplaneFenced.requires_cluster());
        assert!(!EventType::ControllerMetrics.requires_cluster());
    }
}
