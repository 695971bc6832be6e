//! The case: one point of a sweep, in the seed harness's EquivalenceCase shape.
//!
//! Owns the field set, defaults, derived fields, validation rules, `case_id`,
//! `equivalence_hash` (byte-compatible with the Python harness) and campaign's own `case_key`.
//! Reading and writing seed case JSON lives here too. It knows nothing about plans or stacks.

pub(crate) mod fast;
pub(crate) mod golden;
pub(crate) mod op;

pub use op::Op;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Diagnostic, Error, Result};

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }
        impl $name {
            /// Every accepted spelling, in documentation order.
            pub(crate) const ALL: &'static [&'static str] = &[$($text),+];
            pub(crate) fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(format!("unknown {} `{}` (expected one of: {})",
                        stringify!($name).to_lowercase(), s, Self::ALL.join(", "))),
                }
            }
        }
    };
}

/// The algorithm of a case: a free name (`[a-z][a-z0-9_-]*`, up to 64 characters).
/// `mesh`, `ring` and `twophase` are the ones the built-in `host` stack implements (and the
/// only ones the harness knew); any other name is some stack's own, such as
/// `bidirectional_ring`. Each stack declares which it supports (`variants`); a stack maps a
/// name to its own argument in its command template. Names are interned, so a `Variant` stays
/// `Copy` and compares, orders and hashes by its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant(&'static str);

#[allow(non_upper_case_globals)]
impl Variant {
    pub const Mesh: Variant = Variant("mesh");
    pub const Ring: Variant = Variant("ring");
    pub const Twophase: Variant = Variant("twophase");
    pub const Direct: Variant = Variant("direct");
    pub const Tree: Variant = Variant("tree");
    pub const ScatterAllgather: Variant = Variant("scatter_allgather");
    pub const Pairwise: Variant = Variant("pairwise");
    /// The library's own choice: the variant of a stack that lists no algorithms when a plan
    /// names none, and the name the `mpi` stack gives Open MPI's own choice.
    pub const Default: Variant = Variant("default");
    /// The variants campaign itself implements (the `host` stack), in documentation order;
    /// which of them each op has is [`Op::host_variants`].
    pub(crate) const ALL: &'static [&'static str] = &[
        "mesh",
        "ring",
        "twophase",
        "direct",
        "tree",
        "scatter_allgather",
        "pairwise",
    ];

    pub(crate) fn as_str(self) -> &'static str {
        self.0
    }

    /// Equal texts, answered by the pointer first: interned names are usually the very same
    /// `&str` (the sweep compares a case's variant for every case of a million), and the text
    /// decides otherwise (a constant such as [`Variant::Mesh`] need not share that pointer).
    /// `==` itself stays derived, so the constants work in patterns.
    pub(crate) fn same(self, other: Variant) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }

    /// Is `name` a valid variant name (a lower-case letter, then lower-case letters, digits,
    /// `_` or `-`: Open MPI names algorithms `bruck-k-fanout` and `in-order_binary`)?
    pub(crate) fn valid_name(name: &str) -> bool {
        let mut bytes = name.bytes();
        name.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if let Some(known) = Variant::ALL.iter().find(|k| **k == s) {
            return Ok(Variant(known));
        }
        if !Variant::valid_name(s) {
            return Err(format!(
                "invalid variant `{s}` (a variant is a name of a lower-case letter, then lower-case letters, digits, `_` or `-`; campaign's own are {})",
                Variant::ALL.join(", ")
            ));
        }
        // Interned: a plan names a handful of variants, each leaked once for the process.
        static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(name) = names.iter().find(|n| **n == s) {
            return Ok(Variant(name));
        }
        let name: &'static str = Box::leak(s.to_string().into_boxed_str());
        names.push(name);
        Ok(Variant(name))
    }
}

