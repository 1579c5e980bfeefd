//! Context parallelism on the CPU: each row's positions are split across `G` ranks (see
//! [`crate::sharding`]), every rank sees only its own shard and the global lengths, and all of
//! them end with the full, exact output. The ranks run in this process, phase by phase; between
//! phases they meet in one all-reduce SUM ([`Collective`]):
//!
//! 1. propose: the coarse histogram of each rank's share of the row's stride view; reduced, it
//!    is the single-device view histogram, so every rank reads the single-device cutoffs e0, e1;
//! 2. certify: each rank's counts at or above e0 and e1; reduced, they pick the single-device
//!    route and the frontier's lower bound (e0, e1, or every valid score);
//! 3. refine: one reduced histogram per FP32 digit over the frontier fixes the key T of the
//!    K-th best score and how many of its ties are selected;
//! 4. emit: an all-gather of each rank's counts ahead of and tied with T gives every rank its
//!    own disjoint slots;
//! 5. assemble: the zero-initialised outputs, reduced, are the full output on every rank.

mod certify;
mod collective;
mod emit;
mod propose;
mod refine;
mod scores;
mod select;

pub use collective::{Collective, InProcessSum};
pub use scores::ShardedScores;
pub use select::{select_sharded, select_sharded_with};
