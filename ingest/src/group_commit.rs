//! Group commit across callers: concurrent ingest requests share commits.
//!
//! Each HTTP request runs its own pipeline, and each pipeline used to make
//! its own commit: with many small requests in flight the log spent its
//! time in `fdatasync`, one per request. A [`GroupCommit`] is one committer
//! thread in front of the store: callers hand it their batch and wait;
//! it takes every batch waiting at that moment (up to a bound), appends
//! them as one commit ([`Store::append_together`]) and answers each caller,
//! after the flush that holds its events, with its own counts. A caller
//! alone is committed at once: nothing waits for company.

use std::sync::mpsc;
use std::sync::Arc;

use tokio::sync::oneshot;

use annal_store::{AppendOutcome, PreparedEvent, Store, StoreError};

/// Events one combined commit takes at most (callers past it wait for the
/// next commit).
pub const DEFAULT_MAX_EVENTS: usize = 32 * 1024;

/// A handle to the committer thread; cloned by every caller. The thread
/// ends when the last handle is dropped.
#[derive(Clone, Debug)]
pub struct GroupCommit {
    tx: mpsc::Sender<Submission>,
}

type Answer = Result<AppendOutcome, String>;

struct Submission {
    events: Vec<PreparedEvent>,
    reply: oneshot::Sender<Answer>,
}

/// A batch handed to the committer: its outcome, once the commit that
/// holds it is durable. Waited for on a thread ([`Receipt::wait`]) or in
/// a task ([`Receipt::outcome`]): an HTTP request's task waits without
/// holding a thread, so that a few threads decode while many requests
/// wait for their commits.
#[must_use = "a batch is committed only when its receipt answers"]
pub struct Receipt(Result<oneshot::Receiver<Answer>, StoreError>);

impl GroupCommit {
    /// Starts the committer for `store`, combining up to `max_events`
    /// events per commit.
    pub fn start(store: Arc<Store>, max_events: usize) -> GroupCommit {
        let (tx, rx) = mpsc::channel::<Submission>();
        // Should the thread not start, the closure (and the receiver in it)
        // is dropped, and every append answers that the committer is gone.
        let _ = std::thread::Builder::new()
            .name("annal-group-commit".into())
            .spawn(move || commit_loop(&store, &rx, max_events.max(1)));
        GroupCommit { tx }
    }

    /// Appends `events` in the next commit and returns what happened to
    /// them, once that commit is durable.
    pub fn append(&self, events: Vec<PreparedEvent>) -> Result<AppendOutcome, StoreError> {
        self.submit(events).wait()
    }

    /// Hands `events` to the next commit without waiting for it; batches
    /// submitted by one caller are committed in the order submitted.
    pub fn submit(&self, events: Vec<PreparedEvent>) -> Receipt {
        let (reply, answer) = oneshot::channel();
        Receipt(
            self.tx
                .send(Submission { events, reply })
                .map(|()| answer)
                .map_err(|_| gone()),
        )
    }
}

impl Receipt {
    /// Blocks this thread until the batch's commit answers (never from
    /// within an async task: use [`Receipt::outcome`] there).
    pub fn wait(self) -> Result<AppendOutcome, StoreError> {
        answered(
            self.0
                .and_then(|answer| answer.blocking_recv().map_err(|_| gone())),
        )
    }

    /// The batch's outcome, awaited.
    pub async fn outcome(self) -> Result<AppendOutcome, StoreError> {
        let answer = match self.0 {
            Ok(answer) => answer.await.map_err(|_| gone()),
            Err(e) => Err(e),
        };
        answered(answer)
    }
}

fn answered(answer: Result<Answer, StoreError>) -> Result<AppendOutcome, StoreError> {
    match answer? {
        Ok(outcome) => Ok(outcome),
        Err(reason) => Err(StoreError::WritesRefused(reason)),
    }
}

fn gone() -> StoreError {
    StoreError::WritesRefused("the committer thread has stopped".into())
}