impl Serialize for Variant {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for Variant {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
string_enum!(
    /// Element type.
    Dtype { Fp32 => "fp32", Fp16 => "fp16", Bf16 => "bf16", Int32 => "int32" }
);
string_enum!(
    /// How a multi-node case lays its ranks over the nodes: `pack` = block order (ranks
    /// 0..K-1 on the first node), `spread` = round-robin (rank r on node r mod N),
    /// `one_per_node` = one rank per node (nodes = p). Meaningless on one node.
    RankPlacement { Pack => "pack", Spread => "spread", OnePerNode => "one_per_node" }
);
impl RankPlacement {
    pub(crate) fn is_pack(&self) -> bool {
        *self == RankPlacement::Pack
    }
}
fn is_one(n: &u32) -> bool {
    *n == 1
}
fn is_zero(n: &u32) -> bool {
    *n == 0
}
fn one() -> u32 {
    1
}
fn pack() -> RankPlacement {
    RankPlacement::Pack
}
string_enum!(
    /// Target platform (`host` is campaign's CPU platform).
    Platform { A2a3 => "a2a3", A2a3sim => "a2a3sim", A5 => "a5", A5sim => "a5sim", Host => "host" }
);

impl Dtype {
    /// Size of one element in bytes (the real size; the old harness used 4 for anything but fp16).
    pub(crate) fn elem_bytes(self) -> u64 {
        match self {
            Dtype::Fp32 | Dtype::Int32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
        }
    }
}

/// The largest `p` a case may have: more ranks than any pool this tool drives, and the bound
/// that keeps per-case work (device ids, leases) small. Documented in docs/plan-format.md.
pub(crate) const MAX_P: u32 = 4096;

/// Most warmup or timed rounds one run may do: every timed round is a sample kept in memory and
/// in the bundle, and a run of more would spin for hours (docs/plan-format.md).
pub(crate) const MAX_ROUNDS: u32 = 100_000;

/// Bounds of the Ascend launch knobs `block_dim` and `aicpu_thread_num` (null = the stack's
/// default): well above any device's core count, low enough that a typo is caught.
pub(crate) const MAX_BLOCK_DIM: i64 = 4096;
pub(crate) const MAX_AICPU_THREADS: i64 = 1024;
/// The largest message a case may have (1 TiB per rank buffer): larger sizes cannot be
/// allocated by any stack, and `count × element size` must not wrap.
pub(crate) const MAX_N_BYTES: u64 = 1 << 40;
/// The longest `case_id`: it names a folder (`cases/<case_id>/`), and file systems refuse
/// names over 255 bytes.
pub(crate) const MAX_CASE_ID_BYTES: usize = 255;

/// Orchestration profiles the seed accepts.
pub(crate) const ORCH_PROFILES: &[&str] = &["mesh_l3_host_domain_v1", "mesh_l3_host_builtin_v1"];
/// Input formulas campaign knows (see `golden.rs`).
pub(crate) const INPUT_FORMULAS: &[&str] = &["rank_linear_v1", "rank_mod16_v1"];
/// Golden definitions campaign knows, one per op (see `golden.rs`).
pub(crate) const GOLDENS: &[&str] = &[
    "allreduce_sum_v1",
    "allgather_concat_v1",
    "reduce_scatter_sum_v1",
    "broadcast_copy_v1",
    "reduce_sum_v1",
    "alltoall_transpose_v1",
];
/// Orchestration tiers.
pub(crate) const ORCH_TIERS: &[&str] = &["logical", "strict_window"];

/// One benchmark case, field names and order as in the seed's EquivalenceCase.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Case {
    /// The collective; allreduce (the seed's only op) is never written, so seed cases stay
    /// byte-identical. See `op.rs` for what `count` and `root` mean per op.
    #[serde(default, skip_serializing_if = "Op::is_allreduce")]
    pub op: Op,
    /// Broadcast's source / reduce's destination rank; `Some` exactly for those ops
    /// ([`Case::normalize_op`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
    pub(crate) variant: Variant,
    pub p: u32,
    pub count: u64,
    pub dtype: Dtype,
    pub(crate) device_ids: Vec<u32>,
    pub platform: Platform,
    pub(crate) runtime: String,
    pub input_formula: String,
    pub(crate) golden: String,
    pub(crate) orch_profile: String,
    pub(crate) orch_tier: String,
    pub(crate) block_dim: Option<i64>,
    pub(crate) aicpu_thread_num: Option<i64>,
    pub core_num: u32,
    pub warmup_rounds: u32,
    pub timed_rounds: u32,
    pub(crate) measure: String,
    /// Nodes the run spans (campaign's own; left out of the JSON, and so of both hashes, on
    /// one node, so every single-node case keeps its seed identity).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nodes: u32,
    /// Ranks on each node (0 on one node; p = nodes × ranks_per_node otherwise).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ranks_per_node: u32,
    /// Rank order over the nodes (only written when not `pack`).
    #[serde(default = "pack", skip_serializing_if = "RankPlacement::is_pack")]
    pub placement: RankPlacement,
}

/// Names of the primary fields, in seed order.
pub(crate) const CASE_FIELDS: &[&str] = &[
    "variant",
    "p",
    "count",
    "dtype",
    "device_ids",
    "platform",
    "runtime",
    "input_formula",
    "golden",
    "orch_profile",
    "orch_tier",
    "block_dim",
    "aicpu_thread_num",
    "core_num",
    "warmup_rounds",
    "timed_rounds",
    "measure",
    "nodes",
    "ranks_per_node",
    "placement",
    // campaign's own, after the seed's: absent from allreduce cases (see `op.rs`).
    "op",
    "root",
];

/// Names of the derived fields, written after the primary ones.
pub(crate) const DERIVED_FIELDS: &[&str] = &[
    "n_bytes",
    "window_nbytes",
    "size_tier",
    "bytes_per_rank_per_round",
];

impl Case {
    /// `case_id` (this case's id) with its variant blanked (`*`): the point of the sweep the
    /// case answers for, the same for every stack whatever its variant (variants belong to
    /// stacks: `plan::variants`), so runs of one point are paired and scheduled together.
    pub(crate) fn point_id(&self, case_id: &str) -> String {
        let prefix = if self.op.is_allreduce() {
            String::new()
        } else {
            format!("{}_", self.op)
        };
        let head = format!("{prefix}{}_", self.variant);
        match case_id.strip_prefix(&head) {
            Some(rest) => format!("{prefix}*_{rest}"),
            None => case_id.to_string(),
        }
    }

    /// A case with every field but the required ones at its seed default.
    pub fn new(variant: Variant, p: u32, count: u64) -> Case {
        Case {
            op: Op::Allreduce,
            root: None,
            variant,
            p,
            count,
            dtype: Dtype::Fp32,
            device_ids: (0..p).collect(),
            platform: Platform::A2a3,
            runtime: "tensormap_and_ringbuffer".into(),
            input_formula: "rank_linear_v1".into(),
            golden: "allreduce_sum_v1".into(),
            orch_profile: "mesh_l3_host_domain_v1".into(),
            orch_tier: "logical".into(),
            block_dim: None,
            aicpu_thread_num: None,
            core_num: 1,
            warmup_rounds: 3,
            timed_rounds: 20,
            measure: "execute_only".into(),
            nodes: 1,
            ranks_per_node: 0,
            placement: RankPlacement::Pack,
        }
    }

