//! The scenario parser against generated documents: keys from the schema's catalog (and
//! a few it does not know), values of the right and of the wrong type, hostile strings,
//! huge numbers and nested tables. Whatever the document, the parser must not panic,
//! and every error must name a key and stay short enough to read.
//!
//! Runs in CI with a fixed seed and number of cases (a few seconds);
//! `FABRICSIM_FUZZ_CASES=100000 FABRICSIM_FUZZ_SEED=7 cargo test -p fabricsim-run --test
//! fuzz_scenario` fuzzes longer or elsewhere.

use fabricsim_run::schema::{self, Param, Ty};
use fabricsim_run::Scenario;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use std::sync::LazyLock;
use toml::{Table, Value};

/// Sub-keys of the fabric's tables, named only in their documentation.
const SUB_KEYS: &[&str] =
    &["alpha", "min_xoff", "xon_delta", "kmin", "kmax", "pmax", "last_hop", "threshold", "src", "dst", "size", "start"];

/// The longest error message allowed, characters: quoted values are cut to 64
/// characters, so only the lists of allowed keys make a message long.
const MESSAGE_MAX: usize = 1500;

/// Long strings, made once (a 1 MB `transport.kind` gave a 1 MB error line).
static HUGE: LazyLock<Vec<String>> = LazyLock::new(|| {
    vec!["k".repeat(1 << 20), "1".repeat(5000) + "Gbps", "é\u{200d}".repeat(20_000), "leaf[0].up[".repeat(10_000)]
});

/// Every key of the catalog, once.
fn catalog_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = schema::CATALOG.iter().flat_map(|s| s.params.iter().map(|p| p.key)).collect();
    keys.extend(SUB_KEYS);
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Every choice the catalog lists (kinds, presets' names, algorithms).
fn catalog_choices() -> Vec<&'static str> {
    let mut c: Vec<&'static str> =
        schema::CATALOG.iter().flat_map(|s| s.params.iter().flat_map(|p| p.choices.iter().copied())).collect();
    c.extend(["auto", "none", "all", "hpcc", "paper", "leaf[0].up[0]", "host[0].nic[0]", "spine[0]", "host[99]"]);
    c.sort_unstable();
    c.dedup();
    c
}

fn hostile_string() -> BoxedStrategy<String> {
    let units =
        ["Gbps", "bps", "GBps", "tbps", "us", "µs", "ns", "ps", "s", "ms", "MB", "MiB", "B", "b", "KiB", "", " "];
    prop_oneof![
        4 => prop::sample::select(catalog_choices()).prop_map(str::to_string),
        3 => (any::<f64>(), prop::sample::select(units.to_vec())).prop_map(|(x, u)| format!("{x}{u}")),
        3 => (0u64..100_000, prop::sample::select(units.to_vec())).prop_map(|(x, u)| format!("{x}{u}")),
        1 => (any::<u64>(), prop::sample::select(units.to_vec())).prop_map(|(x, u)| format!("{x}{u}")),
        1 => prop::sample::select(vec![
            "", " ", "1e400Gbps", "nan us", "inf MB", "-0us", "+1us", "0x10MB", "1_000B", "1..2us", "1e-30ps",
            "18446744073709551616B", "99999999999999999999s", "0.4ps", "1.0005KB", "\u{0}", "\"", "\\", "a.b", "[x]",
        ])
        .prop_map(str::to_string),
        2 => "\\PC{0,24}",
        1 => "[\\x00-\\x1f\"\\\\ ]{0,8}",
        1 => (0..HUGE.len()).prop_map(|i| HUGE[i].clone()),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        8 => prop::sample::select(catalog_keys()).prop_map(str::to_string),
        1 => hostile_string(),
    ]
    .boxed()
}

fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => hostile_string().prop_map(Value::String),
        2 => (0i64..200).prop_map(Value::Integer),
        1 => prop::sample::select(vec![-1, i64::MIN, i64::MAX, u32::MAX as i64, u32::MAX as i64 + 1, 1 << 53, 65536])
            .prop_map(Value::Integer),
        1 => any::<i64>().prop_map(Value::Integer),
        1 => prop::sample::select(vec![0.0, -0.0, 0.5, 1.0, 1e308, -1e308, 5e-324, f64::NAN, f64::INFINITY, -1.0])
            .prop_map(Value::Float),
        1 => any::<f64>().prop_map(Value::Float),
        1 => any::<bool>().prop_map(Value::Boolean),
    ]
    .boxed()
}

