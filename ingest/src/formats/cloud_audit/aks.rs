//! `--format aks-audit`: AKS resource logs of the API server's audit.
//!
//! AKS diagnostic settings send `kube-audit` (every request) and
//! `kube-audit-admin` (writes only) to an Event Hub, which delivers
//! `{"records": [...]}` batches, or to a storage account, which writes one
//! record per line (`insights-logs-kube-audit/.../PT1H.json`). A record:
//!
//! ```json
//! {"time": "...", "resourceId": "/SUBSCRIPTIONS/<id>/RESOURCEGROUPS/<rg>/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/<name>",
//!  "category": "kube-audit", "operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
//!  "properties": {"log": "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",...}", "stream": "stdout", "pod": "kube-apiserver-..."}}
//! ```
//!
//! A Log Analytics `AzureDiagnostics` row (`Category`, `log_s`, `ResourceId`)
//! is read the same way. Records of other categories (`kube-apiserver`,
//! `guard`, ...) in the same batch are skipped and counted.
//!
//! See: <https://learn.microsoft.com/en-us/azure/aks/monitor-aks-reference>
//! and <https://learn.microsoft.com/en-us/azure/azure-monitor/essentials/resource-logs-schema>.

use serde_json::{Map, Value};

use super::{decode, each, embedded_event};
use crate::formats::Emitter;

/// One diagnostic record.
pub(in crate::formats) fn record(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(rec) = doc else {
        return Err("expected an object".into());
    };
    let category = text(&rec, &["category", "Category"]).unwrap_or_default();
    if !matches!(category, "kube-audit" | "kube-audit-admin") {
        emit.skip(&format!(
            "an AKS diagnostic record of category {category:?} (not kube-audit or kube-audit-admin)"
        ));
        return Ok(());
    }
    let (log, field) = match rec.get("properties").and_then(|p| p.get("log")) {
        Some(Value::String(s)) => (s.as_str(), "properties.log"),
        Some(_) => return Err("field `properties.log`: expected a string".into()),
        None => match rec.get("log_s") {
            Some(Value::String(s)) => (s.as_str(), "log_s"),
            _ => return Err("field `properties.log`: missing".into()),
        },
    };
    let event = embedded_event(log, field)?;
    let cluster = text(&rec, &["resourceId", "ResourceId"]).and_then(cluster_of);
    decode(event, cluster.as_deref(), false, emit)
}

/// An Event Hub batch, `{"records": [...]}`.
pub(in crate::formats) fn records(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(mut map) = doc else {
        return Err("expected an object".into());
    };
    let Some(Value::Array(items)) = map.remove("records") else {
        return Err("field `records`: expected an array".into());
    };
    each(items, "records", emit, record);
    Ok(())
}

fn text<'a>(rec: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| rec.get(*k).and_then(Value::as_str))
}

/// The cluster a resource id names: the segment after `managedClusters/`,
/// lowercased (Azure Monitor upper-cases resource ids; AKS names are
/// case-insensitive).
fn cluster_of(resource_id: &str) -> Option<String> {
    let lower = resource_id.to_ascii_lowercase();
    let rest = lower.split("/managedclusters/").nth(1)?;
    let name = rest.split('/').next()?;
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_come_from_the_resource_id() {
        assert_eq!(
            cluster_of("/SUBSCRIPTIONS/0000/RESOURCEGROUPS/RG/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/PROD-EU1-A").as_deref(),
            Some("prod-eu1-a")
        );
        assert_eq!(
            cluster_of("/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1/extra").as_deref(),
            Some("aks1")
        );
        assert_eq!(cluster_of("/SUBSCRIPTIONS/0000/RESOURCEGROUPS/RG"), None);
        assert_eq!(cluster_of("/x/MANAGEDCLUSTERS/"), None);
    }
}
