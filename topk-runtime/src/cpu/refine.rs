//! Phase 3 (paper §4.4, eq. 22-25): frontier-only radix refinement over the FP32 digits.
//! Each round commits every digit group strictly ahead of the rank boundary and carries only
//! the boundary group, with its next-digit histogram, to the next round.

use super::output::OutRow;
use super::params::Digit;

/// A frontier entry: a row index and its descending FP32 key, kept so that refinement never
/// re-reads the score row.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub index: u32,
    pub key: u32,
}

/// Ping-pong frontiers and digit histograms, reused across rows.
#[derive(Default)]
pub(super) struct Frontier {
    /// The current frontier Q_j.
    pub current: Vec<Candidate>,
    /// The histogram of digit j over Q_j.
    pub hist: Vec<u32>,
    next: Vec<Candidate>,
    next_hist: Vec<u32>,
    committed: Vec<u32>,
}

impl Frontier {
    pub fn new(digit_bins: usize) -> Self {
        Frontier {
            hist: vec![0; digit_bins],
            next_hist: vec![0; digit_bins],
            ..Default::default()
        }
    }

    /// Empty Q0 and the histogram of `first` digit, ready for Phase 2 to append.
    pub fn reset(&mut self, first: Digit) {
        self.current.clear();
        self.hist[..first.bins()].fill(0);
    }

    /// Append an admitted score to Q0 and count its leading digit (paper eq. 17).
    #[inline(always)]
    pub fn admit(&mut self, index: usize, key: u32, first: Digit) {
        self.current.push(Candidate {
            index: index as u32,
            key,
        });
        self.hist[first.of(key)] += 1;
    }

    /// Commit the `quota` best entries of the frontier to `out` (eq. 23-25, then the final
    /// equal-key group: any of its entries, or the lowest indices with `lowest_ties`).
    /// Requires `quota <= |Q0|` and `hist` to count `digits[0]` over Q0.
    pub fn refine(
        &mut self,
        digits: &[Digit],
        mut quota: usize,
        out: &mut OutRow,
        lowest_ties: bool,
    ) {
        for (j, &digit) in digits.iter().enumerate() {
            if self.current.len() <= quota {
                break; // the whole frontier is selected: nothing left to resolve
            }
            let (boundary, ahead) = boundary_digit(&self.hist[..digit.bins()], quota);
            // After the last digit the next histogram is not used; width 0 counts into bin 0.
            let next_digit = digits
                .get(j + 1)
                .copied()
                .unwrap_or(Digit { shift: 0, width: 0 });
            self.next_hist[..next_digit.bins()].fill(0);
            if self.hist[boundary] as usize == self.current.len() {
                // One group holds the whole frontier: Q_{j+1} = Q_j, only its histogram is new.
                for c in &self.current {
                    self.next_hist[next_digit.of(c.key)] += 1;
                }
            } else {
                self.classify(digit, boundary, next_digit, out);
                quota -= ahead;
            }
            std::mem::swap(&mut self.hist, &mut self.next_hist);
        }
        // Every entry left has the same key (or the frontier fits the quota): any will do,
        // unless ties go to the lowest indices.
        if lowest_ties && self.current.len() > quota && quota > 0 {
            self.current
                .select_nth_unstable_by_key(quota - 1, |c| c.index);
        }
        for c in self.current.iter().take(quota) {
            out.push(c.index);
        }
    }

    /// One round of eq. 24-25: commit the groups ahead of `boundary`, keep the boundary group
    /// as the next frontier and count its `next` digit. Branch-free: every entry is written to
    /// both destinations and the fill levels advance by the comparison results.
    fn classify(&mut self, digit: Digit, boundary: usize, next: Digit, out: &mut OutRow) {
        let n = self.current.len();
        self.next.clear();
        self.next.resize(n, Candidate { index: 0, key: 0 });
        self.committed.clear();
        self.committed.resize(n, 0);
        let (mut kept, mut taken) = (0, 0);
        for &c in &self.current {
            let d = digit.of(c.key);
            self.committed[taken] = c.index;
            taken += (d < boundary) as usize;
            self.next[kept] = c;
            kept += (d == boundary) as usize;
            self.next_hist[next.of(c.key)] += (d == boundary) as u32;
        }
        self.next.truncate(kept);
        for &index in &self.committed[..taken] {
            out.push(index);
        }
        std::mem::swap(&mut self.current, &mut self.next);
    }
}

/// `b = min { b : H(b) >= quota }` and `H(b - 1)`, the count strictly ahead of it (eq. 23).
fn boundary_digit(hist: &[u32], quota: usize) -> (usize, usize) {
    let mut ahead = 0usize;
    for (bin, &count) in hist.iter().enumerate() {
        if ahead + count as usize >= quota {
            return (bin, ahead);
        }
        ahead += count as usize;
    }
    (hist.len(), ahead)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frontiers the CPU phases build list each group of equal keys in column order, so the
    /// first entries of the last group are its lowest indices anyway; a frontier in any other
    /// order (as the GPU's atomics build it) must still give the lowest indices.
    #[test]
    fn lowest_ties_take_the_lowest_indices_of_an_unordered_final_group() {
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
        // One better key (index 40), then nine equal keys in scrambled index order.
        let tie_indices = [17u32, 3, 29, 11, 5, 23, 2, 31, 8];
        let mut frontier = Frontier::new(1 << 11);
        frontier.reset(digits[0]);
        frontier.admit(40, 0x1000_0000, digits[0]);
        for &i in &tie_indices {
            frontier.admit(i as usize, 0x2000_0000, digits[0]);
        }
        let mut slots = [0i32; 5];
        let mut out = OutRow::new(&mut slots);
        frontier.refine(&digits, 5, &mut out, true);
        let mut chosen = slots;
        chosen.sort_unstable();
        assert_eq!(chosen, [2, 3, 5, 8, 40]);
    }
}