    /// Ranks on each node: `ranks_per_node`, or p on one node.
    pub fn ranks_per_node(&self) -> u32 {
        if self.nodes <= 1 {
            self.p
        } else if self.ranks_per_node > 0 {
            self.ranks_per_node
        } else {
            self.p / self.nodes
        }
    }

    /// Complete the node layout of a sweep point: `ranks_per_node` given without `p` makes
    /// p = nodes × ranks_per_node; `one_per_node` without `nodes` makes nodes = p; one node
    /// drops the other layout fields (so the case is the single-node case it always was), more
    /// fill in `ranks_per_node`.
    pub(crate) fn complete_layout(&mut self, p_given: bool, nodes_given: bool) {
        if self.ranks_per_node > 0 && !p_given {
            self.p = self.nodes.saturating_mul(self.ranks_per_node);
        }
        if self.placement == RankPlacement::OnePerNode && !nodes_given {
            self.nodes = self.p;
        }
        if self.nodes <= 1 {
            self.ranks_per_node = 0;
            self.placement = RankPlacement::Pack;
        } else if self.ranks_per_node == 0 {
            self.ranks_per_node = self.p / self.nodes;
        }
    }

    /// Make `root` and `golden` agree with `op`: a rooted op gets root 0 unless one was given,
    /// a rootless op has none (so `[case] root = 1` beside an `op` axis applies where it means
    /// something), and the seed's default golden becomes the op's own. Called once a case's
    /// fields are all set (sweep points, case files).
    pub(crate) fn normalize_op(&mut self) {
        if self.op.has_root() {
            self.root.get_or_insert(0);
        } else {
            self.root = None;
        }
        if self.golden == "allreduce_sum_v1" {
            // In place: for allreduce (most sweeps) the name is already the op's own, and a
            // new String per case was the sweep's one allocation.
            let own = golden::golden_name(self.op);
            if self.golden != own {
                self.golden.clear();
                self.golden.push_str(own);
            }
        }
    }

    /// The variant as report series and tables name it: `ring` for allreduce, `allgather ring`
    /// for another op, so series of different ops never share a line, colour or fit; a case
    /// over several nodes adds its layout (`ring inter-node 2x4`), so inter-node numbers never
    /// share a line with one node's.
    pub(crate) fn series_label(&self) -> String {
        let base = if self.op.is_allreduce() {
            self.variant.to_string()
        } else {
            format!("{} {}", self.op, self.variant)
        };
        match self.layout_label() {
            Some(layout) => format!("{base} {layout}"),
            None => base,
        }
    }

    /// `inter-node 2x4` (nodes x ranks per node) for a case over several nodes, else `None`
    /// (intra-node).
    pub(crate) fn layout_label(&self) -> Option<String> {
        (self.nodes > 1).then(|| format!("inter-node {}x{}", self.nodes, self.ranks_per_node()))
    }

    /// This case with another op (root and golden normalized).
    pub fn with_op(mut self, op: Op) -> Case {
        self.op = op;
        self.normalize_op();
        self
    }

    /// `count * elem_bytes` (saturating: a case over [`MAX_N_BYTES`] is refused by
    /// [`Case::problems`], but nothing may wrap before that check has run).
    pub fn n_bytes(&self) -> u64 {
        self.count.saturating_mul(self.dtype.elem_bytes())
    }

    /// `max(n_bytes, 4096)`.
    pub(crate) fn window_nbytes(&self) -> u64 {
        self.n_bytes().max(4096)
    }

    /// The seed's size tier label by element count.
    pub(crate) fn size_tier(&self) -> &'static str {
        match self.count {
            c if c <= 256 => "1 KiB (overhead)",
            c if c <= 4096 => "16 KiB (L1)",
            c if c <= 65536 => "64-256 KiB (UB/GM)",
            c if c <= 262_144 => "1 MiB (small tensor)",
            _ => "4 MiB+ (medium tensor)",
        }
    }

    /// `n_bytes` for mesh, else `n_bytes // p`.
    pub(crate) fn bytes_per_rank_per_round(&self) -> u64 {
        match self.variant {
            Variant::Mesh => self.n_bytes(),
            _ => self.n_bytes() / u64::from(self.p.max(1)),
        }
    }

    /// `{variant}_p{p}_count{count}_{dtype}_{platform}_d{ids}` plus `_cn{core_num}` when != 1;
    /// other ops than allreduce are prefixed `{op}_`, and a root other than 0 adds `_root{r}`.
    pub fn case_id(&self) -> String {
        let ids: Vec<String> = self.device_ids.iter().map(|d| d.to_string()).collect();
        let mut id = String::new();
        if !self.op.is_allreduce() {
            id.push_str(self.op.as_str());
            id.push('_');
        }
        id += &format!(
            "{}_p{}_count{}_{}_{}_d{}",
            self.variant,
            self.p,
            self.count,
            self.dtype,
            self.platform,
            ids.join("-")
        );
        if self.core_num != 1 {
            id.push_str(&format!("_cn{}", self.core_num));
        }
        if self.nodes != 1 {
            id.push_str(&format!("_n{}", self.nodes));
        }
        if !self.placement.is_pack() {
            id.push('_');
            id.push_str(self.placement.as_str());
        }
        if let Some(root) = self.root.filter(|r| *r != 0) {
            id.push_str(&format!("_root{root}"));
        }
        id
    }

