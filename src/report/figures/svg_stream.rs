//! A plotters drawing backend that writes each SVG element to a writer as it is drawn.
//!
//! plotters' own `SVGBackend` builds the whole document in one `String` and writes it at
//! `present()`; at tens of thousands of runs a figure's SVG is tens of MB, held (and doubled
//! by the string's growth) while the rest of the report is in memory too. This backend emits
//! the same markup — element for element, attribute for attribute, the same number and colour
//! formatting and escaping, so a figure's file is byte for byte what `SVGBackend` writes — but
//! straight into the figure's (buffered) temp file, holding nothing but the open root element.

use std::fmt::Write as _;
use std::io::{self, Write};

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontStyle, FontTransform,
};

type Drawn = Result<(), DrawingErrorKind<io::Error>>;

/// An SVG document of `size` user units written to `out` as it is drawn; `present` closes the
/// root element and flushes. Dropped without `present`, the document is left unfinished (the
/// caller discards the file).
pub(crate) struct SvgStream<'w> {
    out: &'w mut dyn Write,
    size: (u32, u32),
    /// The root element is still open (not yet closed by `present`).
    open: bool,
    /// Reused for each attribute value before it is escaped.
    scratch: String,
}

impl<'w> SvgStream<'w> {
    /// Start the document: writes the root `<svg>` element's opening tag.
    pub(crate) fn new(out: &'w mut dyn Write, size: (u32, u32)) -> io::Result<SvgStream<'w>> {
        let mut svg = SvgStream {
            out,
            size,
            open: true,
            scratch: String::new(),
        };
        let (w, h) = size;
        svg.element(
            "svg",
            &[
                ("width", &w),
                ("height", &h),
                ("viewBox", &format_args!("0 0 {w} {h}")),
                ("xmlns", &"http://www.w3.org/2000/svg"),
            ],
            false,
        )?;
        Ok(svg)
    }

    /// `<name a="v" ...>` then a newline; `/>` instead of `>` when `empty`. Attribute values are
    /// escaped as XML text.
    fn element(
        &mut self,
        name: &str,
        attrs: &[(&str, &dyn std::fmt::Display)],
        empty: bool,
    ) -> io::Result<()> {
        write!(self.out, "<{name}")?;
        for (key, value) in attrs {
            self.scratch.clear();
            // Writing into a String cannot fail.
            let _ = write!(self.scratch, "{value}");
            write!(self.out, " {key}=\"")?;
            escape(self.out, &self.scratch)?;
            self.out.write_all(b"\"")?;
        }
        self.out.write_all(if empty { b"/>\n" } else { b">\n" })
    }
}

/// Write `text` with the five XML special characters as entities.
fn escape(out: &mut dyn Write, text: &str) -> io::Result<()> {
    let mut plain = 0;
    for (i, c) in text.char_indices() {
        let entity = match c {
            '<' => "&lt;",
            '>' => "&gt;",
            '&' => "&amp;",
            '"' => "&quot;",
            '\'' => "&apos;",
            _ => continue,
        };
        out.write_all(&text.as_bytes()[plain..i])?;
        out.write_all(entity.as_bytes())?;
        plain = i + c.len_utf8();
    }
    out.write_all(&text.as_bytes()[plain..])
}

/// `#RRGGBB`, upper-case hex.
struct Rgb(BackendColor);

impl std::fmt::Display for Rgb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (r, g, b) = self.0.rgb;
        write!(f, "#{r:02X}{g:02X}{b:02X}")
    }
}

/// `x,y ` for each point of a polyline or polygon.
struct Points(Vec<BackendCoord>);

impl std::fmt::Display for Points {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|(x, y)| write!(f, "{x},{y} "))
    }
}

fn drawn(r: io::Result<()>) -> Drawn {
    r.map_err(DrawingErrorKind::DrawingError)
}