/// Waits for a batch, takes what else is waiting, commits, answers.
fn commit_loop(store: &Store, rx: &mpsc::Receiver<Submission>, max_events: usize) {
    let mut carried: Option<Submission> = None;
    loop {
        let first = match carried.take() {
            Some(s) => s,
            None => match rx.recv() {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        let mut total = first.events.len();
        let mut taken = vec![first];
        while total < max_events {
            match rx.try_recv() {
                Ok(s) if total + s.events.len() > max_events => {
                    carried = Some(s);
                    break;
                }
                Ok(s) => {
                    total += s.events.len();
                    taken.push(s);
                }
                Err(_) => break,
            }
        }
        let (groups, replies): (Vec<_>, Vec<_>) =
            taken.into_iter().map(|s| (s.events, s.reply)).unzip();
        match store.append_together(groups) {
            Ok(outcomes) => {
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(e) => {
                let reason = e.to_string();
                for reply in replies {
                    let _ = reply.send(Err(reason.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use annal_schemas::Envelope;

    fn event(id: &str) -> PreparedEvent {
        let e = Envelope::parse(
            format!(
                r#"{{"schema":"annal.event/v1","id":"{id}","type":"cluster.heartbeat",
                "time":"2026-11-01T10:00:00Z","cluster":"c1","data":{{"agent":"a"}}}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        PreparedEvent::new(&e).unwrap()
    }

    #[test]
    fn concurrent_callers_get_their_own_counts_and_every_event_lands_once() {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/group").unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let commit = GroupCommit::start(store.clone(), 1000);
        // 16 callers of 50 events each; every caller repeats 10 ids of its
        // neighbour, so ids collide within and across commits.
        let outcomes: Vec<AppendOutcome> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|c| {
                    let commit = commit.clone();
                    s.spawn(move || {
                        let mut events: Vec<_> =
                            (0..40).map(|i| event(&format!("c{c}-{i}"))).collect();
                        let neighbour = (c + 1) % 16;
                        events.extend((0..10).map(|i| event(&format!("c{neighbour}-{i}"))));
                        commit.append(events).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let appended: u64 = outcomes.iter().map(|o| o.appended).sum();
        let duplicates: u64 = outcomes.iter().map(|o| o.duplicates).sum();
        assert_eq!(appended, 16 * 40, "each id once");
        assert_eq!(duplicates, 16 * 10);
        assert_eq!(store.size(), 640);
        for o in &outcomes {
            assert_eq!(o.appended + o.duplicates, 50);
            // Answered after the commit that holds its events.
            assert!(o.size >= o.appended);
        }
        // Every id is where the index says, once.
        for c in 0..16 {
            for i in 0..40 {
                let id = format!("c{c}-{i}");
                let index = store.index_of(&id).unwrap().unwrap();
                assert_eq!(store.entry(index).unwrap().unwrap().event.id, id);
            }
        }
        assert!(store.verify(None).unwrap().is_intact());
    }

    #[test]
    fn batches_waiting_together_make_one_commit_with_per_caller_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        Store::init(dir.path(), "annal.test/group").unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        // Three submissions already waiting when the committer looks: one
        // commit takes the first two (the bound is 5 events), the next the
        // third.
        let (tx, rx) = mpsc::channel();
        let mut answers = Vec::new();
        for batch in [vec!["a", "b"], vec!["b", "c", "d"], vec!["e", "a"]] {
            let (reply, answer) = oneshot::channel();
            tx.send(Submission {
                events: batch.into_iter().map(event).collect(),
                reply,
            })
            .unwrap();
            answers.push(answer);
        }
        drop(tx);
        commit_loop(&store, &rx, 5);
        let got: Vec<(u64, u64, u64)> = answers
            .into_iter()
            .map(|a| {
                let o = a.blocking_recv().unwrap().unwrap();
                (o.appended, o.duplicates, o.size)
            })
            .collect();
        // a, b | c, d (b repeated) in commit one, to size 4; e (a repeated)
        // in commit two, to size 5.
        assert_eq!(got, [(2, 0, 4), (2, 1, 4), (1, 1, 5)]);
        // Two commits: the first leaves recorded together, the last alone.
        let recorded: Vec<_> = (0..5)
            .map(|i| store.entry(i).unwrap().unwrap().recorded_at)
            .collect();
        assert!(recorded[..4].iter().all(|t| *t == recorded[0]));
        assert!(recorded[4] >= recorded[3]);
    }
}
