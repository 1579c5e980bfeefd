//! The sharded selector: every rank runs each phase over all rows, then the ranks meet in one
//! collective, phase by phase, exactly as separate processes would.

use super::super::params::Params;
use super::super::propose::Proposal;
use super::super::refine::Candidate;
use super::certify::{
    count_and_collect_candidates, count_buffer, local_frontier, route_of, LocalCertificate,
};
use super::collective::{all_gather, all_reduce, disagreement, Collective, InProcessSum};
use super::emit::{counts_around_boundary, own_output_slots};
use super::propose::{proposals_from_histograms, view_histograms_of_shard};
use super::refine::{advance_searches, digit_histograms_of_frontier, RadixSearch};
use super::scores::{Shard, ShardedScores};
use crate::input::{check_indices, check_k};
use crate::{Error, Result, Route, RouteStats};
use rayon::prelude::*;
use topk_dsl::Spec;

/// Exact Top-K of every row of a sharded batch with the rank and policy of `spec`, into `out`
/// (row `r` in `out[r * out_pitch..][..K]`, global positions, `-1` pads; slots past K are not
/// touched): the same contract, and row for row the same routes, as [`super::super::select`]
/// on the unsharded matrix. Ranks communicate through [`InProcessSum`].
///
/// In the returned statistics a row's frontier is the global frontier the ranks refine: the
/// certified count for `Primary` and `Rescue`, the whole row for `Recovery` and `DirectExact`.
///
/// Fails, before reading any score when the shapes are wrong, on: an invalid spec, K outside
/// `1..=MAX_K`, a shard buffer count other than the rank count or a shard smaller than
/// `rows x shard_width`, a global length outside `[0, ranks * shard_width]`, an index buffer
/// too small, or a NaN among the valid scores (reported at its global row and column).
pub fn select_sharded(
    spec: &Spec,
    scores: &ShardedScores,
    out: &mut [i32],
    out_pitch: usize,
    per_row_routes: bool,
) -> Result<RouteStats> {
    select_sharded_with(&InProcessSum, spec, scores, out, out_pitch, per_row_routes)
}

/// [`select_sharded`] with the ranks' all-reduce done by `collective`. Sums that make the ranks
/// disagree, or that cannot come from the ranks' buffers, are reported as errors.
pub fn select_sharded_with(
    collective: &dyn Collective,
    spec: &Spec,
    scores: &ShardedScores,
    out: &mut [i32],
    out_pitch: usize,
    per_row_routes: bool,
) -> Result<RouteStats> {
    // No tail margin here (refused below), so the call's row count decides nothing.
    let params = Params::new(spec, scores.rows as u64)?;
    check_k(params.k)?;
    check_spec(spec)?;
    scores.check()?;
    check_indices(scores.rows, params.k, out.len(), out_pitch)?;
    if scores.rows == 0 {
        return Ok(RouteStats::from_rows([], per_row_routes));
    }
    let k = params.k;
    let shards: Vec<Shard> = (0..scores.sharding.ranks)
        .map(|rank| scores.shard(rank))
        .collect();
    let sum = |buffers| all_reduce(collective, buffers);

    // 1. Propose: the global view histogram, then the same boundaries on every rank.
    let view_hists = sum(shards
        .par_iter()
        .map(|shard| view_histograms_of_shard(&params, shard))
        .collect())?;
    let proposals: Vec<Vec<Option<Proposal>>> = view_hists
        .iter()
        .map(|hist| proposals_from_histograms(&params, scores.lengths, hist))
        .collect();

    // 2. Certify: the global counts, then the same route on every rank.
    let certificates = certify_every_rank(&shards, &proposals)?;
    let counts = sum(certificates.iter().map(|c| count_buffer(c)).collect())?;
    let routes = routes_of_ranks(k, scores.lengths, &proposals, &counts);
    let frontiers: Vec<Vec<Vec<Candidate>>> = shards
        .par_iter()
        .zip(certificates)
        .zip(proposals.par_iter().zip(&routes))
        .map(|((shard, certificates), (proposals, routes))| {
            frontiers_of_shard(shard, certificates, proposals, routes)
        })
        .collect();

    // 3. Refine: one all-reduced histogram per digit fixes the K-th key T and its ties.
    let searches = refine_on_every_rank(collective, &params, &routes, &frontiers)?;

    // 4. Emit: every rank learns every rank's counts around T and writes its own slots.
    let outputs = own_slots_of_every_rank(collective, k, &shards, &frontiers, &searches)?;

    // 5. Assemble: the disjoint slots summed give every rank the full output.
    let outputs = sum(outputs)?;
    check_ranks_agree(&routes, &outputs, k)?;
    for (slots, full) in out.chunks_mut(out_pitch).zip(outputs[0].chunks(k)) {
        for (slot, &position) in slots.iter_mut().zip(full) {
            *slot = position as i32;
        }
    }
    Ok(route_stats(
        &routes[0],
        &counts[0],
        scores.lengths,
        per_row_routes,
    ))
}

