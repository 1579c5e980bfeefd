//! Progress bars for long work. indicatif draws on stderr only when it is a terminal, so
//! pipes, files and tests see nothing.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` rows.
pub fn rows(total: u64, message: &str) -> ProgressBar {
    let style =
        ProgressStyle::with_template("{msg} [{wide_bar}] {human_pos}/{human_len} rows, eta {eta}")
            .expect("valid template")
            .progress_chars("=> ");
    ProgressBar::new(total)
        .with_style(style)
        .with_message(message.to_string())
}

/// A bar over `total` bytes.
pub fn bytes(total: u64, message: &str) -> ProgressBar {
    let style = ProgressStyle::with_template("{msg} [{wide_bar}] {bytes}/{total_bytes}, eta {eta}")
        .expect("valid template")
        .progress_chars("=> ");
    ProgressBar::new(total)
        .with_style(style)
        .with_message(message.to_string())
}

/// A spinner for work of unknown length.
pub fn spinner(message: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// A bar over `total` autotune candidates.
pub fn candidates(total: u64, message: &str) -> ProgressBar {
    let style =
        ProgressStyle::with_template("{msg} [{wide_bar}] {pos}/{len} candidates, eta {eta}")
            .expect("valid template")
            .progress_chars("=> ");
    ProgressBar::new(total)
        .with_style(style)
        .with_message(message.to_string())
}
