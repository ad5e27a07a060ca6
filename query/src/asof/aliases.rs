//! Argo CD cluster identity: an Application that targets a cluster by
//! server URL (`spec.destination.server`) and the cluster Secret that
//! registered it under a name are one cluster.
//!
//! Ingest keeps what each input said: an Application's events carry the
//! destination's name, or its server URL when it names none; a cluster
//! Secret's `cluster.registered` carries the name as the cluster id and
//! the URL as `api_server`. The query layer joins the two here: a server
//! URL is an **alias** of the cluster whose registry entry has it as
//! `api_server`, valid-time aware. At valid time T a URL resolves to the
//! cluster whose registry version current at T has that `api_server` (the
//! one registered last when two do), so a re-registration under another
//! name moves the alias from then on; before any registration with it, to
//! the first cluster that registers it. A name that is no alias resolves
//! to itself.

use std::collections::{BTreeMap, BTreeSet};

use annal_schemas::Timestamp;
use annal_store::Store;

use crate::asof::registry;
use crate::QueryError;

/// The server-URL → cluster-id alias table.
#[derive(Clone, Debug, Default)]
pub struct Aliases {
    /// URL → (valid from, valid to, cluster id), by valid from.
    by_server: BTreeMap<String, Vec<(Timestamp, Option<Timestamp>, String)>>,
}

impl Aliases {
    /// The table from the registry among the first `known_below` entries.
    pub fn load(store: &Store, known_below: u64) -> Result<Aliases, QueryError> {
        let mut by_server: BTreeMap<String, Vec<(Timestamp, Option<Timestamp>, String)>> =
            BTreeMap::new();
        // Versions come cluster by cluster in valid-time order: a run of
        // one cluster's versions with the same URL is one span, so that an
        // unrelated update does not make it the newest registration.
        for v in registry::versions(store, None, known_below)? {
            let Some(server) = v.api_server.as_ref().filter(|s| **s != v.cluster) else {
                continue;
            };
            let spans = by_server.entry(server.clone()).or_default();
            match spans.last_mut() {
                Some((_, to, c)) if *c == v.cluster && *to == Some(v.valid_from) => {
                    *to = v.valid_to;
                }
                _ => spans.push((v.valid_from, v.valid_to, v.cluster.clone())),
            }
        }
        for list in by_server.values_mut() {
            list.sort();
        }
        Ok(Aliases { by_server })
    }

    /// The cluster id `name` stands for at valid time `at`.
    pub fn resolve<'a>(&'a self, name: &'a str, at: Timestamp) -> &'a str {
        let Some(list) = self.by_server.get(name) else {
            return name;
        };
        let current = list
            .iter()
            .filter(|(from, to, _)| *from <= at && to.is_none_or(|t| at < t))
            .max_by_key(|(from, _, _)| *from);
        match current.or_else(|| list.first()) {
            Some((_, _, cluster)) => cluster,
            None => name,
        }
    }

    /// `cluster` and every URL that was ever its alias: the names its app
    /// events may carry.
    pub fn names_of(&self, cluster: &str) -> Vec<String> {
        let mut names: BTreeSet<String> = BTreeSet::from([cluster.to_string()]);
        for (server, list) in &self.by_server {
            if list.iter().any(|(_, _, c)| c == cluster) {
                names.insert(server.clone());
            }
        }
        names.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: u32) -> Timestamp {
        format!("2026-11-01T{h:02}:00:00Z").parse().unwrap()
    }

    #[test]
    fn a_url_resolves_to_the_cluster_registered_with_it_then() {
        let url = "https://10.0.0.1:6443".to_string();
        let aliases = Aliases {
            by_server: BTreeMap::from([(
                url.clone(),
                vec![
                    (t(8), Some(t(12)), "old-name".to_string()),
                    (t(12), None, "new-name".to_string()),
                ],
            )]),
        };
        assert_eq!(
            aliases.resolve(&url, t(6)),
            "old-name",
            "before any: the first"
        );
        assert_eq!(aliases.resolve(&url, t(9)), "old-name");
        assert_eq!(aliases.resolve(&url, t(12)), "new-name", "re-registered");
        assert_eq!(aliases.resolve("prod-eu1-a", t(9)), "prod-eu1-a");
        assert_eq!(aliases.names_of("new-name"), [url.as_str(), "new-name"]);
    }
}
