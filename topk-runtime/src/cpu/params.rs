//! Everything a row needs from the Spec, derived once per call.

use super::prior::PriorBins;
use super::scan::Cutoff;
use crate::{keys, Result};
use topk_dsl::{Dtype, Prior, Spec, SpecError, Ties};

/// One FP32 refinement digit: right shift and width inside the descending key.
#[derive(Clone, Copy, Debug)]
pub(super) struct Digit {
    pub shift: u32,
    pub width: u32,
}

impl Digit {
    pub fn bins(self) -> usize {
        1 << self.width
    }
    #[inline(always)]
    pub fn of(self, key: u32) -> usize {
        crate::keys::digit(key, self.shift, self.width) as usize
    }
}

/// The stride view and its sample ranks (paper eq. 13-15).
#[derive(Clone, Copy, Debug)]
pub(super) struct Sampling {
    pub stride: usize,
    /// Contiguous scores per view group (`Spec::view_run`; 1 = the stride view).
    pub run: usize,
    /// Primary sample rank q.
    pub rank: u32,
    /// Secondary (rescue) sample rank q1, when enabled.
    pub rescue_rank: Option<u32>,
    /// Primary sample rank on a call's tail rows (`Spec::in_tail`), when the spec has a tail.
    pub tail_rank: Option<u32>,
    /// A view needs at least this many samples to be usable.
    pub min_view_len: usize,
    /// Rows shorter than this take the exact coarse boundary (`Spec::exact_below`).
    pub exact_below: usize,
}

#[derive(Clone, Debug)]
pub(super) struct Params {
    pub spec: Spec,
    pub k: usize,
    pub sampling: Option<Sampling>,
    pub coarse_shift: u32,
    pub coarse_bins: usize,
    pub digits: Vec<Digit>,
    /// Bins of the largest digit histogram.
    pub digit_bins: usize,
    /// Rows of the whole call, which decide its tail rows (`Spec::in_tail`).
    pub call_rows: u64,
    /// The score dtype, which fixes the refinement and coarse keys (`keys::desc_key_of`).
    pub dtype: Dtype,
    /// Ties at rank K go to the lowest indices (`ties=lowest`).
    pub lowest_ties: bool,
    /// The margins of a row's prior boundary, when the spec takes one (`prior=P/R`).
    pub prior: Option<PriorBins>,
    /// Most scores a prior may admit (`Spec::prior_cap`).
    pub prior_cap: usize,
}

impl Params {
    /// Derive the parameters of a validated Spec for a call of `call_rows` rows. The few
    /// structural checks repeated here are the ones whose violation would make the CPU code
    /// index out of bounds.
    pub fn new(spec: &Spec, call_rows: u64) -> Result<Params> {
        spec.validate()?;
        let widths = spec.digits.as_slice();
        if widths.is_empty()
            || widths.iter().any(|&w| w == 0 || w > 16)
            || widths.iter().map(|&w| w as u32).sum::<u32>() != spec.dtype.key_bits()
        {
            return Err(invalid(
                "digits",
                "1 to 4 widths, each 1..=16 bits, summing to the key width",
            )
            .into());
        }
        if spec.coarse_bits == 0 || spec.coarse_bits > 16 {
            return Err(invalid("coarse", "between 1 and 16 bits").into());
        }
        let sampling = match (spec.stride(), spec.sample_rank()) {
            (Some(stride), Some(rank)) => {
                if stride == 0 {
                    return Err(invalid("stride", "at least 1").into());
                }
                let rescue_rank = spec.rescue_rank();
                // The deepest of the primary, tail and rescue ranks.
                let min_view_len = spec.min_view_len().unwrap_or(rank);
                Some(Sampling {
                    stride: stride as usize,
                    run: spec.view_run.max(1) as usize,
                    rank,
                    rescue_rank,
                    tail_rank: spec.tail_rank(),
                    min_view_len: min_view_len as usize,
                    exact_below: spec.exact_below() as usize,
                })
            }
            _ => None,
        };
        let digits: Vec<Digit> = spec
            .digit_shifts()
            .into_iter()
            .zip(widths)
            .map(|(shift, &width)| Digit {
                shift,
                width: width as u32,
            })
            .collect();
        Ok(Params {
            spec: *spec,
            k: spec.k as usize,
            sampling,
            coarse_shift: spec.coarse_shift(),
            coarse_bins: spec.coarse_bins() as usize,
            digit_bins: spec.digit_bins() as usize,
            digits,
            call_rows,
            dtype: spec.dtype,
            lowest_ties: spec.io.ties == Ties::Lowest,
            prior: match spec.io.prior {
                Prior::None => None,
                Prior::Bins { primary, rescue } => Some(PriorBins {
                    primary: primary.into(),
                    rescue: rescue.into(),
                }),
            },
            prior_cap: spec.prior_cap() as usize,
        })
    }

    /// The refinement key of a score (held as FP32).
    #[inline(always)]
    pub fn key(&self, x: f32) -> u32 {
        keys::desc_key_of(self.dtype, x)
    }

    /// The FP32 cutoff admitting exactly the scores whose coarse bin is at most `bin`.
    pub fn cutoff(&self, bin: u32) -> Cutoff {
        Cutoff::through_bin_of(self.dtype, bin, self.coarse_shift)
    }

    /// Phase of row `row`'s stride view.
    pub fn view_phase(&self, row: usize) -> usize {
        self.spec.view_phase(row as u64).unwrap_or(0) as usize
    }
}

fn invalid(field: &'static str, rule: &str) -> SpecError {
    SpecError::Invalid {
        field,
        rule: rule.to_string(),
    }
}
