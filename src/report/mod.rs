//! The summarize → plot → report end of the campaign: statistics, figures and `summary.md`.
//!
//! Owns `render_all`, a pure function of a `ResultSet` (plus options) that writes
//! `<run dir>/reports/summary.md`, the template context it was rendered from as
//! `<run dir>/reports/context.json`, the same context as one self-contained page
//! `<run dir>/reports/index.html`, and `<run dir>/figures/<name>.png|.svg|.hover.json`, and
//! keeps the bootstrap intervals it drew in `<run dir>/reports/.bootstrap-memo` for the next
//! report of the same results (`analysis::stats::memo`). It
//! never runs anything; loaders build the `ResultSet` first. Of a bundle it reads only the
//! tail of a failed run's `run.log`, for the HTML page (`html`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analysis::stats::memo::Memo;
use crate::analysis::stats::Bootstrap;
use crate::error::{Error, Result};
use crate::model::plan::ReportConfig;
use crate::model::results::ResultSet;
use crate::store::atomic::{write_atomic, Staged};

pub(crate) mod bundle_files;
pub(crate) mod census_section;
pub(crate) mod context;
pub mod figures;
pub(crate) mod font;
pub(crate) mod history_section;
pub(crate) mod html;
pub(crate) mod inline;
pub(crate) mod markdown;
pub(crate) mod pmu;
pub(crate) mod preview;
pub(crate) mod profile_links;
pub(crate) mod results_table;
pub(crate) mod rows;
pub(crate) mod straggler_section;
pub mod summary;
pub(crate) mod swimlane;

pub(crate) use summary::Analysis;

/// What to render and how.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportOptions {
    /// Stack every other stack is compared with (`[report] baseline`); None = first stack run.
    pub baseline: Option<String>,
    /// Template replacing the default (`[report] template` or `--template`).
    pub template: Option<PathBuf>,
    /// Figures to draw (empty = every figure that has data).
    pub figures: Vec<String>,
    /// Report title (default: "<campaign> — <timestamp>").
    pub title: Option<String>,
    pub bootstrap: Bootstrap,
    /// Earlier points of this run's series in the history store (the "History" section).
    pub history: Option<crate::model::series::ReportHistory>,
    /// `[report] compare_metric`: pair every stack on this metric.
    pub compare_metric: Option<crate::model::results::Metric>,
    /// `[report] equivalence`: the paired verdicts' equivalence margin (None: the noise band).
    pub equivalence: Option<f64>,
    /// Looks of the run's sequential repeats (none or one: a fixed count): `Judging::looks`.
    pub looks: Vec<u32>,
    /// `[adapt] crossover`: its resolution and the plan's own sizes (`ReportConfig::adapt`).
    pub adapt: Option<(f64, Vec<u64>)>,
    /// The newest calibration of the machine the runs ran on (`analysis::calibration`), from
    /// the history store: each verdict's noise band is its size class's.
    pub calibration: Option<crate::analysis::calibration::Calibration>,
    /// `[census]`: the devices and stack of the Link census section (`ReportConfig::census`).
    pub census: Option<crate::model::plan::CensusConfig>,
}

impl ReportOptions {
    /// Options from a plan's `[report]`, with the bootstrap seeded from the run's recorded seed
    /// (so re-rendering a run dir reproduces its intervals).
    pub(crate) fn from_config(cfg: &ReportConfig, results: &ResultSet) -> ReportOptions {
        ReportOptions {
            baseline: cfg.baseline.clone(),
            template: cfg.template.clone(),
            figures: cfg.figures.clone(),
            title: cfg.title.clone(),
            calibration: None,
            bootstrap: bootstrap_for(results),
            history: None,
            compare_metric: cfg.compare_metric,
            equivalence: cfg.equivalence,
            looks: cfg.looks.clone(),
            adapt: cfg.adapt.clone(),
            census: cfg.census.clone(),
        }
    }
}

