//! Context parallelism: how the positions of every score row are split across ranks.
//!
//! Rank `r` of `G` holds the contiguous global positions `[r * shard_width, (r + 1) * shard_width)`
//! of every row, as its own row-major matrix of `shard_width` columns. Every rank knows the
//! global valid length `L` of each row; its local valid length is the part of `[0, L)` that
//! falls into its shard. Outputs carry global positions, exactly as on one device.

use crate::{Error, Result, ScoreMatrix};

/// Most positions a sharded row may span: int32 indices, less 2^21 so that a position chunk
/// (at most 2^20 scores) added to any position stays below 2^31 in the kernels.
pub const MAX_SHARDED_POSITIONS: usize = i32::MAX as usize - (1 << 21);

/// Equal contiguous shards of `shard_width` positions over `ranks` ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sharding {
    /// Ranks `G`.
    pub ranks: usize,
    /// Positions each rank holds of every row.
    pub shard_width: usize,
}

impl Sharding {
    /// `ranks` shards of `shard_width` positions.
    ///
    /// # Errors
    /// [`Error::Input`] for no rank, an empty shard, or more than [`MAX_SHARDED_POSITIONS`] in
    /// all.
    pub fn new(ranks: usize, shard_width: usize) -> Result<Sharding> {
        if ranks == 0 {
            return Err(Error::Input("a sharding needs at least one rank".into()));
        }
        if shard_width == 0 {
            return Err(Error::Input(
                "each shard must hold at least one position".into(),
            ));
        }
        let total = ranks
            .checked_mul(shard_width)
            .filter(|&t| t <= MAX_SHARDED_POSITIONS)
            .ok_or_else(|| {
                Error::Input(format!(
                    "{ranks} shards of {shard_width} positions exceed the {MAX_SHARDED_POSITIONS} \
                     positions a sharded row may have (int32 indices, with headroom for the \
                     kernels' chunk arithmetic); use fewer or narrower shards"
                ))
            })?;
        debug_assert!(total > 0);
        Ok(Sharding { ranks, shard_width })
    }

    /// The shards that cover rows of `width` positions: `ranks` shards of ceil(width / ranks).
    pub fn covering(width: usize, ranks: usize) -> Result<Sharding> {
        if ranks == 0 {
            return Err(Error::Input("a sharding needs at least one rank".into()));
        }
        Sharding::new(ranks, width.div_ceil(ranks).max(1))
    }

    /// Positions of a whole row across all shards.
    pub fn total_width(&self) -> usize {
        self.ranks * self.shard_width
    }

    /// First global position of rank `rank`'s shard.
    pub fn offset(&self, rank: usize) -> usize {
        rank * self.shard_width
    }

    /// Valid positions of a row of global length `len` that rank `rank` holds.
    pub fn local_len(&self, len: usize, rank: usize) -> usize {
        len.saturating_sub(self.offset(rank)).min(self.shard_width)
    }

    /// Checks the global lengths against the sharded width (same message as one device).
    pub fn check_lengths(&self, lengths: &[i32]) -> Result<()> {
        let width = self.total_width();
        match lengths
            .iter()
            .enumerate()
            .find(|(_, &l)| l < 0 || l as usize > width)
        {
            Some((row, &len)) => Err(Error::Length {
                row,
                len: len as i64,
                width,
            }),
            None => Ok(()),
        }
    }

    /// Cuts a global matrix (rows no wider than [`Sharding::total_width`]) into the ranks' local
    /// matrices, each `rows x shard_width`, positions past a row's length zero. For tests and for
    /// replaying a saved matrix as if it had been produced sharded.
    pub fn split(&self, m: &ScoreMatrix) -> Result<Vec<Vec<f32>>> {
        if m.width > self.total_width() {
            return Err(Error::Input(format!(
                "a {}-wide matrix does not fit {} shards of {} positions",
                m.width, self.ranks, self.shard_width
            )));
        }
        self.check_lengths(m.lengths)?;
        let mut shards = vec![vec![0.0f32; m.rows * self.shard_width]; self.ranks];
        for (rank, shard) in shards.iter_mut().enumerate() {
            let off = self.offset(rank);
            for r in 0..m.rows {
                let n = self.local_len(m.lengths[r] as usize, rank);
                let src = &m.data[r * m.pitch + off..r * m.pitch + off + n];
                shard[r * self.shard_width..r * self.shard_width + n].copy_from_slice(src);
            }
        }
        Ok(shards)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_lengths_partition_every_global_length() {
        let s = Sharding::new(3, 5).unwrap();
        for len in 0..=s.total_width() {
            let parts: Vec<usize> = (0..3).map(|r| s.local_len(len, r)).collect();
            assert_eq!(parts.iter().sum::<usize>(), len, "len {len}: {parts:?}");
            // Contiguous: a later shard is non-empty only when every earlier one is full.
            for r in 1..3 {
                if parts[r] > 0 {
                    assert_eq!(parts[r - 1], 5);
                }
            }
        }
    }

    #[test]
    fn split_round_trips_the_valid_scores() {
        let (rows, width) = (4, 11);
        let data: Vec<f32> = (0..rows * width).map(|i| i as f32).collect();
        let lengths = [0, 4, 9, 11];
        let m = ScoreMatrix {
            data: &data,
            rows,
            width,
            pitch: width,
            lengths: &lengths,
        };
        let s = Sharding::covering(width, 3).unwrap();
        let shards = s.split(&m).unwrap();
        for r in 0..rows {
            for p in 0..lengths[r] as usize {
                let (rank, local) = (p / s.shard_width, p % s.shard_width);
                assert_eq!(shards[rank][r * s.shard_width + local], data[r * width + p]);
            }
        }
    }

    #[test]
    fn bad_shardings_and_lengths_are_errors() {
        assert!(Sharding::new(0, 4).is_err());
        assert!(Sharding::new(2, 0).is_err());
        assert!(Sharding::new(4, 1 << 30).is_err());
        let s = Sharding::new(2, 4).unwrap();
        assert!(s.check_lengths(&[8, 0]).is_ok());
        assert!(matches!(
            s.check_lengths(&[9]),
            Err(Error::Length { row: 0, .. })
        ));
        assert!(s.check_lengths(&[-1]).is_err());
    }
}
