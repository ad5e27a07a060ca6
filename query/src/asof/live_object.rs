//! What a recovery plan reads from an object's live version beyond the
//! version index: who writes its desired state, its protection annotations
//! and its finalizers. One log read per object in the plan.

use std::collections::BTreeMap;

use annal_store::Store;

use crate::asof::managed_fields;
use crate::QueryError;

/// Field managers that write live objects as a matter of course: the
/// control plane (the HPA and the scale subresource write through
/// kube-controller-manager), the node agent, distributions' own managers,
/// and the GitOps tools themselves.
pub const NORMAL_MANAGERS: [&str; 16] = [
    "kube-controller-manager",
    "kube-scheduler",
    "kube-apiserver",
    "kubelet",
    "kubeadm",
    "k3s",
    "horizontal-pod-autoscaler",
    "cluster-autoscaler",
    "argocd-controller",
    "argocd-application-controller",
    "argocd",
    "argocd-server",
    "kustomize-controller",
    "helm-controller",
    "helm",
    "fleet-agent",
];

/// The live version's metadata a plan needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveObject {
    /// Managers owning fields outside `.metadata` and `.status` (not
    /// through a subresource), each with the first such field.
    pub desired_state_managers: Vec<(String, String)>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
}

impl LiveObject {
    /// Reads the object version stored at log `index` (an empty value when
    /// it is not an object version).
    pub fn read(store: &Store, index: u64) -> Result<LiveObject, QueryError> {
        let Some(entry) = store.entry(index)? else {
            return Ok(LiveObject::default());
        };
        let mut out = LiveObject::default();
        if let Some(meta) = entry.event.data.get("metadata") {
            if let Some(a) = meta.get("annotations").and_then(|a| a.as_object()) {
                out.annotations = a
                    .iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect();
            }
            if let Some(f) = meta.get("finalizers").and_then(|f| f.as_array()) {
                out.finalizers = f
                    .iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect();
            }
        }
        for m in managed_fields::of_entry(&entry) {
            if m.subresource.as_deref().is_some_and(|s| !s.is_empty()) {
                continue;
            }
            let Some(manager) = m.manager else { continue };
            let desired = m
                .fields
                .iter()
                .find(|f| !f.starts_with(".metadata") && !f.starts_with(".status"));
            if let Some(field) = desired {
                if !out
                    .desired_state_managers
                    .iter()
                    .any(|(n, _)| *n == manager)
                {
                    out.desired_state_managers.push((manager, field.clone()));
                }
            }
        }
        Ok(out)
    }

    /// The desired-state managers that are not `normal`.
    pub fn foreign_managers(&self, normal: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
        self.desired_state_managers
            .iter()
            .filter(|(m, _)| !normal(m))
            .cloned()
            .collect()
    }
}

/// Whether `manager` is normal: in [`NORMAL_MANAGERS`], the `controller`
/// taking over, or one of `extra`.
pub fn is_normal(manager: &str, controller: &str, extra: &[String]) -> bool {
    manager == controller
        || NORMAL_MANAGERS.contains(&manager)
        || extra.iter().any(|n| n == manager)
}
