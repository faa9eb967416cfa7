//! Line charts with error bars for experiment results, written as SVG and PNG.
//!
//! Each series is a line through the medians with a min..max error bar at every point. Text in
//! the PNG is drawn with Liberation Sans (SIL OFL 1.1, see `assets/LiberationSans-LICENSE.txt`),
//! embedded in the binary so no system font library is needed; the SVG names the generic
//! `sans-serif` family and leaves the choice of font to the viewer.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height of both outputs, in pixels.
const SIZE: (u32, u32) = (800, 500);
/// The font family name the embedded font is registered under.
const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../assets/LiberationSans-Regular.ttf");

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// One measurement: `y` is the median, `y_min..=y_max` the error bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub y_min: f64,
    pub y_max: f64,
}

/// The x axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Logarithmic with ticks at powers of two (working-set sweeps); x values must be positive.
    Log2,
}

/// A chart: its text, its x scale and its series.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    /// The x axis label, with its unit (e.g. "working set (bytes)"); a label that names bytes
    /// gets binary units on its ticks (see [`counts_bytes`]).
    pub x_label: String,
    /// The y axis label, with its unit (e.g. "throughput (reads/s)"), as for `x_label`.
    pub y_label: String,
    pub x_scale: Scale,
    pub series: Vec<Series>,
    /// Small text under the title, e.g. "pool = 64 MiB".
    pub note: Option<String>,
    /// A vertical dashed marker at this x (e.g. the pool size), with its label at the top. The x
    /// range is widened to include it; a non-finite x (or `x <= 0` on Log2) is not drawn.
    pub vline: Option<(f64, String)>,
    /// What the line and the error bars show, for the legend; `None` keeps the default,
    /// [`Marks::median_min_max`].
    pub marks: Option<Marks>,
}

/// The legend's explanation of the marks: what the line connects and what the bars span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    /// The line's text, e.g. "line: median".
    pub line: String,
    /// The bars' text, e.g. "bars: min–max".
    pub bars: String,
}

impl Marks {
    /// The default: the line joins medians and the bars span minimum to maximum.
    pub fn median_min_max() -> Marks {
        Marks { line: "line: median".into(), bars: "bars: min\u{2013}max".into() }
    }
}

/// A chart that could not be written; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot draw {}: {message}", path.display())]
    Draw { path: PathBuf, message: String },
}

/// Writes `<stem>.svg` and `<stem>.png` (800x500) and returns both paths.
///
/// The extensions are appended, so a stem such as `sweep-1.5` keeps its dot. Points with a
/// non-finite `x` or `y` (or, on [`Scale::Log2`], `x <= 0`) are skipped; a non-finite bound of
/// an error bar is replaced by the median. A chart without any drawable point still writes both
/// files, with a "no data" note in the plot area. Missing parent directories are created.
///
/// The drawing rules:
/// - **y scale.** When every drawable y value (medians and both bounds of every error bar) is
///   positive and the largest is at least 100 times the smallest (two decades), the y axis is
///   logarithmic, base 10, with ticks at powers of ten (thinned to at most 12). Otherwise it is
///   linear: it starts at zero whenever no value is negative, so that differences are not
///   blown up, and spans the data (padded) when some value is negative.
/// - **Tick labels** use [`compact`]'s binary units (`1Ki`, `64Mi`) on an axis that counts bytes
///   and decimal units ([`compact_decimal`]: `1k`, `2.5M`) on every other axis. An axis counts
///   bytes when its label contains, ignoring case, "bytes", "(b)", "kib", "mib" or "gib"
///   ([`counts_bytes`]). A linear axis that counts bytes has its ticks at multiples of a power
///   of two (so they read `1Ki`, `2Ki`, ...; a step below one byte falls back to the decimal
///   rule), any other linear axis at multiples of 1, 2 or 5 times a power of ten; a
///   [`Scale::Log2`] x axis has its ticks at powers of two. The x axis spans the data and the
///   [`Chart::vline`], padded.
/// - **Series** are told apart by colour and marker: series `i` gets colour `i mod 10` of a
///   10-colour palette (Okabe and Ito's colour-blind-safe colours less yellow, then brown,
///   purple and olive)
///   and marker shape `(i + i div 10) mod 4` (circle, square, triangle, cross), so the
///   first 40 series all get distinct (colour, marker) pairs and consecutive series differ in
///   both.
/// - **Positions.** Every point, its error bar and its marker sit exactly at its x; bars of
///   series that share an x overlap (1 pixel wide, with caps 7 pixels wide; a bar without
///   spread is not drawn). All error bars are drawn first, then the lines, then the markers, so
///   no bar hides a median.
/// - **Legend.** It sits in a column right of the plot, so it never hides data; it marks series
///   without any drawable point "(no data)", and explains what the line and the bars show.
pub fn write_chart(stem: &Path, chart: &Chart) -> Result<Vec<PathBuf>, PlotError> {
    let svg_path = with_suffix(stem, ".svg");
    let png_path = with_suffix(stem, ".png");
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|source| PlotError::Io { path: dir.to_path_buf(), source })?;
    }
    let layout = Layout::new(chart);

    let draw_err = |path: &Path, message: String| PlotError::Draw { path: path.to_path_buf(), message };
    register_font().map_err(|m| draw_err(&svg_path, m))?;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        render(&root, chart, &layout).map_err(|m| draw_err(&svg_path, m))?;
        root.present().map_err(|e| draw_err(&svg_path, e.to_string()))?;
    }
    fs::write(&svg_path, svg).map_err(|source| PlotError::Io { path: svg_path.clone(), source })?;

    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        render(&root, chart, &layout).map_err(|m| draw_err(&png_path, m))?;
        root.present().map_err(|e| draw_err(&png_path, e.to_string()))?;
    }
    write_png(&png_path, &rgb)?;

    Ok(vec![svg_path, png_path])
}

