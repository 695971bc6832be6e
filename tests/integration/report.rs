//! End-to-end tests of the summarize → plot → report step and of `campaign report`/`compare`.

use std::path::Path;

use campaign::report::synthetic::{result_set, Spec};
use campaign::report::{render_all, ReportOptions};

/// Count pixels in a rectangle that differ from the background (the top-left pixel).
fn ink(png: &Path, x0: u32, y0: u32, w: u32, h: u32) -> usize {
    let img = image::open(png).expect("figure decodes as an image").to_rgb8();
    let bg = *img.get_pixel(0, 0);
    let mut n = 0;
    for y in y0..(y0 + h).min(img.height()) {
        for x in x0..(x0 + w).min(img.width()) {
            if *img.get_pixel(x, y) != bg {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn report_and_figures_are_written_with_text() {
    let dir = crate::util::tempdir();
    let mut spec = Spec::small();
    spec.detail = true;
    spec.fail_every = 7;
    spec.core_nums = vec![1, 2, 4, 8];
    let rs = result_set(&spec);
    let opts = ReportOptions {
        baseline: Some("mpi".into()),
        ..ReportOptions::default()
    };
    let out = render_all(&rs, &opts, dir.path()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("reports/summary.md")).unwrap();
    assert_eq!(out.summary, dir.path().join("reports/summary.md"));
    for name in campaign::report::figures::ALL {
        let png = dir.path().join(format!("figures/{name}.png"));
        let svg = dir.path().join(format!("figures/{name}.svg"));
        assert!(png.is_file() && svg.is_file(), "{name} not drawn: {:?}", out.skipped_figures);
        let img = image::open(&png).unwrap();
        // The title band must hold text pixels, not only background.
        assert!(ink(&png, 0, 0, img.width(), 40) > 200, "{name}: no title text");
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<text"), "{name}");
        assert!(md.contains(&format!("](../figures/{name}.png)")), "{name} not embedded");
    }
    assert!(md.contains("## Failures"));
    assert!(md.contains("golden mismatch"));
    assert!(md.contains("faster than mpi"), "{md}");
    assert!(!md.contains("0.0000"));
    if let Ok(keep) = std::env::var("REPORT_TEST_KEEP") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(dir.path(), keep).unwrap();
    }
}
