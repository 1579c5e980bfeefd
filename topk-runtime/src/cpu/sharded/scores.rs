//! The sharded input: every rank's local matrix, the global lengths, and one rank's view of it.

use crate::sharding::Sharding;
use crate::{Error, Result};

/// A batch of score rows split across ranks by a [`Sharding`]: rank `r` holds global positions
/// `[r * shard_width, (r + 1) * shard_width)` of every row.
#[derive(Clone, Copy, Debug)]
pub struct ShardedScores<'a> {
    /// How the positions of a row are split over the ranks.
    pub sharding: Sharding,
    /// One buffer per rank: its `rows x shard_width` local matrix, pitch `shard_width`.
    pub shards: &'a [&'a [f32]],
    /// The global valid length of each row, in `[0, ranks * shard_width]`.
    pub lengths: &'a [i32],
    /// Rows of the batch.
    pub rows: usize,
}

impl ShardedScores<'_> {
    /// The shape checks, before any score is read.
    pub(super) fn check(&self) -> Result<()> {
        let Sharding { ranks, shard_width } = self.sharding;
        // The fields are public: re-check what `Sharding::new` guarantees.
        Sharding::new(ranks, shard_width)?;
        if self.shards.len() != ranks {
            return Err(Error::Input(format!(
                "{} shard buffers given for {ranks} ranks: pass exactly one local matrix per rank",
                self.shards.len()
            )));
        }
        let needed = self.rows.checked_mul(shard_width);
        for (rank, shard) in self.shards.iter().enumerate() {
            if !matches!(needed, Some(n) if n <= shard.len()) {
                return Err(Error::Input(format!(
                    "shard {rank} holds {} elements, but {} rows of shard width {shard_width} \
                     need {}: each rank passes its rows x shard_width matrix (pitch shard_width)",
                    shard.len(),
                    self.rows,
                    needed.map_or("more than usize::MAX".to_string(), |n| n.to_string())
                )));
            }
        }
        if self.lengths.len() != self.rows {
            return Err(Error::Input(format!(
                "{} lengths given for {} rows: pass exactly one global valid length per row",
                self.lengths.len(),
                self.rows
            )));
        }
        self.sharding.check_lengths(self.lengths)
    }

    /// Rank `rank`'s part of the input (shapes checked).
    pub(super) fn shard(&self, rank: usize) -> Shard<'_> {
        Shard {
            sharding: self.sharding,
            rank,
            data: self.shards[rank],
            lengths: self.lengths,
        }
    }
}

/// What one rank reads: its own local matrix and the global lengths.
#[derive(Clone, Copy)]
pub(super) struct Shard<'a> {
    pub sharding: Sharding,
    pub rank: usize,
    data: &'a [f32],
    lengths: &'a [i32],
}

impl<'a> Shard<'a> {
    pub fn rows(&self) -> usize {
        self.lengths.len()
    }

    /// Global valid length of `row`.
    pub fn global_len(&self, row: usize) -> usize {
        self.lengths[row] as usize
    }

    /// First global position of this shard.
    pub fn offset(&self) -> usize {
        self.sharding.offset(self.rank)
    }

    /// This rank's valid scores of `row`: local column `c` is global position `offset() + c`.
    pub fn valid(&self, row: usize) -> &'a [f32] {
        let width = self.sharding.shard_width;
        let n = self.sharding.local_len(self.global_len(row), self.rank);
        &self.data[row * width..][..n]
    }
}