    /// `case_id().len()` without building the id: the check pass asks it of every case of a
    /// sweep (a million-case dry-run spent a quarter of its time formatting ids to measure them).
    fn case_id_len(&self) -> usize {
        fn digits(n: u64) -> usize {
            n.checked_ilog10().map_or(1, |d| d as usize + 1)
        }
        // Digits of all ids: one digit each, plus one for each id at or above 10, 100, …,
        // counted a power at a time until none is left (two vectorized passes for a sweep's
        // `0..p`; a logarithm per id was most of the check pass's time).
        let mut ids = self.device_ids.len();
        let mut bound = 10u64;
        while bound <= u64::from(u32::MAX) {
            let above = (self.device_ids.iter())
                .filter(|&&d| u64::from(d) >= bound)
                .count();
            if above == 0 {
                break;
            }
            ids += above;
            bound *= 10;
        }
        let cn = if self.core_num != 1 {
            "_cn".len() + digits(u64::from(self.core_num))
        } else {
            0
        };
        let nodes = if self.nodes != 1 {
            "_n".len() + digits(u64::from(self.nodes))
        } else {
            0
        };
        let placement = if self.placement.is_pack() {
            0
        } else {
            1 + self.placement.as_str().len()
        };
        let op = if self.op.is_allreduce() {
            0
        } else {
            self.op.as_str().len() + 1
        };
        let root = match self.root.filter(|r| *r != 0) {
            Some(r) => "_root".len() + digits(u64::from(r)),
            None => 0,
        };
        nodes
            + placement
            + op
            + root
            + self.variant.as_str().len()
            + "_p".len()
            + digits(u64::from(self.p))
            + "_count".len()
            + digits(self.count)
            + 1
            + self.dtype.as_str().len()
            + 1
            + self.platform.as_str().len()
            + "_d".len()
            + ids
            + self.device_ids.len().saturating_sub(1)
            + cn
    }

    /// Primary fields then derived ones, in seed order (the case JSON file's content).
    pub(crate) fn to_json(&self) -> Value {
        let mut map = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        map.insert("n_bytes".into(), json!(self.n_bytes()));
        map.insert("window_nbytes".into(), json!(self.window_nbytes()));
        map.insert("size_tier".into(), json!(self.size_tier()));
        map.insert(
            "bytes_per_rank_per_round".into(),
            json!(self.bytes_per_rank_per_round()),
        );
        Value::Object(map)
    }

