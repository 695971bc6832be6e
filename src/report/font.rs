//! The embedded font: DejaVu Sans registered with plotters as `sans-serif`.
//!
//! plotters' ab_glyph text backend knows only fonts registered in-process, so figures must not
//! depend on system fonts or fontconfig (a fresh CI machine has neither). Owns that one
//! registration; drawing code just names `sans-serif`.

use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

/// The family every figure uses.
pub(crate) const FAMILY: &str = "sans-serif";

static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();

/// Register DejaVu Sans (regular and bold) as `sans-serif`, once per process.
pub(crate) fn ensure_registered() -> Result<(), String> {
    REGISTERED
        .get_or_init(|| {
            register_font(FAMILY, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans regular font is not a valid TTF")?;
            register_font(FAMILY, FontStyle::Bold, dejavu::sans::bold())
                .map_err(|_| "the embedded DejaVu Sans bold font is not a valid TTF")?;
            Ok(())
        })
        .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn registers_and_is_idempotent() {
        assert_eq!(super::ensure_registered(), Ok(()));
        assert_eq!(super::ensure_registered(), Ok(()));
    }
}