/// Formats a number compactly for tick labels of an axis that counts bytes: multiples of 1024
/// that are a whole number of hundredths of their unit with binary units (`1Ki`, `1.5Mi`,
/// `64Mi`, `2Gi`), other numbers as [`compact_decimal`] does (`350k`, `1.5M`, `12`, `0.25`).
pub fn compact(v: f64) -> String {
    if v.is_finite() && v != 0.0 && v.abs() % 1024.0 == 0.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        let a = v.abs();
        let binary = [(1u64 << 40, "Ti"), (1 << 30, "Gi"), (1 << 20, "Mi"), (1 << 10, "Ki")]
            .map(|(u, s)| (u as f64, s));
        if let Some(&(unit, suffix)) = binary.iter().find(|(unit, _)| a >= *unit) {
            let m = a / unit;
            if (m * 100.0).fract() == 0.0 {
                return format!("{sign}{}{suffix}", trim(format!("{m:.2}")));
            }
        }
    }
    compact_decimal(v)
}

/// Formats a number compactly with decimal units only, for tick labels of axes that do not count
/// bytes: numbers of at least 1000 with `k`, `M`, `G` or `T` and three significant digits
/// (`1k`, `1.02k`, `350k`, `1.5M`, `2.5G`), smaller numbers plainly with three significant
/// digits (`12`, `0.25`).
pub fn compact_decimal(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    // Round to three significant digits first, so 999_999 becomes 1M rather than 1000k.
    let exp = a.log10().floor() as i32;
    let step = 10f64.powi(exp - 2);
    let r = (a / step).round() * step;
    let decimal = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    match decimal.iter().find(|(unit, _)| r >= *unit * 0.9999999) {
        Some(&(unit, suffix)) => format!("{sign}{}{suffix}", trim(format!("{:.2}", r / unit))),
        None => {
            let decimals = (2 - r.log10().floor() as i32).max(0) as usize;
            format!("{sign}{}", trim(format!("{r:.decimals$}")))
        }
    }
}

/// Whether an axis label says the axis counts bytes, so its ticks get binary units: the label
/// contains, ignoring case, "bytes", "(b)", "kib", "mib" or "gib".
pub fn counts_bytes(label: &str) -> bool {
    let l = label.to_lowercase();
    ["bytes", "(b)", "kib", "mib", "gib"].iter().any(|w| l.contains(w))
}

/// Drops trailing zeros after a decimal point, and the point itself if nothing follows.
fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn with_suffix(stem: &Path, suffix: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded font is not a valid TrueType font".into())
    }
}

/// Encodes 8-bit RGB pixels of a [`SIZE`] chart as a PNG (the `png` crate, with its default
/// compression and adaptive filtering) and writes it to `path`.
fn write_png(path: &Path, rgb: &[u8]) -> Result<(), PlotError> {
    let draw_err =
        |e: png::EncodingError| PlotError::Draw { path: path.to_path_buf(), message: e.to_string() };
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, SIZE.0, SIZE.1);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(draw_err)?;
        writer.write_image_data(rgb).map_err(draw_err)?;
        writer.finish().map_err(draw_err)?;
    }
    fs::write(path, bytes).map_err(|source| PlotError::Io { path: path.to_path_buf(), source })
}

/// The series colours: Okabe and Ito's colour-blind-safe colours (without yellow, which is
/// hard to see on white), then brown, purple and olive.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(140, 86, 75),
    RGBColor(106, 61, 154),
    RGBColor(128, 128, 0),
];
const GREY: RGBColor = RGBColor(90, 90, 90);
const GRID: RGBColor = RGBColor(225, 225, 225);

/// The marker shapes, in the order [`style`] hands them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Cross,
}

const MARKERS: [Marker; 4] = [Marker::Circle, Marker::Square, Marker::Triangle, Marker::Cross];

/// The colour and marker of series `i`: colour `i mod 10`, shape `(i + i div 10) mod 4`. The
/// first 40 series get 40 distinct pairs, and consecutive series differ in both.
pub(crate) fn style(i: usize) -> (RGBColor, Marker) {
    (PALETTE[i % PALETTE.len()], MARKERS[(i + i / PALETTE.len()) % MARKERS.len()])
}

/// A point ready to draw, in plot space: x (log2 of x on a Log2 scale), the median and the bar
/// bounds (log10 of them on a logarithmic y axis).
#[derive(Debug, Clone, Copy)]
struct Drawable {
    x: f64,
    y: f64,
    lo: f64,
    hi: f64,
}

/// How an axis maps values to plot space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AxisScale {
    Linear,
    /// Plot space holds log2 of the value.
    Log2,
    /// Plot space holds log10 of the value.
    Log10,
}

/// An axis in plot space with precomputed ticks, labelled with [`compact`] when it counts bytes
/// and [`compact_decimal`] otherwise (of `2^v` or `10^v` on a logarithmic scale).
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    scale: AxisScale,
    bytes: bool,
}

impl Axis {
    /// The value a position in plot space stands for.
    fn value(&self, v: f64) -> f64 {
        match self.scale {
            AxisScale::Linear => v,
            AxisScale::Log2 => v.exp2(),
            // Ticks sit at whole exponents; powi keeps 10^3 exactly 1000.
            AxisScale::Log10 if v.fract() == 0.0 && v.abs() < 300.0 => 10f64.powi(v as i32),
            AxisScale::Log10 => 10f64.powf(v),
        }
    }

