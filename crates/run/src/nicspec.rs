//! The `[nic]` table: which hosts' NICs are modelled, and with what resources.
//!
//! `model = "ideal"` (the default) processes every packet in no time, as the simulator
//! always did; `model = "rnic"` gives each NIC the resources of
//! [`fabricsim_nic::rnic::NicModel`], each key with its default and source in the
//! catalog ([`crate::schema::NIC`]). `[[nic.groups]]` entries override keys for the
//! hosts they list (a GPU server's NICs beside host-memory clients, say).

use crate::scenario::positive_duration_or;
use crate::schema::{self, parse_float_default, Reader};
use crate::units::{parse_duration, parse_rate, parse_size};
use crate::ScenarioError;
use fabricsim_nic::rnic::{GdrTranslation, Memory, NicModel};
use toml::Value;

/// The NICs of a scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NicSpec {
    /// Every host's NIC unless a group says otherwise (`None`: ideal).
    pub model: Option<NicModel>,
    /// `(hosts, model)` of each group, later groups winning.
    pub groups: Vec<(Vec<u32>, Option<NicModel>)>,
}

impl NicSpec {
    /// The model of host `h`'s NIC (`None`: ideal).
    pub fn model_of(&self, h: u32) -> Option<NicModel> {
        self.groups.iter().rev().find(|(hosts, _)| hosts.contains(&h)).map_or(self.model, |g| g.1)
    }

    /// Every host index a group names, with its key, for checking against the
    /// topology.
    pub fn hosts_named(&self) -> impl Iterator<Item = (String, u32)> + '_ {
        self.groups.iter().enumerate().flat_map(|(g, (hosts, _))| {
            hosts.iter().enumerate().map(move |(i, &h)| (format!("nic.groups[{g}].hosts[{i}]"), h))
        })
    }
}

/// The page sizes a translation may use (STELLAR's 4 KB and the 2 MB huge pages).
const PAGES: [u64; 2] = [4096, 2 << 20];