/// The bootstrap of a result set: default resamples, the run's seed when it recorded one.
/// `campaign history trend --out FILE`: the figure (`.png`, `.svg`), or the self-contained page
/// of it and its change points (`.html`).
pub(crate) fn draw_trend(
    series: &[crate::model::series::Series],
    steps: &[Vec<crate::model::series::Step>],
    out: &Path,
) -> Result<Vec<std::path::PathBuf>> {
    let html = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    if html {
        html::write_trend_page(series, steps, out)?;
        Ok(vec![out.to_path_buf()])
    } else {
        figures::draw_trend(series, steps, out)
    }
}

pub(crate) fn bootstrap_for(results: &ResultSet) -> Bootstrap {
    Bootstrap {
        seed: results
            .provenance
            .seed
            .unwrap_or(crate::analysis::stats::bootstrap::DEFAULT_SEED),
        ..Bootstrap::default()
    }
}

/// The bootstrap intervals of the run dir's last report (`analysis::stats::memo`), in
/// `reports/`: a report of the same results takes its intervals from it instead of resampling.
pub(crate) const MEMO_FILE: &str = ".bootstrap-memo";

/// Largest memo file read (≈ 32 bytes an interval; 10,000 runs need well under 1 MiB).
const MEMO_MAX_BYTES: u64 = 256 << 20;

/// The memo at `path`; empty when there is none or it is not a memo (a damaged or foreign file
/// is never trusted, and is replaced by this report's).
fn read_memo(path: &Path) -> Memo {
    crate::model::file::read_regular(path, MEMO_MAX_BYTES)
        .map(|bytes| Memo::decode(&bytes))
        .unwrap_or_default()
}

/// The memo of `run_dir`'s last report (empty when there is none or it is not whole): read
/// once by whoever renders the report, and handed to the history ingest that records the run
/// dir first, so an interval is drawn once for both.
pub(crate) fn run_memo(run_dir: &Path) -> Memo {
    read_memo(&run_dir.join("reports").join(MEMO_FILE))
}

/// Everything a report is rendered from besides its result set: the options, the template's
/// text, the run dir as named, and what the page reads from the bundles. The report is a pure
/// function of these and the set (no clock, no environment), so equal inputs render equal
/// files: `campaign report` renders nothing when they and the files are unchanged.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Inputs {
    baseline: Option<String>,
    calibration: Option<crate::analysis::calibration::Calibration>,
    template: Option<PathBuf>,
    /// The template's text (None: the default template of this build).
    template_text: Option<String>,
    figures: Vec<String>,
    title: Option<String>,
    seed: u64,
    resamples: u32,
    history: Option<crate::model::series::ReportHistory>,
    compare_metric: Option<crate::model::results::Metric>,
    /// The census section's devices, stack and quarantine (`[census]`), as text.
    census: Option<String>,
    /// The run dir, absolute.
    run_dir: PathBuf,
    bundles: Vec<String>,
    /// The profiled runs the report lists (`profiles.json`): a new profile renders it again.
    profiles: Vec<profile_links::ProfileRow>,
    /// The bundle files behind `bundles`, for the page to link (`render_from`).
    #[serde(skip)]
    bundle_files: bundle_files::BundleFiles,
}

/// The [`Inputs`] of a report of `results` with `opts` into `run_dir`. A template that cannot
/// be read is an error here, as in `render_all`.
pub(crate) fn inputs(results: &ResultSet, opts: &ReportOptions, run_dir: &Path) -> Result<Inputs> {
    let template_text = match &opts.template {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?),
        None => None,
    };
    let bundle_files = bundle_files::BundleFiles::stat(results, run_dir);
    Ok(Inputs {
        baseline: opts.baseline.clone(),
        template: opts.template.clone(),
        template_text,
        figures: opts.figures.clone(),
        title: opts.title.clone(),
        seed: opts.bootstrap.seed,
        resamples: opts.bootstrap.resamples,
        history: opts.history.clone(),
        compare_metric: opts.compare_metric,
        calibration: opts.calibration.clone(),
        census: opts.census.as_ref().map(|c| format!("{c:?}")),
        // The report reads the run dir's files and never prints its name: `run`'s absolute
        // name and `campaign report out/…` render the same files, so they prove the same.
        run_dir: std::path::absolute(run_dir).map_err(|e| Error::io(run_dir, e))?,
        bundles: html::bundle_reads(results, run_dir, &bundle_files),
        profiles: profile_links::rows(run_dir),
        bundle_files,
    })
}

