//! Cross-crate scenarios for annal live in `tests/` of this package: sources
//! through the ingest pipeline into the store and back out through the query
//! crate. This library is empty on purpose.
