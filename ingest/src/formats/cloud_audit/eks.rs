//! `--format eks-audit`: EKS control-plane audit logs from CloudWatch Logs.
//!
//! EKS writes the API server's audit log to the log group
//! `/aws/eks/<cluster>/cluster`, streams `kube-apiserver-audit-<id>`, one
//! audit event per log event, as a JSON string in `message`. Three shapes
//! reach annal:
//! - `aws logs filter-log-events` / `get-log-events` output:
//!   `{"events": [{"logStreamName", "timestamp", "message", "ingestionTime", "eventId"}], ...}`
//!   (or those events one per line), which names no log group: pass
//!   `--cluster`;
//! - a subscription filter's payload (Lambda, Kinesis, Firehose, decompressed):
//!   `{"messageType": "DATA_MESSAGE", "logGroup", "logStream", "logEvents": [{"id", "timestamp", "message"}]}`,
//!   whose log group names the cluster; `CONTROL_MESSAGE`s are skipped;
//! - the same events one per line.
//!
//! Events of the group's other streams (`kube-apiserver-*`,
//! `authenticator-*`, `kube-scheduler-*`, ...) are skipped and counted.
//!
//! See: <https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html>,
//! <https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html>
//! and <https://docs.aws.amazon.com/cli/latest/reference/logs/filter-log-events.html>.

use serde_json::{Map, Value};

use super::{decode, each, embedded_event};
use crate::formats::Emitter;

/// The audit streams' name prefix.
const AUDIT_STREAM: &str = "kube-apiserver-audit";

/// One CloudWatch log event.
pub(in crate::formats) fn event(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    one(doc, None, None, emit)
}

/// `filter-log-events` output or a subscription payload.
pub(in crate::formats) fn batch(doc: Value, emit: &mut Emitter<'_, '_>) -> Result<(), String> {
    let Value::Object(mut map) = doc else {
        return Err("expected an object".into());
    };
    if let Some(kind) = map.get("messageType").and_then(Value::as_str) {
        if kind != "DATA_MESSAGE" {
            emit.skip(&format!("a CloudWatch Logs {kind} (no log events)"));
            return Ok(());
        }
    }
    let group = map
        .get("logGroup")
        .and_then(Value::as_str)
        .map(str::to_string);
    let stream = map
        .get("logStream")
        .and_then(Value::as_str)
        .map(str::to_string);
    let cluster = group.as_deref().and_then(cluster_of);
    let (key, items) = match (map.remove("logEvents"), map.remove("events")) {
        (Some(Value::Array(items)), _) => ("logEvents", items),
        (None, Some(Value::Array(items))) => ("events", items),
        _ => return Err("field `logEvents`: expected an array".into()),
    };
    each(items, key, emit, |item, emit| {
        one(item, cluster, stream.as_deref(), emit)
    });
    Ok(())
}

/// One log event, in a batch of `stream` of the cluster `cluster` when
/// the batch names them.
fn one(
    doc: Value,
    cluster: Option<&str>,
    stream: Option<&str>,
    emit: &mut Emitter<'_, '_>,
) -> Result<(), String> {
    let Value::Object(ev) = doc else {
        return Err("expected an object".into());
    };
    let stream = text(&ev, "logStreamName").or(stream);
    if let Some(s) = stream.filter(|s| !s.starts_with(AUDIT_STREAM)) {
        let family = s.rsplit_once('-').map_or(s, |(head, _)| head);
        emit.skip(&format!(
            "a CloudWatch event of log stream {family}-* (not the {AUDIT_STREAM} log)"
        ));
        return Ok(());
    }
    let message = match ev.get("message") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("field `message`: expected a string".into()),
        None => return Err("field `message`: missing".into()),
    };
    let event = embedded_event(message, "message")?;
    let cluster = cluster.or_else(|| text(&ev, "logGroup").and_then(cluster_of));
    if cluster.is_none() && emit.ctx.cluster.is_none() {
        return Err("this CloudWatch event names no log group (`aws logs filter-log-events` output does not): pass --cluster ID".into());
    }
    decode(event, cluster, false, emit)
}

fn text<'a>(ev: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    ev.get(key).and_then(Value::as_str)
}

/// The cluster of an EKS log group, `/aws/eks/<cluster>/cluster`.
fn cluster_of(group: &str) -> Option<&str> {
    let name = group.strip_prefix("/aws/eks/")?.strip_suffix("/cluster")?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_come_from_the_log_group() {
        assert_eq!(
            cluster_of("/aws/eks/prod-eu1-a/cluster"),
            Some("prod-eu1-a")
        );
        assert_eq!(cluster_of("/aws/eks//cluster"), None);
        assert_eq!(cluster_of("/aws/lambda/x"), None);
        assert_eq!(cluster_of("/aws/eks/a/b/cluster"), None);
    }
}