/// Any value: scalars, arrays and tables nested a few levels.
fn any_value() -> BoxedStrategy<Value> {
    scalar()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(key(), inner, 0..6).prop_map(|m| Value::Table(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A value of the type `p` asks for (mostly of a plausible size), or any value.
fn value_for(p: &'static Param, section: &'static str) -> BoxedStrategy<Value> {
    let right: BoxedStrategy<Value> = match p.ty {
        Ty::Int => prop_oneof![
            4 => (1i64..9).prop_map(Value::Integer),
            1 => prop::sample::select(vec![0, 16, 64, 256, 1024, 4096, 9000]).prop_map(Value::Integer),
            1 => (0i64..100_000).prop_map(Value::Integer),
        ]
        .boxed(),
        Ty::Float => prop_oneof![(0.0f64..1.0).prop_map(Value::Float), (0i64..3).prop_map(Value::Integer)].boxed(),
        Ty::Bool => any::<bool>().prop_map(Value::Boolean).boxed(),
        Ty::Rate => (1u64..800).prop_map(|n| Value::String(format!("{n}Gbps"))).boxed(),
        Ty::Duration => (0u64..2000, prop::sample::select(vec!["ns", "us", "ms"]))
            .prop_map(|(n, u)| Value::String(format!("{n}{u}")))
            .boxed(),
        Ty::Size => prop_oneof![
            (1u64..9000).prop_map(|n| Value::String(format!("{n}KB"))),
            (1i64..1_000_000).prop_map(Value::Integer),
        ]
        .boxed(),
        Ty::Choice => prop::sample::select(p.choices.to_vec()).prop_map(|c| Value::String(c.into())).boxed(),
        Ty::Str => prop_oneof![
            prop::sample::select(vec!["leaf[0].up[0]", "host[1].nic[0]", "spine[0]", "edge[0]", "t1[0]", "x"])
                .prop_map(|s| Value::String(s.into())),
            hostile_string().prop_map(Value::String),
        ]
        .boxed(),
        Ty::Hosts => prop_oneof![
            Just(Value::String("all".into())),
            (0i64..10).prop_map(Value::Integer),
            prop::collection::vec((0i64..10).prop_map(Value::Integer), 0..5).prop_map(Value::Array),
        ]
        .boxed(),
        Ty::Table => {
            let sub = match (section, p.key) {
                ("transport", "dcqcn") => Some("transport.dcqcn"),
                ("workload", "transport") => Some("transport"),
                _ => None,
            };
            prop_oneof![any::<bool>().prop_map(Value::Boolean), section_table(sub)].boxed()
        }
        Ty::List => prop::collection::vec(section_table(None), 0..4).prop_map(Value::Array).boxed(),
        Ty::Names => {
            prop::collection::vec(prop::sample::select(vec!["", "dp", "x"]).prop_map(|s| Value::String(s.into())), 0..3)
                .prop_map(Value::Array)
                .boxed()
        }
    };
    prop_oneof![4 => right, 1 => any_value()].boxed()
}

/// A table of keys of catalog section `section` (all its kinds: some do not apply to
/// the kind chosen), with a few keys of anywhere; `None`: keys of anywhere.
fn section_table(section: Option<&'static str>) -> BoxedStrategy<Value> {
    let params: Vec<&'static Param> = match section {
        Some(s) => schema::CATALOG.iter().filter(|c| c.section == s).flat_map(|c| c.params.iter()).collect(),
        None => Vec::new(),
    };
    let entry = if params.is_empty() {
        (key(), any_value()).boxed()
    } else {
        let section = section.unwrap_or("");
        prop_oneof![
            6 => prop::sample::select(params).prop_flat_map(move |p| (Just(p.key.to_string()), value_for(p, section))),
            1 => (key(), any_value()),
        ]
        .boxed()
    };
    // `kind` first and usually right, so that the parser gets past it.
    let kind = match section.and_then(|s| schema::CATALOG.iter().find(|c| c.section == s && c.kind.is_some())) {
        Some(_) => {
            let kinds: Vec<&'static str> =
                schema::CATALOG.iter().filter(|c| Some(c.section) == section).filter_map(|c| c.kind).collect();
            prop::option::weighted(0.85, prop::sample::select(kinds)).boxed()
        }
        None => Just(None).boxed(),
    };
    (kind, prop::collection::vec(entry, 0..7))
        .prop_map(|(kind, entries)| {
            let mut t = Table::new();
            if let Some(k) = kind {
                t.insert("kind".into(), Value::String(k.into()));
            }
            for (k, v) in entries {
                t.insert(k, v);
            }
            Value::Table(t)
        })
        .boxed()
}

/// A whole document: the top-level keys and sections, each usually present and of the
/// right shape.
fn document() -> impl Strategy<Value = Table> {
    let top: Vec<&'static Param> = schema::TOP.iter().collect();
    let sections = ["topology", "fabric", "transport", "workload", "faults", "output"];
    let parts: Vec<BoxedStrategy<Option<(String, Value)>>> = sections
        .iter()
        .map(|&s| {
            let shape = match s {
                "workload" | "faults" => prop_oneof![
                    section_table(Some(s)),
                    prop::collection::vec(section_table(Some(s)), 0..4).prop_map(Value::Array),
                    any_value(),
                ]
                .boxed(),
                _ => prop_oneof![4 => section_table(Some(s)), 1 => any_value()].boxed(),
            };
            prop::option::weighted(0.85, shape.prop_map(move |v| (s.to_string(), v))).boxed()
        })
        .collect();
    let scalars = prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(top.into_iter().filter(|p| !matches!(p.ty, Ty::Table | Ty::List)).collect::<Vec<_>>())
                .prop_flat_map(|p| (Just(p.key.to_string()), value_for(p, ""))),
            1 => (key(), any_value()),
        ],
        0..4,
    );
    (parts, scalars).prop_map(|(parts, scalars)| {
        let mut t = Table::new();
        for (k, v) in scalars.into_iter().chain(parts.into_iter().flatten()) {
            t.insert(k, v);
        }
        t
    })
}

