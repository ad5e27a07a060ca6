//! `cluster` as a column name after a comma.
//!
//! DataFusion's generic SQL dialect accepts a trailing comma at the end of
//! a select list, and ends the list at the keywords that may follow one,
//! `CLUSTER` (as in `CLUSTER BY`) among them. So `SELECT time, cluster
//! FROM events`, the most common query over annal's tables, fails with
//! "Expected: end of statement, found: cluster". Before parsing, every
//! unquoted `cluster` word not followed by `BY` is written as the quoted
//! identifier `"cluster"` (lower case, as the unquoted name would be
//! normalized); the rest of the statement is left byte for byte.

use std::borrow::Cow;

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with each bare `cluster` identifier quoted; unchanged when it
/// has none (or does not tokenize: the parser then says why).
pub(crate) fn quoted(sql: &str) -> Cow<'_, str> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql)
        .with_unescape(false)
        .tokenize_with_location()
    else {
        return Cow::Borrowed(sql);
    };
    let significant = |t: &Token| !matches!(t, Token::Whitespace(_));
    let mut spans = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let Token::Word(w) = &t.token else { continue };
        if w.keyword != Keyword::CLUSTER || w.quote_style.is_some() {
            continue;
        }
        let next = tokens[i + 1..].iter().find(|t| significant(&t.token));
        let before_by =
            matches!(next.map(|t| &t.token), Some(Token::Word(n)) if n.keyword == Keyword::BY);
        if !before_by {
            spans.push((t.span.start, t.span.end));
        }
    }
    if spans.is_empty() {
        return Cow::Borrowed(sql);
    }
    let offset = |line: u64, column: u64| -> Option<usize> {
        let start = sql
            .split_inclusive('\n')
            .take(line.checked_sub(1)? as usize)
            .map(str::len)
            .sum::<usize>();
        let rest = sql.get(start..)?;
        let col = column.checked_sub(1)? as usize;
        Some(start + rest.char_indices().nth(col).map_or(rest.len(), |(b, _)| b))
    };
    let mut out = String::with_capacity(sql.len() + 2 * spans.len());
    let mut at = 0;
    for (s, e) in spans {
        let (Some(from), Some(to)) = (offset(s.line, s.column), offset(e.line, e.column)) else {
            return Cow::Borrowed(sql);
        };
        if from < at
            || sql
                .get(from..to)
                .is_none_or(|w| !w.eq_ignore_ascii_case("cluster"))
        {
            return Cow::Borrowed(sql);
        }
        out.push_str(&sql[at..from]);
        out.push_str("\"cluster\"");
        at = to;
    }
    out.push_str(&sql[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn bare_cluster_words_are_quoted_and_nothing_else_changes() {
        assert_eq!(
            quoted("SELECT time, cluster FROM events"),
            r#"SELECT time, "cluster" FROM events"#
        );
        assert_eq!(
            quoted("SELECT e.CLUSTER,\n  count(*) -- cluster\nFROM events e WHERE cluster = 'cluster, x'"),
            "SELECT e.\"cluster\",\n  count(*) -- cluster\nFROM events e WHERE \"cluster\" = 'cluster, x'"
        );
        assert_eq!(
            quoted("SELECT 'é', cluster FROM t"),
            r#"SELECT 'é', "cluster" FROM t"#
        );
        for same in [
            r#"SELECT "cluster" FROM events"#,
            "SELECT a FROM t CLUSTER BY a",
            "SELECT 'it''s', clusters FROM t",
        ] {
            assert_eq!(quoted(same), same);
        }
    }
}