impl Inputs {
    /// Which bundle files exist, as stat-ed for these inputs.
    pub(crate) fn bundle_files(&self) -> &bundle_files::BundleFiles {
        &self.bundle_files
    }

    /// The profiled runs as read for these inputs, handed to the render (read once).
    pub(crate) fn take_profiles(&mut self) -> Vec<profile_links::ProfileRow> {
        std::mem::take(&mut self.profiles)
    }
}

impl ReportOutput {
    /// Every file the report wrote, relative to `run_dir` (the bootstrap memo aside: a cache).
    pub(crate) fn files(&self, run_dir: &Path) -> Vec<String> {
        let mut paths = vec![&self.summary, &self.context, &self.html];
        for f in &self.figures {
            paths.extend([&f.png, &f.svg, &f.hover]);
        }
        paths
            .into_iter()
            .map(|p| {
                p.strip_prefix(run_dir)
                    .unwrap_or(p)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }
}

impl ReportOutput {
    /// These paths with `from`, the run dir they start with, replaced by `to` (the same dir as
    /// named another way): a stamp keeps them relative to the run dir (`from` = "").
    pub(crate) fn rebased(mut self, from: &Path, to: &Path) -> ReportOutput {
        let rebase = |p: &mut PathBuf| {
            if let Ok(rel) = p.strip_prefix(from) {
                *p = to.join(rel);
            }
        };
        for p in [&mut self.summary, &mut self.context, &mut self.html] {
            rebase(p);
        }
        for f in &mut self.figures {
            for p in [&mut f.png, &mut f.svg, &mut f.hover] {
                rebase(p);
            }
        }
        self
    }
}

/// What `render_all` wrote.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReportOutput {
    /// `<run dir>/reports/summary.md`.
    pub summary: PathBuf,
    /// `<run dir>/reports/context.json`: the exact template context, for scripts.
    pub context: PathBuf,
    /// `<run dir>/reports/index.html`: the same context as one self-contained page.
    pub html: PathBuf,
    pub figures: Vec<figures::Drawn>,
    pub skipped_figures: Vec<figures::Skipped>,
    /// Runs that did not pass (listed in the report).
    pub(crate) failures: usize,
    /// What results.json carries of the report's judgement (`context::answers`): what each
    /// default loses and where the winner changes; kept in the report's stamp so a report
    /// proven current still has them.
    #[serde(default)]
    pub(crate) answers: serde_json::Value,
}

/// summarize → plot → report for one result set into `run_dir`.
pub fn render_all(
    results: &ResultSet,
    opts: &ReportOptions,
    run_dir: &Path,
) -> Result<ReportOutput> {
    let files = bundle_files::BundleFiles::stat(results, run_dir);
    render_from(
        results,
        opts,
        run_dir,
        (&files, profile_links::rows(run_dir)),
        &run_memo(run_dir),
    )
}

/// The report's statistics of `results` with `opts`, every interval through `memo`.
fn analyse(results: &ResultSet, opts: &ReportOptions, memo: &Memo) -> Analysis {
    Analysis::remembering(
        results,
        opts.baseline.as_deref(),
        opts.bootstrap,
        summary::Judging {
            compare_metric: opts.compare_metric,
            equivalence: opts.equivalence,
            looks: opts.looks.len(),
            family: None,
            calibration: opts.calibration.as_ref(),
        },
        memo,
    )
}

/// Draw into `memo` every interval the report of `results` with `opts` would draw, rendering
/// nothing. The history ingest that records a run dir before its report calls this when the
/// store does not hold the run dir's results yet: the report needs each (case, stack)'s draws
/// anyway (its paired ratios), so the ingest then takes its series points' intervals from
/// the memo, and the report after it takes all of them — one resampling instead of two
/// (issue 50, item 2). The intervals are the ones either would draw, bit for bit: a memo
/// names an interval by its draws' inputs (`analysis::stats::memo`).
pub(crate) fn warm_memo(results: &ResultSet, opts: &ReportOptions, memo: &Memo) {
    drop(analyse(results, opts, memo));
}

/// [`render_all`], the page linking the bundle files `files` and listing the profiled runs
/// `profiles` (both found for the report's [`Inputs`]) without reading them again, its
/// intervals through `memo` ([`run_memo`], which the history ingest may have added to).
pub(crate) fn render_from(
    results: &ResultSet,
    opts: &ReportOptions,
    run_dir: &Path,
    (files, profiles): (&bundle_files::BundleFiles, Vec<profile_links::ProfileRow>),
    memo: &Memo,
) -> Result<ReportOutput> {
    // Read the template first: a bad template path fails before anything is written.
    let (source, name, file) = template_source(opts.template.as_deref())?;
    let memo_file = run_dir.join("reports").join(MEMO_FILE);
    let mut analysis = analyse(results, opts, memo);
    // Earlier campaigns of this machine (the history store) pooled into the stragglers.
    if let Some(earlier) = (opts.history.as_ref()).map(|h| &h.stragglers) {
        if earlier.campaigns > 0 {
            analysis.stragglers = crate::analysis::straggler::attribute_pooled(results, earlier);
        }
    }
    let failures = analysis.failures.len();
    let (planned, skipped) =
        figures::plan_all(&analysis, results, &opts.figures, &run_dir.join("figures"))?;
    let mut drawn: Vec<figures::Drawn> = planned.iter().map(|p| p.drawn.clone()).collect();
    let reports = run_dir.join("reports");
    let summary = reports.join("summary.md");
    let context = reports.join("context.json");
    let html_file = reports.join("index.html");
    let template = Template {
        source: &source,
        name: &name,
        file: &file,
    };
    // The figures are drawn first (a failed figure is reported before a failed template, as
    // before), then the context (a row per run) is built, rendered to Markdown and — on a
    // second thread — written as JSON, each straight into its file's temp file: the figures'
    // points and SVG text and the context, a few KB a run each, are never held at once.
    // The report files replace the old ones once every figure they link to is drawn; the
    // page reads each figure's hover values back from its file, so none are kept here.
    figures::draw_planned(planned)?;
    let census = (opts.census.as_ref())
        .map(|c| crate::analysis::census::census(results, &c.devices, &c.stack));
    if let Some(c) = census.as_ref().filter(|c| !c.pairs.is_empty()) {
        drawn.extend(figures::draw_census(c, &run_dir.join("figures"))?);
    }
    // The profiled runs (never in the analysis above): their pmu.csv files make a figure.
    drawn.extend(draw_pmu(&profiles, run_dir)?);
    // results.json's `census`, in numbers (the section below is its words).
    let census_record =
        (census.as_ref()).map(|c| c.record(|d| results.quarantined.contains_key(&d.to_string())));
    let census = (census.as_ref())
        .map(|c| census_section::section(c, opts.census.as_ref().is_some_and(|k| k.quarantine)));
    let (mut staged, ctx) = texts(
        results,
        &analysis,
        opts,
        (&drawn, &skipped),
        template,
        (&context, &summary),
        (census, profiles),
    )?;
    // The statistics are in the context now; the page needs only the context and the runs.
    drop(analysis);
    let mut answers = context::answers(&ctx);
    if let (Some(record), Some(map)) = (census_record, answers.as_object_mut()) {
        map.insert(
            "census".into(),
            serde_json::to_value(record).unwrap_or_default(),
        );
    }
    // The page carries every figure inline, so it is rendered once they are drawn.
    stage_rendered(&mut staged, &html_file, |w| {
        html::render_report(results, &ctx, &drawn, (run_dir, files), w)
    })?;
    drop(ctx);
    staged.commit()?;
    // Kept only when this report drew an interval or left one unused: a repeated report of
    // the same run dir rewrites nothing here.
    if memo.changed() {
        write_atomic(&memo_file, &memo.encode())?;
    }
    Ok(ReportOutput {
        summary,
        context,
        html: html_file,
        figures: drawn,
        skipped_figures: skipped,
        failures,
        answers,
    })
}

/// The report template's text, name and path: `--template`'s file, else the built-in one.
fn template_source(chosen: Option<&Path>) -> Result<(String, String, PathBuf)> {
    Ok(match chosen {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string());
            (text, name, path.to_path_buf())
        }
        None => (
            markdown::DEFAULT_TEMPLATE.to_string(),
            markdown::DEFAULT_NAME.to_string(),
            PathBuf::from(markdown::DEFAULT_NAME),
        ),
    })
}

