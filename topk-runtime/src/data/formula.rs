//! The value of one cell for every profile: the Rust half of the shared formula. Each float
//! operation below is one IEEE operation, in the order the CUDA source performs it.

use topk_codegen::generator::{
    stream, BLOCK_COLUMN_TAG, IID_OFFSET, INDEXER_HOT_HEIGHT, INDEXER_HOT_PER_8K,
    INDEXER_NOISE_SCALE, INDEXER_PASSAGES, INDEXER_RECENCY_HEIGHT, INDEXER_RECENCY_WIDTH_PER_K,
    INDEXER_SINK_HEIGHT, INDEXER_SINK_WIDTH_PER_K, MAX_PROFILE_K, PERIOD, ROW_COLUMN,
};

use super::counter::{cell, chance, draw, row_key, unit};
use super::Profile;

const POS_INF_BITS: u32 = 0x7f80_0000;
const NEG_INF_BITS: u32 = 0xff80_0000;

/// `k` as the formulas use it: raised to 1, capped at `MAX_PROFILE_K`.
#[inline(always)]
pub(crate) fn clamp_k(k: u32) -> u32 {
    k.clamp(1, MAX_PROFILE_K)
}

/// The generated score at `(global_row, col)` of a row of valid length `len` (`col < len`;
/// beyond it the value is defined but meaningless). Bit-identical to the CUDA generator.
pub fn value(profile: Profile, seed: u64, k: u32, global_row: u64, col: u32, len: u32) -> f32 {
    value_in_row(
        profile,
        row_key(seed, global_row),
        global_row,
        col,
        len,
        clamp_k(k),
    )
}

/// [`value`] with the row key computed once per row and `k` already clamped.
#[inline(always)]
pub(crate) fn value_in_row(
    profile: Profile,
    row_key: u32,
    row: u64,
    col: u32,
    len: u32,
    k: u32,
) -> f32 {
    let c = cell(row_key, col);
    let u = unit(draw(c, stream::VALUE));
    match profile {
        Profile::Indexer => indexer(row_key, c, col, len, k),
        Profile::Iid => sum4(c) - IID_OFFSET,
        Profile::AllEqual => {
            let row_cell = cell(row_key, ROW_COLUMN);
            unit(draw(row_cell, stream::VALUE)) * 4.0 - 2.0
        }
        Profile::TwoValues => {
            let m = draw(c, stream::MODE);
            let high = if row & 1 != 0 {
                chance(m, k, len)
            } else {
                m >> 31 != 0
            };
            if high {
                1.0
            } else {
                -1.0
            }
        }
        Profile::TiesAtK => {
            let m = draw(c, stream::MODE);
            if chance(m, k - k / 4, len) {
                2.0 + u
            } else if chance(m, k + k / 4, len) {
                1.0
            } else {
                u - 1.0
            }
        }
        Profile::SortedAsc => col as f32 / len as f32,
        Profile::SortedDesc => len.wrapping_sub(1).wrapping_sub(col) as f32 / len as f32,
        Profile::Periodic => {
            if col & (PERIOD - 1) == 0 {
                4.0 + u
            } else {
                u
            }
        }
        Profile::Infinities => {
            let m = draw(c, stream::MODE);
            let plus = if row & 1 != 0 { k / 2 } else { 2 * k };
            if chance(m, plus, len) {
                f32::from_bits(POS_INF_BITS)
            } else if draw(c, stream::SIGN) & 7 == 0 {
                f32::from_bits(NEG_INF_BITS)
            } else {
                u * 2.0 - 1.0
            }
        }
        Profile::SignedZeros => {
            let sign = (draw(c, stream::SIGN) & 1) << 31;
            if chance(draw(c, stream::MODE), k / 4, len) {
                f32::from_bits((u + 0.25).to_bits() | sign)
            } else {
                f32::from_bits(sign)
            }
        }
        Profile::Subnormals => {
            let h = draw(c, stream::VALUE);
            f32::from_bits(((h & 1) << 31) | (h >> 9) | 1)
        }
        Profile::Huge => {
            let x = (1.0 + u * 16384.0) * 65536.0;
            if draw(c, stream::SIGN) & 3 == 0 {
                -x
            } else {
                x
            }
        }
        Profile::Tiny => (u - 0.5) * 3.725_290_3e-9,
    }
}

/// Irwin-Hall sum of four uniforms, added pairwise as the CUDA source does.
#[inline(always)]
fn sum4(c: u32) -> f32 {
    let a = unit(draw(c, stream::NOISE));
    let b = unit(draw(c, stream::NOISE + 1));
    let cc = unit(draw(c, stream::NOISE + 2));
    let d = unit(draw(c, stream::NOISE + 3));
    (a + b) + (cc + d)
}

/// `height / (1 + t / (k * width_per_k))`: halves at `t = k * width_per_k`.
#[inline(always)]
fn decay(height: f32, t: f32, kf: f32, width_per_k: f32) -> f32 {
    height / (1.0 + t / (kf * width_per_k))
}

/// `h * (0.5 + u)`: the boost of a hot token or passage.
#[inline(always)]
fn boost(h: u32) -> f32 {
    INDEXER_HOT_HEIGHT * (0.5 + unit(h))
}

/// The passage boost at `col`, or 0: the row is cut into blocks of K/2 positions, about
/// `INDEXER_PASSAGES` of them hot; a hot block's passage is its first `K/16 + U[0, K/8)`
/// positions. Contiguous, so a stride view samples it evenly.
#[inline(always)]
fn passage(row_key: u32, col: u32, len: u32, k: u32) -> f32 {
    let block_w = (k >> 1).max(1);
    let block = col / block_w;
    let blocks = len.div_ceil(block_w);
    let b = cell(row_key, BLOCK_COLUMN_TAG | block);
    if !chance(draw(b, stream::MODE), INDEXER_PASSAGES, blocks) {
        return 0.0;
    }
    let extra = ((u64::from(draw(b, stream::SIGN) >> 8) * u64::from(k >> 3)) >> 24) as u32;
    if col - block * block_w >= (k >> 4) + extra {
        return 0.0;
    }
    boost(draw(b, stream::VALUE))
}

/// Indexer scores: noise + sink + recency (relative to the valid length) + about 3K/8
/// scattered hot tokens + about two hot passages.
#[inline(always)]
fn indexer(row_key: u32, c: u32, col: u32, len: u32, k: u32) -> f32 {
    let kf = k as f32;
    let noise = (sum4(c) - 2.0) * INDEXER_NOISE_SCALE;
    let sink = decay(
        INDEXER_SINK_HEIGHT,
        col as f32,
        kf,
        INDEXER_SINK_WIDTH_PER_K,
    );
    let distance = len.wrapping_sub(1).wrapping_sub(col) as f32;
    let recency = decay(
        INDEXER_RECENCY_HEIGHT,
        distance,
        kf,
        INDEXER_RECENCY_WIDTH_PER_K,
    );
    let mut x = (noise + sink) + recency;
    if chance(draw(c, stream::MODE), (k * INDEXER_HOT_PER_8K) >> 3, len) {
        x += boost(draw(c, stream::VALUE));
    }
    x + passage(row_key, col, len, k)
}
