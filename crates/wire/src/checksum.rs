//! The two checksums a RoCEv2 frame carries: CRC-32 (for the ICRC) and the Internet
//! checksum (for UDP over IPv6).
//!
//! Both are written here rather than taken from a crate: they are a few lines each, and
//! the wire layer stays free of dependencies. The RoCE-specific masking that turns the
//! CRC-32 into an ICRC lives in [`encode`](crate::encode).

/// Lookup table of the reflected CRC-32 polynomial `0xEDB88320`, one entry per byte
/// value, built at compile time.
const CRC32_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Incremental CRC-32 as in IEEE 802.3 and zlib: reflected polynomial `0xEDB88320`,
/// initial value and final XOR `0xFFFFFFFF`.
///
/// Feeding the data in pieces with [`update`](Self::update) gives the same result as
/// [`crc32`] over their concatenation, which lets the ICRC be computed over masked
/// header copies followed by the unmodified rest of the frame.
#[derive(Clone, Copy, Debug)]
pub struct Crc32 {
    state: u32,
}

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32 {
    /// A CRC over no bytes yet.
    pub const fn new() -> Self {
        Crc32 { state: 0xFFFF_FFFF }
    }

    /// Adds `data` to the checksummed bytes.
    pub fn update(&mut self, data: &[u8]) {
        let mut c = self.state;
        for &b in data {
            c = CRC32_TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
        }
        self.state = c;
    }

    /// Adds `n` copies of the byte `b` (payload fill) without materialising them.
    pub fn update_repeat(&mut self, b: u8, n: usize) {
        let mut c = self.state;
        for _ in 0..n {
            c = CRC32_TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
        }
        self.state = c;
    }

    /// The CRC of all bytes added so far.
    pub const fn finish(&self) -> u32 {
        !self.state
    }
}

/// CRC-32 (IEEE 802.3 / zlib) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = Crc32::new();
    c.update(data);
    c.finish()
}

/// Ones'-complement sum of `data` read as big-endian 16-bit words (an odd last byte is
/// padded with zero), added to `acc` and folded to 16 bits.
///
/// The result is not complemented, so sums of several pieces can be combined; pieces
/// other than the last must have even length for the word alignment to hold.
pub fn ones_complement_sum(acc: u32, data: &[u8]) -> u16 {
    let mut sum = acc as u64;
    let mut chunks = data.chunks_exact(2);
    for w in &mut chunks {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// The UDP checksum over IPv6 (RFC 8200 section 8.1) of `segment`, the UDP header and
/// payload exactly as on the wire: the checksum field's current value is skipped.
///
/// The pseudo-header is the source and destination addresses, the UDP length as 32
/// bits, three zero bytes and next-header 17. A computed 0 is returned as `0xFFFF`,
/// because 0 means "no checksum", which IPv6 forbids.
///
/// # Panics
/// If `segment` is shorter than the 8-byte UDP header.
pub fn udp6_checksum(src: &[u8; 16], dst: &[u8; 16], segment: &[u8]) -> u16 {
    let len = segment.len() as u32;
    let mut sum = ones_complement_sum(0, src) as u32;
    sum += ones_complement_sum(0, dst) as u32;
    sum += (len >> 16) + (len & 0xFFFF) + 17;
    sum += ones_complement_sum(0, &segment[..6]) as u32;
    let total = ones_complement_sum(sum, &segment[8..]);
    match !total {
        0 => 0xFFFF,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The catalogue check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn crc32_of_the_masked_lrh_gives_the_kernel_seed() {
        // rxe seeds its ICRC with 0xdebb20e3, the register after 8 bytes of 0xFF;
        // zlib reports the complement.
        assert_eq!(crc32(&[0xFF; 8]), 0x2144_DF1C);
        assert_eq!(!crc32(&[0xFF; 8]), 0xDEBB_20E3);
    }

    #[test]
    fn incremental_crc_equals_one_shot() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let mut c = Crc32::new();
        c.update(&data[..3]);
        c.update(&data[3..500]);
        c.update_repeat(0xAB, 0);
        c.update(&data[500..]);
        assert_eq!(c.finish(), crc32(&data));
        let mut r = Crc32::new();
        r.update(b"x");
        r.update_repeat(0xAB, 7);
        assert_eq!(r.finish(), crc32(b"x\xAB\xAB\xAB\xAB\xAB\xAB\xAB"));
    }

    #[test]
    fn ones_complement_sum_folds_carries_and_pads_odd_bytes() {
        assert_eq!(ones_complement_sum(0, &[0xFF, 0xFF, 0x00, 0x02]), 0x0002);
        assert_eq!(ones_complement_sum(0, &[0x12, 0x34, 0x56]), 0x6834);
        // RFC 1071's example.
        assert_eq!(ones_complement_sum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0xddf2);
    }
}
