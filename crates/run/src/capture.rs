//! Packet capture: the frames crossing chosen cables, written as a pcap file.

use crate::faults::{example_names, name_hint};
use crate::sim::Sim;
use crate::ScenarioError;
use fabricsim_engine::Time;
use fabricsim_wire::Packet;

/// A pcap capture being written.
pub(crate) struct Pcap {
    writer: fabricsim_wire::PcapWriter<std::io::BufWriter<std::fs::File>>,
    encode: fabricsim_wire::EncodeConfig,
    error: Option<std::io::Error>,
    frames: u64,
}

impl Pcap {
    /// Writes the frame `pkt` that started onto its wire at `t`; after a write error
    /// nothing more is written and the error is reported at the end.
    pub(crate) fn write(&mut self, t: Time, pkt: &Packet) {
        if self.error.is_none() {
            match self.writer.write_sim_packet(t.ps(), pkt, &self.encode) {
                Ok(()) => self.frames += 1,
                Err(e) => self.error = Some(e),
            }
        }
    }
}

impl Sim {
    /// Captures the frames crossing the cables named in `spec` (comma-separated port,
    /// host or switch names; a node means all its cables) into a pcap file at `path`.
    /// Payloads are cut to `snap` bytes in the file (headers are always whole).
    pub fn capture(&mut self, spec: &str, path: &std::path::Path, snap: u32) -> Result<(), ScenarioError> {
        let mut ports = Vec::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if let Some(p) = self.fabric.port_by_name(name) {
                ports.push(p);
            } else if let Some(n) = self.fabric.node_by_name(name) {
                ports.extend_from_slice(self.fabric.ports_of(n));
            } else {
                return Err(ScenarioError::new(
                    "pcap",
                    format!(
                        "no port or node {} in this topology ({}; names look like {}, or a node such as \"host[0]\")",
                        crate::quoted(name),
                        name_hint(&self.fabric, name),
                        example_names(&self.fabric)
                    ),
                ));
            }
        }
        if ports.is_empty() {
            return Err(ScenarioError::new("pcap", "name at least one port or node to capture"));
        }
        let file = std::fs::File::create(path)
            .map_err(|e| ScenarioError::new("pcap", format!("cannot create {}: {e}", path.display())))?;
        let writer = fabricsim_wire::PcapWriter::new(std::io::BufWriter::new(file), 65_535)
            .map_err(|e| ScenarioError::new("pcap", e.to_string()))?;
        for &p in &ports {
            self.fabric.tap_cable(p);
        }
        for r in &mut self.replicas {
            // Every copy taps the cables; only the one owning a port's node sends on it
            // (see `parallel::Capture`). Tapping makes a lazy port eager, so
            // each copy's cross ports are listed again.
            for &p in &ports {
                r.fabric.tap_cable(p);
            }
            if let Some((owner, me)) = &r.part {
                r.fabric.set_partition(owner, *me);
            }
        }
        let encode = fabricsim_wire::EncodeConfig { payload_snaplen: Some(snap), ..Default::default() };
        self.pcap = Some(Pcap { writer, encode, error: None, frames: 0 });
        Ok(())
    }

    /// Writes frames captured since the last call.
    pub(crate) fn flush_capture(&mut self) {
        let Some(pcap) = &mut self.pcap else { return };
        for (t, _, pkt) in self.fabric.captured.drain(..) {
            pcap.write(t, &pkt);
        }
    }

    /// Finishes the capture: frames written, or the first write error.
    pub fn finish_capture(&mut self) -> Option<Result<u64, String>> {
        self.flush_capture();
        let mut pcap = self.pcap.take()?;
        if let Err(e) = pcap.writer.flush() {
            pcap.error.get_or_insert(e);
        }
        Some(match pcap.error {
            Some(e) => Err(e.to_string()),
            None => Ok(pcap.frames),
        })
    }
}
