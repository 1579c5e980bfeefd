//! The element types the array files carry, and their little-endian byte form.

/// An element type that `.npy` and `.safetensors` files carry and this crate reads and writes.
///
/// bfloat16 has no `.npy` descr of its own: a `.npy` of bfloat16 is written, and read, as the
/// uint16 bit patterns (`<u2`; numpy: `a.view(numpy.uint16)`, torch:
/// `t.view(torch.uint16).numpy()`), which the CLI takes as bfloat16 when the spec says
/// `dtype=bf16`. `.safetensors` carries it as `BF16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    F32,
    I32,
    I64,
    F16,
    Bf16,
    U16,
}

impl ElementType {
    /// numpy's name of the type, as in `numpy.float32`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            ElementType::F32 => "float32",
            ElementType::I32 => "int32",
            ElementType::I64 => "int64",
            ElementType::F16 => "float16",
            ElementType::Bf16 => "bfloat16",
            ElementType::U16 => "uint16",
        }
    }

    /// Little-endian `.npy` descr (bfloat16 as its uint16 bit patterns: see the type's doc).
    pub fn npy_descr(self) -> &'static str {
        match self {
            ElementType::F32 => "<f4",
            ElementType::I32 => "<i4",
            ElementType::I64 => "<i8",
            ElementType::F16 => "<f2",
            ElementType::Bf16 | ElementType::U16 => "<u2",
        }
    }

    pub fn size(self) -> usize {
        match self {
            ElementType::F32 | ElementType::I32 => 4,
            ElementType::I64 => 8,
            ElementType::F16 | ElementType::Bf16 | ElementType::U16 => 2,
        }
    }
}

/// A Rust type stored as one [`ElementType`].
pub trait Element: Copy + Send + Sync + 'static {
    const TYPE: ElementType;
    /// `bytes.len() == TYPE.size()`.
    fn from_le_slice(bytes: &[u8]) -> Self;
    fn extend_le(self, out: &mut Vec<u8>);
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const TYPE: ElementType = ElementType::$variant;
            #[inline]
            fn from_le_slice(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("caller passes TYPE.size() bytes"))
            }
            #[inline]
            fn extend_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}

element!(f32, F32);
element!(i32, I32);
element!(i64, I64);
element!(half::f16, F16);
element!(half::bf16, Bf16);
element!(u16, U16);
