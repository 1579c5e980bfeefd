//! Phase 3 on one rank: radix select over the global frontier, one digit of the descending FP32
//! key at a time. Each rank histograms the digit over its frontier keys that share the prefix
//! fixed so far; after the all-reduce every rank extends the prefix identically. After the last
//! digit the prefix is the key T of the K-th best score.

use super::super::params::Digit;
use super::super::refine::Candidate;
use rayon::prelude::*;

/// Where the radix select of one row stands: the key bits fixed so far (the digits above the
/// current one) and how many of the K slots are left for keys with that prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RadixSearch {
    pub prefix: u32,
    pub quota: u32,
}

impl RadixSearch {
    pub fn start(k: usize) -> RadixSearch {
        RadixSearch {
            prefix: 0,
            quota: k as u32,
        }
    }

    /// The key has the fixed prefix, i.e. the same digits above `digit`.
    #[inline(always)]
    fn shares_prefix(self, key: u32, digit: Digit) -> bool {
        key.checked_shr(digit.shift + digit.width).unwrap_or(0) == self.prefix
    }

    /// Fix `digit` from its all-reduced histogram: the smallest bin whose inclusive prefix count
    /// reaches the quota; the keys in the bins before it are selected. `None` when the histogram
    /// holds fewer keys than the quota (the sums were not the ranks' total).
    pub fn advance(self, digit: Digit, hist: &[u32]) -> Option<RadixSearch> {
        let mut before = 0u64;
        for (bin, &count) in hist.iter().take(digit.bins()).enumerate() {
            if before + count as u64 >= self.quota as u64 {
                return Some(RadixSearch {
                    prefix: self.prefix << digit.width | bin as u32,
                    quota: self.quota - before as u32,
                });
            }
            before += count as u64;
        }
        None
    }
}

/// `rows x 2^width` histograms of `digit` over this rank's frontier keys that share each row's
/// prefix; rows without a search (short rows) stay zero.
pub(super) fn digit_histograms_of_frontier(
    digit: Digit,
    frontiers: &[Vec<Candidate>],
    searches: &[Option<RadixSearch>],
) -> Vec<u32> {
    let bins = digit.bins();
    let mut hist = vec![0u32; frontiers.len() * bins];
    hist.par_chunks_mut(bins)
        .zip(frontiers.par_iter().zip(searches))
        .for_each(|(hist, (frontier, search))| {
            let Some(search) = search else { return };
            for c in frontier {
                if search.shares_prefix(c.key, digit) {
                    hist[digit.of(c.key)] += 1;
                }
            }
        });
    hist
}

/// Fix `digit` of every row's search from the all-reduced `rows x 2^width` histograms. `Err`
/// names a row whose histogram holds fewer keys than its quota.
pub(super) fn advance_searches(
    digit: Digit,
    searches: &mut [Option<RadixSearch>],
    hist: &[u32],
) -> Result<(), String> {
    for (row, (search, hist)) in searches
        .iter_mut()
        .zip(hist.chunks(digit.bins()))
        .enumerate()
    {
        if let Some(s) = *search {
            *search = Some(s.advance(digit, hist).ok_or_else(|| {
                format!(
                    "row {row}: the all-reduced digit histogram holds fewer scores than the {} \
                     still to select",
                    s.quota
                )
            })?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_over_every_digit_finds_the_kth_key_and_its_ties() {
        let digits = [
            Digit {
                shift: 21,
                width: 11,
            },
            Digit {
                shift: 10,
                width: 11,
            },
            Digit {
                shift: 0,
                width: 10,
            },
        ];
        let keys: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> (i % 7))
            .chain([77; 40])
            .collect();
        let frontier: Vec<Candidate> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| Candidate {
                index: i as u32,
                key,
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        for k in [1, 2, 100, 2500, 5040] {
            let mut search = Some(RadixSearch::start(k));
            for digit in digits {
                let hist =
                    digit_histograms_of_frontier(digit, std::slice::from_ref(&frontier), &[search]);
                search = search.unwrap().advance(digit, &hist);
            }
            let search = search.unwrap();
            assert_eq!(search.prefix, sorted[k - 1], "K = {k}");
            let ahead = keys.iter().filter(|&&key| key < search.prefix).count();
            assert_eq!(ahead + search.quota as usize, k, "K = {k}");
        }
    }

    #[test]
    fn a_histogram_short_of_the_quota_is_not_a_boundary() {
        let digit = Digit { shift: 0, width: 4 };
        let search = RadixSearch {
            prefix: 0,
            quota: 10,
        };
        let mut hist = [0u32; 16];
        hist[5] = 9;
        assert_eq!(search.advance(digit, &hist), None);
        hist[9] = 1;
        assert_eq!(
            search.advance(digit, &hist),
            Some(RadixSearch {
                prefix: 9,
                quota: 1
            })
        );
    }
}
