//! The as-of table functions, `name(valid_time [, known_at])`: their
//! arguments are instants, bound when the query is planned (so `now-2h`
//! means two hours before planning), and each function makes the table
//! those instants give ([`AsOfFunction`]).

use std::sync::Arc;

use annal_schemas::Timestamp;
use annal_store::Store;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use datafusion::common::{plan_err, ScalarValue};
use datafusion::datasource::TableProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;

use crate::asof::inventory::AsOf;

/// Makes the table of an as-of function bound to its instants.
pub(crate) type Bind = Box<dyn Fn(&Arc<Store>, AsOf) -> Arc<dyn TableProvider> + Send + Sync>;

/// A table function `name(valid_time [, known_at])` over a store.
pub(crate) struct AsOfFunction {
    name: &'static str,
    store: Arc<Store>,
    bind: Bind,
}

impl std::fmt::Debug for AsOfFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsOfFunction")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl AsOfFunction {
    pub(crate) fn new(name: &'static str, store: Arc<Store>, bind: Bind) -> Self {
        AsOfFunction { name, store, bind }
    }
}

impl TableFunctionImpl for AsOfFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let as_of = as_of(self.name, args.exprs(), &self.store)?;
        Ok((self.bind)(&self.store, as_of))
    }
}

/// The clocks of `function(valid_time [, known_at])`, bound to `store`.
pub(crate) fn as_of(function: &str, exprs: &[Expr], store: &Store) -> Result<AsOf> {
    if exprs.is_empty() || exprs.len() > 2 {
        return plan_err!(
            "{function}(valid_time [, known_at]) takes one or two times, got {}",
            exprs.len()
        );
    }
    let now = Timestamp::now();
    let Some(valid) = instant(function, exprs, 0, now)? else {
        return plan_err!("{function}: valid_time must not be NULL");
    };
    let known_at = instant(function, exprs, 1, now)?;
    AsOf::new(store, valid, known_at).map_err(|e| DataFusionError::External(Box::new(e)))
}

/// The instant argument `position` of `function`: a string (RFC 3339 or a
/// `now-2h` style offset) or a timestamp; `None` when absent or NULL.
pub(crate) fn instant(
    function: &str,
    exprs: &[Expr],
    position: usize,
    now: Timestamp,
) -> Result<Option<Timestamp>> {
    let Some(expr) = exprs.get(position) else {
        return Ok(None);
    };
    let expr = match expr {
        Expr::Cast(c) => c.expr.as_ref(),
        e => e,
    };
    let micros = match expr {
        Expr::Literal(value, _) => match value {
            v if v.is_null() => return Ok(None),
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)) => match Timestamp::parse_at(s, now) {
                Ok(t) => return Ok(Some(t)),
                Err(e) => {
                    return plan_err!("{function}: argument {} {s:?}: {e}", position + 1);
                }
            },
            ScalarValue::TimestampMicrosecond(Some(v), _) => Some(*v),
            ScalarValue::TimestampNanosecond(Some(v), _) => Some(v.div_euclid(1000)),
            ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1000),
            ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000),
            _ => None,
        },
        _ => None,
    };
    match micros.and_then(Timestamp::from_unix_micros) {
        Some(t) => Ok(Some(t)),
        None => plan_err!(
            "{function}: argument {} must be a time: an RFC 3339 string such as \
             '2026-11-01T10:00:00Z', an offset such as 'now-2h', or a TIMESTAMP",
            position + 1
        ),
    }
}