/// Parses `[nic]`.
pub(crate) fn parse_nic(v: &Value) -> Result<NicSpec, ScenarioError> {
    let mut r = Reader::new("nic", v)?;
    r.documented(&schema::NIC.iter().collect::<Vec<_>>());
    let model = parse_model(&mut r, None)?;
    let mut groups = Vec::new();
    if let Some(g) = r.raw("groups") {
        let Value::Array(list) = g else {
            return Err(r.error("groups", "expected an array of tables ([[nic.groups]])"));
        };
        for (i, t) in list.iter().enumerate() {
            let mut gr = Reader::new(format!("nic.groups[{i}]"), t)?;
            let params: Vec<_> = schema::NIC.iter().filter(|p| p.key != "groups").chain(schema::NIC_GROUP).collect();
            gr.documented(&params);
            let hosts = match gr.raw("hosts") {
                Some(Value::Array(a)) if !a.is_empty() => a
                    .iter()
                    .enumerate()
                    .map(|(k, x)| match x {
                        Value::Integer(h) if *h >= 0 && *h <= u32::MAX as i64 => Ok(*h as u32),
                        _ => Err(ScenarioError::new(
                            &format!("nic.groups[{i}].hosts[{k}]"),
                            "expected a host index (integer >= 0)",
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                _ => return Err(gr.error("hosts", "is required (a list of host indices, e.g. [0, 1])")),
            };
            // A group's keys override the scenario's; `model` alone may make it ideal.
            let own = parse_model(&mut gr, Some(model))?;
            gr.finish(&params)?;
            groups.push((hosts, own));
        }
    }
    r.finish(&schema::NIC.iter().collect::<Vec<_>>())?;
    Ok(NicSpec { model, groups })
}

/// The model a table gives: its keys over `base` (a group's, over the scenario's), or
/// the catalog's defaults.
fn parse_model(r: &mut Reader<'_>, base: Option<Option<NicModel>>) -> Result<Option<NicModel>, ScenarioError> {
    let inherited = base.flatten();
    let kind = match (r.raw_peek("model"), inherited) {
        (None, Some(_)) => "rnic".to_string(),
        (None, None) if base.is_some() => "ideal".to_string(),
        _ => r.choose("model")?,
    };
    // The keys of a modelled NIC's resources: every key of the table but these two.
    let mut keys = schema::NIC.iter().map(|p| p.key).filter(|k| !matches!(*k, "model" | "groups"));
    if kind == "ideal" {
        if let Some(k) = keys.find(|k| r.raw_peek(k).is_some()) {
            // It would be ignored: an ideal NIC has no resources.
            return Err(
                r.error(k, "applies to model = \"rnic\"; this NIC is model = \"ideal\" (no resources modelled)")
            );
        }
        return Ok(None);
    }
    let d = inherited.unwrap_or_else(|| defaults(r));
    let count = |r: &mut Reader<'_>, key: &'static str, current: Option<u32>| {
        none_or(r, key, current, |r| Ok(r.int_or(key, 0, 1, u32::MAX as i64)? as u32))
    };
    let rate = |r: &mut Reader<'_>, key: &'static str, current: Option<f64>| {
        none_or(r, key, current, |r| r.float_or(key, 0.0, 1.0, 1e12))
    };
    let page = match r.size("page_size")? {
        None => d.page,
        Some(p) if PAGES.contains(&p) => p,
        Some(p) => {
            return Err(
                r.error("page_size", format!("must be 4KiB (4096 bytes) or 2MiB (2097152 bytes), got {p} bytes"))
            )
        }
    };
    let memory = match r.raw_peek("memory") {
        None => d.memory,
        Some(_) => match r.choose("memory")?.as_str() {
            "gpu" => Memory::Gpu,
            _ => Memory::Host,
        },
    };
    let gdr = match r.raw_peek("gdr_translation") {
        None => d.gdr,
        Some(_) => match r.choose("gdr_translation")?.as_str() {
            "emtt" => GdrTranslation::Emtt,
            _ => GdrTranslation::Atc,
        },
    };
    let pcie_rate = none_or(r, "pcie_rate", d.pcie_rate, |r| match r.rate("pcie_rate")? {
        Some(x) if x.bps() > 0 => Ok(x),
        _ => Err(r.error("pcie_rate", "must be faster than 0 (or \"none\": unbounded)")),
    })?;
    Ok(Some(NicModel {
        packet_rate: rate(r, "packet_rate", d.packet_rate)?,
        wqe_rate: rate(r, "wqe_rate", d.wqe_rate)?,
        qp_cache: count(r, "qp_cache", d.qp_cache)?,
        qp_fetch: positive_duration_or(r, "qp_fetch", d.qp_fetch)?,
        fetches: count(r, "fetches", Some(d.fetches))?.unwrap_or(u32::MAX),
        mtt_cache: count(r, "mtt_cache", d.mtt_cache)?,
        page,
        memory,
        gdr,
        atc_cache: count(r, "atc_cache", Some(d.atc_cache))?.unwrap_or(u32::MAX),
        atc_miss: positive_duration_or(r, "atc_miss", d.atc_miss)?,
        atc_outstanding: count(r, "atc_outstanding", Some(d.atc_outstanding))?.unwrap_or(u32::MAX),
        iotlb: count(r, "iotlb", d.iotlb)?,
        iotlb_miss: r.duration("iotlb_miss")?.unwrap_or(d.iotlb_miss),
        pcie_rate,
    }))
}

/// A limit that may be the word "none" (unbounded): `current` if the key is absent,
/// `None` for the word, else what `parse` reads.
fn none_or<T>(
    r: &mut Reader<'_>,
    key: &'static str,
    current: Option<T>,
    parse: impl FnOnce(&mut Reader<'_>) -> Result<T, ScenarioError>,
) -> Result<Option<T>, ScenarioError> {
    match r.raw_peek(key) {
        None => Ok(current),
        Some(Value::String(s)) if s == "none" => {
            r.raw(key);
            Ok(None)
        }
        Some(_) => parse(r).map(Some),
    }
}

/// The catalog's defaults of a modelled NIC (one source: [`crate::schema::NIC`]).
fn defaults(r: &Reader<'_>) -> NicModel {
    // A limit whose default is the word "none": unbounded.
    fn limit<T>(r: &Reader<'_>, key: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
        (r.default_text(key) != "none").then(|| r.parsed_default(key, parse))
    }
    let int = |key| limit(r, key, |t| t.parse::<u32>().ok());
    let dur = |key| r.parsed_default(key, |t| parse_duration(t).ok());
    NicModel {
        packet_rate: limit(r, "packet_rate", parse_float_default),
        wqe_rate: limit(r, "wqe_rate", parse_float_default),
        qp_cache: int("qp_cache"),
        qp_fetch: dur("qp_fetch"),
        fetches: int("fetches").unwrap_or(u32::MAX),
        mtt_cache: int("mtt_cache"),
        page: r.parsed_default("page_size", |t| parse_size(t).ok()),
        memory: if r.default_text("memory") == "gpu" { Memory::Gpu } else { Memory::Host },
        gdr: if r.default_text("gdr_translation") == "emtt" { GdrTranslation::Emtt } else { GdrTranslation::Atc },
        atc_cache: int("atc_cache").unwrap_or(u32::MAX),
        atc_miss: dur("atc_miss"),
        atc_outstanding: int("atc_outstanding").unwrap_or(u32::MAX),
        iotlb: int("iotlb"),
        iotlb_miss: dur("iotlb_miss"),
        pcie_rate: limit(r, "pcie_rate", |t| parse_rate(t).ok()),
    }
}
