//! `campaign census`: the flags as a `[census]` plan (the same plan a user may write), run as
//! `run` runs a plan. The plan's text is what the run dir keeps as `plan.toml`, so `campaign
//! report` and `resume` read the census back from it. Parse, call, print only.

use std::path::Path;

use crate::cli::args::CensusArgs;
use crate::error::Result;

pub(crate) fn run(args: &CensusArgs) -> Result<i32> {
    let cli = crate::cli::run::begin(&args.exec, args.repeats, None)?;
    let plan = crate::plan::parse_with(&plan_text(args), Path::new("census.toml"), cli)?;
    let opts = crate::engine::Options {
        repeats: args.repeats,
        ..crate::cli::run::exec_options(&args.exec)
    };
    crate::cli::run::run_plan(plan, &args.exec, opts, args.yes)
}

/// The `[census]` plan of the flags. Strings are written as TOML strings (quoted and escaped
/// by `toml`), so no flag can add a key; `plan::parse` then checks it like any plan.
fn plan_text(args: &CensusArgs) -> String {
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    let ids: Vec<String> = args.devices.iter().map(u32::to_string).collect();
    let count = args.count.unwrap_or(crate::model::plan::CENSUS_COUNT);
    format!(
        "# Written by `campaign census`.\n\
         [campaign]\nname = \"census\"\ndescription = {desc}\n\n\
         [census]\ndevices = [{ids}]\nstack = {stack}\nop = \"{op}\"\ncount = {count}\n\
         nodes = {nodes}\nquarantine = {quarantine}\n\n\
         [devices]\nkind = \"{kind}\"\n\n\
         [run]\nrepeats = 1\n",
        desc = quoted(&format!(
            "link census of devices {} on {}",
            ids.join(","),
            args.stack
        )),
        ids = ids.join(", "),
        stack = quoted(&args.stack),
        op = args.op.as_str(),
        nodes = args.nodes,
        quarantine = args.quarantine,
        kind = args.kind,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parsed(argv: &[&str]) -> CensusArgs {
        let cli = crate::cli::args::Cli::try_parse_from(argv).expect("parses");
        match cli.command {
            crate::cli::args::Command::Census(a) => a,
            other => panic!("not census: {other:?}"),
        }
    }

    #[test]
    fn the_flags_become_a_census_plan_that_loads() {
        let a = parsed(&[
            "campaign",
            "census",
            "--devices",
            "0-3,6",
            "--stack",
            "host",
            "--count",
            "4Ki",
            "--quarantine",
        ]);
        let plan = crate::plan::parse_with(
            &plan_text(&a),
            Path::new("census.toml"),
            crate::plan::Overrides::default(),
        )
        .expect("a census plan");
        let c = plan.census.as_ref().expect("[census]");
        assert_eq!(c.devices, vec![0, 1, 2, 3, 6]);
        assert_eq!((c.count, c.quarantine), (4096, true));
        // 5 devices: 10 pairs in 5 rounds, each a two-rank case pinned to its pair.
        assert_eq!(plan.case_count, 10);
        assert_eq!(
            plan.devices.placement,
            crate::model::plan::Placement::Pinned
        );
        assert_eq!(plan.stacks, vec!["host".to_string()]);
    }

    #[test]
    fn a_quote_in_a_flag_cannot_add_a_key() {
        let a = parsed(&[
            "campaign",
            "census",
            "--devices",
            "0-1",
            "--stack",
            "x\"\nop = \"y",
        ]);
        let err = crate::plan::parse_with(
            &plan_text(&a),
            Path::new("census.toml"),
            crate::plan::Overrides::default(),
        )
        .expect_err("no such stack");
        assert!(err.to_string().contains("unknown stack"), "{err}");
    }
}
