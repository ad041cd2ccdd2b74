//! Job start-up in secure containers (STELLAR section 5): registering memory for DMA,
//! and the virtual devices the containers get.
//!
//! *Pin-all*: before a VF may DMA, the hypervisor pins every page of the container's
//! memory in the IOMMU, so start-up grows with memory (1.6 TB took about 390 s).
//! *PVDMA*: nothing is pinned at boot; the first DMA touching a 2 MiB block traps to
//! the hypervisor, which pins the block and records it in its map cache; later DMAs to
//! the block hit the cache. Start-up is then the boot plus the blocks the workload
//! touches (charged before the first iteration, where the first touches are). A
//! workload touching more blocks than the map cache holds evicts and re-pins them
//! every iteration (cycling through them, an LRU cache misses every time).
//!
//! The Fig. 5 hazard: PVDMA maps whole 2 MiB blocks, while a virtual device's
//! doorbell is a 4 KiB page mapped for the CPU; a block that covers the doorbell page
//! keeps a stale mapping to the NIC's doorbell once the device is gone, and a later
//! GPU command queue allocated there sends DMA to the NIC. STELLAR maps the doorbell
//! in the virtio shared-memory I/O space, outside guest memory; a doorbell placed in
//! guest memory that a DMA region's blocks cover is refused.
//!
//! Virtual devices: SR-IOV VFs each have their own PCIe function (BDF), and GPU-direct
//! RDMA needs each VF's BDF in the PCIe switch's lookup table: 32 entries per switch on
//! STELLAR's servers, so at most 8 VFs per NIC (4 entries per VF, fabricsim's reading),
//! far below a dense inference server's 100-odd containers. vSTELLAR devices share one
//! BDF (up to 64k per server) and take 1.5 s each to create.

use crate::invalid;
use crate::WorkloadError;
use fabricsim_engine::Dur;

/// PVDMA's block, and the unit regions are pinned in.
pub const BLOCK: u64 = 2 << 20;
/// A doorbell page.
pub const DOORBELL_PAGE: u64 = 4 << 10;

/// How a container's memory is made ready for DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinning {
    /// Not modelled: the job starts at once.
    None,
    /// Every page pinned at boot.
    PinAll,
    /// On-demand pinning in 2 MiB blocks through a map cache.
    Pvdma,
}

/// A container's virtual RDMA device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Not modelled.
    None,
    /// An SR-IOV virtual function.
    Vf,
    /// A vSTELLAR device.
    Vstellar,
}

/// The start-up model of a job's containers, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Startup {
    /// Pinning.
    pub pinning: Pinning,
    /// Device.
    pub device: Device,
    /// Memory of each container, bytes.
    pub memory: u64,
    /// Container boot without pinning.
    pub boot: Dur,
    /// Hypervisor time per GB (10^9 bytes) of memory, pinned or not.
    pub hypervisor_per_gb: Dur,
    /// IOMMU pinning time per GB.
    pub pin_per_gb: Dur,
    /// PVDMA's cost per block beyond pinning it: the trap and the map cache update.
    pub map_miss: Dur,
    /// Blocks the map cache holds.
    pub map_cache: u64,
    /// Time to create a vSTELLAR device.
    pub vstellar_create: Dur,
    /// vSTELLAR devices per host at most.
    pub vstellar_max: u32,
    /// VFs per NIC at most (SR-IOV).
    pub max_vfs: u32,
    /// BDF entries of a PCIe switch's lookup table.
    pub bdfs_per_switch: u32,
    /// Entries a GPU-direct VF takes.
    pub bdfs_per_vf: u32,
    /// Containers per host (`None`: the ranks placed there).
    pub containers_per_host: Option<u32>,
    /// The doorbell's guest-physical address (`None`: the virtio shared-memory space).
    pub doorbell: Option<u64>,
    /// DMA regions `(guest-physical address, bytes)`; empty: the job's buffers, laid
    /// out from 4 GiB.
    pub regions: Vec<(u64, u64)>,
}