/// Valid parts that mutations start from: every topology, transport and workload kind.
const TOPOLOGIES: &[&str] = &[
    "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2",
    "kind = \"fat_tree\"\nk = 4",
    "kind = \"multi_plane\"\nplanes = 2\ngroups = 2\nhosts_per_group = 2\nt1_per_plane = 2",
];
const FABRICS: &[&str] =
    &["", "pfc = false\ntrimming = true", "ecn = { kmin = \"40KB\", kmax = \"160KB\", pmax = 0.2 }"];
const WORKLOADS: &[&str] = &[
    "kind = \"permutation\"\nsize = \"1MB\"",
    "kind = \"incast\"\nsenders = 2\nsize = \"1MB\"",
    "kind = \"flows\"\nflows = [{ src = 0, dst = 1, size = 1000 }]",
    "kind = \"all_to_all\"\nsize = \"1KB\"",
    "kind = \"all_reduce\"\nsize = \"1MB\"",
];
const FAULTS: &[&str] = &["", "at = \"1us\"\nkind = \"link_down\"\nlink = \"host[0].nic[0]\""];

/// Where a mutation writes: the top level, a section, or the table in a section.
const TARGETS: &[&str] = &["", "topology", "fabric", "transport", "transport.dcqcn", "workload", "faults", "output"];

fn parse_table(text: &str) -> Table {
    toml::from_str(text).expect("a valid base part")
}

/// A valid scenario made of one of each part.
fn base(t: usize, f: usize, tr: usize, w: usize, fa: usize) -> Table {
    let mut doc = Table::new();
    doc.insert("topology".into(), Value::Table(parse_table(TOPOLOGIES[t])));
    doc.insert("fabric".into(), Value::Table(parse_table(FABRICS[f])));
    let mut transport = Table::new();
    transport.insert("kind".into(), Value::String(schema::TRANSPORT_KINDS[tr].into()));
    doc.insert("transport".into(), Value::Table(transport));
    doc.insert("workload".into(), Value::Table(parse_table(WORKLOADS[w])));
    if !FAULTS[fa].is_empty() {
        doc.insert("faults".into(), Value::Array(vec![Value::Table(parse_table(FAULTS[fa]))]));
    }
    doc
}

