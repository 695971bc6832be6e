//! Output parsers: turn a stack's output lines into samples and a verdict.
//!
//! A parser is fed every line as it arrives (stdout and stderr interleaved, each with its
//! arrival time) and then finished. Parsers are pure: no I/O, no clocks of their own — the
//! arrival time on each line is the only clock (markers use it).

pub(crate) use crate::model::output::OutputLine;
use crate::model::results::Sample;

/// What a parser concluded from one process's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Rounds found, in order. Round numbers and labels may be filled by the parser or later by
    /// the engine (for `subprocess` shape, one process = one round).
    pub samples: Vec<Sample>,
    /// `Some(true)` when the stack declared success, `Some(false)` on a declared failure,
    /// `None` when it said nothing either way.
    pub correctness: Option<bool>,
    /// Why it failed, in the stack's words.
    pub error: Option<String>,
    /// Problems with the output itself (garbage, truncated JSON) — reported, never fatal.
    pub warnings: Vec<String>,
}

/// Context a parser may need: the case's size (bandwidth is recomputed from bytes and time).
#[derive(Debug, Clone, Default)]
pub struct ParseContext {
    pub n_bytes: u64,
    pub p: u32,
    pub warmup: u32,
    pub timed: u32,
    /// The rendered argv of this process (a parser may name what it selected, e.g. pytest's
    /// node ids).
    pub argv: Vec<String>,
}

/// A streaming parser.
pub trait Parser: Send {
    fn feed(&mut self, line: &OutputLine);
    fn finish(self: Box<Self>) -> Parsed;
}

pub mod gtest;
pub mod hccl;
pub mod hccl_test;
pub mod markers;
pub mod native;
pub mod nccl_tests;
pub mod osu;
pub mod pypto;
pub mod pytest;
pub mod regex;
pub mod simpler_own;
pub mod simpler_scene;
pub mod strace;
pub mod table;

/// Parser names `make` knows, in documentation order.
pub(crate) const KNOWN: &[&str] = &[
    "native",
    "regex",
    "hccl",
    "markers",
    "pytest",
    "pypto-harness",
    "simpler-own",
    "simpler-scene",
    "gtest",
    "nccl-tests",
    "osu",
    "hccl_test",
];

/// The parser `def` asks for (`parser`, default `native`), configured for one process, wrapped
/// so that STRACE `device_wall` spans on any stack's output fill `device_wall_s` (see `strace`).
pub fn make(
    def: &crate::model::stack::StackDef,
    ctx: &ParseContext,
) -> crate::error::Result<Box<dyn Parser>> {
    let inner: Box<dyn Parser> = match def.parser() {
        "native" => Box::new(native::NativeParser::new(ctx.clone())),
        "regex" => Box::new(regex::RegexParser::new(&def.patterns, ctx.clone())?),
        "hccl" => hccl::parser(def, ctx),
        "markers" => {
            // A bad `builtin` name is a definition error, not a run-time warning.
            markers::MarkerSet::from_table(&def.markers)
                .map_err(|e| config_error("markers.builtin", e))?;
            markers::parser(def, ctx)
        }
        "pytest" => pytest::parser(def, ctx),
        "pypto-harness" => pypto::parser(def, ctx),
        "simpler-own" => simpler_own::parser(def, ctx),
        // Reads the STRACE rounds itself (grouped by pid and inv): not wrapped.
        "simpler-scene" => return Ok(simpler_scene::parser(def, ctx)),
        "gtest" => gtest::parser(def, ctx),
        "nccl-tests" => nccl_tests::parser(def, ctx),
        "osu" => osu::parser(def, ctx),
        "hccl_test" => hccl_test::parser(def, ctx),
        other => {
            return Err(config_error(
                "parser",
                format!("unknown parser `{other}` (known: {})", KNOWN.join(", ")),
            ))
        }
    };
    Ok(strace::wrap(inner))
}

/// An error in a stack definition's parser keys (the caller knows which stack).
pub(crate) fn config_error(field: &str, message: String) -> crate::error::Error {
    crate::error::Error::Invalid(vec![crate::error::Diagnostic {
        file: "stack definition".into(),
        line: None,
        column: None,
        field: Some(field.to_string()),
        message,
        snippet: None,
    }])
}
