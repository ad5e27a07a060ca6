//! Is a leaf already in canonical (RFC 8785) form? Answered from the bytes.
//!
//! `verify` used to decode every leaf into a JSON tree and encode it again
//! to compare, which was most of its time. This scanner walks the bytes
//! once, without building anything: no whitespace, object keys strictly
//! increasing by UTF-16 code units (so no duplicates), strings escaped
//! exactly as JSON.stringify escapes them, numbers in ECMAScript's shortest
//! form, and the leaf's fixed frame `{"event":{..},"index":N,
//! "recorded_at":".."}`. It hands back the three facts verify needs: the
//! index, the system time and the event id. Property tests hold it to the
//! reference: a byte string passes exactly when parsing it and
//! re-encoding it with `serde_json_canonicalizer` gives the same bytes.

use std::borrow::Cow;
use std::cmp::Ordering;

/// What verify needs from a canonical leaf, borrowed from it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LeafFacts<'a> {
    /// The `index` field.
    pub(crate) index: u64,
    /// The `recorded_at` field, as written.
    pub(crate) recorded_at: Cow<'a, str>,
    /// The event's `id`.
    pub(crate) id: Cow<'a, str>,
}

/// Nesting deeper than this is refused (serde_json's own limit).
const MAX_DEPTH: usize = 128;

/// Checks `bytes` is a canonical leaf and returns its facts, or says what
/// is not canonical.
pub(crate) fn check(bytes: &[u8]) -> Result<LeafFacts<'_>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut s = Scanner { text, bytes, at: 0 };
    s.expect(b"{\"event\":")?;
    let id = s.object(0, true)?.ok_or("the event has no id")?;
    s.expect(b",\"index\":")?;
    let start = s.at;
    s.number()?;
    let index = std::str::from_utf8(&bytes[start..s.at])
        .ok()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or("the index is not an unsigned integer")?;
    s.expect(b",\"recorded_at\":")?;
    let recorded_at = s.string()?;
    s.expect(b"}")?;
    if s.at != bytes.len() {
        return Err(format!("bytes after the leaf at offset {}", s.at));
    }
    Ok(LeafFacts {
        index,
        recorded_at,
        id,
    })
}

/// Checks that `bytes` is one canonical JSON value (tests compare this with
/// the reference).
#[cfg(test)]
pub(crate) fn check_value(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut s = Scanner { text, bytes, at: 0 };
    s.value(0)?;
    if s.at != bytes.len() {
        return Err(format!("bytes after the value at offset {}", s.at));
    }
    Ok(())
}

