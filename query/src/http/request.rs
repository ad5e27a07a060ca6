//! Reading a request: query strings (a bad one is 400 naming the field),
//! the `at`/`known_at` clocks, comma lists, and [`answer`], which runs a
//! store question off the async threads as one JSON document.

use annal_schemas::Timestamp;
use axum::extract::Query;
use axum::Json;
use serde_json::Value;

use crate::error::QueryError;
use crate::http::ApiError;

/// `at` (default now) and `known_at` from a query string.
pub fn clocks(
    at: &Option<String>,
    known_at: &Option<String>,
) -> Result<(Timestamp, Option<Timestamp>), ApiError> {
    let now = Timestamp::now();
    let time = |name: &str, value: &Option<String>| -> Result<Option<Timestamp>, ApiError> {
        value
            .as_deref()
            .map(|v| {
                Timestamp::parse_at(v, now)
                    .map_err(|e| ApiError::BadRequest(format!("{name}={v:?}: {e}")))
            })
            .transpose()
    };
    Ok((time("at", at)?.unwrap_or(now), time("known_at", known_at)?))
}

/// `gap=10m` (a coverage threshold; `None`: the default), or 400.
pub fn gap_seconds(gap: &Option<String>) -> Result<Option<i64>, ApiError> {
    gap.as_deref()
        .map(|g| match annal_schemas::duration_seconds(g) {
            Some(s) if s > 0 => Ok(i64::try_from(s).unwrap_or(i64::MAX)),
            _ => Err(ApiError::BadRequest(format!(
                "gap={g:?}: expected a duration longer than 0s, like 10m or 2h"
            ))),
        })
        .transpose()
}

/// A query string, or 400 naming what is wrong with it.
pub type Params<T> = Result<Query<T>, axum::extract::rejection::QueryRejection>;

/// The parsed query string, or 400 naming what is wrong with it.
pub fn params<T>(p: Params<T>) -> Result<T, ApiError> {
    p.map(|Query(t)| t)
        .map_err(|e| ApiError::BadRequest(e.body_text()))
}

/// Comma-separated values.
pub fn list(v: &Option<String>) -> Vec<String> {
    v.as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Runs a store question off the async threads and adds `extra` fields to
/// its JSON document.
pub async fn answer<T: serde::Serialize + Send + 'static>(
    job: impl FnOnce() -> Result<(T, Vec<(&'static str, Value)>), QueryError> + Send + 'static,
) -> Result<Json<Value>, ApiError> {
    let doc = tokio::task::spawn_blocking(move || -> Result<Value, QueryError> {
        let (value, extra) = job()?;
        let mut doc = serde_json::to_value(&value)?;
        if let Value::Object(map) = &mut doc {
            for (k, v) in extra {
                map.insert(k.into(), v);
            }
        }
        Ok(doc)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))??;
    Ok(Json(doc))
}