impl Default for Startup {
    /// The paper's figures (boot and rates fitted to Fig. 6: 390 s to pin 1.6 TB, PVDMA
    /// under 20 s at every size, 11 s more at 1.6 TB than at 160 GB).
    fn default() -> Startup {
        Startup {
            pinning: Pinning::None,
            device: Device::None,
            memory: 16_000_000_000,
            boot: Dur::from_ms(6_000),
            hypervisor_per_gb: Dur::from_us(7_640),
            pin_per_gb: Dur::from_us(232_000),
            map_miss: Dur::from_us(25),
            map_cache: 65_536,
            vstellar_create: Dur::from_ms(1_500),
            vstellar_max: 65_536,
            max_vfs: 16,
            bdfs_per_switch: 32,
            bdfs_per_vf: 4,
            containers_per_host: None,
            doorbell: None,
            regions: Vec::new(),
        }
    }
}

/// `per_gb` times `bytes`.
fn per_gb(per_gb: Dur, bytes: u64) -> Dur {
    Dur::from_ps((per_gb.ps() as f64 * bytes as f64 / 1e9).round() as u64)
}

/// What start-up costs a rank: before its first iteration, and in every iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// Before the first iteration.
    pub startup: Dur,
    /// Added to every iteration's compute (map cache thrashing).
    pub per_iteration: Dur,
    /// Blocks the workload touches.
    pub blocks: u64,
}

impl Startup {
    /// The DMA regions: the given ones, or `buffers` laid out one after the other from
    /// 4 GiB, each starting on a block boundary.
    pub fn layout(&self, buffers: &[u64]) -> Vec<(u64, u64)> {
        if !self.regions.is_empty() {
            return self.regions.clone();
        }
        let mut at = 4u64 << 30;
        buffers
            .iter()
            .filter(|&&b| b > 0)
            .map(|&b| {
                let r = (at, b);
                at += b.div_ceil(BLOCK) * BLOCK;
                r
            })
            .collect()
    }

    /// The blocks `regions` cover (each block once).
    pub fn blocks(regions: &[(u64, u64)]) -> u64 {
        let mut spans: Vec<(u64, u64)> =
            regions.iter().map(|&(a, n)| (a / BLOCK, (a + n.max(1)).div_ceil(BLOCK))).collect();
        spans.sort_unstable();
        let (mut total, mut end) = (0, 0);
        for (s, e) in spans {
            let s = s.max(end);
            if e > s {
                total += e - s;
            }
            end = end.max(e);
        }
        total
    }

