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
            other => QueryError::Execution(other.message().into_owned()),
        }
    }
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
