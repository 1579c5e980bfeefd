//! The element types the array files carry, and their little-endian byte form.

/// An element type that `.npy` and `.safetensors` files carry and this crate reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    F32,
    I32,
    I64,
}

impl ElementType {
    /// numpy's name of the type, as in `numpy.float32`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            ElementType::F32 => "float32",
            ElementType::I32 => "int32",
            ElementType::I64 => "int64",
        }
    }

    /// Little-endian `.npy` descr.
    pub fn npy_descr(self) -> &'static str {
        match self {
            ElementType::F32 => "<f4",
            ElementType::I32 => "<i4",
            ElementType::I64 => "<i8",
        }
    }

    pub fn size(self) -> usize {
        match self {
            ElementType::F32 | ElementType::I32 => 4,
            ElementType::I64 => 8,
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
