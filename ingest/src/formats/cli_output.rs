//! What the GitOps tools' CLIs print where it differs from the objects.
//!
//! People reach for the CLI they use every day: `argocd app get`, `argocd
//! app history`, `flux get`, `flux debug`. Some of it is the object with
//! less around it, which annal completes and decodes; the rest is a view
//! (a table, a status without its object) that names nothing annal can
//! record, which is rejected with the command that printed it and what to
//! run instead, never skipped as an anonymous fragment.
//!
//! | command | what annal does |
//! |---|---|
//! | `argocd app get NAME -o yaml\|json`, `argocd app list -o yaml\|json` (the Application without `apiVersion`/`kind`) | completed: an Argo CD Application |
//! | `argocd app get NAME` (the text view) | rejected: use `-o yaml` |
//! | `argocd app history NAME` (the `ID DATE REVISION` table) | rejected: the Application's `status.history` holds the same entries |
//! | `flux get kustomizations\|helmreleases\|sources ...` (the `NAME REVISION SUSPENDED READY MESSAGE` table) | rejected: `kubectl get ... -o yaml` |
//! | `flux debug kustomization\|helmrelease NAME --show-status` (a status without its object) | rejected: `kubectl get ... -o yaml` |
//! | `flux debug kustomization NAME --show-vars` (`KEY=value` lines) | rejected: nothing to record |
//!
//! `flux export` prints the objects themselves (without status): read as
//! any Kustomization or HelmRelease.

use serde_json::Value;

/// Gives an Argo CD Application printed by the `argocd` CLI (which leaves
/// out `apiVersion` and `kind`) its type; returns whether it did.
pub(super) fn complete(doc: &mut Value) -> bool {
    let Some(map) = doc.as_object_mut() else {
        return false;
    };
    if map.contains_key("kind") || map.contains_key("apiVersion") {
        return false;
    }
    let spec = map.get("spec");
    let is_app = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .is_some_and(Value::is_string)
        && spec.and_then(|s| s.get("destination")).is_some()
        && spec.is_some_and(|s| s.get("source").is_some() || s.get("sources").is_some());
    if is_app {
        map.insert("apiVersion".into(), "argoproj.io/v1alpha1".into());
        map.insert("kind".into(), "Application".into());
    }
    is_app
}

/// The message for an object that is a CLI's view rather than a
/// Kubernetes object: which command printed it and what annal reads
/// instead. (Text views are [`explain_text`]'s.)
pub(super) fn explain_document(doc: &Value) -> Option<String> {
    match doc {
        Value::Object(map) if !map.contains_key("kind") && !map.contains_key("apiVersion") => {
            let status_keys = [
                "conditions",
                "lastAppliedRevision",
                "lastAttemptedRevision",
                "inventory",
                "history",
                "observedGeneration",
            ];
            let flux_status = map.contains_key("conditions")
                && map.keys().all(|k| {
                    status_keys.contains(&k.as_str())
                        || k.starts_with("last")
                        || k.ends_with("Generation")
                        || k == "helmChart"
                        || k == "storageNamespace"
                        || k == "failures"
                        || k == "installFailures"
                        || k == "upgradeFailures"
                });
            if flux_status {
                return Some(format!(
                    "this is a status without its object, as `flux debug kustomization|helmrelease NAME --show-status` prints it: {}",
                    FLUX_OBJECTS
                ));
            }
            let text_view = ["Name", "Project", "Server"]
                .iter()
                .all(|k| map.contains_key(*k));
            text_view.then(|| ARGOCD_APP_GET.to_string())
        }
        _ => None,
    }
}

