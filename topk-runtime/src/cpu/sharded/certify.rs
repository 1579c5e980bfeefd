//! Phase 2 on one rank: count the rank's scores at or above each proposed cutoff (its share of
//! the certificates C0 and C1), keep its local candidates, and check its valid scores for NaN.
//! After the all-reduce every rank picks the same route and frontier lower bound.

use super::super::propose::Proposal;
use super::super::refine::Candidate;
use super::super::scan::first_nan;
use super::scores::Shard;
use crate::{keys, Route};
use rayon::prelude::*;

/// One rank's share of the certificate of one row, and the scores it would refine.
#[derive(Default)]
pub(super) struct LocalCertificate {
    /// `#{x >= e0}` and `#{x >= e1}` over this rank's valid scores (zero without a proposal).
    pub counts: [u32; 2],
    /// This rank's scores at or above the lowest proposed cutoff; local columns.
    pub candidates: Vec<Candidate>,
}

/// A NaN among the valid scores: global row and column.
pub(super) type NanAt = (usize, usize);

/// Phase 2 over every row of the shard; `Err` names the first NaN of the shard (row-major).
pub(super) fn count_and_collect_candidates(
    shard: &Shard,
    proposals: &[Option<Proposal>],
) -> Result<Vec<LocalCertificate>, NanAt> {
    let per_row: Vec<Result<LocalCertificate, usize>> = proposals
        .par_iter()
        .enumerate()
        .map(|(row, proposal)| certify_row(shard.valid(row), proposal.as_ref()))
        .collect();
    per_row
        .into_iter()
        .enumerate()
        .map(|(row, certificate)| certificate.map_err(|col| (row, shard.offset() + col)))
        .collect()
}

/// `Err(col)`: the first NaN among the row's local valid scores, whatever its route.
fn certify_row(row: &[f32], proposal: Option<&Proposal>) -> Result<LocalCertificate, usize> {
    if let Some(col) = first_nan(row) {
        return Err(col);
    }
    let Some(proposal) = proposal else {
        // Short rows need no candidates; rows without a usable view re-read the shard.
        return Ok(LocalCertificate::default());
    };
    let lowest = proposal.rescue.unwrap_or(proposal.primary);
    let mut certificate = LocalCertificate::default();
    for (col, &x) in row.iter().enumerate() {
        if lowest.admits(x) {
            certificate.counts[0] += proposal.primary.admits(x) as u32;
            certificate.counts[1] += 1;
            certificate.candidates.push(Candidate {
                index: col as u32,
                key: keys::desc_key32(x),
            });
        }
    }
    if proposal.rescue.is_none() {
        certificate.counts[1] = 0;
    }
    Ok(certificate)
}

/// The certificate counts of every row, `rows x 2`, ready for the all-reduce.
pub(super) fn count_buffer(certificates: &[LocalCertificate]) -> Vec<u32> {
    certificates.iter().flat_map(|c| c.counts).collect()
}

/// The route of a row from its global length, its proposal and the all-reduced counts: the
/// same decision as one device's, since the counts are the single-device counts.
pub(super) fn route_of(
    k: usize,
    len: usize,
    proposal: Option<&Proposal>,
    global_counts: &[u32],
) -> Route {
    let (c0, c1) = (global_counts[0] as usize, global_counts[1] as usize);
    match proposal {
        _ if len <= k => Route::Short,
        None => Route::DirectExact,
        Some(_) if c0 >= k => Route::Primary,
        Some(p) if p.rescue.is_some() && c1 >= k => Route::Rescue,
        Some(_) => Route::Recovery,
    }
}

/// This rank's part of the global frontier `F = {x >= lo}` of a row, local columns: the
/// candidates at or above e0 (primary), all candidates (rescue: they were collected at e1), or
/// every valid score, re-read from the shard (recovery, direct-exact: `lo = -inf`).
pub(super) fn local_frontier(
    route: Route,
    row: &[f32],
    proposal: Option<&Proposal>,
    certificate: LocalCertificate,
) -> Vec<Candidate> {
    match (route, proposal) {
        (Route::Short, _) => Vec::new(),
        (Route::Primary, Some(p)) => {
            let mut frontier = certificate.candidates;
            frontier.retain(|c| p.primary.admits(row[c.index as usize]));
            frontier
        }
        (Route::Rescue, Some(_)) => certificate.candidates,
        _ => row
            .iter()
            .enumerate()
            .map(|(col, &x)| Candidate {
                index: col as u32,
                key: keys::desc_key32(x),
            })
            .collect(),
    }
}
