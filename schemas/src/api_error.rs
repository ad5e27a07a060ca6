//! The error document of annal's HTTP API: `{"error": "...", "code": "..."}`
//! with a stable `code`, and the HTTP status each code is answered with.
//! Every route answers its errors in this one shape from this one table
//! (the read routes in `annal-query`, ingest in `annal-ingest`,
//! authentication in the binary), so a client handles them once.

use serde_json::{json, Value};

/// A stable error code of the HTTP API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is wrong (400).
    BadRequest,
    /// No valid bearer token (401).
    Unauthorized,
    /// The token's role may not use the route (403).
    Forbidden,
    /// What was asked for does not exist (404).
    NotFound,
    /// The caller's checkpoint disagrees with this log (409).
    Conflict,
    /// A statement that is not allowed, such as SQL that is not a query (403).
    NotAllowed,
    /// A request body over the server's limit (413).
    BodyTooLarge,
    /// A query over its memory limit (413).
    MemoryLimit,
    /// A query past its time limit (408).
    Timeout,
    /// More work at once than the server takes; retry later (429).
    Busy,
    /// The server failed; details are in its log, not in the answer (500).
    Internal,
}

impl ErrorCode {
    /// The code as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::NotAllowed => "not_allowed",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::MemoryLimit => "memory_limit",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Busy => "busy",
            ErrorCode::Internal => "internal",
        }
    }

    /// The HTTP status the code is answered with.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden | ErrorCode::NotAllowed => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::Timeout => 408,
            ErrorCode::Conflict => 409,
            ErrorCode::BodyTooLarge | ErrorCode::MemoryLimit => 413,
            ErrorCode::Busy => 429,
            ErrorCode::Internal => 500,
        }
    }

    /// The error document for `reason`.
    pub fn body(self, reason: &str) -> Value {
        json!({"error": reason, "code": self.as_str()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_has_its_own_name_and_an_error_status() {
        let all = [
            ErrorCode::BadRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::NotFound,
            ErrorCode::Conflict,
            ErrorCode::NotAllowed,
            ErrorCode::BodyTooLarge,
            ErrorCode::MemoryLimit,
            ErrorCode::Timeout,
            ErrorCode::Busy,
            ErrorCode::Internal,
        ];
        let names: std::collections::BTreeSet<&str> = all.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), all.len());
        assert!(all.iter().all(|c| (400..600).contains(&c.status())));
        assert_eq!(ErrorCode::Busy.status(), 429);
        assert_eq!(
            ErrorCode::NotFound.body("no such id"),
            json!({"error": "no such id", "code": "not_found"})
        );
    }
}