impl DrawingBackend for SvgStream<'_> {
    type ErrorType = io::Error;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Drawn {
        Ok(())
    }

    fn present(&mut self) -> Drawn {
        if self.open {
            self.open = false;
            drawn(
                self.out
                    .write_all(b"</svg>\n")
                    .and_then(|()| self.out.flush()),
            )?;
        }
        Ok(())
    }

    fn draw_pixel(&mut self, (x, y): BackendCoord, color: BackendColor) -> Drawn {
        if color.alpha == 0.0 {
            return Ok(());
        }
        let attrs: [(&str, &dyn std::fmt::Display); 7] = [
            ("x", &x),
            ("y", &y),
            ("width", &"1"),
            ("height", &"1"),
            ("stroke", &"none"),
            ("opacity", &color.alpha),
            ("fill", &Rgb(color)),
        ];
        drawn(self.element("rect", &attrs, true))
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let attrs: [(&str, &dyn std::fmt::Display); 7] = [
            ("opacity", &color.alpha),
            ("stroke", &Rgb(color)),
            ("stroke-width", &style.stroke_width()),
            ("x1", &from.0),
            ("y1", &from.1),
            ("x2", &to.0),
            ("y2", &to.1),
        ];
        drawn(self.element("line", &attrs, true))
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (fill, stroke): (&dyn std::fmt::Display, &dyn std::fmt::Display) = if fill {
            (&Rgb(color), &"none")
        } else {
            (&"none", &Rgb(color))
        };
        let attrs: [(&str, &dyn std::fmt::Display); 7] = [
            ("x", &upper_left.0),
            ("y", &upper_left.1),
            ("width", &(bottom_right.0 - upper_left.0)),
            ("height", &(bottom_right.1 - upper_left.1)),
            ("opacity", &color.alpha),
            ("fill", fill),
            ("stroke", stroke),
        ];
        drawn(self.element("rect", &attrs, true))
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let attrs: [(&str, &dyn std::fmt::Display); 5] = [
            ("fill", &"none"),
            ("opacity", &color.alpha),
            ("stroke", &Rgb(color)),
            ("stroke-width", &style.stroke_width()),
            ("points", &Points(path.into_iter().collect())),
        ];
        drawn(self.element("polyline", &attrs, true))
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let attrs: [(&str, &dyn std::fmt::Display); 3] = [
            ("opacity", &color.alpha),
            ("fill", &Rgb(color)),
            ("points", &Points(path.into_iter().collect())),
        ];
        drawn(self.element("polygon", &attrs, true))
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (stroke, fill): (&dyn std::fmt::Display, &dyn std::fmt::Display) = if fill {
            (&"none", &Rgb(color))
        } else {
            (&Rgb(color), &"none")
        };
        let attrs: [(&str, &dyn std::fmt::Display); 7] = [
            ("cx", &center.0),
            ("cy", &center.1),
            ("r", &radius),
            ("opacity", &color.alpha),
            ("fill", fill),
            ("stroke", stroke),
            ("stroke-width", &style.stroke_width()),
        ];
        drawn(self.element("circle", &attrs, true))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (x, y): BackendCoord,
    ) -> Drawn {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let anchor = match style.anchor().h_pos {
            HPos::Left => "start",
            HPos::Right => "end",
            HPos::Center => "middle",
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => "0.76em",
            VPos::Center => "0.5ex",
            VPos::Bottom => "-0.5ex",
        };
        let family = style.family();
        let family = family.as_str();
        let size = style.size() / 1.24;
        let font_style = style.style();
        let rotate = match style.transform() {
            FontTransform::Rotate90 => Some(90),
            FontTransform::Rotate180 => Some(180),
            FontTransform::Rotate270 => Some(270),
            FontTransform::None => None,
        };
        let rotation = rotate.map(|deg| format!("rotate({deg}, {x}, {y})"));
        let mut attrs: Vec<(&str, &dyn std::fmt::Display)> = vec![
            ("x", &x),
            ("y", &y),
            ("dy", &dy),
            ("text-anchor", &anchor),
            ("font-family", &family),
            ("font-size", &size),
            ("opacity", &color.alpha),
        ];
        let fill = Rgb(color);
        attrs.push(("fill", &fill));
        let style_name = font_style.as_str();
        match font_style {
            FontStyle::Normal => {}
            FontStyle::Bold => attrs.push(("font-weight", &"bold")),
            _ => attrs.push(("font-style", &style_name)),
        }
        if let Some(r) = &rotation {
            attrs.push(("transform", r));
        }
        drawn(
            self.element("text", &attrs, false)
                .and_then(|()| escape(self.out, text))
                .and_then(|()| self.out.write_all(b"\n</text>\n")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::SvgStream;
    use plotters::coord::Shift;
    use plotters::prelude::*;
    use std::io::{self, Write};

    /// Every element kind this backend writes, with text that needs escaping, in each font
    /// style and rotation the figures use.
    fn scene<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) {
        root.fill(&WHITE).unwrap();
        let titled = root
            .titled(
                "a <title> & \"quotes\" 'too'",
                ("sans-serif", 26).into_font().style(FontStyle::Bold),
            )
            .unwrap();
        let mut chart = ChartBuilder::on(&titled)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..10.0, 0.0..5.0)
            .unwrap();
        chart
            .configure_mesh()
            .x_desc("x µs")
            .y_desc("y")
            .draw()
            .unwrap();
        let points = [(1.0, 1.0), (2.5, 3.0), (7.0, 2.0)];
        chart
            .draw_series(LineSeries::new(points, RED.stroke_width(2)))
            .unwrap();
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
            .unwrap();
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 3, GREEN.stroke_width(1))),
            )
            .unwrap();
        chart
            .draw_series([Rectangle::new(
                [(3.0, 0.5), (4.0, 1.5)],
                BLACK.mix(0.4).filled(),
            )])
            .unwrap();
        chart
            .draw_series([Rectangle::new(
                [(5.0, 0.5), (6.0, 1.5)],
                BLACK.stroke_width(1),
            )])
            .unwrap();
        chart
            .draw_series([Polygon::new(vec![(8.0, 1.0), (9.0, 1.0), (8.5, 2.0)], CYAN)])
            .unwrap();
        chart
            .draw_series([ErrorBar::new_vertical(
                6.0,
                2.0,
                3.0,
                4.0,
                MAGENTA.stroke_width(1),
                6,
            )])
            .unwrap();
        let style = ("sans-serif", 12).into_font();
        for (i, t) in [
            FontTransform::Rotate90,
            FontTransform::Rotate180,
            FontTransform::Rotate270,
        ]
        .into_iter()
        .enumerate()
        {
            let s = style.clone().transform(t).color(&BLACK);
            root.draw_text("turned", &s, (50 + 30 * i as i32, 200))
                .unwrap();
        }
        let italic = ("serif", 11)
            .into_font()
            .style(FontStyle::Italic)
            .color(&BLACK);
        root.draw_text("slanted", &italic, (10, 10)).unwrap();
        root.draw_pixel((3, 4), &RED).unwrap();
        root.draw_pixel((5, 6), &RED.mix(0.0)).unwrap();
    }

    #[test]
    fn writes_what_plotters_svg_backend_writes() {
        crate::report::font::ensure_registered().unwrap();
        let size = (400, 300);
        let mut expected = String::new();
        {
            let root = SVGBackend::with_string(&mut expected, size).into_drawing_area();
            scene(&root);
            root.present().unwrap();
        }
        let mut streamed = Vec::new();
        {
            let root = SvgStream::new(&mut streamed, size)
                .unwrap()
                .into_drawing_area();
            scene(&root);
            root.present().unwrap();
        }
        for needle in [
            "<polygon",
            "<polyline",
            "<circle",
            "<rect",
            "rotate(270",
            "font-style",
            "&lt;title&gt;",
        ] {
            assert!(expected.contains(needle), "scene lacks {needle}");
        }
        assert_eq!(String::from_utf8(streamed).unwrap(), expected);
    }

    #[test]
    fn a_failed_write_is_a_drawing_error() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let err = SvgStream::new(&mut Full, (10, 10)).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    }
}