/// Strings are handed back borrowed from the leaf: most are read only to
/// be checked, and allocating each was a tenth of verify's time.
struct Scanner<'a> {
    /// The leaf, checked to be UTF-8 once.
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn bad<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at offset {}", self.at))
    }

    /// One byte (a brace, a colon): most of what the frame is made of,
    /// and a call to `memcmp` for each was a tenth of verify's scan.
    #[inline]
    fn expect_byte(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            self.bad(&format!("expected {:?}", char::from(byte)))
        }
    }

    #[inline]
    fn expect(&mut self, literal: &[u8]) -> Result<(), String> {
        if self.bytes[self.at..].starts_with(literal) {
            self.at += literal.len();
            Ok(())
        } else {
            self.bad(&format!("expected {:?}", String::from_utf8_lossy(literal)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), String> {
        match self.peek() {
            Some(b'{') => self.object(depth, false).map(|_| ()),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(|_| ()),
            Some(b't') => self.expect(b"true"),
            Some(b'f') => self.expect(b"false"),
            Some(b'n') => self.expect(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.bad("expected a value"),
        }
    }

    /// An object; with `want_id`, the value of its `id` member (a string).
    fn object(&mut self, depth: usize, want_id: bool) -> Result<Option<Cow<'a, str>>, String> {
        if depth >= MAX_DEPTH {
            return self.bad("nested too deep");
        }
        self.expect_byte(b'{')?;
        let mut id = None;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(id);
        }
        let mut previous: Option<Cow<'a, str>> = None;
        loop {
            if self.peek() != Some(b'"') {
                return self.bad("expected a member name");
            }
            let key = self.string()?;
            if let Some(p) = &previous {
                if utf16_cmp(p, &key) != Ordering::Less {
                    return self.bad(&format!("member {key:?} out of order after {p:?}"));
                }
            }
            self.expect_byte(b':')?;
            if want_id && key == "id" {
                if self.peek() != Some(b'"') {
                    return self.bad("the event id is not a string");
                }
                id = Some(self.string()?);
            } else {
                self.value(depth + 1)?;
            }
            previous = Some(key);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(id);
                }
                _ => return self.bad("expected ',' or '}'"),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), String> {
        if depth >= MAX_DEPTH {
            return self.bad("nested too deep");
        }
        self.expect_byte(b'[')?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return self.bad("expected ',' or ']'"),
            }
        }
    }

    /// A string escaped as JSON.stringify escapes (`"`, `\`, and control
    /// characters as \b \t \n \f \r or lowercase \u00xx; nothing else);
    /// returns its text.
    fn string(&mut self) -> Result<Cow<'a, str>, String> {
        let open = self.at;
        self.expect_byte(b'"')?;
        let mut escaped = false;
        loop {
            // Plain characters up to the next quote, escape or control.
            self.at += plain_run(&self.bytes[self.at..]);
            match self.peek() {
                None => return self.bad("unterminated string"),
                Some(b'"') => break,
                Some(0x00..=0x1f) => return self.bad("a raw control character in a string"),
                Some(b'\\') => {
                    escaped = true;
                    let len = match self.bytes.get(self.at + 1) {
                        Some(b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r') => 2,
                        Some(b'u') => {
                            let code = self
                                .bytes
                                .get(self.at + 2..self.at + 6)
                                .filter(|h| {
                                    h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
                                })
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok());
                            match code {
                                // Only controls without a short form.
                                Some(c @ 0..=0x1f)
                                    if !matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) =>
                                {
                                    6
                                }
                                _ => {
                                    return self.bad("a \\u escape JSON.stringify would not write")
                                }
                            }
                        }
                        _ => return self.bad("an escape JSON.stringify would not write"),
                    };
                    self.at += len;
                }
                Some(_) => self.at += 1,
            }
        }
        self.at += 1;
        let quoted = &self.bytes[open..self.at];
        if escaped {
            // Rare (ids and names seldom hold quotes or controls): let
            // serde_json undo the escapes it would itself have written.
            serde_json::from_slice::<String>(quoted)
                .map(Cow::Owned)
                .map_err(|e| format!("string at offset {open}: {e}"))
        } else {
            // Quotes sit on character boundaries of the UTF-8 leaf.
            self.text
                .get(open + 1..self.at - 1)
                .map(Cow::Borrowed)
                .ok_or_else(|| format!("string at offset {open} splits a character"))
        }
    }

    /// Skips ASCII digits; how many.
    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// A number as ECMAScript prints it (`Number.prototype.toString`).
    fn number(&mut self) -> Result<(), String> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let digits = self.at;
        if self.digits() == 0 {
            return self.bad("a number without digits");
        }
        let mut plain = true;
        if self.peek() == Some(b'.') {
            plain = false;
            self.at += 1;
            if self.digits() == 0 {
                return self.bad("a number without fraction digits");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            plain = false;
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return self.bad("a number without exponent digits");
            }
        }
        let text = &self.bytes[start..self.at];
        let int_digits = &self.bytes[digits..self.at];
        // The common case: a short integer with no leading zero (and not
        // "-0"), which ECMAScript prints as itself.
        if plain && int_digits.len() <= 15 {
            let leading_zero = int_digits.len() > 1 && int_digits[0] == b'0';
            let negative_zero = text == b"-0";
            if leading_zero || negative_zero {
                return self.bad("a number not in shortest form");
            }
            return Ok(());
        }
        let canonical = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|f| f.is_finite())
            .and_then(serde_json::Number::from_f64)
            .and_then(|n| serde_json_canonicalizer::to_vec(&n).ok());
        match canonical {
            Some(c) if c == text => Ok(()),
            _ => {
                self.at = start;
                self.bad("a number not in ECMAScript's shortest form")
            }
        }
    }
}