    fn label(&self, v: f64) -> String {
        let value = self.value(v);
        if self.bytes {
            compact(value)
        } else {
            compact_decimal(value)
        }
    }
}

/// Everything about a chart that does not depend on the backend.
struct Layout {
    /// Per series, in order, its drawable points sorted by x.
    series: Vec<Vec<Drawable>>,
    x: Axis,
    y: Axis,
    /// The marker's x in plot space, if it can be drawn.
    vline: Option<f64>,
    empty: bool,
}

impl Layout {
    fn new(chart: &Chart) -> Self {
        let log = chart.x_scale == Scale::Log2;
        let to_plot = |x: f64| -> Option<f64> {
            match (x.is_finite(), log) {
                (false, _) => None,
                (true, false) => Some(x),
                (true, true) => (x > 0.0).then(|| x.log2()),
            }
        };
        let mut series: Vec<Vec<Drawable>> = chart
            .series
            .iter()
            .map(|s| {
                let mut pts: Vec<Drawable> = s
                    .points
                    .iter()
                    .filter(|p| p.y.is_finite())
                    .filter_map(|p| {
                        let x = to_plot(p.x)?;
                        let lo = if p.y_min.is_finite() { p.y_min.min(p.y) } else { p.y };
                        let hi = if p.y_max.is_finite() { p.y_max.max(p.y) } else { p.y };
                        Some(Drawable { x, y: p.y, lo, hi })
                    })
                    .collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                pts
            })
            .collect();
        let vline = chart.vline.as_ref().and_then(|(x, _)| to_plot(*x));
        let empty = series.iter().all(Vec::is_empty);

        // x: the data and the marker, padded so edge error bars stay clear of the axes.
        let x_bytes = counts_bytes(&chart.x_label);
        let xs = series.iter().flatten().map(|p| p.x).chain(vline);
        let (mut x0, mut x1) = min_max(xs).unwrap_or(if log { (10.0, 20.0) } else { (0.0, 1.0) });
        if log {
            x0 = x0.min(x1 - 1.0);
            let pad = ((x1 - x0) * 0.04).max(0.3);
            x0 -= pad;
            x1 += pad;
        } else {
            if x1 - x0 < 1e-12 * x0.abs().max(1.0) {
                let d = if x0 == 0.0 { 1.0 } else { x0.abs() * 0.1 };
                x0 -= d;
                x1 += d;
            }
            let pad = (x1 - x0) * 0.04;
            x0 -= pad;
            x1 += pad;
        }
        let x = Axis {
            lo: x0,
            hi: x1,
            ticks: if log { log_ticks(x0, x1) } else { linear_ticks(x0, x1, 8, x_bytes) },
            scale: if log { AxisScale::Log2 } else { AxisScale::Linear },
            bytes: x_bytes,
        };

        // y: every value is a median or a bar bound, and bars enclose their medians.
        let y_bytes = counts_bytes(&chart.y_label);
        let ys = || series.iter().flatten().flat_map(|p| [p.lo, p.hi]);
        let y = match min_max(ys()) {
            // Positive values spanning two decades or more: log10 in plot space.
            Some((lo, hi)) if lo > 0.0 && hi >= 100.0 * lo => {
                for p in series.iter_mut().flatten() {
                    *p = Drawable { x: p.x, y: p.y.log10(), lo: p.lo.log10(), hi: p.hi.log10() };
                }
                let (y0, y1) = (lo.log10(), hi.log10());
                let pad = (y1 - y0) * 0.06;
                let (y0, y1) = (y0 - pad, y1 + pad);
                Axis { lo: y0, hi: y1, ticks: log_ticks(y0, y1), scale: AxisScale::Log10, bytes: y_bytes }
            }
            range => {
                // Linear: from zero unless some value is negative, so that differences are not
                // exaggerated; otherwise the data's own range.
                let (mut y0, mut y1) = range.unwrap_or((0.0, 1.0));
                if y0 >= 0.0 {
                    y0 = 0.0;
                }
                if y1 - y0 < 1e-12 * y1.abs().max(1e-300) {
                    let d = if y1 == 0.0 { 1.0 } else { y1.abs() * 0.1 };
                    y0 = if y0 == 0.0 { 0.0 } else { y0 - d };
                    y1 += d;
                }
                let pad = (y1 - y0) * 0.06;
                let (y0, y1) = (if y0 == 0.0 { 0.0 } else { y0 - pad }, y1 + pad);
                let ticks = linear_ticks(y0, y1, 8, y_bytes);
                Axis { lo: y0, hi: y1, ticks, scale: AxisScale::Linear, bytes: y_bytes }
            }
        };

        Layout { series, x, y, vline, empty }
    }
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Integer exponents inside `lo..=hi`, thinned to at most 12 ticks at multiples of a step.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (first, last) = (lo.ceil() as i64, hi.floor() as i64);
    let count = (last - first + 1).max(1);
    let step = (count + 11) / 12;
    (first..=last).filter(|e| e.rem_euclid(step) == 0).map(|e| e as f64).collect()
}

