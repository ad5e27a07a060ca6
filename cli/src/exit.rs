//! Exit codes, decided in one place.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | failure: tampering found, a violation, writes refused, a runtime error |
//! | 2 | usage or input error: bad flags, unreadable input, rejected records |
//! | 3 | needs approval (recovery gates) |

use std::process::ExitCode;

use annal_store::StoreError;

/// How `annal` exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok,
    /// 1: failure (tampering, refused writes, runtime errors).
    Failure,
    /// 2: usage or input error.
    Usage,
    /// 3: needs approval. Used by the recovery gates.
    NeedsApproval,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(match e {
            Exit::Ok => 0,
            Exit::Failure => 1,
            Exit::Usage => 2,
            Exit::NeedsApproval => 3,
        })
    }
}

/// A usage or input problem found after argument parsing (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints an error and picks its exit code. A closed stdout (`annal log |
/// head`) is not an error.
pub fn report(err: &anyhow::Error) -> Exit {
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return Exit::Ok;
            }
        }
    }
    eprintln!("annal: error: {err:#}");
    let usage = err.chain().any(|c| {
        c.is::<UsageError>()
            || matches!(
                c.downcast_ref::<StoreError>(),
                Some(
                    StoreError::NotInitialized { .. }
                        | StoreError::AlreadyInitialized { .. }
                        | StoreError::Proof(_)
                )
            )
            || matches!(
                c.downcast_ref::<annal_query::QueryError>(),
                Some(
                    annal_query::QueryError::NotFound(_)
                        | annal_query::QueryError::BadInput(_)
                        | annal_query::QueryError::Store(StoreError::Proof(_))
                )
            )
            || matches!(
                c.downcast_ref::<annal_ingest::IngestError>(),
                Some(annal_ingest::IngestError::Io { .. })
            )
    });
    if usage {
        Exit::Usage
    } else {
        Exit::Failure
    }
}