/// The message for bytes that do not parse as JSON or YAML but are a
/// CLI's text view.
pub(super) fn explain_text(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64 << 10)]);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let header = |need: &[&str]| {
        lines.iter().any(|l| {
            let w = words(l);
            need.iter().all(|n| w.iter().any(|x| x == n))
        })
    };
    if header(&["ID", "DATE", "REVISION"]) && lines.iter().any(|l| l.trim_start().starts_with("ID"))
    {
        return Some("this is `argocd app history NAME` output (a table): annal reads the Application, whose `status.history` holds the same syncs with their revisions and times: `kubectl get applications -n argocd -o yaml` or `argocd app get NAME -o yaml`".into());
    }
    if lines.iter().any(|l| l.starts_with("Name:"))
        && lines.iter().any(|l| l.starts_with("Project:"))
        && lines.iter().any(|l| {
            l.starts_with("Sync Status:")
                || l.starts_with("Health Status:")
                || l.starts_with("Server:")
        })
    {
        return Some(ARGOCD_APP_GET.into());
    }
    if lines
        .first()
        .is_some_and(|l| l.starts_with("NAME") && header(&["NAME", "SUSPENDED", "READY"]))
    {
        return Some(format!(
            "this is `flux get ...` output (a table): {FLUX_OBJECTS}"
        ));
    }
    let vars = !lines.is_empty()
        && lines.iter().all(|l| {
            l.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        });
    if vars {
        return Some("this is `flux debug kustomization NAME --show-vars` output (KEY=value substitutions): it names no object; annal reads the Kustomization itself: `kubectl get kustomizations -A -o yaml`".into());
    }
    None
}

const ARGOCD_APP_GET: &str = "this is `argocd app get NAME` text output: annal reads the Application as YAML or JSON: `argocd app get NAME -o yaml` or `kubectl get applications -n argocd -o yaml`";

const FLUX_OBJECTS: &str = "annal reads the objects, with their status: `kubectl get kustomizations,helmreleases -A -o yaml` (or `flux export kustomization --all` for the specs alone)";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cli_tables_are_named() {
        let history = "SOURCE  https://github.com/argoproj/argocd-example-apps.git\nID      DATE                           REVISION\n0       2026-11-03 09:10:05 +0000 UTC  HEAD (53e28ff)\n";
        assert!(explain_text(history.as_bytes())
            .unwrap()
            .contains("argocd app history"));
        let get = "Name:               argocd/guestbook\nProject:            default\nServer:             https://kubernetes.default.svc\nSync Status:        Synced to HEAD (53e28ff)\n\nGROUP  KIND     NAMESPACE  NAME          STATUS  HEALTH\n       Service  default    guestbook-ui  Synced  Healthy\n";
        assert!(explain_text(get.as_bytes())
            .unwrap()
            .contains("argocd app get NAME` text"));
        let flux = "NAME       \tREVISION          \tSUSPENDED\tREADY\tMESSAGE\nflux-system\tmain@sha1:4d4a3a2e\tFalse    \tTrue \tApplied revision: main@sha1:4d4a3a2e\n";
        assert!(explain_text(flux.as_bytes()).unwrap().contains("flux get"));
        let vars = "cluster_env=prod\nREGION=eu-west-1\n";
        assert!(explain_text(vars.as_bytes())
            .unwrap()
            .contains("--show-vars"));
        assert_eq!(
            explain_text(b"kind: ConfigMap\nmetadata:\n  name: x\n"),
            None
        );
    }

    #[test]
    fn statuses_without_objects_are_named_and_apps_completed() {
        let status = json!({"conditions": [], "lastAppliedRevision": "main@sha1:1", "inventory": {"entries": []}, "observedGeneration": 1});
        assert!(explain_document(&status).unwrap().contains("flux debug"));
        assert_eq!(
            explain_document(&json!({"status": {"conditions": []}})),
            None
        );
        let mut app = json!({"metadata": {"name": "guestbook", "namespace": "argocd"}, "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc"}, "source": {"repoURL": "r"}}});
        assert!(complete(&mut app));
        assert_eq!(app["kind"], "Application");
        let mut object = json!({"metadata": {"name": "x"}, "spec": {}});
        assert!(!complete(&mut object));
        assert!(object.get("kind").is_none());
    }
}
