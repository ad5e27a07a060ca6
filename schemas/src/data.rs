//! Typed `data` shapes, one per [`EventType`](crate::EventType).
//!
//! Producers write these; readers (the query layer, the recovery commands)
//! deserialize `Envelope::data` into them. Kubernetes objects keep every field
//! they do not name in `extra`, because an audit ledger must not drop what the
//! API server said. The other shapes are annal's own and also tolerate extra
//! fields, so an adapter can add detail without a schema bump.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::{EventType, Timestamp};

/// `object.observed`: a Kubernetes object as the API server returned it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeObject {
    /// `apiVersion`, e.g. `apps/v1` or `v1` for the core group.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, `data`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `object.deleted`: the identity of a deleted object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDeleted {
    /// `apiVersion` of the deleted object.
    pub api_version: String,
    /// `kind` of the deleted object.
    pub kind: String,
    /// At least `name`; `namespace` and `uid` when known.
    pub metadata: ObjectMeta,
}

/// Kubernetes `ObjectMeta`, with the fields ownership reconstruction reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Object name (required: annal tracks objects by name).
    pub name: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// UID; changes when the object is recreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// resourceVersion (an opaque string; ordered as an integer when it parses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// ownerReferences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// finalizers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// managedFields (server-side apply field ownership).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
    /// Everything else (creationTimestamp, generation, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `metadata.ownerReferences` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// apiVersion of the owner.
    pub api_version: String,
    /// kind of the owner.
    pub kind: String,
    /// name of the owner.
    pub name: String,
    /// uid of the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Kept verbatim (blockOwnerDeletion, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    /// Field manager name (e.g. `argocd-controller`, `kubectl-client-side-apply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// `Apply` or `Update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// apiVersion the field set is expressed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// When the manager last changed its fields (RFC 3339, kept as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `FieldsV1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_type: Option<String>,
    /// The field set (`f:`, `k:`, `v:`, `.` keys).
    #[serde(default, rename = "fieldsV1", skip_serializing_if = "Option::is_none")]
    pub fields_v1: Option<Value>,
    /// `status`, `scale`, ... when the manager wrote through a subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// `app.declared`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppDeclared {
    /// Qualified app name, e.g. `argocd:guestbook` or `flux:flux-system/apps`.
    pub app: String,
    /// Argo CD project or equivalent tenant boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Where the desired state comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
    /// Where it is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<AppDestination>,
    /// Automation flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<SyncPolicy>,
}

/// A Git/Helm/OCI source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppSource {
    /// Repository URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Path inside the repository (or chart name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Branch, tag, semver range or commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_revision: Option<String>,
}

/// Destination of an app.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppDestination {
    /// Stable cluster id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Default namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Automated sync settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncPolicy {
    /// Auto-sync on.
    #[serde(default)]
    pub automated: bool,
    /// Prune on.
    #[serde(default)]
    pub prune: bool,
    /// Self-heal on.
    #[serde(default)]
    pub self_heal: bool,
}

/// Phase of a sync operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncPhase {
    /// Still running.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished with a failure.
    Failed,
    /// Could not run.
    Error,
    /// Terminating.
    Terminating,
}

/// `app.sync`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppSync {
    /// Qualified app name.
    pub app: String,
    /// Controller instance that ran the sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// Revision synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Phase.
    pub phase: SyncPhase,
    /// Start of the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// End of the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Whether prune was enabled.
    #[serde(default)]
    pub prune: bool,
    /// Whether it was a dry run.
    #[serde(default)]
    pub dry_run: bool,
    /// Per-resource results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<SyncResource>,
    /// Cost figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<SyncMetrics>,
}

/// One resource touched by a sync.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncResource {
    /// API group (empty for core).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (empty when cluster-scoped).
    #[serde(default)]
    pub namespace: String,
    /// Name.
    pub name: String,
    /// What was done (`created`, `configured`, `pruned`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Result (`Synced`, `SyncFailed`, `Pruned`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Cost of a sync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncMetrics {
    /// Manifest render time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_seconds: Option<f64>,
    /// Kubernetes API requests made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_requests: Option<u64>,
    /// Requests throttled by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_throttled: Option<u64>,
    /// Bytes applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_bytes: Option<u64>,
}

/// Health status of an app.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HealthStatus {
    /// Healthy.
    Healthy,
    /// Progressing.
    Progressing,
    /// Degraded.
    Degraded,
    /// Suspended.
    Suspended,
    /// Missing.
    Missing,
    /// Unknown.
    Unknown,
}

