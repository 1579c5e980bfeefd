//! The score element types a selection reads ([`Score`]: `f32`, `half::f16`, `half::bf16`) and a
//! borrowed matrix of them ([`ScoreRows`]). Every FP16 and bfloat16 value is exactly an FP32
//! value, so the CPU backend widens a row's valid scores to FP32 and orders them by the same
//! keys; the 16-bit dtypes differ in the key refinement resolves (`keys::desc_key_of`).

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use topk_dsl::Dtype;

/// A score element type: `f32`, `half::f16` or `half::bf16`.
pub trait Score: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// The Spec dtype of this element type.
    const DTYPE: Dtype;
    /// What a values output holds in a `-1` slot.
    const NEG_INFINITY: Self;
    /// The exact FP32 value.
    fn to_f32(self) -> f32;
    /// The bit pattern (zero-extended), for bit-exact comparisons of values.
    fn to_bits_u32(self) -> u32;
    /// The value of a bit pattern ([`Score::to_bits_u32`]'s inverse; the high bits of a 16-bit
    /// type's pattern are ignored).
    fn from_bits_u32(bits: u32) -> Self;
    /// `src` as FP32: the slice itself for `f32`, else widened into `buffer`.
    fn as_f32<'a>(src: &'a [Self], buffer: &'a mut Vec<f32>) -> &'a [f32];
}

impl Score for f32 {
    const DTYPE: Dtype = Dtype::F32;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
    fn from_bits_u32(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn as_f32<'a>(src: &'a [f32], _: &'a mut Vec<f32>) -> &'a [f32] {
        src
    }
}

macro_rules! half_score {
    ($t:ty, $dtype:ident) => {
        impl Score for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            fn to_bits_u32(self) -> u32 {
                u32::from(self.to_bits())
            }
            fn from_bits_u32(bits: u32) -> Self {
                <$t>::from_bits(bits as u16)
            }
            fn as_f32<'a>(src: &'a [$t], buffer: &'a mut Vec<f32>) -> &'a [f32] {
                buffer.clear();
                buffer.resize(src.len(), 0.0);
                src.convert_to_f32_slice(buffer);
                buffer
            }
        }
    };
}

half_score!(f16, F16);
half_score!(bf16, Bf16);

/// A borrowed row-major matrix of scores with a row pitch (elements) of at least `width`. Which
/// part of each row is valid is the call's row source (`crate::call::RowSource`).
#[derive(Clone, Copy, Debug)]
pub struct ScoreRows<'a, T> {
    /// The scores: row `r` starts at `data[r * pitch]`.
    pub data: &'a [T],
    /// Rows of the matrix.
    pub rows: usize,
    /// Allocated row width `N`.
    pub width: usize,
    /// Elements between the starts of consecutive rows, `>= width`.
    pub pitch: usize,
}

impl<'a, T: Score> ScoreRows<'a, T> {
    /// The first `width` scores of row `r` (the shape must have been checked).
    pub fn row(&self, r: usize) -> &'a [T] {
        &self.data[r * self.pitch..r * self.pitch + self.width]
    }
}

impl<'a> From<&crate::ScoreMatrix<'a>> for ScoreRows<'a, f32> {
    fn from(m: &crate::ScoreMatrix<'a>) -> Self {
        ScoreRows {
            data: m.data,
            rows: m.rows,
            width: m.width,
            pitch: m.pitch,
        }
    }
}