/// The table a mutation of `target` writes into, made if missing; None if the document
/// holds something else there (an earlier mutation made it a string, say).
fn target_table<'d>(doc: &'d mut Table, target: &str) -> Option<&'d mut Table> {
    let (section, sub) = match target.split_once('.') {
        Some((s, k)) => (s, Some(k)),
        None => (target, None),
    };
    if section.is_empty() {
        return Some(doc);
    }
    let entry = doc.entry(section.to_string()).or_insert_with(|| match section {
        "faults" => Value::Array(vec![Value::Table(Table::new())]),
        _ => Value::Table(Table::new()),
    });
    let table = match entry {
        Value::Table(t) => t,
        Value::Array(a) => match a.first_mut() {
            Some(Value::Table(t)) => t,
            _ => return None,
        },
        _ => return None,
    };
    match sub {
        None => Some(table),
        Some(k) => {
            let inner = table.entry(k.to_string()).or_insert_with(|| Value::Table(Table::new()));
            if !matches!(inner, Value::Table(_)) {
                *inner = Value::Table(Table::new());
            }
            match inner {
                Value::Table(t) => Some(t),
                _ => None,
            }
        }
    }
}

/// One change: a key of the target's section (any of its kinds) or any key, set to a
/// value of its type or of any type, or removed.
fn mutation() -> BoxedStrategy<(usize, String, Option<Value>)> {
    let params_of = |i: usize| -> Vec<&'static Param> {
        if TARGETS[i].is_empty() {
            return schema::TOP.iter().collect();
        }
        schema::CATALOG.iter().filter(|c| c.section == TARGETS[i]).flat_map(|c| c.params.iter()).collect()
    };
    prop_oneof![
        6 => (0..TARGETS.len()).prop_flat_map(move |i| {
            prop::sample::select(params_of(i)).prop_flat_map(move |p| {
                let section = TARGETS[i].split('.').next().unwrap_or("");
                (Just(i), Just(p.key.to_string()), prop::option::weighted(0.9, value_for(p, section)))
            })
        }),
        1 => (0..TARGETS.len(), key(), prop::option::weighted(0.9, any_value())),
    ]
    .boxed()
}

/// A valid scenario with a few mutations.
fn mutated() -> impl Strategy<Value = Table> {
    let parts =
        (0..TOPOLOGIES.len(), 0..FABRICS.len(), 0..schema::TRANSPORT_KINDS.len(), 0..WORKLOADS.len(), 0..FAULTS.len());
    (parts, prop::collection::vec(mutation(), 0..4)).prop_map(|((t, f, tr, w, fa), changes)| {
        let mut doc = base(t, f, tr, w, fa);
        for (target, key, value) in changes {
            if let Some(table) = target_table(&mut doc, TARGETS[target]) {
                match value {
                    Some(v) => table.insert(key, v),
                    None => table.remove(&key),
                };
            }
        }
        doc
    })
}

/// The first key of an error path: `workload` of `workload[0].size`, `topology` of
/// `topology.k`.
fn head(path: &str) -> &str {
    if path.starts_with('"') {
        return path; // a quoted key: checked by its quotes
    }
    path.split(['.', '[']).next().unwrap_or(path)
}

fn check(doc: &Table, result: Result<Scenario, fabricsim_run::ScenarioError>) -> Result<(), TestCaseError> {
    let Err(e) = result else { return Ok(()) };
    let shown = e.to_string();
    prop_assert!(!e.path.is_empty(), "an error that names no key: {}", shown);
    let h = head(&e.path);
    prop_assert!(
        h.starts_with('"') || doc.contains_key(h) || schema::TOP.iter().any(|p| p.key == h),
        "an error whose path starts with neither a key of the document nor a top-level key: {}",
        shown
    );
    let start: String = shown.chars().take(300).collect();
    prop_assert!(shown.chars().count() <= MESSAGE_MAX, "an error of {} characters: {}...", shown.len(), start);
    prop_assert!(!shown.contains('\n'), "an error over several lines: {}", shown);
    Ok(())
}

fn config() -> Config {
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    Config {
        cases: env("FABRICSIM_FUZZ_CASES", 3000) as u32,
        rng_seed: RngSeed::Fixed(env("FABRICSIM_FUZZ_SEED", 23)),
        // A failure is printed with its document; none is written next to this file.
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Documents as tables (the path of JSON scenarios and dicts) and as TOML text.
    #[test]
    fn the_parser_never_panics_and_every_error_names_a_key(doc in prop_oneof![3 => mutated().boxed(), 1 => document().boxed()]) {
        check(&doc, Scenario::from_value(&Value::Table(doc.clone())))?;
        if let Ok(text) = toml::to_string(&doc) {
            check(&doc, Scenario::from_toml(&text))?;
        }
    }
}