/// `app.health`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppHealth {
    /// Qualified app name.
    pub app: String,
    /// Health status.
    pub status: HealthStatus,
    /// Revision assessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// `app.inventory`: the complete managed set, replacing the previous one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppInventory {
    /// Qualified app name.
    pub app: String,
    /// Revision the inventory was applied from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Every managed object.
    pub entries: Vec<InventoryEntry>,
}

/// One object in an inventory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InventoryEntry {
    /// API group (empty for core).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (empty when cluster-scoped).
    #[serde(default)]
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// `app.revision.good`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppRevisionGood {
    /// Qualified app name.
    pub app: String,
    /// The known-good revision.
    pub revision: String,
    /// Where it lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AppSource>,
}

/// `cluster.registered` / `cluster.updated`: registry attributes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// Human name (may change; the envelope `cluster` is the stable id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// e.g. prod, staging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Fault domain / availability zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_domain: Option<String>,
    /// Tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Compliance regime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compliance: Option<String>,
    /// Owning team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Lifecycle label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<String>,
    /// Free-form attributes for selectors.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// API server URL (never used as an identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<String>,
    /// Fingerprint of the cluster CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_fingerprint: Option<String>,
    /// Fingerprint of the credential the registry holds for the cluster
    /// (bearer token, client key, ...), never the credential itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_fingerprint: Option<String>,
}

/// Lifecycle states of a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LifecycleState {
    /// Serving.
    Active,
    /// Isolated.
    Quarantined,
    /// Being emptied.
    Draining,
    /// Gone.
    Retired,
}

/// `cluster.lifecycle`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterLifecycle {
    /// The new state.
    pub state: LifecycleState,
}

/// `cluster.credential.issued` / `cluster.credential.revoked`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterCredential {
    /// Who holds the credential.
    pub principal: String,
    /// BLAKE3 fingerprint of the credential (never the credential).
    pub fingerprint: String,
    /// Expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// `cluster.heartbeat`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterHeartbeat {
    /// Agent name.
    pub agent: String,
    /// Agent version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `controlplane.fenced`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlplaneFenced {
    /// The fenced controller instance.
    pub controller: String,
    /// Its principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Its credential fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// `controlplane.backup`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlplaneBackup {
    /// Controller whose state was exported.
    pub controller: String,
    /// Digest of the backup file.
    pub digest: String,
    /// Object counts by kind.
    #[serde(default)]
    pub counts: BTreeMap<String, u64>,
}

/// `ledger.key.rotated`: the checkpoint key changed. Checkpoints carry
/// both keys' signatures until `previous_valid_until`; after it only the
/// next key signs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerKeyRotated {
    /// The log origin (both keys' name).
    pub origin: String,
    /// The key that signed until now, in signed-note verifier-key form.
    pub previous_key: String,
    /// The key that signs from now on.
    pub next_key: String,
    /// End of the previous key's validity (RFC 3339).
    pub previous_valid_until: Timestamp,
}

/// `controller.metrics`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControllerMetrics {
    /// Controller instance.
    pub controller: String,
    /// App the figures are for, when per app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Window the counters cover.
    pub window_seconds: f64,
    /// API requests in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_requests: Option<u64>,
    /// Throttled requests in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_throttled: Option<u64>,
    /// Work queue depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u64>,
    /// Age of the oldest queued item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_age_seconds: Option<f64>,
    /// Render time spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_seconds: Option<f64>,
}

/// `audit.request`: one API request, from an audit log or an admission
/// webhook. Bodies are not kept here: a successful write also yields an
/// `object.observed`/`object.deleted` carrying the (redacted) object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRequest {
    /// `auditID` (or the admission request uid).
    pub audit_id: String,
    /// `RequestReceived`, `ResponseStarted`, `ResponseComplete`, `Panic`, or
    /// `Admission` for an admission webhook capture.
    pub stage: String,
    /// `get`, `list`, `create`, `update`, `patch`, `delete`, `deletecollection`, ...
    pub verb: String,
    /// The request URI, with its query string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_uri: Option<String>,
    /// The object addressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    /// HTTP status code of the response, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// Whether the request was a dry run (`?dryRun=All`).
    #[serde(default)]
    pub dry_run: bool,
    /// Whether this request changed inventory (completed, code < 400, not a
    /// dry run, a write verb with an object to record).
    #[serde(default)]
    pub applied: bool,
    /// User groups of the principal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Client addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// Client user agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `authorization.k8s.io/decision` (allow / forbid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// `authorization.k8s.io/reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    /// responseStatus reason/message for failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
}

