//! The protobuf wire format, as much of it as Chakra's records need: varints, the four
//! wire types, packed repeated integers, and length-delimited records one after the
//! other (each preceded by its length as a varint, protobuf's "delimited" stream).
//!
//! Our own few dozen lines rather than a code generator: the wire format is a fixed,
//! documented fact, and the schema we read is small.

/// A field of a message: its number and value.
#[derive(Clone, Debug, PartialEq)]
pub enum Field<'a> {
    /// Wire type 0.
    Varint(u32, u64),
    /// Wire type 1.
    Fixed64(u32, u64),
    /// Wire type 2: bytes, a string, a sub-message or packed numbers.
    Bytes(u32, &'a [u8]),
    /// Wire type 5.
    Fixed32(u32, u32),
}

impl Field<'_> {
    /// Its field number.
    pub fn number(&self) -> u32 {
        match self {
            Field::Varint(n, _) | Field::Fixed64(n, _) | Field::Bytes(n, _) | Field::Fixed32(n, _) => *n,
        }
    }
}

/// Reads a varint at `*pos`.
pub fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos).ok_or("a varint runs past the end")?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a varint longer than 10 bytes".into())
}

/// The fields of one message, in order.
pub fn fields(buf: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (number, wire) = ((key >> 3) as u32, key & 7);
        if number == 0 {
            return Err("a field numbered 0".into());
        }
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], String> {
            let end =
                pos.checked_add(n).filter(|&e| e <= buf.len()).ok_or(format!("field {number} runs past the end"))?;
            let s = &buf[*pos..end];
            *pos = end;
            Ok(s)
        };
        out.push(match wire {
            0 => Field::Varint(number, varint(buf, &mut pos)?),
            1 => Field::Fixed64(number, u64::from_le_bytes(take(&mut pos, 8)?.try_into().expect("8 bytes"))),
            2 => {
                let n = varint(buf, &mut pos)? as usize;
                Field::Bytes(number, take(&mut pos, n)?)
            }
            5 => Field::Fixed32(number, u32::from_le_bytes(take(&mut pos, 4)?.try_into().expect("4 bytes"))),
            w => return Err(format!("field {number} has wire type {w} (groups and unknown types are not read)")),
        });
    }
    Ok(out)
}

/// The values of a packed repeated varint field (or one unpacked value).
pub fn packed(f: &Field<'_>) -> Result<Vec<u64>, String> {
    match f {
        Field::Varint(_, v) => Ok(vec![*v]),
        Field::Bytes(_, b) => {
            let mut pos = 0;
            let mut out = Vec::new();
            while pos < b.len() {
                out.push(varint(b, &mut pos)?);
            }
            Ok(out)
        }
        _ => Err(format!("field {} is not a list of integers", f.number())),
    }
}

/// Splits a delimited stream into its records.
pub fn records(buf: &[u8]) -> Result<Vec<&[u8]>, (usize, String)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let n = varint(buf, &mut pos).map_err(|e| (out.len(), format!("its length: {e}")))? as usize;
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= buf.len())
            .ok_or((out.len(), format!("{n} bytes long, past the end of the file")))?;
        out.push(&buf[pos..end]);
        pos = end;
    }
    Ok(out)
}

/// Writes protobuf messages (for tests and for writing traces).
#[derive(Default)]
pub struct Writer {
    /// The bytes so far.
    pub buf: Vec<u8>,
}

impl Writer {
    /// Appends a varint.
    pub fn raw_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    /// A varint field.
    pub fn varint(&mut self, number: u32, v: u64) {
        self.raw_varint((number as u64) << 3);
        self.raw_varint(v);
    }
    /// A length-delimited field.
    pub fn bytes(&mut self, number: u32, b: &[u8]) {
        self.raw_varint(((number as u64) << 3) | 2);
        self.raw_varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    /// A packed repeated varint field (nothing if empty).
    pub fn packed(&mut self, number: u32, vs: &[u64]) {
        if vs.is_empty() {
            return;
        }
        let mut inner = Writer::default();
        for &v in vs {
            inner.raw_varint(v);
        }
        self.bytes(number, &inner.buf);
    }
    /// Appends `record` preceded by its length (a delimited stream).
    pub fn record(&mut self, record: &[u8]) {
        self.raw_varint(record.len() as u64);
        self.buf.extend_from_slice(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut w = Writer::default();
        w.varint(1, 300);
        w.bytes(2, b"hi");
        w.packed(4, &[1, 200, 70000]);
        let f = fields(&w.buf).unwrap();
        assert_eq!(f[0], Field::Varint(1, 300));
        assert_eq!(f[1], Field::Bytes(2, b"hi"));
        assert_eq!(packed(&f[2]).unwrap(), vec![1, 200, 70000]);
        // 300 is the two bytes of the protobuf documentation's example.
        assert_eq!(&w.buf[1..3], &[0xac, 0x02]);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut w = Writer::default();
        w.bytes(2, b"hello");
        for cut in 0..w.buf.len() {
            let _ = fields(&w.buf[..cut]);
        }
        assert!(fields(&w.buf[..4]).unwrap_err().contains("past the end"));
        let mut s = Writer::default();
        s.record(&w.buf);
        assert_eq!(records(&s.buf).unwrap(), vec![&w.buf[..]]);
        assert!(records(&s.buf[..3]).unwrap_err().1.contains("past the end"));
    }
}
