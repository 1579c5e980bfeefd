//! How results are worded: times, throughput, sizes; and printing to stdout that stops quietly
//! when the reader (`| head`) goes away.

pub use topk::cli::line;

pub use topk::units::{gbps, millis, size};
