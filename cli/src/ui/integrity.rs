//! `/ui/integrity`: what an auditor checks first. The latest signed
//! checkpoint and whether it verifies (its signatures against the
//! ledger's keys, its root against the tree at its size), the signing
//! keys and rotations, whether writes are refused, the quarantine, and an
//! inclusion proof for an entry looked up by event id or log index, in
//! the JSON `annal proof inclusion` prints and `tools/verify_proof.py`
//! checks without annal.

use annal_query::proof::{self, Against, Leaf};
use annal_schemas::data::LedgerKeyRotated;
use annal_schemas::EventType;
use annal_store::checkpoint::Checkpoint;
use annal_store::ScanKey;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::Value;

use super::page::{self, frame, Failure};
use super::Ui;

/// The page's query string: an entry to prove, by id or index.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    id: Option<String>,
    index: Option<String>,
}

/// What the page shows.
struct Answer {
    size: u64,
    note: Option<String>,
    /// Each key's name and whether it signed the note.
    signatures: Vec<(String, Result<(), String>)>,
    /// The note's root equals the tree's at its size.
    root_matches: Option<bool>,
    checkpoint: Option<Checkpoint>,
    refused: Option<String>,
    quarantined: usize,
    previous_key: Option<(String, String)>,
    rotations: Vec<(u64, LedgerKeyRotated)>,
    proof: Option<Value>,
}

pub async fn page(State(ui): State<Ui>, Query(p): Query<Params>) -> Response {
    let id = p.id.as_deref().unwrap_or("").trim().to_string();
    let index_text = p.index.as_deref().unwrap_or("").trim().to_string();
    let leaf = match (id.is_empty(), index_text.is_empty()) {
        (true, true) => None,
        (false, _) => Some(Leaf::EventId(id.clone())),
        (true, false) => match index_text.parse::<u64>() {
            Ok(i) => Some(Leaf::Index(i)),
            Err(_) => {
                return page::error(
                    axum::http::StatusCode::BAD_REQUEST,
                    "Not an index",
                    &format!(
                        "index={index_text:?} is not a log index: give a whole number, like 42"
                    ),
                )
            }
        },
    };
    let store = ui.store.clone();
    let answer = page::answer(move || {
        let status = store.status();
        let note = store.checkpoint();
        let checkpoint = note
            .as_deref()
            .and_then(|n| Checkpoint::parse_unverified(n).ok());
        let signatures = match &note {
            Some(n) => store
                .verifiers()
                .iter()
                .map(|v| {
                    (
                        v.name().to_string(),
                        v.open(n).map(|_| ()).map_err(|e| e.to_string()),
                    )
                })
                .collect(),
            None => Vec::new(),
        };
        let root_matches = match &checkpoint {
            Some(c) => Some(store.root_at(c.size)? == c.root),
            None => None,
        };
        let mut rotations = Vec::new();
        for entry in store.scan(
            ScanKey::Type(EventType::LedgerKeyRotated.as_str()),
            None,
            None,
        ) {
            let entry = entry?;
            if let Ok(r) = serde_json::from_value::<LedgerKeyRotated>(entry.event.data) {
                rotations.push((entry.index, r));
            }
        }
        let proof = match &leaf {
            Some(l) => Some(proof::inclusion(&store, l, &Against::Latest)?),
            None => None,
        };
        Ok::<_, Failure>(Answer {
            size: status.size,
            note,
            signatures,
            root_matches,
            checkpoint,
            refused: status.writes_refused,
            quarantined: status.quarantined,
            previous_key: store
                .previous_key()
                .map(|(k, until)| (k, until.to_string())),
            rotations,
            proof,
        })
    })
    .await;
    let a = match answer {
        Ok(a) => a,
        Err(page) => return page,
    };
    let verified = a.root_matches == Some(true)
        && !a.signatures.is_empty()
        && a.signatures.iter().any(|(_, r)| r.is_ok());
    let body = html! {
        section #checkpoint {
            h2 { "Latest checkpoint" }
            @match &a.note {
                None => p.muted { "The log is empty: nothing is signed yet." },
                Some(note) => {
                    @if verified {
                        p.verdict.ok #verified data-verified="true" { "Verified: signed by the ledger's key, and its root is the tree's root at size " (a.checkpoint.as_ref().map(|c| c.size).unwrap_or(0)) "." }
                    } @else {
                        p.verdict.approve #verified data-verified="false" { "Does not verify: see below." }
                    }
                    pre.manifest #note { (note) }
                    table #signatures {
                        thead { tr { th scope="col" { "Key" } th scope="col" { "Signature" } } }
                        tbody { @for (name, r) in &a.signatures {
                            tr { td { (name) } td { @match r { Ok(()) => "valid", Err(e) => span.error { (e) } } } }
                        } }
                    }
                    p { "Root against the tree: " @match a.root_matches {
                        Some(true) => "matches.", Some(false) => span.error { "DIFFERS from the tree at that size." }, None => "no checkpoint."
                    } }
                    p.muted { "Log size " (a.size) ". This page checks the signatures and the root at the signed size; "
                        code { "annal verify" } " re-reads every leaf and recomputes the tree." }
                }
            }
            @if let Some(r) = &a.refused { p.error role="alert" { "Writes are refused: " (r) } }
            p { (a.quarantined) " inputs in quarantine (" code { "annal quarantine list" } ")." }
        }
        section #keys {
            h2 { "Keys and rotations" }
            @match &a.previous_key {
                Some((key, until)) => p { "After a rotation, the previous key co-signs until " (until) ": " code { (key) } },
                None => p.muted { "No previous key is co-signing." },
            }
            @if a.rotations.is_empty() {
                p.muted { "The key was never rotated." }
            } @else {
                table #rotations {
                    thead { tr { th scope="col" class="num" { "Entry" } th scope="col" { "Previous key" } th scope="col" { "Next key" } th scope="col" { "Previous valid until" } } }
                    tbody { @for (i, r) in &a.rotations {
                        tr { td.num { (i) } td { code { (r.previous_key) } } td { code { (r.next_key) } } td { (r.previous_valid_until.to_string()) } }
                    } }
                }
            }
        }
        section #proof {
            h2 { "Inclusion proof" }
            form.controls method="get" action="/ui/integrity" {
                label { "Event id " input name="id" value=(id) size="40"; }
                label { "or log index " input name="index" value=(index_text) size="10"; }
                button type="submit" { "Prove" }
                small { "The proof leads to the latest checkpoint; check it offline with " code { "tools/verify_proof.py" } "." }
            }
            @if let Some(proof) = &a.proof {
                p #proof-summary data-index=(proof["index"].as_u64().unwrap_or(0)) {
                    "Entry " (proof["index"].as_u64().unwrap_or(0)) " (event " code { (proof["event_id"].as_str().unwrap_or("")) } ") is in the tree of size "
                    (proof["tree_size"].as_u64().unwrap_or(0)) ", by a path of " (proof["path"].as_array().map_or(0, Vec::len)) " hashes."
                }
                pre.manifest #proof-json { (serde_json::to_string_pretty(proof).unwrap_or_default()) }
            }
        }
    };
    frame("Integrity", "/ui/integrity", body).into_response()
}
