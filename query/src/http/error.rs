//! [`ApiError`]: what a read request fails with, as a status, a stable
//! code and a JSON body.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

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
    /// The status and stable code of this error.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::NotAllowed(_) => (StatusCode::FORBIDDEN, "not_allowed"),
            ApiError::MemoryLimit(_) => (StatusCode::PAYLOAD_TOO_LARGE, "memory_limit"),
            ApiError::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            ApiError::Busy(_) => (StatusCode::TOO_MANY_REQUESTS, "busy"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
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
        let (status, code) = self.status_and_code();
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
        let body = Json(json!({"error": reason, "code": code}));
        if status == StatusCode::TOO_MANY_REQUESTS {
            return (status, [(header::RETRY_AFTER, "1")], body).into_response();
        }
        (status, body).into_response()
    }
}
