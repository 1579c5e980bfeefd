//! Quantities derived from a Spec that the CPU backend and the generated kernels must agree on.

use crate::{Digits, Dtype, Proposal, Spec};

impl Proposal {
    /// This proposal with rows shorter than `len` scores sent to the exact coarse boundary (a
    /// sampled proposal; an exact one is returned as it is).
    pub fn with_exact_below(self, len: u32) -> Proposal {
        match self {
            Proposal::Sampled {
                stride,
                rho,
                rescue,
                ..
            } => Proposal::Sampled {
                stride,
                rho,
                rescue,
                exact_below: len,
            },
            Proposal::Exact => Proposal::Exact,
        }
    }
}

impl Spec {
    /// Most scores a row's prior may admit (`prior=P/R`, [`crate::Prior`]): four times K. A
    /// row of a decode step whose prior admits more starts again from the spec's proposal, so a
    /// stale or wrong prior costs a pass but never a refinement of a large frontier (the sampled
    /// routes admit about `rho * K`).
    pub fn prior_cap(&self) -> u32 {
        self.k.saturating_mul(4)
    }

    /// Sample rank `q = ceil(rho * k / stride)` of the primary target (paper eq. 15).
    pub fn sample_rank(&self) -> Option<u32> {
        match self.proposal {
            Proposal::Sampled { stride, rho, .. } => Some(ceil_rank(rho.0, self.k, stride)),
            Proposal::Exact => None,
        }
    }

    /// Sample rank `q1 = ceil(rescue * k / stride)` of the secondary target, when enabled.
    pub fn rescue_rank(&self) -> Option<u32> {
        match self.proposal {
            Proposal::Sampled {
                stride,
                rescue: Some(r),
                ..
            } => Some(ceil_rank(r.0, self.k, stride)),
            _ => None,
        }
    }

    /// Sample rank `ceil(tail_rho * k / stride)` of the primary target on a call's tail rows
    /// (`Spec::tail_rows`), when the spec has a tail margin.
    pub fn tail_rank(&self) -> Option<u32> {
        match self.proposal {
            Proposal::Sampled { stride, .. } if self.tail_rows > 0 => {
                Some(ceil_rank(self.tail_rho.0, self.k, stride))
            }
            _ => None,
        }
    }

    /// Whether row `row` of a call of `live_rows` rows proposes at the tail margin: the last
    /// `tail_rows` rows of a call of more than `tail_rows` and at most
    /// `TAIL_MAX_WAVES * tail_rows` rows. The generated persistent kernel applies the same rule.
    pub fn in_tail(&self, row: u64, live_rows: u64) -> bool {
        let tail = u64::from(self.tail_rows);
        self.tail_rank().is_some()
            && live_rows > tail
            && live_rows <= u64::from(crate::TAIL_MAX_WAVES) * tail
            && row >= live_rows - tail
    }

    /// The view of a row must hold at least this many samples to be usable (paper §5.2): the
    /// deepest rank the row may search.
    pub fn min_view_len(&self) -> Option<u32> {
        [self.rescue_rank(), self.tail_rank(), self.sample_rank()]
            .into_iter()
            .flatten()
            .max()
    }

    /// Rows shorter than this take the exact coarse boundary although the proposal samples (0
    /// when the proposal is exact or every row with a usable view samples).
    pub fn exact_below(&self) -> u32 {
        match self.proposal {
            Proposal::Sampled { exact_below, .. } => exact_below,
            Proposal::Exact => 0,
        }
    }

    /// Sampling stride, when the proposal samples.
    pub fn stride(&self) -> Option<u32> {
        match self.proposal {
            Proposal::Sampled { stride, .. } => Some(stride),
            Proposal::Exact => None,
        }
    }

    /// Phase `a_r` of row `r`'s stride view (paper eq. 13): `(17 r + 13) mod s`, a permutation
    /// of the residues over every block of `s` consecutive rows when `s` is a power of two.
    pub fn view_phase(&self, row: u64) -> Option<u32> {
        self.stride()
            .map(|s| ((row.wrapping_mul(17).wrapping_add(13)) & (s as u64 - 1)) as u32)
    }

    /// Number of coarse bins, `2^coarse_bits`.
    pub fn coarse_bins(&self) -> u32 {
        1u32 << self.coarse_bits
    }

    /// Right shift from the 16-bit descending coarse key to its coarse bin.
    pub fn coarse_shift(&self) -> u32 {
        16 - self.coarse_bits as u32
    }

    /// Right shift of each refinement digit inside the descending key (32 bits for FP32, 16
    /// for the 16-bit dtypes).
    pub fn digit_shifts(&self) -> Vec<u32> {
        let mut left = self.dtype.key_bits();
        self.digits
            .as_slice()
            .iter()
            .map(|&w| {
                left = left.saturating_sub(w as u32);
                left
            })
            .collect()
    }

    /// Bins of the largest refinement histogram, `2^max(digit width)`.
    pub fn digit_bins(&self) -> u32 {
        1u32 << self.digits.as_slice().iter().copied().max().unwrap_or(0)
    }

    /// The refinement digits of the GPU kernels: the spec's own for FP32. The kernels widen a
    /// 16-bit score exactly to FP32 and order it by its FP32 key, so for FP16 and bfloat16
    /// they refine that key with the FP32 default digits; the order, the ties and hence the
    /// selection are those of the 16-bit key's ([`Spec::digits`] on the CPU backend).
    pub fn kernel_digits(&self) -> Digits {
        match self.dtype {
            Dtype::F32 => self.digits,
            Dtype::F16 | Dtype::Bf16 => Digits::default_for(Dtype::F32, self.coarse_bits),
        }
    }

    /// Right shift of each of [`Spec::kernel_digits`] inside the 32-bit key.
    pub fn kernel_digit_shifts(&self) -> Vec<u32> {
        Spec {
            dtype: Dtype::F32,
            digits: self.kernel_digits(),
            ..*self
        }
        .digit_shifts()
    }

    /// Bins of the one shared histogram the kernels reuse for the coarse key and every digit
    /// ([`Spec::kernel_digits`]).
    pub fn hist_bins(&self) -> u32 {
        let widest = self.kernel_digits().as_slice().iter().copied().max();
        self.coarse_bins().max(1 << widest.unwrap_or(0))
    }
}

fn ceil_rank(centi: u16, k: u32, stride: u32) -> u32 {
    let num = centi as u64 * k as u64;
    let den = 100 * stride as u64;
    num.div_ceil(den) as u32
}