    /// Pretty JSON with 2-space indent and a trailing newline, as the seed wrote case files.
    pub fn to_pretty_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        text.push('\n');
        text
    }

    /// First 16 hex digits of SHA-256 over Python-style canonical JSON of all fields.
    ///
    /// Results files, manifests and listings ask for the hash of the same case again and again
    /// (every rewrite of `results.json` covers every run so far), so it is computed once per
    /// distinct case and thread: the canonical bytes are written by the allocation-free
    /// [`fast::Hasher`] and looked up in a per-thread memo; only a case not seen yet pays the
    /// SHA-256. The definition is [`Case::equivalence_hash_reference`].
    pub(crate) fn equivalence_hash(&self) -> String {
        fast::memo_equivalence_hash(self)
    }

    /// The definition of [`Case::equivalence_hash`] (serde value, sorted, hashed): what the
    /// fast path is held byte-identical to.
    #[cfg(test)]
    pub(crate) fn equivalence_hash_reference(&self) -> String {
        hash_hex(&canonical_json(&self.to_json()), 16)
    }

    /// campaign's own identity of a case: every field except the round counts, so changing
    /// rounds does not make a case "new" for resume, comparisons and the history (the seed
    /// hash does).
    pub(crate) fn case_key(&self) -> String {
        let mut value = self.to_json();
        if let Value::Object(map) = &mut value {
            map.remove("warmup_rounds");
            map.remove("timed_rounds");
        }
        hash_hex(&canonical_json(&value), 12)
    }

    /// Seed validation rules. Returns every problem as `(field, message)`.
    pub(crate) fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |field: &str, msg: String| out.push((field.to_string(), msg));
        if self.p < 2 {
            bad("p", format!("p must be >= 2, got {}", self.p));
        }
        if self.count == 0 {
            bad("count", "count must be > 0".into());
        }
        if self.p > MAX_P {
            // Nothing else about so many ranks is worth checking (and the id checks would be slow).
            bad(
                "p",
                format!("p = {} is above the maximum of {MAX_P} ranks", self.p),
            );
            return out;
        }
        match self.count.checked_mul(self.dtype.elem_bytes()) {
            Some(n) if n <= MAX_N_BYTES => {}
            _ => bad(
                "count",
                format!(
                    "count = {} of {} is more than the maximum message of {MAX_N_BYTES} bytes (1 TiB); no stack can allocate it",
                    self.count, self.dtype
                ),
            ),
        }
        self.device_id_problems(&mut bad);
        self.vocabulary_problems(&mut bad);
        if self.core_num < 1 {
            bad("core_num", "core_num must be >= 1".into());
        } else if self.core_num > 1 && self.variant != Variant::Mesh {
            bad(
                "core_num",
                format!(
                    "core_num > 1 is only supported for mesh, not {}",
                    self.variant
                ),
            );
        }
        if self.timed_rounds < 1 {
            bad("timed_rounds", "timed_rounds must be >= 1".into());
        }
        self.layout_problems(&mut bad);
        if let Some(msg) = crate::model::case::golden::range_problem(self) {
            bad("dtype", msg);
        }
        out
    }

    /// `device_ids`: exactly p of them, no id twice, and a case_id that fits a folder name.
    fn device_id_problems(&self, bad: &mut impl FnMut(&str, String)) {
        if self.device_ids.len() != self.p as usize {
            bad(
                "device_ids",
                format!(
                    "device_ids has {} entries but p = {} (expected exactly p ids)",
                    self.device_ids.len(),
                    self.p
                ),
            );
        } else {
            let id_len = self.case_id_len();
            if id_len > MAX_CASE_ID_BYTES {
                bad(
                "device_ids",
                format!(
                    "case_id would be {id_len} bytes long (p = {} device ids), more than the {MAX_CASE_ID_BYTES} bytes a folder name may have",
                    self.p
                ),
            );
            }
        }
        // Report each repeated id once. Small lists (every real case) are checked in place with
        // no allocation, since this runs for every case of a sweep; long ones through a sorted
        // copy, so the check never turns quadratic. Increasing ids (a sweep's own `0..p`) hold
        // no id twice, which one pass shows.
        if self.device_ids.windows(2).all(|w| w[0] < w[1]) {
            return;
        }
        if self.device_ids.len() <= 64 {
            for (i, d) in self.device_ids.iter().enumerate() {
                if self.device_ids[..i].iter().filter(|x| *x == d).count() == 1 {
                    bad("device_ids", format!("device id {d} appears twice"));
                }
            }
        } else {
            let mut sorted = self.device_ids.clone();
            sorted.sort_unstable();
            let mut last_reported = None;
            for w in sorted.windows(2) {
                if w[0] == w[1] && last_reported != Some(w[0]) {
                    bad("device_ids", format!("device id {} appears twice", w[0]));
                    last_reported = Some(w[0]);
                }
            }
        }
    }

    /// The named vocabularies: orch_profile (mesh needs a mesh_l3_* one), input_formula, the
    /// op's own fields, golden and orch_tier.
    fn vocabulary_problems(&self, bad: &mut impl FnMut(&str, String)) {
        if !ORCH_PROFILES.contains(&self.orch_profile.as_str()) {
            bad(
                "orch_profile",
                format!(
                    "unknown orch_profile `{}` (expected one of: {})",
                    self.orch_profile,
                    ORCH_PROFILES.join(", ")
                ),
            );
        } else if self.variant == Variant::Mesh && !self.orch_profile.starts_with("mesh_l3_") {
            bad(
                "orch_profile",
                "variant mesh needs a mesh_l3_* profile".into(),
            );
        }
        if !INPUT_FORMULAS.contains(&self.input_formula.as_str()) {
            bad(
                "input_formula",
                format!(
                    "unknown input_formula `{}` (expected one of: {})",
                    self.input_formula,
                    INPUT_FORMULAS.join(", ")
                ),
            );
        }
        self.op_problems(bad);
        if !GOLDENS.contains(&self.golden.as_str()) {
            bad(
                "golden",
                format!(
                    "unknown golden `{}` (expected one of: {})",
                    self.golden,
                    GOLDENS.join(", ")
                ),
            );
        }
        if !ORCH_TIERS.contains(&self.orch_tier.as_str()) {
            bad(
                "orch_tier",
                format!(
                    "unknown orch_tier `{}` (expected one of: {})",
                    self.orch_tier,
                    ORCH_TIERS.join(", ")
                ),
            );
        }
    }

    /// P = nodes × ranks_per_node, and `one_per_node` means nodes = p.
    fn layout_problems(&self, bad: &mut impl FnMut(&str, String)) {
        if self.nodes == 0 {
            bad("nodes", "nodes must be >= 1".into());
            return;
        }
        if self.nodes > 1 && self.ranks_per_node.saturating_mul(self.nodes) != self.p {
            bad(
                "ranks_per_node",
                format!(
                    "p = {} is not nodes × ranks_per_node ({} × {}); expected p = {}",
                    self.p,
                    self.nodes,
                    self.ranks_per_node(),
                    self.nodes.saturating_mul(self.ranks_per_node())
                ),
            );
        }
        if self.placement == RankPlacement::OnePerNode && self.nodes != self.p {
            bad(
                "placement",
                format!(
                    "placement one_per_node needs nodes = p, got nodes = {} and p = {}",
                    self.nodes, self.p
                ),
            );
        }
    }

    /// The op's own rules: equal blocks for the chunked ops, a root inside `0..p`, the op's
    /// golden.
    fn op_problems(&self, bad: &mut impl FnMut(&str, String)) {
        if self.op.chunked() && self.p > 0 && !self.count.is_multiple_of(u64::from(self.p)) {
            bad(
                "count",
                format!(
                    "{} needs count divisible by p (count is the whole buffer, p equal blocks of count / p); count {} is not a multiple of p {}",
                    self.op, self.count, self.p
                ),
            );
        }
        match self.root {
            Some(r) if !self.op.has_root() => bad(
                "root",
                format!(
                    "root = {r} is only for broadcast and reduce, not {}",
                    self.op
                ),
            ),
            Some(r) if r >= self.p => bad(
                "root",
                format!("root = {r} is not a rank of p = {} (0..{})", self.p, self.p),
            ),
            _ => {}
        }
        let own = golden::golden_name(self.op);
        if GOLDENS.contains(&self.golden.as_str()) && self.golden != own {
            bad(
                "golden",
                format!(
                    "golden `{}` is not {}'s; an {} case checks `{own}`",
                    self.golden, self.op, self.op
                ),
            );
        }
    }

    /// Does [`Case::warnings`] have anything to say? The same rule, without formatting a
    /// message (the plan-time check pass asks for every case of a million).
    pub(crate) fn warns(&self) -> bool {
        self.variant != Variant::Mesh
            && !self.op.chunked()
            && self.p > 0
            && !self.count.is_multiple_of(u64::from(self.p))
    }

    /// Seed warnings (not errors): ring/twophase with count not divisible by p.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.warns() {
            out.push(format!(
                "{}: count {} is not divisible by p {}; chunks are uneven",
                self.case_id(),
                self.count,
                self.p
            ));
        }
        out
    }

    /// Build a case from seed JSON: unknown keys ignored, missing fields defaulted, derived keys
    /// recomputed. Type errors and rule violations are reported with the field name.
    pub(crate) fn from_json_value(value: &Value, file: &Path) -> Result<Case> {
        let obj = value
            .as_object()
            .ok_or_else(|| Error::invalid(file, "a case file must hold a JSON object"))?;
        let mut diags = Vec::new();
        let diag = |field: &str, message: String| Diagnostic {
            file: file.to_path_buf(),
            line: None,
            column: None,
            field: Some(field.to_string()),
            message,
            snippet: None,
        };
        let required = |name: &str, diags: &mut Vec<Diagnostic>| -> Option<Value> {
            match obj.get(name) {
                Some(v) => Some(v.clone()),
                None => {
                    diags.push(diag(name, "required field is missing".into()));
                    None
                }
            }
        };
        let variant = required("variant", &mut diags);
        let p = required("p", &mut diags);
        let count = required("count", &mut diags);
        if !diags.is_empty() {
            return Err(Error::Invalid(diags));
        }
        let mut case = Case::new(Variant::Mesh, 2, 1);
        for (field, v) in [("variant", variant), ("p", p), ("count", count)] {
            if let Err(msg) = set_field(&mut case, field, v.as_ref().unwrap_or(&Value::Null)) {
                diags.push(diag(field, msg));
            }
        }
        case.device_ids = (0..case.p).collect();
        for field in CASE_FIELDS.iter().skip(3) {
            if let Some(v) = obj.get(*field) {
                if let Err(msg) = set_field(&mut case, field, v) {
                    diags.push(diag(field, msg));
                }
            }
        }
        if !diags.is_empty() {
            return Err(Error::Invalid(diags));
        }
        case.complete_layout(true, obj.contains_key("nodes"));
        case.normalize_op();
        let problems = case.problems();
        if !problems.is_empty() {
            return Err(Error::Invalid(
                problems.into_iter().map(|(f, m)| diag(&f, m)).collect(),
            ));
        }
        Ok(case)
    }

    /// Read a seed case JSON file.
    pub(crate) fn load(path: &Path) -> Result<Case> {
        let text = crate::model::file::read_regular_text(path, crate::model::file::MAX_INPUT_BYTES)
            .map_err(|e| Error::io(path, e))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            Error::Invalid(vec![Diagnostic {
                file: path.to_path_buf(),
                line: Some(e.line()),
                column: Some(e.column()),
                field: None,
                message: format!("not valid JSON: {e}"),
                snippet: text
                    .lines()
                    .nth(e.line().saturating_sub(1))
                    .map(|l| format!("  | {l}\n  | {}^", " ".repeat(e.column().saturating_sub(1)))),
            }])
        })?;
        Case::from_json_value(&value, path)
    }
}