/// The object an API request or Event is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// API group (empty for core).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Resource (plural, audit) or kind (Events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Kind, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Subresource (`status`, `scale`, `exec`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// Namespace (empty when cluster-scoped).
    #[serde(default)]
    pub namespace: String,
    /// Name (empty for collection requests).
    #[serde(default)]
    pub name: String,
    /// UID, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Field path inside the object (Events: `spec.containers{app}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

/// `k8s.event`: a Kubernetes Event, core/v1 and events.k8s.io/v1 mapped to
/// one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KubeEvent {
    /// `v1` or `events.k8s.io/v1`.
    pub api_version: String,
    /// Event object name (`<object>.<hex>`).
    pub name: String,
    /// Event namespace.
    #[serde(default)]
    pub namespace: String,
    /// `involvedObject` (core/v1) or `regarding` (events.k8s.io/v1).
    pub involved: ObjectRef,
    /// Machine-readable reason (`ScalingReplicaSet`, `ReconciliationSucceeded`).
    #[serde(default)]
    pub reason: String,
    /// `message` (core/v1) or `note` (events.k8s.io/v1).
    #[serde(default)]
    pub message: String,
    /// `Normal` or `Warning`.
    #[serde(default)]
    pub event_type: String,
    /// `reportingController`/`reportingComponent`, else `source.component`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_controller: Option<String>,
    /// `reportingInstance`, else `source.host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_instance: Option<String>,
    /// events.k8s.io/v1 `action`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Occurrences (`count`, `series.count` or `deprecatedCount`).
    #[serde(default = "one")]
    pub count: u64,
    /// First occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_time: Option<Timestamp>,
    /// Last occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_time: Option<Timestamp>,
    /// Revision annotations Flux controllers attach (`<group>/revision`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

fn one() -> u64 {
    1
}

/// Checks that `data` has the shape its `type` requires.
///
/// The error carries the JSON path below `data` (e.g. `metadata.name`).
pub(crate) fn check_shape<'a, D>(kind: EventType, data: D) -> Result<(), (String, String)>
where
    D: Deserializer<'a, Error = serde_json::Error> + Copy,
{
    /// Untracked first (fast); tracked only to explain a failure.
    fn check<'a, T: Deserialize<'a>, D>(data: D) -> Result<(), (String, String)>
    where
        D: Deserializer<'a, Error = serde_json::Error> + Copy,
    {
        if T::deserialize(data).is_ok() {
            return Ok(());
        }
        serde_path_to_error::deserialize::<_, T>(data)
            .map(drop)
            .map_err(|e| (e.path().to_string(), e.inner().to_string()))
    }
    /// Kubernetes objects are the large, hot case: check them through a
    /// borrowed view first (no copies of the object), and use the owned type
    /// only to explain a failure.
    fn check_object<'a, T: Deserialize<'a>, D>(data: D) -> Result<(), (String, String)>
    where
        D: Deserializer<'a, Error = serde_json::Error> + Copy,
    {
        if shape::Object::deserialize(data).is_ok() {
            return Ok(());
        }
        check::<T, D>(data)
    }
    match kind {
        EventType::ObjectObserved => check_object::<KubeObject, D>(data),
        EventType::ObjectDeleted => check_object::<ObjectDeleted, D>(data),
        EventType::AppDeclared => check::<AppDeclared, D>(data),
        EventType::AppSync => check::<AppSync, D>(data),
        EventType::AppHealth => check::<AppHealth, D>(data),
        EventType::AppInventory => check::<AppInventory, D>(data),
        EventType::AppRevisionGood => check::<AppRevisionGood, D>(data),
        EventType::ClusterRegistered | EventType::ClusterUpdated => check::<ClusterInfo, D>(data),
        EventType::ClusterLifecycle => check::<ClusterLifecycle, D>(data),
        EventType::ClusterCredentialIssued | EventType::ClusterCredentialRevoked => {
            check::<ClusterCredential, D>(data)
        }
        EventType::ClusterHeartbeat => check::<ClusterHeartbeat, D>(data),
        EventType::ControlplaneFenced => check::<ControlplaneFenced, D>(data),
        EventType::ControlplaneBackup => check::<ControlplaneBackup, D>(data),
        EventType::ControllerMetrics => check::<ControllerMetrics, D>(data),
        EventType::AuditRequest => check::<AuditRequest, D>(data),
        EventType::KubeEvent => check::<KubeEvent, D>(data),
        EventType::LedgerKeyRotated => check::<LedgerKeyRotated, D>(data),
    }
}