/// About `target` ticks (at least half as many) at multiples of a step: a power of two when
/// `binary` and the step is at least 1 (an axis of bytes), else 1, 2 or 5 times a power of ten.
fn linear_ticks(lo: f64, hi: f64, target: usize, binary: bool) -> Vec<f64> {
    let raw = (hi - lo) / target as f64;
    let step = if binary && raw >= 1.0 {
        raw.log2().ceil().exp2()
    } else {
        let mag = 10f64.powf(raw.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
    };
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    // Multiply rather than accumulate, so 0.1 * 3 stays close to 0.3.
    (first..=last).map(|i| i as f64 * step).collect()
}

type Area<DB> = DrawingArea<DB, Shift>;

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let frac = (v - self.lo) / (self.hi - self.lo);
        limit.0 + ((limit.1 - limit.0) as f64 * frac + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Grid lines and labels at the ticks only; no light lines in between.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, v: &f64) -> String {
        self.label(*v)
    }
}

fn render<DB: DrawingBackend>(root: &Area<DB>, chart: &Chart, layout: &Layout) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;

    // Header: the title, then the note.
    let (w, _) = SIZE;
    let center_top = |size: f64, color: &'static RGBColor| {
        TextStyle::from((FONT, size).into_font()).color(color).pos(Pos::new(HPos::Center, VPos::Top))
    };
    root.draw(&Text::new(chart.title.clone(), (w as i32 / 2, 10), center_top(20.0, &BLACK))).map_err(e)?;
    let mut header = 38;
    if let Some(note) = chart.note.as_deref().filter(|n| !n.is_empty()) {
        root.draw(&Text::new(note.to_string(), (w as i32 / 2, header), center_top(14.0, &GREY)))
            .map_err(e)?;
        header += 20;
    }
    let (_, body) = root.split_vertically(header);

    // Legend column on the right, outside the plot so it never hides data.
    let legend_font = TextStyle::from((FONT, 14).into_font());
    let names: Vec<String> = chart
        .series
        .iter()
        .zip(&layout.series)
        .map(|(s, pts)| if pts.is_empty() { format!("{} (no data)", s.name) } else { s.name.clone() })
        .map(|n| fit(root, n, &legend_font, 170))
        .collect();
    let text_w = names
        .iter()
        .map(|n| root.estimate_text_size(n, &legend_font).map(|(w, _)| w))
        .collect::<Result<Vec<_>, _>>()
        .map_err(e)?
        .into_iter()
        .max()
        .unwrap_or(0);
    let legend_w = (text_w + 50).clamp(120, 220);
    let (plot_area, legend_area) = body.split_horizontally(w - legend_w);

    let (y0, y1) = (layout.y.lo, layout.y.hi);
    let mut cc = ChartBuilder::on(&plot_area)
        .margin_top(6)
        .margin_left(8)
        .margin_right(12)
        .margin_bottom(6)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(layout.x.clone(), layout.y.clone())
        .map_err(e)?;

    cc.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(GREY)
        .draw()
        .map_err(e)?;

    let (px_range, py_range) = cc.plotting_area().get_pixel_range();

    // The vertical marker, dashed, with its label at the top.
    if let (Some(vx), Some((_, label))) = (layout.vline, chart.vline.as_ref()) {
        let style = GREY.stroke_width(1);
        cc.draw_series(std::iter::once(DashedPathElement::new(vec![(vx, y0), (vx, y1)], 6, 4, style)))
            .map_err(e)?;
        if !label.is_empty() {
            let (px, _) = cc.backend_coord(&(vx, y1));
            let right_half = px > (px_range.start + px_range.end) / 2 + (px_range.end - px_range.start) / 4;
            let (dx, h) = if right_half { (-5, HPos::Right) } else { (5, HPos::Left) };
            let style = TextStyle::from((FONT, 13).into_font()).color(&GREY).pos(Pos::new(h, VPos::Top));
            root.draw(&Text::new(label.clone(), (px + dx, py_range.start + 4), style)).map_err(e)?;
        }
    }

    // Series, each point exactly at its x: first every error bar (thin, small caps; bars of
    // series at the same x overlap), then the median lines, then a marker per median, so that
    // no bar hides a median.
    for (i, pts) in layout.series.iter().enumerate() {
        let (color, _) = style(i);
        let bar = color.stroke_width(1);
        let cap = |at: (f64, f64)| EmptyElement::at(at) + PathElement::new(vec![(-3, 0), (3, 0)], bar);
        for p in pts.iter().filter(|p| p.hi > p.lo) {
            cc.draw_series(std::iter::once(PathElement::new(vec![(p.x, p.lo), (p.x, p.hi)], bar)))
                .map_err(e)?;
            cc.draw_series([cap((p.x, p.lo)), cap((p.x, p.hi))]).map_err(e)?;
        }
    }
    for (i, pts) in layout.series.iter().enumerate() {
        let (color, _) = style(i);
        cc.draw_series(LineSeries::new(pts.iter().map(|p| (p.x, p.y)), color.stroke_width(2))).map_err(e)?;
    }
    for (i, pts) in layout.series.iter().enumerate() {
        let (color, marker) = style(i);
        let at = |p: &Drawable| (p.x, p.y);
        match marker {
            Marker::Circle => cc.draw_series(pts.iter().map(|p| Circle::new(at(p), 4, color.filled()))),
            Marker::Square => cc.draw_series(
                pts.iter()
                    .map(|p| EmptyElement::at(at(p)) + Rectangle::new([(-3, -3), (3, 3)], color.filled())),
            ),
            Marker::Triangle => {
                cc.draw_series(pts.iter().map(|p| TriangleMarker::new(at(p), 5, color.filled())))
            }
            Marker::Cross => cc.draw_series(pts.iter().map(|p| Cross::new(at(p), 4, color.stroke_width(2)))),
        }
        .map_err(e)?;
    }

    if layout.empty {
        let mid = ((px_range.start + px_range.end) / 2, (py_range.start + py_range.end) / 2);
        let style =
            TextStyle::from((FONT, 18).into_font()).color(&GREY).pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new("no data", mid, style)).map_err(e)?;
    }

    // Legend entries, then what the marks mean.
    // Rows of 22 px, closer together when that would not fit (many series).
    let room = i32::try_from(legend_area.dim_in_pixel().1).unwrap_or(i32::MAX) - 60;
    let row = i32::try_from(names.len()).map_or(22, |n| if n > 0 { (room / n).clamp(12, 22) } else { 22 });
    let mut y = 16;
    for (i, name) in names.iter().enumerate() {
        let (color, marker) = style(i);
        legend_area.draw(&PathElement::new(vec![(4, y), (30, y)], color.stroke_width(2))).map_err(e)?;
        match marker {
            Marker::Circle => legend_area.draw(&Circle::new((17, y), 4, color.filled())),
            Marker::Square => legend_area.draw(&Rectangle::new([(14, y - 3), (20, y + 3)], color.filled())),
            Marker::Triangle => legend_area.draw(&TriangleMarker::new((17, y), 5, color.filled())),
            Marker::Cross => legend_area.draw(&Cross::new((17, y), 4, color.stroke_width(2))),
        }
        .map_err(e)?;
        let style = legend_font.color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        legend_area.draw(&Text::new(name.clone(), (38, y), style)).map_err(e)?;
        y += row;
    }
    if !names.is_empty() {
        let style =
            TextStyle::from((FONT, 12).into_font()).color(&GREY).pos(Pos::new(HPos::Left, VPos::Center));
        let marks = chart.marks.clone().unwrap_or_else(Marks::median_min_max);
        legend_area.draw(&Text::new(marks.line, (4, y + 4), style.clone())).map_err(e)?;
        legend_area.draw(&Text::new(marks.bars, (4, y + 20), style)).map_err(e)?;
    }
    Ok(())
}

