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
    /// equal-key group). Requires `quota <= |Q0|` and `hist` to count `digits[0]` over Q0.
    pub fn refine(&mut self, digits: &[Digit], mut quota: usize, out: &mut OutRow) {
        for (j, &digit) in digits.iter().enumerate() {
            if self.current.len() <= quota {
                break; // the whole frontier is selected: nothing left to resolve
            }
            let (boundary, ahead) = boundary_digit(&self.hist[..digit.bins()], quota);
            let next_digit = digits.get(j + 1).copied();
            if let Some(d) = next_digit {
                self.next_hist[..d.bins()].fill(0);
            }
            self.next.clear();
            for &c in &self.current {
                let d = digit.of(c.key);
                if d < boundary {
                    out.push(c.index);
                } else if d == boundary {
                    self.next.push(c);
                    if let Some(nd) = next_digit {
                        self.next_hist[nd.of(c.key)] += 1;
                    }
                }
            }
            quota -= ahead;
            std::mem::swap(&mut self.current, &mut self.next);
            std::mem::swap(&mut self.hist, &mut self.next_hist);
        }
        // Every entry left has the same FP32 key (or the frontier fits the quota): any will do.
        for c in self.current.iter().take(quota) {
            out.push(c.index);
        }
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
