//! Phases 4 and 5 on one rank: count its frontier keys ahead of T and tied with it, learn every
//! rank's counts (all-gather), and write exactly its own slots of each output row. The ranks'
//! slot ranges are disjoint and cover all K slots, so the all-reduce SUM of the zero-initialised
//! outputs is the full output on every rank.

use super::super::refine::Candidate;
use super::refine::RadixSearch;
use super::scores::Shard;
use rayon::prelude::*;

/// `-1` (an empty slot) in the `u32` output buffers that travel through the all-reduce.
const EMPTY_SLOT: u32 = u32::MAX;

/// `rows x 2`: `(a_r, t_r)` = this rank's frontier keys `< T` and `== T` of each row.
pub(super) fn counts_around_boundary(
    frontiers: &[Vec<Candidate>],
    searches: &[Option<RadixSearch>],
) -> Vec<u32> {
    frontiers
        .par_iter()
        .zip(searches)
        .flat_map_iter(|(frontier, search)| {
            let (mut ahead, mut tied) = (0u32, 0u32);
            if let Some(boundary) = search.map(|s| s.prefix) {
                for c in frontier {
                    ahead += (c.key < boundary) as u32;
                    tied += (c.key == boundary) as u32;
                }
            }
            [ahead, tied]
        })
        .collect()
}

/// This rank's `rows x k` output: zero except in its own slots, which hold global positions
/// (and, on rank 0, the `-1` pads of short rows). `gathered` is the all-gathered
/// [`counts_around_boundary`] of every rank, rank by rank. `Err` describes sums that do not
/// partition the K slots.
pub(super) fn own_output_slots(
    k: usize,
    shard: &Shard,
    frontiers: &[Vec<Candidate>],
    searches: &[Option<RadixSearch>],
    gathered: &[u32],
) -> Result<Vec<u32>, String> {
    let mut out = vec![0u32; shard.rows() * k];
    let offset = shard.offset() as u32;
    let per_rank = shard.rows() * 2;
    let ranks = shard.sharding.ranks;
    out.par_chunks_mut(k)
        .enumerate()
        .try_for_each(|(row, slots)| {
            let Some(search) = searches[row] else {
                write_own_short_slots(shard, row, slots);
                return Ok(());
            };
            let frontier = &frontiers[row];
            let ahead = frontier.iter().filter(|c| c.key < search.prefix).count() as u64;
            let tied = frontier.iter().filter(|c| c.key == search.prefix).count() as u64;
            let gathered_row = |rank: usize| {
                let at = rank * per_rank + row * 2;
                (gathered[at] as u64, gathered[at + 1] as u64)
            };
            // Keys of the ranks before this one come first, in rank order, in both groups.
            let (mut before_ahead, mut before_tied, mut all_ahead, mut all_tied) = (0, 0, 0, 0);
            for rank in 0..ranks {
                let (a, t) = gathered_row(rank);
                if rank < shard.rank {
                    (before_ahead, before_tied) = (before_ahead + a, before_tied + t);
                }
                (all_ahead, all_tied) = (all_ahead + a, all_tied + t);
            }
            let ties = search.quota as u64;
            let ahead_slots = k as u64 - ties;
            if gathered_row(shard.rank) != (ahead, tied)
                || all_ahead != ahead_slots
                || all_tied < ties
            {
                return Err(format!(
                    "row {row}: the gathered counts ({all_ahead} scores above the K-th, \
                     {all_tied} tied with it, {ahead} and {tied} of them here) do not fill \
                     K = {k} slots with {ties} ties"
                ));
            }
            let tied_taken = tied.min(ties.saturating_sub(before_tied));
            let (mut next_ahead, mut next_tied) = (
                before_ahead as usize,
                (ahead_slots + before_tied.min(ties)) as usize,
            );
            let mut taken = 0;
            for c in frontier {
                let position = offset + c.index;
                if c.key < search.prefix {
                    slots[next_ahead] = position;
                    next_ahead += 1;
                } else if c.key == search.prefix && taken < tied_taken {
                    slots[next_tied] = position;
                    next_tied += 1;
                    taken += 1;
                }
            }
            Ok(())
        })?;
    Ok(out)
}

/// `L <= K`: slot `i < L` holds position `i`, written by the rank that holds it; rank 0 writes
/// the `-1` pads.
fn write_own_short_slots(shard: &Shard, row: usize, slots: &mut [u32]) {
    let len = shard.global_len(row);
    let held = shard.offset()..shard.offset() + shard.valid(row).len();
    for (position, slot) in slots
        .iter_mut()
        .enumerate()
        .skip(held.start)
        .take(held.len())
    {
        *slot = position as u32;
    }
    if shard.rank == 0 {
        slots[len..].fill(EMPTY_SLOT);
    }
}
