//! The counter-based hash behind every generated value: 32-bit wrapping integer operations
//! only, the same steps as the CUDA generator (`topk_codegen::generator`).

use topk_codegen::generator::{COL_STEP, MIX_MUL_A, MIX_MUL_B, ROW_BASIS, STREAM_STEP};

/// 32-bit avalanche (the murmur3 finalizer).
#[inline(always)]
pub(crate) fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(MIX_MUL_A);
    h ^= h >> 13;
    h = h.wrapping_mul(MIX_MUL_B);
    h ^= h >> 16;
    h
}

/// Key of a global row: seed and row words folded in one at a time.
#[inline(always)]
pub(crate) fn row_key(seed: u64, row: u64) -> u32 {
    let mut h = ROW_BASIS;
    h = mix(h ^ seed as u32);
    h = mix(h ^ (seed >> 32) as u32);
    h = mix(h ^ row as u32);
    mix(h ^ (row >> 32) as u32)
}

/// Key of cell `(row, col)`; distinct columns of one row get distinct keys.
#[inline(always)]
pub(crate) fn cell(row_key: u32, col: u32) -> u32 {
    mix(row_key.wrapping_add(col.wrapping_mul(COL_STEP)))
}

/// Draw number `stream` of a cell.
#[inline(always)]
pub(crate) fn draw(cell: u32, stream: u32) -> u32 {
    mix(cell ^ stream.wrapping_add(1).wrapping_mul(STREAM_STEP))
}

/// Uniform on the 2^-24 grid of [0, 1): an exact conversion and an exact scale.
#[inline(always)]
pub(crate) fn unit(h: u32) -> f32 {
    (h >> 8) as f32 * 5.960_464_5e-8
}

/// True with probability `min(1, count / len)`, from 24 draw bits, in exact integer arithmetic.
#[inline(always)]
pub(crate) fn chance(h: u32, count: u32, len: u32) -> bool {
    u64::from(h >> 8) * u64::from(len) < u64::from(count) << 24
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_cover_the_24_bit_grid_exactly() {
        assert_eq!(unit(0), 0.0);
        assert_eq!(unit(u32::MAX), 1.0 - 2f32.powi(-24));
        assert_eq!(unit(0x100), 2f32.powi(-24));
    }

    #[test]
    fn chance_is_exact_at_the_extremes() {
        assert!(chance(0, 1, 1000));
        assert!(!chance(u32::MAX, 999, 1000));
        assert!(chance(u32::MAX, 1000, 1000));
        assert!(!chance(0, 0, 1000));
    }

    #[test]
    fn cells_of_one_row_are_distinct() {
        let rk = row_key(7, 3);
        let mut keys: Vec<u32> = (0..1u32 << 16).map(|c| cell(rk, c)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 1 << 16);
        assert_ne!(row_key(7, 3), row_key(7, 3 + (1 << 32)));
        assert_ne!(row_key(7, 3), row_key(7 + (1 << 32), 3));
    }
}