/// Set one primary field from a JSON value, with a message naming what was expected.
pub(crate) fn set_field(
    case: &mut Case,
    field: &str,
    v: &Value,
) -> std::result::Result<(), String> {
    fn uint(v: &Value, what: &str) -> std::result::Result<u64, String> {
        v.as_u64()
            .ok_or_else(|| format!("expected a non-negative integer for {what}, got {v}"))
    }
    fn u32_of(v: &Value, what: &str) -> std::result::Result<u32, String> {
        let n = uint(v, what)?;
        u32::try_from(n).map_err(|_| format!("{what} = {n} is too large"))
    }
    fn string(v: &Value, what: &str) -> std::result::Result<String, String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("expected a string for {what}, got {v}"))
    }
    fn opt_int(v: &Value, what: &str) -> std::result::Result<Option<i64>, String> {
        if v.is_null() {
            return Ok(None);
        }
        v.as_i64()
            .map(Some)
            .ok_or_else(|| format!("expected an integer or null for {what}, got {v}"))
    }
    fn bounded_opt(
        n: Option<i64>,
        what: &str,
        max: i64,
    ) -> std::result::Result<Option<i64>, String> {
        match n {
            Some(n) if !(1..=max).contains(&n) => Err(format!(
                "{what} = {n}: expected null or an integer between 1 and {max}"
            )),
            n => Ok(n),
        }
    }
    fn rounds(v: &Value, what: &str, min: u64) -> std::result::Result<u32, String> {
        match v.as_u64() {
            Some(n) if (min..=u64::from(MAX_ROUNDS)).contains(&n) => Ok(n as u32),
            _ => Err(format!(
                "{what} = {v}: expected an integer between {min} and {MAX_ROUNDS}"
            )),
        }
    }
    match field {
        "variant" => case.variant = string(v, field)?.parse()?,
        "p" => {
            if v.as_i64().is_some_and(|n| n < 2) {
                return Err(format!("p must be >= 2, got {v}"));
            }
            if v.as_u64().is_some_and(|n| n > u64::from(MAX_P)) {
                return Err(format!("p = {v} is above the maximum of {MAX_P} ranks"));
            }
            case.p = u32_of(v, field)?
        }
        "count" => {
            if v.as_i64().is_some_and(|n| n <= 0) {
                return Err(format!("count must be > 0, got {v}"));
            }
            // The element size is not known yet (dtype may follow); `problems` checks bytes.
            case.count = uint(v, field)?
        }
        "dtype" => case.dtype = string(v, field)?.parse()?,
        "device_ids" => {
            let arr = v
                .as_array()
                .ok_or_else(|| format!("expected a list of device ids, got {v}"))?;
            case.device_ids = arr
                .iter()
                .map(|d| u32_of(d, "a device id"))
                .collect::<std::result::Result<_, _>>()?;
        }
        "platform" => case.platform = string(v, field)?.parse()?,
        "runtime" => case.runtime = string(v, field)?,
        "input_formula" => case.input_formula = string(v, field)?,
        "golden" => case.golden = string(v, field)?,
        "orch_profile" => case.orch_profile = string(v, field)?,
        "orch_tier" => case.orch_tier = string(v, field)?,
        "block_dim" => case.block_dim = bounded_opt(opt_int(v, field)?, field, MAX_BLOCK_DIM)?,
        "aicpu_thread_num" => {
            case.aicpu_thread_num = bounded_opt(opt_int(v, field)?, field, MAX_AICPU_THREADS)?
        }
        "core_num" => {
            if v.as_i64().is_some_and(|n| n < 1) {
                return Err(format!("core_num must be >= 1, got {v}"));
            }
            case.core_num = u32_of(v, field)?
        }
        "warmup_rounds" => case.warmup_rounds = rounds(v, field, 0)?,
        "timed_rounds" => case.timed_rounds = rounds(v, field, 1)?,
        "measure" => case.measure = string(v, field)?,
        "nodes" => case.nodes = layout_count(v, field)?,
        "ranks_per_node" => case.ranks_per_node = layout_count(v, field)?,
        "placement" => case.placement = string(v, field)?.parse()?,
        "op" => case.op = string(v, field)?.parse()?,
        "root" => {
            let r = u32_of(v, field)?;
            if r >= MAX_P {
                return Err(format!("root = {r} is above the maximum of {MAX_P} ranks"));
            }
            case.root = Some(r)
        }
        other => return Err(format!("`{other}` is not a case field")),
    }
    Ok(())
}

