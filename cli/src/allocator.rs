//! The allocator `annal` runs on, and how long it keeps freed memory.

/// Ingest allocates a JSON tree per event on one thread and frees it on
/// another; glibc's allocator spends more time on that than on parsing.
/// mimalloc 2 without transparent huge pages (the workspace's features):
/// mimalloc 3 returned freed pages to the kernel and took them back
/// zeroed, a third of a scan's CPU in `clear_page_erms`; v2 ingests as
/// fast with 40 MB less at 1M, and scans twice as fast as v3 did.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc 2's `mi_option_e`: between
/// `mi_option_eager_commit_delay` (14) and `mi_option_use_numa_nodes`
/// (16), which libmimalloc-sys names and this one it does not (a test
/// checks its default, 10 ms).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays mapped before mimalloc gives it back to
/// the kernel, in milliseconds.
///
/// Why: at mimalloc's 10 ms, the memory a query freed was gone before the
/// next query of a session (`serve`, `annal-bench sql`) asked for it, and
/// that query took it back one zeroed page at a time: at 10M events,
/// who-changed-object right after the as-of queries took 9 ms against
/// 4.3 ms with the memory kept. A second keeps a burst of queries on the
/// same pages and still returns the memory of an idle process.
pub(crate) const KEEP_FREED_MS: std::ffi::c_long = 1000;

/// Sets [`KEEP_FREED_MS`]; call first in `main`.
pub(crate) fn keep_freed_memory() {
    // SAFETY: `mi_option_set` stores an integer in mimalloc's option
    // table; any value of this option is valid (-1: never purge).
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, KEEP_FREED_MS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option set is the purge delay: its default is mimalloc's 10
    /// ms (unless the environment sets it), and it reads back as set.
    #[test]
    fn the_purge_delay_is_the_option_set() {
        // SAFETY: reads and writes of an integer option.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(before, 10, "mimalloc's default purge delay");
        }
        keep_freed_memory();
        let after = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(after, KEEP_FREED_MS);
    }
}
