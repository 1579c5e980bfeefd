//! The one collective the sharded selector needs: an element-wise all-reduce SUM of `u32`
//! buffers. An all-gather is the same call on a buffer with one slot per rank, each rank
//! writing only its own slot.

use crate::{Error, Result};

/// All-reduce across the ranks of one sharded selection.
///
/// The CPU backend runs every rank in one process, so an implementation sees all the ranks'
/// buffers at once: `buffers[r]` is rank `r`'s, all of one length. Afterwards every buffer must
/// hold the element-wise wrapping sum of all of them. A wrong sum is not trusted blindly: the
/// selector reports an error when it makes the ranks disagree.
pub trait Collective {
    /// Leaves the element-wise wrapping sum of all `buffers` in every one of them.
    ///
    /// # Errors
    /// Whatever stops the exchange (buffers of different lengths, a failed transport).
    fn all_reduce_sum(&self, buffers: &mut [Vec<u32>]) -> Result<()>;
}

/// Sums the ranks' buffers in place and copies the sum back to every rank.
#[derive(Clone, Copy, Debug, Default)]
pub struct InProcessSum;

impl Collective for InProcessSum {
    fn all_reduce_sum(&self, buffers: &mut [Vec<u32>]) -> Result<()> {
        let Some((first, rest)) = buffers.split_first_mut() else {
            return Ok(());
        };
        if let Some((r, b)) = rest
            .iter()
            .enumerate()
            .find(|(_, b)| b.len() != first.len())
        {
            return Err(Error::Input(format!(
                "all-reduce over buffers of different lengths (rank 0: {}, rank {}: {}): every \
                 rank must contribute a buffer of the same length",
                first.len(),
                r + 1,
                b.len()
            )));
        }
        for b in rest.iter() {
            for (sum, &x) in first.iter_mut().zip(b) {
                *sum = sum.wrapping_add(x);
            }
        }
        for b in rest.iter_mut() {
            b.copy_from_slice(first);
        }
        Ok(())
    }
}

/// One collective call, checked: every rank must receive the same sum, in a buffer of the
/// length it gave (what an all-reduce promises; ranks that diverged here could still agree on
/// a wrong answer later).
pub(super) fn all_reduce(
    collective: &dyn Collective,
    mut buffers: Vec<Vec<u32>>,
) -> Result<Vec<Vec<u32>>> {
    let len = buffers.first().map_or(0, Vec::len);
    collective.all_reduce_sum(&mut buffers)?;
    if let Some(rank) = (0..buffers.len()).find(|&r| buffers[r].len() != len) {
        return Err(disagreement(format!(
            "the all-reduce returned {} values to rank {rank}, which gave {len}",
            buffers[rank].len()
        )));
    }
    if let Some(rank) = (1..buffers.len()).find(|&r| buffers[r] != buffers[0]) {
        return Err(disagreement(format!(
            "rank {rank} received a different all-reduce sum than rank 0"
        )));
    }
    Ok(buffers)
}

/// Every rank's values (`own[r]`, all of one length `n`), gathered into one `ranks x n` buffer
/// on every rank: rank `r` contributes zeros outside its slot `[r * n, (r + 1) * n)`.
pub(super) fn all_gather(collective: &dyn Collective, own: &[Vec<u32>]) -> Result<Vec<Vec<u32>>> {
    let n = own.first().map_or(0, Vec::len);
    let buffers: Vec<Vec<u32>> = own
        .iter()
        .enumerate()
        .map(|(rank, values)| {
            let mut buffer = vec![0; own.len() * n];
            buffer[rank * n..][..n].copy_from_slice(values);
            buffer
        })
        .collect();
    all_reduce(collective, buffers)
}

/// The error of a collective whose results left the ranks in different states.
pub(super) fn disagreement(what: String) -> Error {
    Error::Input(format!(
        "the ranks of a sharded selection disagree ({what}); the collective must leave every \
         rank with the element-wise sum of all ranks' buffers"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_gets_the_wrapping_sum() {
        let mut buffers = vec![vec![1, u32::MAX, 0], vec![2, 1, 5], vec![3, 0, 7]];
        InProcessSum.all_reduce_sum(&mut buffers).unwrap();
        for b in &buffers {
            assert_eq!(b, &[6, 0, 12]);
        }
    }

    #[test]
    fn buffers_of_different_lengths_are_an_error() {
        let mut buffers = vec![vec![1, 2], vec![3]];
        assert!(InProcessSum.all_reduce_sum(&mut buffers).is_err());
    }

    #[test]
    fn all_gather_places_each_rank_in_its_slot() {
        let own: Vec<Vec<u32>> = (0..3).map(|r| vec![r, 10 + r]).collect();
        let gathered = all_gather(&InProcessSum, &own).unwrap();
        for g in &gathered {
            assert_eq!(g, &[0, 10, 1, 11, 2, 12]);
        }
    }
}
