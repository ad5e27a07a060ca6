//! Sources: where input bytes come from. Each source owns its reading and
//! reports bytes consumed for progress; framing and decoding happen later.

mod file;
pub mod http;
pub mod kafka;

pub use file::Input;