/// Phase 2's routes, the same on every rank: each row's route from its proposal and the
/// all-reduced counts.
fn routes_of_ranks(
    k: usize,
    lengths: &[i32],
    proposals: &[Vec<Option<Proposal>>],
    counts: &[Vec<u32>],
) -> Vec<Vec<Route>> {
    proposals
        .iter()
        .zip(counts)
        .map(|(proposals, counts)| {
            (0..lengths.len())
                .map(|row| {
                    let len = lengths[row] as usize;
                    route_of(k, len, proposals[row].as_ref(), &counts[row * 2..][..2])
                })
                .collect()
        })
        .collect()
}

/// Phase 3: one all-reduced histogram per digit fixes each row's K-th key and its ties; the
/// ranks' searches must agree.
fn refine_on_every_rank(
    collective: &dyn Collective,
    params: &Params,
    routes: &[Vec<Route>],
    frontiers: &[Vec<Vec<Candidate>>],
) -> Result<Vec<Vec<Option<RadixSearch>>>> {
    let k = params.k;
    let mut searches: Vec<Vec<Option<RadixSearch>>> = routes
        .iter()
        .map(|routes| {
            let start = |&route| (route != Route::Short).then(|| RadixSearch::start(k));
            routes.iter().map(start).collect()
        })
        .collect();
    for &digit in &params.digits {
        let hists = all_reduce(
            collective,
            frontiers
                .par_iter()
                .zip(&searches)
                .map(|(frontiers, searches)| {
                    digit_histograms_of_frontier(digit, frontiers, searches)
                })
                .collect(),
        )?;
        for (rank, (searches, hist)) in searches.iter_mut().zip(&hists).enumerate() {
            advance_searches(digit, searches, hist)
                .map_err(|what| disagreement(format!("rank {rank}, {what}")))?;
        }
    }
    Ok(searches)
}

/// Phase 4: every rank learns every rank's counts around the K-th key and fills its own
/// output slots (the others zero).
fn own_slots_of_every_rank(
    collective: &dyn Collective,
    k: usize,
    shards: &[Shard],
    frontiers: &[Vec<Vec<Candidate>>],
    searches: &[Vec<Option<RadixSearch>>],
) -> Result<Vec<Vec<u32>>> {
    let own_counts: Vec<Vec<u32>> = frontiers
        .par_iter()
        .zip(searches)
        .map(|(frontiers, searches)| counts_around_boundary(frontiers, searches))
        .collect();
    let gathered = all_gather(collective, &own_counts)?;
    shards
        .par_iter()
        .zip(frontiers.par_iter().zip(searches))
        .zip(&gathered)
        .map(|((shard, (frontiers, searches)), gathered)| {
            own_output_slots(k, shard, frontiers, searches, gathered)
                .map_err(|what| disagreement(format!("rank {}, {what}", shard.rank)))
        })
        .collect()
}

