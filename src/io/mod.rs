//! Score, length and index arrays on disk: `.npy` (a small reader and writer of its own) and
//! `.safetensors`. Readers check dtype, rank, layout and size before reading any data, and read
//! straight into typed vectors; writers produce a file only once it is complete.

mod array_file;
mod atomic;
mod element;
mod error;
pub mod npy;
mod roles;
pub mod safetensors;

pub use array_file::{Array, ArrayFile, FileDtype};
pub use atomic::AtomicFile;
pub use element::{Element, ElementType};
pub use error::{IoError, Result};
pub use roles::{
    read_i32_matrix, read_indices, read_int_vector, read_lengths, read_scores, Indices, Scores,
};
