//! One file's `fdatasync` on a thread kept for it, so that a commit syncs
//! the tree file while it syncs the leaves, without a thread per commit.
//!
//! Why: a commit makes its leaves and its tree nodes durable side by side
//! (neither waiting for the other's journal commit). That second sync ran
//! on a thread spawned for the commit; under HTTP load the server made
//! about 520 commits a second, and so created and ended 520 threads a
//! second, each with its own allocator heap to set up, abandon and purge.
//!
//! Invariant: [`Pending::wait`] returns only once an `fdatasync` of the
//! file started after [`Syncer::start`] was called has returned; when the
//! thread is not there (it could not be spawned, or it is gone), the
//! caller's thread makes the sync itself.

use std::fs::File;
use std::io;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

type Answer = mpsc::SyncSender<io::Result<()>>;

/// The thread that syncs one file.
pub(crate) struct Syncer {
    file: Arc<File>,
    requests: Option<mpsc::Sender<Answer>>,
    thread: Option<JoinHandle<()>>,
}

/// A sync under way.
#[must_use = "a sync is durable only once waited for"]
pub(crate) struct Pending {
    file: Arc<File>,
    answer: Option<mpsc::Receiver<io::Result<()>>>,
}

impl Syncer {
    /// A syncer of `file`, its thread named `name`.
    pub(crate) fn new(file: Arc<File>, name: &str) -> Syncer {
        let (requests, inbox) = mpsc::channel::<Answer>();
        let synced = Arc::clone(&file);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for answer in inbox {
                    let _ = answer.send(synced.sync_data());
                }
            })
            .ok();
        Syncer {
            file,
            requests: thread.as_ref().map(|_| requests),
            thread,
        }
    }

    /// Starts an `fdatasync` of the file.
    pub(crate) fn start(&self) -> Pending {
        let answer = self.requests.as_ref().and_then(|requests| {
            let (answer, waiting) = mpsc::sync_channel(1);
            requests.send(answer).ok().map(|()| waiting)
        });
        Pending {
            file: Arc::clone(&self.file),
            answer,
        }
    }
}

impl Pending {
    /// Waits for the sync to end and returns its outcome.
    pub(crate) fn wait(self) -> io::Result<()> {
        match self.answer.map(|a| a.recv()) {
            Some(Ok(outcome)) => outcome,
            // No thread, or it ended without answering: sync here.
            Some(Err(_)) | None => self.file.sync_data(),
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn syncs_on_its_thread_and_answers_each_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = Arc::new(File::create(&path).unwrap());
        let syncer = Syncer::new(Arc::clone(&file), "test-sync");
        assert!(syncer.thread.is_some());
        for round in 0..3u8 {
            (&*file).write_all(&[round; 16]).unwrap();
            syncer.start().wait().unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap().len(), 48);
    }

    #[test]
    fn a_sync_without_its_thread_runs_on_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(File::create(dir.path().join("f")).unwrap());
        let mut syncer = Syncer::new(Arc::clone(&file), "test-sync");
        // The thread gone (its channel closed and joined), a sync still
        // happens and answers.
        syncer.requests = None;
        if let Some(t) = syncer.thread.take() {
            t.join().unwrap();
        }
        let pending = syncer.start();
        assert!(pending.answer.is_none());
        pending.wait().unwrap();
    }

    #[test]
    fn an_error_of_the_sync_reaches_the_caller() {
        // /dev/null cannot be synced (EINVAL): the error comes back from
        // the thread.
        let file = Arc::new(File::open("/dev/null").unwrap());
        let syncer = Syncer::new(file, "test-sync");
        assert!(syncer.start().wait().is_err());
    }
}
