//! No colour twice in one legend: the figures' palette (`palette`: the Tableau 10, plotters'
//! 21, then colours of its own, no two indices alike) and the choice of each series' colour
//! within one figure (`distinct`). A series keeps its (stack, variant) colour — the same in
//! every figure — unless another series of the same figure already has it (one (stack,
//! variant) at two dtypes or core_nums); then it takes the first colour no series of the
//! figure uses.

use plotters::style::{Palette, Palette99, RGBColor};

/// The first colours: distinct, readable on white and for most colour-blind readers (the
/// Tableau 10 set, yellow last).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0xba, 0xb0, 0xac),
    RGBColor(0xed, 0xc9, 0x48),
];

/// Palette colour `i`: the Tableau 10, then plotters' `Palette99` (21 colours, whose `pick`
/// wraps round: index 31 used to repeat index 10), then `beyond`, so no two indices share a
/// colour.
pub(crate) fn palette(i: usize) -> RGBColor {
    let more = Palette99::COLORS;
    match (PALETTE.get(i), more.get(i.wrapping_sub(PALETTE.len()))) {
        (Some(c), _) => *c,
        (None, Some(c)) => RGBColor(c.0, c.1, c.2),
        (None, None) => beyond(i - PALETTE.len() - more.len()),
    }
}

/// Colour `k` past the fixed palettes: hues a golden angle apart, at three lightnesses in
/// turn, so neighbouring indices differ in hue and in lightness.
fn beyond(k: usize) -> RGBColor {
    let hue = (k as f64 * 137.507_764_050_037_85) % 360.0;
    let light = [0.42, 0.58, 0.32][k % 3];
    hsl(hue, 0.68, light)
}

/// RGB of a hue in degrees, saturation and lightness in [0, 1].
fn hsl(hue: f64, sat: f64, light: f64) -> RGBColor {
    let chroma = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let h = hue / 60.0;
    let x = chroma * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = light - chroma / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
}

/// The palette index of each series of one figure, given each one's preferred index (its
/// (stack, variant) colour); series that are one (the same key twice) must be passed once.
/// First come keep their preference; a later series whose preferred colour is taken gets the
/// first index whose colour no series of the figure uses or prefers.
pub(crate) fn distinct(preferred: &[usize]) -> Vec<usize> {
    let mut chosen: Vec<Option<usize>> = vec![None; preferred.len()];
    let mut taken: Vec<RGBColor> = Vec::new();
    for (i, &p) in preferred.iter().enumerate() {
        if !taken.contains(&palette(p)) {
            taken.push(palette(p));
            chosen[i] = Some(p);
        }
    }
    let wanted: Vec<RGBColor> = preferred.iter().map(|&p| palette(p)).collect();
    let mut next = 0usize;
    chosen
        .into_iter()
        .map(|c| {
            c.unwrap_or_else(|| {
                while taken.contains(&palette(next)) || wanted.contains(&palette(next)) {
                    next += 1;
                }
                taken.push(palette(next));
                next
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_thousand_palette_colours_are_all_different() {
        let mut seen = std::collections::HashMap::new();
        for i in 0..1000 {
            let c = palette(i);
            assert_ne!((c.0, c.1, c.2), (255, 255, 255), "{i} is the background");
            if let Some(j) = seen.insert((c.0, c.1, c.2), i) {
                panic!("palette indices {j} and {i} are both {c:?}");
            }
        }
    }

    #[test]
    fn a_taken_colour_moves_to_one_nobody_uses_and_the_rest_keep_theirs() {
        // Series 0 and 2 prefer colour 3 (one stack and variant at two dtypes).
        let got = distinct(&[3, 0, 3, 1]);
        assert_eq!(got[0], 3);
        assert_eq!(got[1], 0);
        assert_eq!(got[3], 1);
        assert!(![0, 1, 3].contains(&got[2]), "{got:?}");
        let colours: Vec<_> = got.iter().map(|&i| palette(i)).collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{got:?}");
        }
    }
}
