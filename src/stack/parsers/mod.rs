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
pub(crate) mod patterns;
pub mod pypto;
pub(crate) mod pytest;
pub mod simpler_own;
pub(crate) mod simpler_scene;
pub mod strace;
pub mod table;

/// How one parser is made for one process (before the `strace` wrap).
type Make =
    fn(&crate::model::stack::StackDef, &ParseContext) -> crate::error::Result<Box<dyn Parser>>;

/// One registered parser: the `parser` name a stack definition gives, how it is made, and
/// whether `make` wraps it so STRACE `device_wall` spans fill `device_wall_s`.
struct Registered {
    name: &'static str,
    make: Make,
    strace_wrapped: bool,
}

/// Every parser, in documentation order: the one list `make` looks names up in and an unknown
/// name's error lists. A new parser is one row here.
const PARSERS: &[Registered] = &[
    wrapped("native", |_, ctx| {
        Ok(Box::new(native::NativeParser::new(ctx.clone())))
    }),
    wrapped("regex", |def, ctx| {
        Ok(Box::new(patterns::RegexParser::new(
            &def.patterns,
            ctx.clone(),
        )?))
    }),
    wrapped("hccl", |def, ctx| Ok(hccl::parser(def, ctx))),
    wrapped("markers", |def, ctx| {
        // A bad `builtin` name is a definition error, not a run-time warning.
        markers::MarkerSet::from_table(&def.markers)
            .map_err(|e| config_error("markers.builtin", e))?;
        Ok(markers::parser(def, ctx))
    }),
    wrapped("pytest", |def, ctx| Ok(pytest::parser(def, ctx))),
    wrapped("pypto-harness", |def, ctx| Ok(pypto::parser(def, ctx))),
    wrapped("simpler-own", |def, ctx| Ok(simpler_own::parser(def, ctx))),
    // Reads the STRACE rounds itself (grouped by pid and inv): not wrapped.
    Registered {
        name: "simpler-scene",
        make: |def, ctx| Ok(simpler_scene::parser(def, ctx)),
        strace_wrapped: false,
    },
    wrapped("gtest", |def, ctx| Ok(gtest::parser(def, ctx))),
    wrapped("nccl-tests", |def, ctx| Ok(nccl_tests::parser(def, ctx))),
    wrapped("osu", |def, ctx| Ok(osu::parser(def, ctx))),
    wrapped("hccl_test", |def, ctx| Ok(hccl_test::parser(def, ctx))),
];

/// A parser whose output `make` wraps with `strace`.
const fn wrapped(name: &'static str, make: Make) -> Registered {
    Registered {
        name,
        make,
        strace_wrapped: true,
    }
}

/// Parser names `make` knows, in documentation order.
pub(crate) fn known() -> impl Iterator<Item = &'static str> {
    PARSERS.iter().map(|p| p.name)
}

/// The parser `def` asks for (`parser`, default `native`), configured for one process, wrapped
/// so that STRACE `device_wall` spans on any stack's output fill `device_wall_s` (see `strace`).
pub fn make(
    def: &crate::model::stack::StackDef,
    ctx: &ParseContext,
) -> crate::error::Result<Box<dyn Parser>> {
    let name = def.parser();
    let Some(registered) = PARSERS.iter().find(|p| p.name == name) else {
        let known: Vec<&str> = known().collect();
        return Err(config_error(
            "parser",
            format!("unknown parser `{name}` (known: {})", known.join(", ")),
        ));
    };
    let parser = (registered.make)(def, ctx)?;
    Ok(if registered.strace_wrapped {
        strace::wrap(parser)
    } else {
        parser
    })
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

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// Every registered name is unique, makes its parser, and is documented where a stack
    /// author looks it up (the `parser` row of docs/stack-definitions.md).
    #[test]
    fn every_registered_parser_is_made_and_documented() {
        let doc = include_str!("../../../docs/stack-definitions.md");
        let row = doc
            .lines()
            .find(|l| l.starts_with("| `parser` |"))
            .expect("docs/stack-definitions.md has a `parser` row");
        let names: Vec<&str> = known().collect();
        for (i, name) in names.iter().enumerate() {
            assert!(
                !names[..i].contains(name),
                "parser `{name}` registered twice"
            );
            assert!(
                row.contains(&format!("`{name}`")),
                "parser `{name}` is not in the docs row"
            );
            let def = crate::model::stack::StackDef {
                parser: Some(name.to_string()),
                ..Default::default()
            };
            if let Err(e) = make(&def, &ParseContext::default()) {
                // Only a parser that needs configuration may refuse an empty definition.
                assert!(
                    !e.to_string().contains("unknown parser"),
                    "`{name}` is registered but not made: {e}"
                );
            }
        }
    }
}