/// `nodes` or `ranks_per_node`: at least 1, at most `MAX_P` (their product is p, checked per
/// case; each alone is refused at its line before any product is made).
fn layout_count(v: &Value, field: &str) -> std::result::Result<u32, String> {
    if v.as_i64().is_some_and(|n| n < 1) {
        return Err(format!("{field} must be >= 1, got {v}"));
    }
    if v.as_u64().is_some_and(|n| n > u64::from(MAX_P)) {
        return Err(format!(
            "{field} = {v} is above the maximum of {MAX_P} ranks"
        ));
    }
    (v.as_u64().and_then(|n| u32::try_from(n).ok()))
        .ok_or_else(|| format!("expected a non-negative integer for {field}, got {v}"))
}

/// Python `json.dumps(v, sort_keys=True, separators=(",", ":"))` with its default ASCII escaping.
pub(crate) fn canonical_json(value: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&sorted(value)).unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch.is_ascii() {
            out.push(ch);
        } else {
            let mut buf = [0u16; 2];
            for unit in ch.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// The first `digits` hex digits of SHA-256 over `text`.
fn hash_hex(text: &str, digits: usize) -> String {
    let hex = crate::model::digest::sha256_hex(text.as_bytes(), digits.div_ceil(2));
    hex[..digits].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector_case() -> Case {
        let mut c = Case::new(Variant::Mesh, 2, 256);
        c.warmup_rounds = 3;
        c.timed_rounds = 50;
        c
    }

    #[test]
    fn single_node_cases_keep_their_seed_hash_and_multi_node_ones_differ() {
        let single = vector_case();
        assert_eq!(single.equivalence_hash(), "4ca59d34ec615378");
        assert!(!single.to_pretty_json().contains("nodes"));
        let mut two = vector_case();
        two.nodes = 2;
        two.complete_layout(true, true);
        assert_eq!(two.ranks_per_node, 1);
        assert_eq!(two.case_id(), "mesh_p2_count256_fp32_a2a3_d0-1_n2");
        assert_eq!(two.case_id().len(), two.case_id_len());
        assert_ne!(two.equivalence_hash(), single.equivalence_hash());
        assert_ne!(two.case_key(), single.case_key());
        assert_eq!(two.equivalence_hash(), two.equivalence_hash_reference());
        assert!(two.problems().is_empty(), "{:?}", two.problems());
        two.placement = RankPlacement::Spread;
        assert_eq!(two.case_id(), "mesh_p2_count256_fp32_a2a3_d0-1_n2_spread");
        assert_eq!(two.case_id().len(), two.case_id_len());
        assert_eq!(two.equivalence_hash(), two.equivalence_hash_reference());
        let mut fast = crate::model::case::fast::Hasher::default();
        assert_eq!(fast.case_id(&two), two.case_id());
    }

    #[test]
    fn p_must_be_nodes_times_ranks_per_node() {
        let mut c = Case::new(Variant::Mesh, 6, 256);
        c.nodes = 2;
        c.ranks_per_node = 2;
        let problems = c.problems();
        assert!(
            problems.iter().any(|(f, m)| f == "ranks_per_node"
                && m.contains("p = 6 is not nodes × ranks_per_node (2 × 2)")),
            "{problems:?}"
        );
        // ranks_per_node without p makes p; one_per_node without nodes makes nodes = p.
        let mut c = Case::new(Variant::Mesh, 2, 256);
        c.nodes = 2;
        c.ranks_per_node = 4;
        c.complete_layout(false, true);
        assert_eq!(c.p, 8);
        let mut c = Case::new(Variant::Mesh, 4, 256);
        c.placement = RankPlacement::OnePerNode;
        c.complete_layout(true, false);
        assert_eq!((c.nodes, c.ranks_per_node()), (4, 1));
        assert!(c.problems().is_empty());
        c.nodes = 2;
        c.ranks_per_node = 2;
        assert!(c.problems().iter().any(|(f, _)| f == "placement"));
        // One node drops the layout: the case is the single-node case it always was.
        let mut c = Case::new(Variant::Mesh, 4, 256);
        c.ranks_per_node = 4;
        c.complete_layout(true, false);
        assert_eq!(c, Case::new(Variant::Mesh, 4, 256));
    }

    #[test]
    fn a_repeated_device_id_is_named_once_in_any_order_and_length() {
        let twice = |ids: Vec<u32>| -> Vec<String> {
            let mut c = Case::new(Variant::Ring, ids.len() as u32, 4096);
            c.device_ids = ids;
            (c.problems().into_iter())
                .filter(|(field, _)| field == "device_ids")
                .map(|(_, msg)| msg)
                .collect()
        };
        // Increasing (a sweep's own ids) and shuffled unique ids: nothing to say.
        assert!(twice(vec![0, 1, 2, 3]).is_empty());
        assert!(twice(vec![2, 0, 3, 1]).is_empty());
        // Not increasing because of a repeat, short and long lists alike.
        assert_eq!(twice(vec![0, 1, 1, 2]), ["device id 1 appears twice"]);
        assert_eq!(twice(vec![3, 1, 3, 3]), ["device id 3 appears twice"]);
        let mut long: Vec<u32> = (0..70).collect();
        long[69] = 5;
        long[68] = 5;
        assert_eq!(twice(long), ["device id 5 appears twice"]);
    }

    #[test]
    fn same_variants_are_equal_texts_whatever_their_pointers() {
        let parsed: Variant = "mesh".parse().expect("a variant");
        let own: Variant = "bidirectional_ring".parse().expect("a variant");
        let again: Variant = "bidirectional_ring".parse().expect("a variant");
        // A leaked copy of the same text: another pointer, the same variant.
        let other = Variant(Box::leak(String::from("mesh").into_boxed_str()));
        for (a, b) in [
            (parsed, Variant::Mesh),
            (own, again),
            (other, Variant::Mesh),
        ] {
            assert!(a.same(b) && b.same(a) && a == b, "{a} {b}");
        }
        assert!(!Variant::Mesh.same(Variant::Ring));
        assert!(!own.same(Variant::Ring));
    }

    #[test]
    fn case_id_len_is_the_length_of_case_id() {
        for (p, count, core_num, first) in [
            (2, 0, 1, 0),
            (2, 9, 1, 9),
            (4, 10, 2, 10),
            (8, 4096, 16, 99),
            (32, u64::MAX, 1, 1000),
            (1, 1, 100, u32::MAX - 1),
        ] {
            for variant in [Variant::Mesh, Variant::Ring, Variant::Twophase] {
                let mut c = Case::new(variant, p, count);
                c.core_num = core_num;
                c.dtype = Dtype::Bf16;
                c.device_ids = (0..p).map(|i| first.saturating_add(i)).collect();
                assert_eq!(c.case_id_len(), c.case_id().len(), "{}", c.case_id());
            }
        }
    }

    #[test]
    fn reference_hash_vector() {
        assert_eq!(vector_case().equivalence_hash(), "4ca59d34ec615378");
        assert_eq!(
            vector_case().equivalence_hash_reference(),
            "4ca59d34ec615378"
        );
        // A memo hit (the second call) gives the same digits.
        assert_eq!(vector_case().equivalence_hash(), "4ca59d34ec615378");
    }

    #[test]
    fn reference_case_id() {
        assert_eq!(vector_case().case_id(), "mesh_p2_count256_fp32_a2a3_d0-1");
        let mut c = vector_case();
        c.core_num = 4;
        assert_eq!(c.case_id(), "mesh_p2_count256_fp32_a2a3_d0-1_cn4");
    }

    #[test]
    fn hash_covers_rounds_but_case_key_does_not() {
        let a = vector_case();
        let mut b = vector_case();
        b.timed_rounds = 7;
        assert_ne!(a.equivalence_hash(), b.equivalence_hash());
        assert_eq!(a.case_key(), b.case_key());
    }

    #[test]
    fn derived_fields() {
        let mut c = Case::new(Variant::Ring, 4, 1_048_576);
        c.dtype = Dtype::Bf16;
        assert_eq!(c.n_bytes(), 2 * 1_048_576);
        assert_eq!(c.bytes_per_rank_per_round(), 2 * 1_048_576 / 4);
        assert_eq!(c.size_tier(), "4 MiB+ (medium tensor)");
        let small = Case::new(Variant::Mesh, 2, 16);
        assert_eq!(small.window_nbytes(), 4096);
    }

    #[test]
    fn loads_seed_json_ignoring_unknown_and_derived_keys() {
        let v: Value = serde_json::from_str(
            r#"{"variant":"mesh","p":2,"count":256,"num_sub_workers":4,"n_bytes":999,"warmup_rounds":3,"timed_rounds":50}"#,
        )
        .unwrap();
        let c = Case::from_json_value(&v, Path::new("x.json")).unwrap();
        assert_eq!(c, vector_case());
        assert_eq!(c.to_json()["n_bytes"], json!(1024));
    }

    #[test]
    fn rejects_seed_rule_violations_with_field_names() {
        let v: Value = serde_json::from_str(
            r#"{"variant":"ring","p":3,"count":8,"device_ids":[0,1],"core_num":2}"#,
        )
        .unwrap();
        let err = Case::from_json_value(&v, Path::new("bad.json")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("device_ids"), "{text}");
        assert!(
            text.contains("core_num > 1 is only supported for mesh"),
            "{text}"
        );
        assert_eq!(err.exit_code(), crate::error::exit::BAD_INPUT);
    }

    #[test]
    fn canonical_json_escapes_like_python() {
        assert_eq!(
            canonical_json(&json!({"b": 1, "a": "é"})),
            r#"{"a":"\u00e9","b":1}"#
        );
    }
}
