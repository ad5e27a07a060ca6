//! [`ApiError`]: what a read request fails with, as one of the API's stable
//! error codes ([`ErrorCode`]: its status and JSON body are the code's).

use annal_schemas::ErrorCode;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::error::QueryError;

/// What a read request can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// The request is wrong: 400 with the reason.
    BadRequest(String),
    /// What was asked for does not exist: 404 with the reason.
    NotFound(String),
    /// The caller's checkpoint disagrees with this log: 409 with the reason.
    Conflict(String),
    /// A statement that is not allowed (SQL that is not a query): 403.
    NotAllowed(String),
    /// A query over its memory limit: 413 naming the limit.
    MemoryLimit(String),
    /// A query past its time limit: 408 naming the limit.
    Timeout(String),
    /// More queries at once than the server runs: 429 with Retry-After.
    Busy(String),
    /// The server failed: 500, details logged, not returned.
    Internal(String),
}

impl ApiError {
    /// The stable code of this error (its status is the code's).
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::BadRequest(_) => ErrorCode::BadRequest,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::Conflict(_) => ErrorCode::Conflict,
            ApiError::NotAllowed(_) => ErrorCode::NotAllowed,
            ApiError::MemoryLimit(_) => ErrorCode::MemoryLimit,
            ApiError::Timeout(_) => ErrorCode::Timeout,
            ApiError::Busy(_) => ErrorCode::Busy,
            ApiError::Internal(_) => ErrorCode::Internal,
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Sql(_)
            | QueryError::Time { .. }
            | QueryError::BadInput(_)
            | QueryError::Evaluation(_)
            | QueryError::Store(annal_store::StoreError::Proof(_)) => {
                ApiError::BadRequest(e.to_string())
            }
            QueryError::NotFound(_) => ApiError::NotFound(e.to_string()),
            QueryError::Diverged(_) => ApiError::Conflict(e.to_string()),
            QueryError::NotAllowed(_) => ApiError::NotAllowed(e.to_string()),
            QueryError::MemoryLimit { ref detail, .. } => {
                log!("annal: SQL query over its memory limit: {detail}");
                ApiError::MemoryLimit(e.to_string())
            }
            QueryError::Timeout { .. } => ApiError::Timeout(e.to_string()),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let status = status_of(code);
        let reason = match self {
            ApiError::Internal(detail) => {
                log!("annal: internal error: {detail}");
                "internal error (see the server log)".to_string()
            }
            ApiError::BadRequest(r)
            | ApiError::NotFound(r)
            | ApiError::Conflict(r)
            | ApiError::NotAllowed(r)
            | ApiError::MemoryLimit(r)
            | ApiError::Timeout(r)
            | ApiError::Busy(r) => r,
        };
        let body = Json(code.body(&reason));
        if code == ErrorCode::Busy {
            return (status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (status, body).into_response()
    }
}

/// The HTTP status of `code`.
pub fn status_of(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}