    /// Checks the doorbell against the regions' blocks (the Fig. 5 hazard); `key` is
    /// the startup table's path.
    pub fn check_doorbell(&self, regions: &[(u64, u64)], key: &str) -> Result<(), WorkloadError> {
        let Some(db) = self.doorbell else { return Ok(()) };
        if self.pinning != Pinning::Pvdma {
            return Ok(());
        }
        for (i, &(a, n)) in regions.iter().enumerate() {
            let (lo, hi) = (a / BLOCK * BLOCK, (a + n.max(1)).div_ceil(BLOCK) * BLOCK);
            if db < hi && db + DOORBELL_PAGE > lo {
                return Err(invalid(
                    format!("{key}.doorbell"),
                    format!(
                        "the doorbell page at {db:#x} lies in the 2 MiB block(s) {lo:#x}..{hi:#x} that PVDMA pins for DMA region {i} ({a:#x}, {n} bytes): a stale mapping could send GPU DMA to the NIC's doorbell (STELLAR Fig. 5); map the doorbell in the virtio shared-memory space (doorbell = \"shm\") or move the region"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What a container touching `regions` pays.
    pub fn cost(&self, regions: &[(u64, u64)]) -> Cost {
        let blocks = Startup::blocks(regions);
        let pin_block = per_gb(self.pin_per_gb, BLOCK) + self.map_miss;
        let device = if self.device == Device::Vstellar { self.vstellar_create } else { Dur::ZERO };
        let boot = self.boot + per_gb(self.hypervisor_per_gb, self.memory) + device;
        match self.pinning {
            Pinning::None => Cost { startup: device, per_iteration: Dur::ZERO, blocks },
            Pinning::PinAll => {
                Cost { startup: boot + per_gb(self.pin_per_gb, self.memory), per_iteration: Dur::ZERO, blocks }
            }
            Pinning::Pvdma => {
                let first = blocks.min(self.map_cache);
                // Cycling through more blocks than the cache holds misses on every one.
                let again = if blocks > self.map_cache { pin_block.mul(blocks) } else { Dur::ZERO };
                Cost { startup: boot + pin_block.mul(first), per_iteration: again, blocks }
            }
        }
    }

    /// The most containers a host can give a device of this kind.
    pub fn capacity(&self) -> Option<(u32, String)> {
        match self.device {
            Device::None => None,
            Device::Vf => {
                let lut = self.bdfs_per_switch / self.bdfs_per_vf.max(1);
                Some((
                    self.max_vfs.min(lut),
                    format!(
                        "each has its own VF, and with GPU-direct RDMA a VF takes {} of the PCIe switch's {} BDF entries, so at most {} fit (and the NIC has {} VFs); STELLAR section 3: use device = \"vstellar\" (up to {} devices sharing one BDF)",
                        self.bdfs_per_vf, self.bdfs_per_switch, lut, self.max_vfs, self.vstellar_max
                    ),
                ))
            }
            Device::Vstellar => {
                Some((self.vstellar_max, format!("vSTELLAR supports at most {} devices per host", self.vstellar_max)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pinning: Pinning, gb: u64) -> Startup {
        Startup { pinning, memory: gb * 1_000_000_000, ..Startup::default() }
    }

    #[test]
    fn pin_all_grows_with_memory_and_pvdma_stays_under_20_seconds() {
        let buffers = [1 << 30, 1 << 30, 64 << 20];
        for gb in [16, 160, 1600] {
            let s = model(Pinning::Pvdma, gb);
            let pv = s.cost(&s.layout(&buffers)).startup.as_secs_f64();
            assert!(pv < 20.0, "{gb} GB: {pv} s");
        }
        let s = |p, gb| {
            let m = model(p, gb);
            m.cost(&m.layout(&buffers)).startup.as_secs_f64()
        };
        assert!((s(Pinning::PinAll, 1600) - 390.0).abs() < 1.0, "{}", s(Pinning::PinAll, 1600));
        assert!((s(Pinning::Pvdma, 1600) - s(Pinning::Pvdma, 160) - 11.0).abs() < 0.1);
        let ratio = s(Pinning::PinAll, 1600) / s(Pinning::Pvdma, 1600);
        assert!((15.0..25.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn blocks_are_counted_once_and_a_thrashing_cache_repins_every_iteration() {
        assert_eq!(Startup::blocks(&[(0, 1), (BLOCK - 1, 2), (5 * BLOCK, 3 * BLOCK)]), 2 + 3);
        let s = Startup { pinning: Pinning::Pvdma, map_cache: 4, ..Startup::default() };
        let c = s.cost(&[(0, 10 * BLOCK)]);
        assert_eq!(c.blocks, 10);
        assert!(c.per_iteration > Dur::ZERO);
        let fits = Startup { map_cache: 10, ..s }.cost(&[(0, 10 * BLOCK)]);
        assert_eq!(fits.per_iteration, Dur::ZERO);
        assert!(fits.startup > c.startup);
    }

    #[test]
    fn a_doorbell_inside_a_pinned_block_is_refused() {
        let s = Startup { pinning: Pinning::Pvdma, doorbell: Some(3 * BLOCK + 4096), ..Startup::default() };
        // The Fig. 5 case: a command queue next to the doorbell, in the same 2 MiB block.
        let e = s.check_doorbell(&[(3 * BLOCK + 8192, 64 << 10)], "jobs[0].startup").unwrap_err().to_string();
        assert!(e.starts_with("jobs[0].startup.doorbell: the doorbell page at 0x601000 lies in"), "{e}");
        assert!(s.check_doorbell(&[(4 * BLOCK, BLOCK)], "k").is_ok());
        assert!(Startup { doorbell: None, ..s.clone() }.check_doorbell(&[(3 * BLOCK, 1)], "k").is_ok());
    }

    #[test]
    fn vfs_run_out_where_vstellar_devices_do_not() {
        let vf = Startup { device: Device::Vf, ..Startup::default() };
        assert_eq!(vf.capacity().unwrap().0, 8, "32 BDFs per switch at 4 per VF: the paper's 8 VFs per NIC");
        let v = Startup { device: Device::Vstellar, ..Startup::default() };
        assert_eq!(v.capacity().unwrap().0, 65_536);
        assert_eq!(v.cost(&[]).startup, Dur::from_ms(1500));
    }
}
