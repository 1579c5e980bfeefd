//! The named families of generated score rows and their stable numeric codes.

use std::fmt;
use std::str::FromStr;

use topk_codegen::generator::profile_code as code;

use crate::Error;

/// A family of generated score rows. The discriminant is the code the CUDA generator's
/// `profile` argument takes; names are kebab-case (`ties-at-k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum Profile {
    /// Sparse-attention indexer scores: sink and recency structure relative to the valid
    /// length, Irwin-Hall noise, about 3K/8 scattered hot tokens and two hot passages
    /// (paper §3.1, Fig. 3c).
    Indexer = code::INDEXER,
    /// Exchangeable rows: the Irwin-Hall sum of four uniforms.
    Iid = code::IID,
    /// One value per row.
    AllEqual = code::ALL_EQUAL,
    /// +1 and -1 only: half and half on even rows, about K ones on odd rows.
    TwoValues = code::TWO_VALUES,
    /// About K/2 copies of the value at rank K, straddling the boundary (ranks 3K/4..5K/4).
    TiesAtK = code::TIES_AT_K,
    /// `i / L`: increasing along the row.
    SortedAsc = code::SORTED_ASC,
    /// `(L - 1 - i) / L`: decreasing along the row.
    SortedDesc = code::SORTED_DESC,
    /// Large values exactly at `i % 128 == 0`: a stride-128 view sees all of them or none.
    Periodic = code::PERIODIC,
    /// +inf (more than K on even rows), -inf and finite values mixed.
    Infinities = code::INFINITIES,
    /// Mostly +0 and -0, about K/4 nonzeros.
    SignedZeros = code::SIGNED_ZEROS,
    /// Nonzero subnormals of either sign.
    Subnormals = code::SUBNORMALS,
    /// |x| > 65504: FP16 saturates, so the top values share one coarse bin.
    Huge = code::HUGE,
    /// |x| < 1e-8: FP16 flushes every value to zero, one coarse bin.
    Tiny = code::TINY,
}

impl Profile {
    /// Every profile, in code order.
    pub const ALL: [Profile; 13] = [
        Profile::Indexer,
        Profile::Iid,
        Profile::AllEqual,
        Profile::TwoValues,
        Profile::TiesAtK,
        Profile::SortedAsc,
        Profile::SortedDesc,
        Profile::Periodic,
        Profile::Infinities,
        Profile::SignedZeros,
        Profile::Subnormals,
        Profile::Huge,
        Profile::Tiny,
    ];

    /// The code passed to the CUDA generator.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The profile of a generator code, if it is one.
    pub fn from_code(code: i32) -> Option<Profile> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Profile::ALL.get(i).copied())
    }

    /// The profile's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Indexer => "indexer",
            Profile::Iid => "iid",
            Profile::AllEqual => "all-equal",
            Profile::TwoValues => "two-values",
            Profile::TiesAtK => "ties-at-k",
            Profile::SortedAsc => "sorted-asc",
            Profile::SortedDesc => "sorted-desc",
            Profile::Periodic => "periodic",
            Profile::Infinities => "infinities",
            Profile::SignedZeros => "signed-zeros",
            Profile::Subnormals => "subnormals",
            Profile::Huge => "huge",
            Profile::Tiny => "tiny",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Profile, Error> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                Error::Input(format!(
                    "unknown data profile `{s}`; use one of: {}",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_index_all_and_names_round_trip() {
        for (i, p) in Profile::ALL.into_iter().enumerate() {
            assert_eq!(p.code(), i as i32);
            assert_eq!(Profile::from_code(p.code()), Some(p));
            assert_eq!(p.to_string().parse::<Profile>().unwrap(), p);
        }
        assert_eq!(Profile::ALL.len(), code::COUNT as usize);
        assert_eq!(Profile::from_code(code::COUNT), None);
        assert_eq!(Profile::from_code(-1), None);
        assert!("ties_at_k".parse::<Profile>().is_err());
    }
}
