//! `date_trunc` as DataFusion's, with the arithmetic fast path extended
//! to timestamps in UTC.
//!
//! Every time annal stores is a UTC timestamp (`Timestamp(µs, "UTC")`),
//! and DataFusion 55 truncates such a column to a day or an hour one
//! value at a time through chrono-tz (it takes the arithmetic path only
//! for timestamps without a zone): a fifth of the CPU of
//! `GROUP BY date_trunc('day', time)` over 10M events. In UTC a day and
//! an hour have one length, so `t - t mod unit` is the same answer;
//! anything else (other zones, weeks, months, scalars) is DataFusion's
//! own function, unchanged.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowTimestampType, DataType, FieldRef, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature,
};

/// The function, to register over DataFusion's.
pub(crate) fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(UtcDateTrunc {
        inner: datafusion::functions::datetime::date_trunc(),
    })
}

/// DataFusion's `date_trunc`, answered by arithmetic where that is exact.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct UtcDateTrunc {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for UtcDateTrunc {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if let [ColumnarValue::Scalar(granularity), ColumnarValue::Array(times)] =
            args.args.as_slice()
        {
            if let Some(truncated) = in_utc(granularity, times) {
                return Ok(ColumnarValue::Array(truncated));
            }
        }
        self.inner.invoke_with_args(args)
    }

    fn output_ordering(&self, input: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(input)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// `times` truncated to `granularity` by arithmetic, when they are UTC
/// timestamps and the granularity is a day or an hour (`None`: leave it
/// to DataFusion, which already does finer units this way).
fn in_utc(granularity: &ScalarValue, times: &ArrayRef) -> Option<ArrayRef> {
    let (ScalarValue::Utf8(Some(g))
    | ScalarValue::Utf8View(Some(g))
    | ScalarValue::LargeUtf8(Some(g))) = granularity
    else {
        return None;
    };
    let seconds: i64 = if g.eq_ignore_ascii_case("day") {
        86_400
    } else if g.eq_ignore_ascii_case("hour") {
        3_600
    } else {
        return None;
    };
    let DataType::Timestamp(unit, Some(tz)) = times.data_type() else {
        return None;
    };
    if !matches!(tz.as_ref(), "UTC" | "utc" | "+00:00" | "Z" | "Etc/UTC") {
        return None;
    }
    match unit {
        TimeUnit::Second => truncate::<TimestampSecondType>(times, seconds),
        TimeUnit::Millisecond => truncate::<TimestampMillisecondType>(times, seconds * 1_000),
        TimeUnit::Microsecond => truncate::<TimestampMicrosecondType>(times, seconds * 1_000_000),
        TimeUnit::Nanosecond => truncate::<TimestampNanosecondType>(times, seconds * 1_000_000_000),
    }
}

fn truncate<T: ArrowTimestampType>(times: &ArrayRef, unit: i64) -> Option<ArrayRef> {
    let times = times.as_any().downcast_ref::<PrimitiveArray<T>>()?;
    let truncated = PrimitiveArray::<T>::from_iter_values_with_nulls(
        times.values().iter().map(|v| v - v.rem_euclid(unit)),
        times.nulls().cloned(),
    )
    .with_timezone_opt(times.timezone().map(Arc::<str>::from));
    Some(Arc::new(truncated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::TimestampMicrosecondArray;
    use datafusion::arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;
    use proptest::prelude::*;

    /// Both functions on `times` (µs in `tz`) at `granularity`.
    fn both(granularity: &str, times: Vec<Option<i64>>, tz: &str) -> (ArrayRef, ArrayRef) {
        let times: ArrayRef = Arc::new(TimestampMicrosecondArray::from(times).with_timezone(tz));
        let rows = times.len();
        let args = || ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Scalar(ScalarValue::Utf8(Some(granularity.into()))),
                ColumnarValue::Array(times.clone()),
            ],
            arg_fields: vec![
                Arc::new(Field::new("g", DataType::Utf8, false)),
                Arc::new(Field::new("t", times.data_type().clone(), true)),
            ],
            number_rows: rows,
            return_field: Arc::new(Field::new("r", times.data_type().clone(), true)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        let ours = udf();
        let theirs = datafusion::functions::datetime::date_trunc();
        let array = |v: ColumnarValue| match v {
            ColumnarValue::Array(a) => a,
            ColumnarValue::Scalar(s) => s.to_array_of_size(rows).expect("array"),
        };
        (
            array(ours.invoke_with_args(args()).expect("ours")),
            array(theirs.invoke_with_args(args()).expect("theirs")),
        )
    }

    proptest! {
        /// The fast path gives DataFusion's answer for UTC timestamps from
        /// 1687 to 2252 (DataFusion's own path fails past ±2^63 ns),
        /// nulls included, and other zones and units are left to it.
        #[test]
        fn same_answer_as_datafusion(
            times in proptest::collection::vec(
                proptest::option::weighted(0.9, -9_000_000_000_000_000i64..9_000_000_000_000_000),
                0..64,
            ),
            granularity in proptest::sample::select(vec!["day", "hour", "DAY", "Hour", "month", "week", "minute"]),
            tz in proptest::sample::select(vec!["UTC", "+00:00", "Europe/Berlin", "+05:30"]),
        ) {
            let (ours, theirs) = both(granularity, times, tz);
            prop_assert_eq!(ours.as_ref(), theirs.as_ref());
        }
    }

    #[test]
    fn utc_days_take_the_fast_path() {
        let times: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(-1), Some(86_400_000_001), None])
                .with_timezone("UTC"),
        );
        let day = ScalarValue::Utf8(Some("day".into()));
        let truncated = in_utc(&day, &times).expect("fast path");
        let expected: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![
                Some(-86_400_000_000),
                Some(86_400_000_000),
                None,
            ])
            .with_timezone("UTC"),
        );
        assert_eq!(truncated.as_ref(), expected.as_ref());
        let berlin: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![Some(1)]).with_timezone("Europe/Berlin"));
        assert!(in_utc(&day, &berlin).is_none());
        assert!(in_utc(&ScalarValue::Utf8(Some("month".into())), &times).is_none());
    }
}
