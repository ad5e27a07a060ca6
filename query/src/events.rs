//! Event listing with filters.

use annal_schemas::{EventType, Timestamp};
use annal_store::leaf_view::LeafView;
use annal_store::{Entry, RawLeaf, ScanKey, Store, StoreError};

/// Which events to list.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    /// Only this cluster.
    pub cluster: Option<String>,
    /// Only this type.
    pub event_type: Option<EventType>,
    /// Valid time at or after.
    pub since: Option<Timestamp>,
    /// Valid time before.
    pub until: Option<Timestamp>,
    /// Log index at or after.
    pub from_index: u64,
    /// Log index before.
    pub to_index: Option<u64>,
    /// At most this many.
    pub limit: Option<usize>,
}

/// Events matching `filter`: in valid-time order when a cluster or type is
/// given (read through the derived index), else in log order (only the
/// index range asked for is read).
pub fn select<'a>(
    store: &'a Store,
    filter: &'a EventFilter,
) -> Box<dyn Iterator<Item = Result<Entry, StoreError>> + 'a> {
    let in_window = move |e: &Entry| {
        filter.since.is_none_or(|s| e.event.time >= s)
            && filter.until.is_none_or(|u| e.event.time < u)
    };
    let matches = move |e: &Entry| {
        filter
            .cluster
            .as_deref()
            .is_none_or(|c| e.event.cluster.as_deref() == Some(c))
            && filter.event_type.is_none_or(|t| e.event.event_type == t)
            && e.index >= filter.from_index
            && filter.to_index.is_none_or(|t| e.index < t)
            && in_window(e)
    };
    let iter: Box<dyn Iterator<Item = Result<Entry, StoreError>> + 'a> =
        match (&filter.cluster, &filter.event_type) {
            (Some(c), _) => Box::new(store.scan(ScanKey::Cluster(c), filter.since, filter.until)),
            (None, Some(t)) => {
                Box::new(store.scan(ScanKey::Type(t.as_str()), filter.since, filter.until))
            }
            (None, None) => {
                let to = filter.to_index.unwrap_or(u64::MAX).min(store.size());
                Box::new(store.entries(filter.from_index, to))
            }
        };
    let filtered = iter.filter(move |r| r.as_ref().map_or(true, matches));
    match filter.limit {
        Some(n) => Box::new(filtered.take(n)),
        None => Box::new(filtered),
    }
}

impl EventFilter {
    /// Whether the leaf `v` is one of the events this filter selects
    /// (the limit aside).
    pub fn matches(&self, v: &LeafView<'_>) -> bool {
        self.cluster
            .as_deref()
            .is_none_or(|c| v.cluster.as_deref() == Some(c))
            && self.event_type.is_none_or(|t| v.event_type == t)
            && v.index >= self.from_index
            && self.to_index.is_none_or(|t| v.index < t)
            && self.since.is_none_or(|s| v.time >= s)
            && self.until.is_none_or(|u| v.time < u)
    }
}

/// The leaves [`select`] reads for `filter`, as bytes, in the same order
/// and not yet filtered: the caller reads each in place
/// ([`LeafView`]), keeps those [`EventFilter::matches`] accepts and
/// applies the limit.
pub fn select_leaves<'a>(
    store: &'a Store,
    filter: &'a EventFilter,
) -> Box<dyn Iterator<Item = Result<RawLeaf, StoreError>> + 'a> {
    match (&filter.cluster, &filter.event_type) {
        (Some(c), _) => store.scan_leaf_bytes(ScanKey::Cluster(c), filter.since, filter.until),
        (None, Some(t)) => {
            store.scan_leaf_bytes(ScanKey::Type(t.as_str()), filter.since, filter.until)
        }
        (None, None) => {
            let to = filter.to_index.unwrap_or(u64::MAX).min(store.size());
            store.leaves(filter.from_index, to)
        }
    }
}
