//! Which route each row took through the three phases (paper Table 2); the CPU backend and the
//! GPU kernels report the same routes for the same input. The codes are the host-kernel
//! interface's ([`topk_codegen::interface::route`]), which the generated source defines too.

use topk_codegen::interface::route;

/// The route of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Route {
    /// `L <= K`: every valid index, then `-1`.
    Short = route::SHORT,
    /// The primary boundary tau0 certified (C(tau0) >= K).
    Primary = route::PRIMARY,
    /// tau0 underfilled; the band up to tau1 certified.
    Rescue = route::RESCUE,
    /// The proposal underfilled; exact coarse recovery.
    Recovery = route::RECOVERY,
    /// No usable view, a row shorter than the proposal's `exact_below`, or an exact proposal:
    /// the exact coarse route from the start.
    DirectExact = route::DIRECT_EXACT,
    /// The row's prior boundary (`prior=P/R`) certified at its cutoff.
    PriorPrimary = route::PRIOR_PRIMARY,
    /// The prior's cutoff underfilled; its band down to the rescue end certified.
    PriorRescue = route::PRIOR_RESCUE,
}

impl Route {
    /// Every route, in code order.
    pub const ALL: [Route; 7] = [
        Route::Short,
        Route::Primary,
        Route::Rescue,
        Route::Recovery,
        Route::DirectExact,
        Route::PriorPrimary,
        Route::PriorRescue,
    ];
    /// The routes of a call without a prior (every route but the prior's two).
    pub const WITHOUT_PRIOR: [Route; 5] = [
        Route::Short,
        Route::Primary,
        Route::Rescue,
        Route::Recovery,
        Route::DirectExact,
    ];
    /// The route a kernel reported as `code`, if it is one.
    pub fn from_code(code: u8) -> Option<Route> {
        Route::ALL.into_iter().find(|r| *r as u8 == code)
    }
    /// The route's name in reports: `short`, `primary`, `rescue`, `recovery`, `direct-exact`,
    /// `prior-primary`, `prior-rescue`.
    pub fn name(self) -> &'static str {
        match self {
            Route::Short => "short",
            Route::Primary => "primary",
            Route::Rescue => "rescue",
            Route::Recovery => "recovery",
            Route::DirectExact => "direct-exact",
            Route::PriorPrimary => "prior-primary",
            Route::PriorRescue => "prior-rescue",
        }
    }
}

/// Per-call route statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteStats {
    /// Rows per route, indexed by `Route as usize`.
    pub rows: [u64; Route::ALL.len()],
    /// Sum over rows of the initial refinement frontier |Q0| (candidates admitted by Phase 2).
    pub candidates: u64,
    /// Largest |Q0| of any row.
    pub max_candidates: u64,
    /// The route of each row, when asked for.
    pub per_row: Option<Vec<Route>>,
    /// Each row's |Q0| (0 for short rows), with `per_row`; the context-parallel CPU model
    /// reports its global frontier |F| there (the whole row on the exact routes).
    pub per_row_candidates: Option<Vec<u64>>,
}

impl RouteStats {
    /// The statistics of rows given as (route, |Q0|) in row order, each row's pair kept in
    /// `per_row` / `per_row_candidates` when `per_row` is set.
    pub fn from_rows(rows: impl IntoIterator<Item = (Route, u64)>, per_row: bool) -> RouteStats {
        let mut stats = RouteStats::default();
        let (mut routes, mut candidates) = (Vec::new(), Vec::new());
        for (route, q0) in rows {
            stats.rows[route as usize] += 1;
            stats.candidates += q0;
            stats.max_candidates = stats.max_candidates.max(q0);
            if per_row {
                routes.push(route);
                candidates.push(q0);
            }
        }
        if per_row {
            stats.per_row = Some(routes);
            stats.per_row_candidates = Some(candidates);
        }
        stats
    }

    /// The statistics of the per-row (route code, |Q0|) word pairs a launch writes to its
    /// `row_info` buffer ([`crate::cuda::LaunchBuffers::row_info`]), two `i32` per row.
    pub fn from_row_info(info: &[i32], per_row: bool) -> RouteStats {
        RouteStats::from_rows(
            info.chunks_exact(2).map(|pair| {
                let route = Route::from_code(pair[0] as u8).unwrap_or(Route::Short);
                (route, pair[1].max(0) as u64)
            }),
            per_row,
        )
    }

    /// Rows that took `route`.
    pub fn count(&self, route: Route) -> u64 {
        self.rows[route as usize]
    }
    /// Rows of the call.
    pub fn total_rows(&self) -> u64 {
        self.rows.iter().sum()
    }
}

/// `primary 61, rescue 2, short 1`: the routes rows took, in route order, non-empty ones only
/// (`no rows` for an empty call).
impl std::fmt::Display for RouteStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut taken = Route::ALL.into_iter().filter(|&r| self.count(r) > 0);
        match taken.next() {
            None => f.write_str("no rows"),
            Some(first) => {
                write!(f, "{} {}", first.name(), self.count(first))?;
                taken.try_for_each(|r| write!(f, ", {} {}", r.name(), self.count(r)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_lists_only_taken_routes_in_order() {
        let mut stats = RouteStats::default();
        assert_eq!(stats.to_string(), "no rows");
        stats.rows[Route::Rescue as usize] = 2;
        stats.rows[Route::Short as usize] = 1;
        assert_eq!(stats.to_string(), "short 1, rescue 2");
    }

    #[test]
    fn every_route_code_reads_back_as_its_route_and_nothing_else_does() {
        for r in Route::ALL {
            assert_eq!(Route::from_code(r as u8), Some(r));
            // `rows` is indexed by the code.
            assert!((r as usize) < RouteStats::default().rows.len());
        }
        let codes: std::collections::HashSet<u8> = Route::ALL.iter().map(|&r| r as u8).collect();
        assert_eq!(codes.len(), Route::ALL.len(), "codes are distinct");
        assert!((0..=255u8)
            .filter(|c| !codes.contains(c))
            .all(|c| Route::from_code(c).is_none()));
    }
}
