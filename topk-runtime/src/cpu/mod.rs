//! CPU backend: the exact reference the GPU kernels are checked against, route for route, plus
//! a brute-force oracle, the eq. 30 verifier and a quickselect baseline.
//!
//! [`select`] runs the paper's three phases on each row (rows in parallel):
//! 1. `L <= K`: route `Short`, every valid index then `-1`.
//! 2. A usable stride view (sampled proposal, at least `min_view_len` samples) proposes the
//!    coarse boundaries tau0 (and tau1); one fused pass admits `x >= endpoint(tau0)`, counts it
//!    and histograms its leading FP32 digit. Enough: `Primary`; otherwise the band up to tau1
//!    (`Rescue`); otherwise exact coarse recovery (`Recovery`). No usable view, a row shorter
//!    than the proposal's `exact_below`, or an exact proposal: `DirectExact`, the exact coarse
//!    route from the start.
//!    With a prior (`prior=P/R`), a row first admits the scores down to P coarse bins below its
//!    prior's bin (`PriorPrimary`), then the band down to R bins below (`PriorRescue`); one that
//!    underfills or admits more than `Spec::prior_cap` scores goes on as above.
//! 3. Frontier-only radix refinement over the key's digits commits the rest (FP32 keys, or
//!    the 16-bit keys of FP16 and bfloat16 scores); with `ties=lowest` the final group of
//!    equal keys gives up its lowest indices.
//!
//! [`select_with`] runs the same phases over a whole call interface (`crate::call`): any score
//! dtype, row windows or decode rows, values, sorted output, lowest-index ties and fused index
//! transforms (each row's window selected as a row of its own, then written as the call stores
//! it); [`oracle_with`] writes the canonical output of such a call and [`verify_with`] checks
//! one.

mod baseline;
mod certify;
mod coarse;
mod exact_coarse;
mod finish;
mod oracle;
mod output;
mod params;
mod prior;
mod propose;
mod refine;
mod scan;
mod select;
mod select_call;
pub mod sharded;
mod verify;
mod verify_call;
pub(crate) mod view;

pub use baseline::select_baseline;
pub use oracle::{oracle, oracle_with};
pub use select::{select, select_rows_from};
pub use select_call::select_with;
pub use verify::{verify, VerifyReport, Violation};
pub use verify_call::{verify_boundary, verify_with};