/// How many bytes at the start of `bytes` are plain string characters (not
/// `"`, `\\` or a control below 0x20), eight at a time: a leaf is mostly
/// string text, and a byte-by-byte search was a fifth of verify's scan.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    /// High bit set in the bytes of `w` that are zero; bits above the
    /// lowest such byte may be set falsely (the borrow), never below it.
    fn zero_bytes(w: u64) -> u64 {
        w.wrapping_sub(ONES) & !w & HIGH
    }
    let mut words = bytes.chunks_exact(8);
    let mut at = 0usize;
    for word in words.by_ref() {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let w = u64::from_le_bytes(eight);
        // Below 0x20: subtracting 0x20 borrows into the high bit of a byte
        // that had it clear; as for zeros, only above the first is false.
        let found = zero_bytes(w ^ (ONES * u64::from(b'"')))
            | zero_bytes(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + words
        .remainder()
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(words.remainder().len())
}

/// JCS orders member names by UTF-16 code units. Where the first
/// differing bytes are both ASCII (so both start a character after an
/// equal prefix), that is the order of those bytes; only names that first
/// differ in a non-ASCII character are compared in UTF-16.
fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    match x.iter().zip(y).position(|(p, q)| p != q) {
        None => x.len().cmp(&y.len()),
        Some(i) if x[i] < 0x80 && y[i] < 0x80 => x[i].cmp(&y[i]),
        Some(_) => a.encode_utf16().cmp(b.encode_utf16()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// The reference: parses, and re-encodes to the same bytes.
    fn reference(bytes: &[u8]) -> bool {
        serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| serde_json_canonicalizer::to_vec(&v).ok())
            .is_some_and(|c| c == bytes)
    }

    /// Values whose strings hold quotes, backslashes, controls and
    /// non-ASCII, and whose member names sort differently in UTF-16 and in
    /// bytes.
    fn arb_value() -> impl Strategy<Value = Value> {
        crate::canonical::tests::arb_value_from(
            "[a-z\"\\\\\u{0}-\u{1f}é😀]{0,8}",
            "[a-c€😀ﬀ]{0,3}".prop_map(String::from),
        )
    }

    /// One small edit of a byte string.
    #[derive(Clone, Debug)]
    enum Edit {
        Insert(usize, u8),
        Remove(usize),
        Replace(usize, u8),
        Swap(usize, usize),
    }

    fn arb_edit() -> impl Strategy<Value = Edit> {
        let byte = prop_oneof![
            Just(b' '),
            Just(b'\\'),
            Just(b'"'),
            Just(b','),
            Just(b'0'),
            Just(b'.'),
            Just(b'e'),
            Just(b'E'),
            Just(b'-'),
            Just(b'u'),
            Just(b'/'),
            Just(b'a'),
            Just(b'\n'),
            any::<u8>(),
        ];
        prop_oneof![
            (any::<usize>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
            any::<usize>().prop_map(Edit::Remove),
            (any::<usize>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
            (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::Swap(i, j)),
        ]
    }

    fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
        let n = bytes.len();
        match *edit {
            Edit::Insert(i, b) => bytes.insert(i % (n + 1), b),
            Edit::Remove(i) if n > 0 => {
                bytes.remove(i % n);
            }
            Edit::Replace(i, b) if n > 0 => bytes[i % n] = b,
            Edit::Swap(i, j) if n > 0 => bytes.swap(i % n, j % n),
            _ => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn canonical_values_pass(v in arb_value()) {
            let bytes = serde_json_canonicalizer::to_vec(&v).unwrap();
            prop_assert_eq!(check_value(&bytes), Ok(()), "{}", String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn an_edited_value_passes_exactly_when_the_reference_says_canonical(
            v in arb_value(),
            edits in proptest::collection::vec(arb_edit(), 1..3),
        ) {
            let mut bytes = serde_json_canonicalizer::to_vec(&v).unwrap();
            for e in &edits {
                apply(&mut bytes, e);
            }
            prop_assert_eq!(
                check_value(&bytes).is_ok(),
                reference(&bytes),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }

    proptest! {
        /// The word-at-a-time search finds the first quote, backslash or
        /// control, as a byte-by-byte search does, wherever it sits in a
        /// word and whatever the bytes around it (high bytes, 0x20, 0x7f).
        #[test]
        fn plain_run_stops_where_the_byte_search_stops(
            bytes in proptest::collection::vec(prop_oneof![
                8 => 0x20u8..0x7f,
                1 => Just(b'"'),
                1 => Just(b'\\'),
                1 => 0u8..0x20,
                1 => 0x7fu8..=0xff,
                1 => Just(0x20u8),
                1 => Just(0x21u8),
            ], 0..64),
        ) {
            let naive = bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .unwrap_or(bytes.len());
            prop_assert_eq!(plain_run(&bytes), naive);
        }

        /// The byte shortcut orders names as their UTF-16 code units do.
        #[test]
        fn utf16_cmp_is_the_order_of_code_units(a in "[a-c€😀ﬀ\u{7f}\u{80}]{0,4}", b in "[a-c€😀ﬀ\u{7f}\u{80}]{0,4}") {
            prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
        }
    }

    /// The edits make both kinds of bytes, so the property above tests
    /// both sides of the check.
    #[test]
    fn the_edits_make_canonical_and_other_bytes() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = (arb_value(), proptest::collection::vec(arb_edit(), 1..3));
        let (mut canonical, mut other) = (0, 0);
        for _ in 0..2000 {
            let (v, edits) = strategy.new_tree(&mut runner).unwrap().current();
            let mut bytes = serde_json_canonicalizer::to_vec(&v).unwrap();
            for e in &edits {
                apply(&mut bytes, e);
            }
            if reference(&bytes) {
                canonical += 1;
            } else {
                other += 1;
            }
        }
        assert!(
            canonical > 100 && other > 100,
            "{canonical} canonical, {other} other"
        );
    }

    #[test]
    fn known_cases() {
        let ok: &[&[u8]] = &[
            b"{}",
            b"[]",
            b"0",
            b"-1",
            b"1e+21",
            b"1.5",
            b"\"\\u001f\\\"\\n\"",
            "{\"a\":1,\"€\":2,\"😀\":3,\"ﬀ\":4}".as_bytes(),
        ];
        for b in ok {
            assert_eq!(check_value(b), Ok(()), "{}", String::from_utf8_lossy(b));
            assert!(reference(b), "{}", String::from_utf8_lossy(b));
        }
        let bad: &[&[u8]] = &[
            b"{ }",
            b"{\"b\":1,\"a\":2}",
            b"{\"a\":1,\"a\":2}",
            b"01",
            b"-0",
            b"1.0",
            b"1E21",
            b"1e21",
            b"\"\\/\"",
            b"\"\\u000a\"",
            b"\"\\u001F\"",
            b"\"\\u00e9\"",
            b"\"\x01\"",
            "{\"ﬀ\":1,\"😀\":2}".as_bytes(),
        ];
        for b in bad {
            assert!(check_value(b).is_err(), "{}", String::from_utf8_lossy(b));
            assert!(!reference(b), "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn a_leaf_gives_its_index_time_and_id() {
        let leaf = br#"{"event":{"data":{"id":"inner"},"id":"e\"1","schema":"annal.event/v1","time":"2026-11-01T10:00:00Z","type":"cluster.heartbeat"},"index":42,"recorded_at":"2026-12-01T09:40:53.353472Z"}"#;
        assert_eq!(
            check(leaf),
            Ok(LeafFacts {
                index: 42,
                recorded_at: "2026-12-01T09:40:53.353472Z".into(),
                id: "e\"1".into(),
            })
        );
        let spaced = br#"{"event":{"id":"e1"}, "index":1,"recorded_at":"x"}"#;
        assert!(check(spaced).is_err());
        let trailing = br#"{"event":{"id":"e1"},"index":1,"recorded_at":"x"} "#;
        assert!(check(trailing).is_err());
    }
}