/// The seed's `pmu_utilization` figure of the profiled runs' `pmu.csv` files, if any has
/// busy counters.
fn draw_pmu(
    profiles: &[profile_links::ProfileRow],
    run_dir: &Path,
) -> Result<Option<figures::Drawn>> {
    let pmu: Vec<figures::pmu_utilization::PmuPanel<'_>> = (profiles.iter())
        .flat_map(|p| {
            (p.pmu.iter()).map(move |t| figures::pmu_utilization::PmuPanel {
                label: format!("{} · {} ({})", p.case_id, p.stack, p.kind),
                rows: &t.rows,
            })
        })
        .collect();
    figures::draw_pmu(&pmu, &run_dir.join("figures"))
}

/// The report template and where it came from (named in its errors).
#[derive(Clone, Copy)]
struct Template<'a> {
    source: &'a str,
    name: &'a str,
    file: &'a Path,
}

/// The context of the report, with `context.json` (written on a thread of its own) and
/// `summary.md` staged.
fn texts(
    results: &ResultSet,
    analysis: &Analysis,
    opts: &ReportOptions,
    (drawn, skipped): (&[figures::Drawn], &[figures::Skipped]),
    template: Template<'_>,
    (context, summary): (&Path, &Path),
    (census, profiles): (
        Option<census_section::CensusCtx>,
        Vec<profile_links::ProfileRow>,
    ),
) -> Result<(Staged, context::Context)> {
    let mut ctx =
        context::build(results, analysis, opts.title.as_deref()).with_figures(drawn, skipped);
    ctx.census = census;
    ctx.link_profiles(profiles);
    ctx.history = opts.history.as_ref().and_then(history_section::context);
    ctx.sequential = context::sequential(results, &opts.looks, opts.adapt.as_ref());
    let ctx_ref = &ctx;
    let (markdown, json) = std::thread::scope(|s| {
        let json = s.spawn(|| {
            let mut staged = Staged::new();
            staged.write(context, |w| {
                serde_json::to_writer_pretty(&mut *w, ctx_ref)?;
                w.write_all(b"\n")
            })?;
            Ok::<_, Error>(staged)
        });
        let mut staged = Staged::new();
        let markdown = stage_rendered(&mut staged, summary, |w| {
            markdown::render(template.source, template.name, template.file, ctx_ref, w)
        })
        .map(|()| staged);
        let json = json
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (markdown, json)
    });
    // context.json first, as before: the files replace the old ones in this order.
    let mut staged = json?;
    staged.append(markdown?);
    Ok((staged, ctx))
}

/// Stage `path` with what `render` writes into its temp file as the template produces it. A
/// template's own error comes back as it is; a failed write as the temp file's I/O error.
fn stage_rendered(
    staged: &mut Staged,
    path: &Path,
    render: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let mut failed = None;
    let written = staged.write(path, |w| {
        let mut w = Recording { w, err: None };
        match render(&mut w) {
            Ok(()) => Ok(()),
            Err(e) => Err(w.err.take().unwrap_or_else(|| {
                failed = Some(e);
                std::io::Error::other("the template failed")
            })),
        }
    });
    failed.map_or(written, Err)
}

/// A writer that keeps the first error of the one it wraps (a renderer replaces it by its own).
struct Recording<'a> {
    w: &'a mut dyn Write,
    err: Option<std::io::Error>,
}

impl Write for Recording<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf).map_err(|e| self.keep(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush().map_err(|e| self.keep(e))
    }
}

impl Recording<'_> {
    fn keep(&mut self, e: std::io::Error) -> std::io::Error {
        let copy = std::io::Error::from(e.kind());
        self.err.get_or_insert(e);
        copy
    }
}