/// Borrowed views of the Kubernetes object types: for validation, and for
/// the indexes, which read a few fields of every object.
///
/// They mirror the owned types field for field (same names, defaults and
/// container types) but borrow every string and skip unnamed fields, so a
/// valid object is checked, or its metadata read, without copying it (the
/// owned [`KubeObject`](crate::data::KubeObject) copies `spec` and `status` into its `extra`). A test
/// keeps the two in agreement: a view decodes exactly what the owned type
/// decodes.
pub mod shape {
    use std::collections::BTreeMap;

    use serde::de::IgnoredAny;
    use serde::Deserialize;

    /// [`KubeObject`](super::KubeObject) (and [`ObjectDeleted`](super::ObjectDeleted)), borrowed.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Object<'a> {
        /// As in the owned type.
        #[serde(borrow)]
        pub api_version: &'a str,
        /// As in the owned type.
        #[serde(borrow)]
        pub kind: &'a str,
        /// As in the owned type.
        #[serde(borrow)]
        pub metadata: Meta<'a>,
    }

    /// [`ObjectMeta`](super::ObjectMeta), borrowed.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Meta<'a> {
        /// As in the owned type.
        #[serde(borrow)]
        pub name: &'a str,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub namespace: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub uid: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub resource_version: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub labels: BTreeMap<&'a str, &'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub annotations: BTreeMap<&'a str, &'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub owner_references: Vec<OwnerReference<'a>>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub finalizers: Vec<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub managed_fields: Vec<ManagedFields<'a>>,
    }

    /// [`OwnerReference`](super::OwnerReference), borrowed.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct OwnerReference<'a> {
        /// As in the owned type.
        #[serde(borrow)]
        pub api_version: &'a str,
        /// As in the owned type.
        #[serde(borrow)]
        pub kind: &'a str,
        /// As in the owned type.
        #[serde(borrow)]
        pub name: &'a str,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub uid: Option<&'a str>,
        /// As in the owned type.
        #[serde(default)]
        pub controller: Option<bool>,
    }

    /// [`ManagedFieldsEntry`](super::ManagedFieldsEntry), borrowed (`fieldsV1` only checked).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ManagedFields<'a> {
        /// As in the owned type.
        #[serde(default, borrow)]
        pub manager: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub operation: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub api_version: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub time: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub fields_type: Option<&'a str>,
        /// As in the owned type.
        #[serde(default, rename = "fieldsV1")]
        pub fields_v1: Option<IgnoredAny>,
        /// As in the owned type.
        #[serde(default, borrow)]
        pub subresource: Option<&'a str>,
    }
}

#[cfg(test)]
mod shape_tests {
    use serde_json::json;

    use super::*;

    /// The borrowed view accepts exactly what the owned types accept.
    #[test]
    fn borrowed_view_agrees_with_the_owned_types() {
        let valid = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
            "name": "web", "namespace": null, "labels": {"a": "b"}, "generation": 4,
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}, "subresource": "status"}],
            "finalizers": ["f"]}, "spec": {"replicas": 2}});
        let mut cases = vec![valid.clone()];
        let edits: Vec<(&str, serde_json::Value)> = vec![
            ("/metadata/name", json!(7)),
            ("/metadata/labels", json!(null)),
            ("/metadata/labels", json!({"a": 1})),
            ("/metadata/annotations", json!(["x"])),
            (
                "/metadata/ownerReferences",
                json!([{"kind": "X", "name": "o"}]),
            ),
            (
                "/metadata/ownerReferences",
                json!([{"apiVersion": "v1", "kind": "X", "name": "o", "controller": "yes"}]),
            ),
            ("/metadata/managedFields", json!([{"manager": 3}])),
            ("/metadata/managedFields", json!({"manager": "m"})),
            ("/metadata/finalizers", json!([1])),
            ("/metadata/resourceVersion", json!(12)),
            ("/apiVersion", json!(null)),
            ("/kind", json!(["Deployment"])),
            ("/metadata", json!("web")),
        ];
        for (path, value) in edits {
            let mut v = valid.clone();
            let (parent, key) = path.rsplit_once('/').unwrap();
            let parent = if parent.is_empty() {
                &mut v
            } else {
                v.pointer_mut(parent).unwrap()
            };
            parent[key] = value;
            cases.push(v);
        }
        let mut missing = valid.clone();
        missing["metadata"].as_object_mut().unwrap().remove("name");
        cases.push(missing);
        for case in cases {
            let owned = KubeObject::deserialize(&case).is_ok();
            let borrowed = shape::Object::deserialize(&case).is_ok();
            assert_eq!(owned, borrowed, "disagree on {case}");
            assert_eq!(check_shape(EventType::ObjectObserved, &case).is_ok(), owned);
        }
    }
}