/// Phase 2 on every rank; a NaN on any rank fails the call at the first NaN in row-major
/// global order.
fn certify_every_rank(
    shards: &[Shard],
    proposals: &[Vec<Option<Proposal>>],
) -> Result<Vec<Vec<LocalCertificate>>> {
    let per_rank: Vec<_> = shards
        .par_iter()
        .zip(proposals)
        .map(|(shard, proposals)| count_and_collect_candidates(shard, proposals))
        .collect();
    if let Some((row, col)) = per_rank.iter().filter_map(|r| r.as_ref().err()).min() {
        return Err(Error::NaN {
            row: *row,
            col: *col,
        });
    }
    Ok(per_rank.into_iter().flatten().collect())
}

/// This rank's part of the frontier of every row, once the route is known.
fn frontiers_of_shard(
    shard: &Shard,
    certificates: Vec<LocalCertificate>,
    proposals: &[Option<Proposal>],
    routes: &[Route],
) -> Vec<Vec<Candidate>> {
    certificates
        .into_par_iter()
        .enumerate()
        .map(|(row, certificate)| {
            local_frontier(
                routes[row],
                shard.valid(row),
                proposals[row].as_ref(),
                certificate,
            )
        })
        .collect()
}

/// Every rank ended with rank 0's routes and output.
fn check_ranks_agree(routes: &[Vec<Route>], outputs: &[Vec<u32>], k: usize) -> Result<()> {
    for rank in 1..outputs.len() {
        if let Some(row) = (0..routes[0].len()).find(|&row| routes[rank][row] != routes[0][row]) {
            return Err(disagreement(format!(
                "rank {rank} routed row {row} as {}, rank 0 as {}",
                routes[rank][row].name(),
                routes[0][row].name()
            )));
        }
        if let Some(i) = (0..outputs[0].len()).find(|&i| outputs[rank][i] != outputs[0][i]) {
            return Err(disagreement(format!(
                "rank {rank} ended with {} in row {}, slot {}, rank 0 with {}",
                outputs[rank][i] as i32,
                i / k,
                i % k,
                outputs[0][i] as i32
            )));
        }
    }
    Ok(())
}

/// The statistics of one rank (all agree): routes, and the global frontier |F| of each row.
fn route_stats(
    routes: &[Route],
    counts: &[u32],
    lengths: &[i32],
    per_row_routes: bool,
) -> RouteStats {
    let frontier = |row: usize| match routes[row] {
        Route::Short => 0,
        Route::Primary | Route::PriorPrimary => counts[row * 2] as u64,
        Route::Rescue | Route::PriorRescue => counts[row * 2 + 1] as u64,
        Route::Recovery | Route::DirectExact => lengths[row] as u64,
    };
    RouteStats::from_rows(
        routes
            .iter()
            .enumerate()
            .map(|(row, &route)| (route, frontier(row))),
        per_row_routes,
    )
}

/// The spec parts the context-parallel selector implements: the stride view, every row with a
/// usable view sampled, no tail margin, f32 scores and the plain interface.
fn check_spec(spec: &Spec) -> Result<()> {
    if spec.view_run > 1 {
        return Err(Error::Input(format!(
            "`{spec}`: the context-parallel selector samples the stride view; use view=stride"
        )));
    }
    if spec.exact_below() > 0 {
        return Err(Error::Input(format!(
            "`{spec}`: the context-parallel selector samples every row with a usable view; \
             remove exact_below"
        )));
    }
    if spec.tail_rows > 0 {
        return Err(Error::Input(format!(
            "`{spec}`: the context-parallel selector has no worker pool whose last rows to \
             widen; remove tail"
        )));
    }
    if spec.dtype != topk_dsl::Dtype::F32 || !spec.io.is_default() {
        return Err(Error::Input(format!(
            "`{spec}`: the context-parallel selector takes f32 scores and the plain interface \
             (lengths in, unordered indices out); select the gathered rows with \
             cpu::select_with for the other dtypes and interface fields"
        )));
    }
    Ok(())
}
