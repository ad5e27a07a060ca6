//! Errors of the read side.

use annal_store::StoreError;
use datafusion::error::DataFusionError;

/// A query that could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The SQL does not parse or plan (names the problem as DataFusion
    /// reports it, without its internal prefixes).
    #[error("SQL error: {0}")]
    Sql(String),
    /// A time argument that is not RFC 3339 or a `now-2h` offset.
    #[error("invalid time {value:?}: {reason}")]
    Time {
        /// What was given.
        value: String,
        /// Why it is not a time.
        reason: String,
    },
    /// What was asked for does not exist (an event id, an index).
    #[error("{0}")]
    NotFound(String),
    /// An argument that does not parse (names what is wrong).
    #[error("{0}")]
    BadInput(String),
    /// A checkpoint the caller holds disagrees with this log: the history
    /// it was signed over was rewritten or forked.
    #[error("{0}")]
    Diverged(String),
    /// A statement that is not a query (`COPY`, `CREATE`, `INSERT`,
    /// `SET`, ...): annal's SQL is read-only. Names what was refused.
    #[error("{0}")]
    NotAllowed(String),
    /// The query needed more memory than its limit (`detail`, DataFusion's
    /// account of the largest consumers, is for the server's log).
    #[error("the query needs more memory than its limit of {} (--query-memory); narrow it (filters, fewer columns, LIMIT) or raise the limit", crate::sql::limits::human_bytes(*limit))]
    MemoryLimit {
        /// The limit, in bytes.
        limit: usize,
        /// What the pool said.
        detail: String,
    },
    /// The query ran past its time limit and was cancelled.
    #[error("the query ran past its time limit of {} s (--query-timeout) and was cancelled", limit.as_secs_f64())]
    Timeout {
        /// The limit.
        limit: std::time::Duration,
    },
    /// Evaluating the query failed on its own terms (a cast that cannot
    /// hold, a division by zero, a function given a bad argument): the
    /// caller's to fix, so the reason is theirs to read.
    #[error("query failed: {0}")]
    Evaluation(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Arrow or DataFusion failed while executing.
    #[error("query failed: {0}")]
    Execution(String),
}

impl QueryError {
    pub(crate) fn from_sql(e: DataFusionError) -> QueryError {
        match e.find_root() {
            DataFusionError::SQL(..)
            | DataFusionError::Plan(_)
            | DataFusionError::SchemaError(..) => {
                QueryError::Sql(e.find_root().message().into_owned())
            }
            DataFusionError::External(inner) => QueryError::Execution(inner.to_string()),
            // Raised by functions and operators over the caller's values;
            // annal's own tables report their failures as `External`, and
            // no file can be read, so these name nothing of the server.
            DataFusionError::Execution(_) => {
                QueryError::Evaluation(e.find_root().message().into_owned())
            }
            DataFusionError::ArrowError(arrow, _) if is_evaluation(arrow) => {
                QueryError::Evaluation(arrow.to_string())
            }
            other => QueryError::Execution(other.message().into_owned()),
        }
    }
}

/// Arrow errors that come from the values a query computes on.
fn is_evaluation(e: &datafusion::arrow::error::ArrowError) -> bool {
    use datafusion::arrow::error::ArrowError as A;
    matches!(
        e,
        A::CastError(_)
            | A::ParseError(_)
            | A::DivideByZero
            | A::ArithmeticOverflow(_)
            | A::ComputeError(_)
            | A::InvalidArgumentError(_)
    )
}

impl From<DataFusionError> for QueryError {
    fn from(e: DataFusionError) -> Self {
        QueryError::from_sql(e)
    }
}

impl From<datafusion::arrow::error::ArrowError> for QueryError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        QueryError::Execution(e.to_string())
    }
}

impl From<datafusion::parquet::errors::ParquetError> for QueryError {
    fn from(e: datafusion::parquet::errors::ParquetError) -> Self {
        QueryError::Execution(format!("parquet: {e}"))
    }
}

impl From<serde_json::Error> for QueryError {
    fn from(e: serde_json::Error) -> Self {
        QueryError::Execution(e.to_string())
    }
}
