//! A stack's `where` constraints: minijinja expressions over a case's fields, compiled once per
//! text and evaluated per case. Pure: no I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use minijinja::{Environment, Expression, UndefinedBehavior};

use crate::model::case::Case;

type Compiled = Arc<Expression<'static, 'static>>;

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(crate::model::limits::FUEL_EXPRESSION));
        env
    })
}

/// Compile `text` (cached: a plan evaluates the same few constraints for every case).
pub(crate) fn compile(text: &str) -> Result<Compiled, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(text) {
        return Ok(c.clone());
    }
    crate::model::limits::check_expression(text)
        .map_err(|why| format!("constraint refused: {why}"))?;
    let expr = env()
        .compile_expression_owned(text.to_string())
        .map_err(|e| format!("constraint `{text}` does not parse: {e}"))?;
    let compiled = Arc::new(expr);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(text.to_string(), compiled.clone());
    Ok(compiled)
}

/// Does `case` satisfy constraint `text`? `Err` names the constraint and what went wrong (a
/// field that is no case field, a type error).
pub(crate) fn holds(text: &str, case: &Case) -> Result<bool, String> {
    let expr = compile(text)?;
    let mut json = case.to_json();
    // Case files leave out what is implied (allreduce's `op`, one node's layout, an op without
    // a root); a constraint may still name any of them, on every case: a name that holds on
    // some cases only would be a skip on the others, not a plan error found at validate.
    if let Some(map) = json.as_object_mut() {
        map.entry("op").or_insert_with(|| case.op.as_str().into());
        map.entry("nodes")
            .or_insert_with(|| case.nodes.max(1).into());
        map.entry("ranks_per_node")
            .or_insert_with(|| case.ranks_per_node().into());
        map.entry("placement")
            .or_insert_with(|| case.placement.as_str().into());
        map.entry("root").or_insert(serde_json::Value::Null);
    }
    let fields = minijinja::Value::from(minijinja::value::Serde(json));
    expr.eval(fields)
        .map(|v| v.is_true())
        .map_err(|e| format!("constraint `{text}` cannot be evaluated: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::case::Variant;

    #[test]
    fn constraints_read_case_fields() {
        let c = |v: &str, p: u32| Case::new(v.parse::<Variant>().unwrap(), p, 256);
        let ibing = "variant != 'ibing' or p == 2";
        assert!(holds(ibing, &c("ibing", 2)).unwrap());
        assert!(!holds(ibing, &c("ibing", 4)).unwrap());
        assert!(holds(ibing, &c("ring", 4)).unwrap());
        let divides = "variant not in ['twophase', 'ring'] or 256 % p == 0";
        assert!(holds(divides, &c("ring", 8)).unwrap());
        assert!(!holds(divides, &c("twophase", 3)).unwrap());
        assert!(holds(divides, &c("onephase", 3)).unwrap());
        assert!(compile("p >").unwrap_err().contains("does not parse"));
        assert!(holds("ranks > 2", &c("ring", 4))
            .unwrap_err()
            .contains("cannot be evaluated"));
    }
}