/// Shortens `text` with an ellipsis until it is at most `max_w` pixels wide.
fn fit<DB: DrawingBackend>(area: &Area<DB>, text: String, font: &TextStyle<'_>, max_w: u32) -> String {
    let width = |t: &str| area.estimate_text_size(t, font).map(|(w, _)| w).unwrap_or(0);
    if width(&text) <= max_w {
        return text;
    }
    let mut chars: Vec<char> = text.chars().collect();
    while chars.len() > 1 {
        chars.pop();
        let t: String = chars.iter().chain(std::iter::once(&'\u{2026}')).collect();
        if width(&t) <= max_w {
            return t;
        }
    }
    text
}

/// Attribute `name` of an SVG tag's text (`x="12"`).
#[cfg(test)]
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    tag.split(&format!(" {name}=\"")).nth(1)?.split('"').next()
}

/// Test support: the circles of an SVG that [`write_chart`] wrote, as (fill colour, cx, cy).
#[cfg(test)]
pub(crate) fn svg_circles(svg: &str) -> Vec<(String, i32, i32)> {
    svg.split("<circle")
        .skip(1)
        .filter_map(|t| {
            let tag = t.split("/>").next()?;
            Some((
                attr(tag, "fill")?.to_string(),
                attr(tag, "cx")?.parse().ok()?,
                attr(tag, "cy")?.parse().ok()?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, y: f64) -> Point {
        Point { x, y, y_min: y * 0.9, y_max: y * 1.08 }
    }

    fn sample() -> Chart {
        let sizes = (14..=28).step_by(2).map(|e| (1u64 << e) as f64);
        let traditional: Vec<Point> =
            sizes.clone().map(|s| point(s, 3.0e6 / (1.0 + s / 67_108_864.0))).collect();
        let mut swizzling: Vec<Point> = sizes.map(|s| point(s, 4.2e6 / (1.0 + s / 50_000_000.0))).collect();
        swizzling[3].y = f64::NAN;
        swizzling[5].y_max = f64::NAN;
        Chart {
            title: "Random reads vs working set".into(),
            x_label: "working set (bytes)".into(),
            y_label: "throughput (reads/s)".into(),
            x_scale: Scale::Log2,
            series: vec![
                Series { name: "traditional".into(), points: traditional },
                Series { name: "swizzling".into(), points: swizzling },
            ],
            note: Some("pool = 64 MiB, 4 threads, 5 runs".into()),
            vline: Some((67_108_864.0, "pool = 64Mi".into())),
            marks: None,
        }
    }

    /// Decodes the PNG at `path` with the `png` crate (which checks the signature, every chunk's
    /// CRC and the zlib stream); returns its width and height and its RGB pixels.
    fn decode_png(path: &Path) -> ((u32, u32), Vec<u8>) {
        let decoder = png::Decoder::new(std::io::BufReader::new(fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!(
            (info.color_type, info.bit_depth),
            (png::ColorType::Rgb, png::BitDepth::Eight),
            "8-bit RGB"
        );
        rgb.truncate(info.buffer_size());
        assert_eq!(rgb.len(), info.width as usize * info.height as usize * 3);
        ((info.width, info.height), rgb)
    }

    fn png_size(path: &Path) -> (u32, u32) {
        decode_png(path).0
    }

    fn has_color(rgb: &[u8], c: RGBColor) -> bool {
        rgb.chunks_exact(3).any(|p| p == [c.0, c.1, c.2])
    }

    fn svg_text(path: &Path) -> String {
        let text = fs::read_to_string(path).unwrap();
        let body = match text.strip_prefix("<?xml") {
            Some(rest) => rest.split_once("?>").unwrap().1.trim_start(),
            None => text.trim_start(),
        };
        assert!(body.starts_with("<svg"), "{} does not start with <svg", path.display());
        text
    }

    #[test]
    fn writes_svg_and_png_with_two_series() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("rndread-1.5");
        let paths = write_chart(&stem, &sample()).unwrap();
        assert_eq!(paths, vec![dir.path().join("rndread-1.5.svg"), dir.path().join("rndread-1.5.png")]);
        let (size, rgb) = decode_png(&paths[1]);
        assert_eq!(size, (800, 500));
        assert_eq!(&rgb[..3], &[255, 255, 255], "white background");
        assert!(has_color(&rgb, PALETTE[0]) && has_color(&rgb, PALETTE[1]), "both series are drawn");
        assert!(has_color(&rgb, BLACK), "text is drawn");
        let svg = svg_text(&paths[0]);
        for text in [
            "traditional",
            "swizzling",
            "working set (bytes)",
            "throughput (reads/s)",
            "pool = 64Mi",
            "64Mi",
            "16Ki",
        ] {
            assert!(svg.contains(text), "SVG lacks {text:?}");
        }
    }

    /// The legend explains the marks: min–max bars by default, the chart's own text otherwise
    /// (the DBMIN plots' 95% confidence intervals).
    #[test]
    fn legend_names_what_the_marks_show() {
        let dir = tempfile::tempdir().unwrap();
        let svg = svg_text(&write_chart(&dir.path().join("default"), &sample()).unwrap()[0]);
        assert!(svg.contains("line: median") && svg.contains("bars: min\u{2013}max"), "default marks");
        let mut chart = sample();
        chart.marks = Some(Marks { line: "line: throughput".into(), bars: "bars: 95% CI".into() });
        let svg = svg_text(&write_chart(&dir.path().join("ci"), &chart).unwrap()[0]);
        assert!(svg.contains("line: throughput") && svg.contains("bars: 95% CI"), "own marks");
        assert!(!svg.contains("min\u{2013}max") && !svg.contains("line: median"), "no default marks");
    }

    #[test]
    fn linear_scale_and_odd_values_do_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        let mut chart = sample();
        chart.x_scale = Scale::Linear;
        chart.series[0].points.push(Point { x: f64::INFINITY, y: 1.0, y_min: 0.0, y_max: 2.0 });
        chart.series[1].points = vec![point(5.0, 7.0)];
        chart.series.push(Series { name: "empty".into(), points: vec![] });
        chart.vline = Some((f64::NAN, "nowhere".into()));
        let paths = write_chart(&dir.path().join("linear"), &chart).unwrap();
        assert_eq!(png_size(&paths[1]), (800, 500));
        assert!(svg_text(&paths[0]).contains("empty (no data)"));
        // One point only, and x <= 0 on a log scale.
        chart.x_scale = Scale::Log2;
        chart.series = vec![Series { name: "one".into(), points: vec![point(4096.0, 3.0), point(0.0, 1.0)] }];
        let paths = write_chart(&dir.path().join("one"), &chart).unwrap();
        assert_eq!(png_size(&paths[1]), (800, 500));
    }

    #[test]
    fn empty_chart_writes_valid_files() {
        let dir = tempfile::tempdir().unwrap();
        for (i, series) in
            [vec![], vec![Series { name: "nan".into(), points: vec![point(f64::NAN, f64::NAN)] }]]
                .into_iter()
                .enumerate()
        {
            let chart = Chart {
                title: "nothing".into(),
                x_label: "x (bytes)".into(),
                y_label: "y (ops/s)".into(),
                x_scale: if i == 0 { Scale::Log2 } else { Scale::Linear },
                series,
                note: None,
                vline: None,
                marks: None,
            };
            let paths = write_chart(&dir.path().join(format!("empty{i}")), &chart).unwrap();
            assert_eq!(png_size(&paths[1]), (800, 500));
            assert!(svg_text(&paths[0]).contains("no data"));
        }
    }

    #[test]
    fn error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").unwrap();
        let err = write_chart(&blocker.join("chart"), &sample()).unwrap_err();
        assert!(err.to_string().contains(&*blocker.to_string_lossy()), "{err}");
    }

    #[test]
    fn compact_formats() {
        assert_eq!(compact(1024.0), "1Ki");
        assert_eq!(compact(64.0 * 1048576.0), "64Mi");
        assert_eq!(compact(1.5 * 1048576.0), "1.5Mi");
        assert_eq!(compact(2.0 * 1073741824.0), "2Gi");
        assert_eq!(compact(16384.0), "16Ki");
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(350_000.0), "350k");
        assert_eq!(compact(1_200_000.0), "1.2M");
        assert_eq!(compact(999_999.0), "1M");
        assert_eq!(compact(12_345.0), "12.3k");
        assert_eq!(compact(1000.0), "1k");
        assert_eq!(compact(1536.0), "1.54k");
        assert_eq!(compact(12.0), "12");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(0.30000000000000004), "0.3");
        assert_eq!(compact(-2048.0), "-2Ki");
        assert_eq!(compact(1e10), "10G");
        assert_eq!(compact(f64::NAN), "NaN");
        // Decimal units only, for axes that do not count bytes.
        assert_eq!(compact_decimal(1024.0), "1.02k");
        assert_eq!(compact_decimal(16384.0), "16.4k");
        assert_eq!(compact_decimal(64.0 * 1048576.0), "67.1M");
        assert_eq!(compact_decimal(1000.0), "1k");
        assert_eq!(compact_decimal(350_000.0), "350k");
        assert_eq!(compact_decimal(-2048.0), "-2.05k");
        assert_eq!(compact_decimal(0.25), "0.25");
        assert_eq!(compact_decimal(0.0), "0");
    }

    #[test]
    fn byte_axes_are_recognised_by_their_label() {
        for label in
            ["working set (bytes)", "log since the checkpoint (MiB)", "pool (KiB)", "size (B)", "GiB"]
        {
            assert!(counts_bytes(label), "{label:?}");
        }
        for label in ["latency (ms)", "miss ratio", "cache size (pages)", "lookups per second", "bits"] {
            assert!(!counts_bytes(label), "{label:?}");
        }
    }

    /// The text elements of an SVG: their x, their anchor and their content.
    fn svg_texts(svg: &str) -> Vec<(i32, String, String)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (tag, rest) = t.split_once('>')?;
                let content = rest.split("</text>").next()?.trim().to_string();
                Some((attr(tag, "x")?.parse().ok()?, attr(tag, "text-anchor")?.to_string(), content))
            })
            .collect()
    }

    /// A chart of one series per `(name, values)`, with the values at x = 1, 2, ...
    fn values_chart(y_label: &str, series: &[(&str, &[f64])]) -> Chart {
        Chart {
            title: "values".into(),
            x_label: "step".into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            series: series
                .iter()
                .map(|(name, ys)| Series {
                    name: (*name).into(),
                    points: ys.iter().enumerate().map(|(i, &y)| point(i as f64 + 1.0, y)).collect(),
                })
                .collect(),
            note: None,
            vline: None,
            marks: None,
        }
    }

    /// The y axis' tick labels in the SVG (right-aligned text left of the plot).
    fn y_tick_labels(svg: &str) -> Vec<String> {
        svg_texts(svg).into_iter().filter(|(_, anchor, _)| anchor == "end").map(|(_, _, t)| t).collect()
    }

    #[test]
    fn y_axis_is_logarithmic_across_two_decades() {
        let dir = tempfile::tempdir().unwrap();
        // 1e2 to 1e6: log10, ticks at powers of ten.
        let chart = values_chart("lookups per second", &[("fast", &[1e6, 8e5]), ("slow", &[1e2, 3e2])]);
        let layout = Layout::new(&chart);
        assert_eq!(layout.y.scale, AxisScale::Log10);
        assert!(layout.y.ticks.iter().all(|t| t.fract() == 0.0), "{:?}", layout.y.ticks);
        let svg = svg_text(&write_chart(&dir.path().join("log"), &chart).unwrap()[0]);
        let labels = y_tick_labels(&svg);
        for text in ["100", "1k", "10k", "100k", "1M"] {
            assert!(labels.iter().any(|l| l == text), "no tick {text:?} in {labels:?}");
        }
        // A bar bound at 0 (or below) keeps the axis linear, from 0.
        let mut chart = chart;
        chart.series[1].points[0].y_min = 0.0;
        let layout = Layout::new(&chart);
        assert_eq!((layout.y.scale, layout.y.lo), (AxisScale::Linear, 0.0));
        // Less than two decades (bars 1.8 to 106.92): linear.
        let chart = values_chart("x", &[("a", &[2.0, 99.0])]);
        assert_eq!(Layout::new(&chart).y.scale, AxisScale::Linear);
    }

    #[test]
    fn linear_y_axis_starts_at_zero_unless_a_value_is_negative() {
        let dir = tempfile::tempdir().unwrap();
        // 5 and 9 (bars 4.5..9.72): from 0, not from the data's minimum.
        let chart = values_chart("lookups per second", &[("a", &[5.0, 9.0])]);
        let layout = Layout::new(&chart);
        assert_eq!((layout.y.scale, layout.y.lo), (AxisScale::Linear, 0.0));
        assert!(layout.y.hi > 9.72 && layout.y.hi < 11.0, "{}", layout.y.hi);
        let svg = svg_text(&write_chart(&dir.path().join("lin"), &chart).unwrap()[0]);
        let labels = y_tick_labels(&svg);
        assert!(labels.iter().any(|l| l == "0") && labels.iter().any(|l| l == "8"), "{labels:?}");
        // Values close together far from zero still start at zero.
        let layout = Layout::new(&values_chart("y", &[("a", &[1000.0, 1010.0])]));
        assert_eq!(layout.y.lo, 0.0);
        // A negative value: the axis spans the data.
        let mut chart = values_chart("y", &[("a", &[5.0, 9.0])]);
        chart.series[0].points[0] = Point { x: 1.0, y: -3.0, y_min: -4.0, y_max: -2.0 };
        let layout = Layout::new(&chart);
        assert!(layout.y.lo < -4.0 && layout.y.lo > -5.0, "{}", layout.y.lo);
        // All zero: 0..1.
        let layout = Layout::new(&values_chart("y", &[("a", &[0.0, 0.0])]));
        assert!(layout.y.lo == 0.0 && (layout.y.hi - 1.06).abs() < 1e-9, "{:?}", (layout.y.lo, layout.y.hi));
    }

    #[test]
    fn tick_labels_use_binary_units_only_on_byte_axes() {
        let dir = tempfile::tempdir().unwrap();
        let values: &[f64] = &[1024.0, 2048.0, 4096.0];
        let svg = svg_text(
            &write_chart(&dir.path().join("ms"), &values_chart("latency (ms)", &[("a", values)])).unwrap()[0],
        );
        let labels = y_tick_labels(&svg);
        assert!(labels.iter().any(|l| l == "2k") && !labels.iter().any(|l| l.contains('i')), "{labels:?}");
        let svg = svg_text(
            &write_chart(&dir.path().join("b"), &values_chart("size (bytes)", &[("a", values)])).unwrap()[0],
        );
        let labels = y_tick_labels(&svg);
        assert!(labels.iter().any(|l| l == "2Ki") && labels.iter().any(|l| l == "4Ki"), "{labels:?}");
        // A Log2 x axis of pages counts in decimal units, one of bytes in binary units.
        let mut chart = sample();
        chart.x_label = "cache size (pages)".into();
        let svg = svg_text(&write_chart(&dir.path().join("pages"), &chart).unwrap()[0]);
        let x_ticks = |svg: &str| -> Vec<String> {
            svg_texts(svg).into_iter().filter(|(_, a, _)| a == "middle").map(|(_, _, t)| t).collect()
        };
        let ticks = x_ticks(&svg);
        assert!(ticks.contains(&"16.4k".into()) && !ticks.contains(&"16Ki".into()), "pages: {ticks:?}");
        let svg = svg_text(&write_chart(&dir.path().join("bytes"), &sample()).unwrap()[0]);
        let ticks = x_ticks(&svg);
        assert!(ticks.contains(&"16Ki".into()) && !ticks.contains(&"16.4k".into()), "bytes: {ticks:?}");
    }

    #[test]
    fn twenty_series_get_distinct_colours_and_markers() {
        let pairs: std::collections::HashSet<_> =
            (0..40).map(style).map(|(c, m)| ((c.0, c.1, c.2), m)).collect();
        assert_eq!(pairs.len(), 40, "the first 40 series differ");
        let colours: std::collections::HashSet<_> = PALETTE.iter().map(|c| (c.0, c.1, c.2)).collect();
        assert_eq!(colours.len(), 10, "10 distinct colours");
        for i in 0..19 {
            let ((a, m), (b, n)) = (style(i), style(i + 1));
            assert!(a != b && m != n, "series {i} and {} differ in colour and marker", i + 1);
        }
        // A chart of 20 series draws every one of the 10 colours.
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        let ys: Vec<[f64; 2]> = (0..20).map(|i| [10.0 + i as f64, 20.0 + i as f64]).collect();
        let series: Vec<(&str, &[f64])> = names.iter().zip(&ys).map(|(n, y)| (n.as_str(), &y[..])).collect();
        let chart = values_chart("y", &series);
        let paths = write_chart(&dir.path().join("twenty"), &chart).unwrap();
        let svg = svg_text(&paths[0]);
        for c in PALETTE {
            assert!(svg.contains(&format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)), "{c:?}");
        }
        let (_, rgb) = decode_png(&paths[1]);
        assert!(PALETTE.iter().all(|&c| has_color(&rgb, c)), "every colour in the PNG");
    }

    /// Series that share an x draw their points exactly there: no nudging.
    #[test]
    fn points_sit_at_their_x() {
        let dir = tempfile::tempdir().unwrap();
        // Series 0 and 4 are marked with circles; all five have points at x = 1, 2, 3.
        let series: Vec<(&str, &[f64])> = vec![
            ("a", &[5.0, 6.0, 7.0]),
            ("b", &[5.5, 6.0, 7.5]),
            ("c", &[5.0, 6.5, 7.0]),
            ("d", &[6.0, 6.0, 6.0]),
            ("e", &[5.0, 6.1, 7.2]),
        ];
        let chart = values_chart("y", &series);
        assert_eq!((style(0).1, style(4).1), (Marker::Circle, Marker::Circle));
        let svg = svg_text(&write_chart(&dir.path().join("same-x"), &chart).unwrap()[0]);
        // Where the x axis puts 1, 2 and 3: its tick labels (centred below the plot).
        let tick_x = |v: &str| {
            svg_texts(&svg).into_iter().find(|(_, a, t)| a == "middle" && t == v).map(|(x, _, _)| x).unwrap()
        };
        let expected: Vec<i32> = ["1", "2", "3"].iter().map(|v| tick_x(v)).collect();
        let legend_x = expected[2] + 40;
        for colour in ["#0072B2", "#E69F00"] {
            let xs: Vec<i32> = svg_circles(&svg)
                .into_iter()
                .filter(|(c, x, _)| c == colour && *x < legend_x)
                .map(|(_, x, _)| x)
                .collect();
            assert_eq!(xs, expected, "{colour}");
        }
        // Every series' error bars (vertical 1-pixel lines) stand at the same three x.
        for i in 0..series.len() {
            let (c, _) = style(i);
            let stroke = format!("stroke=\"#{:02X}{:02X}{:02X}\" stroke-width=\"1\"", c.0, c.1, c.2);
            let mut xs: Vec<i32> = svg
                .split("<polyline")
                .skip(1)
                .filter(|t| t.contains(&stroke))
                .filter_map(|t| {
                    let pts: Vec<(i32, i32)> = attr(t, "points")?
                        .split_whitespace()
                        .filter_map(|p| p.split_once(','))
                        .map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap()))
                        .collect();
                    (pts.len() == 2 && pts[0].0 == pts[1].0).then_some(pts[0].0)
                })
                .collect();
            xs.dedup();
            assert_eq!(xs, expected, "bars of series {i}");
        }
    }
}
