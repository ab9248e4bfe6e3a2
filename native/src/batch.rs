//! Walking a fetch answer's v2 record batches and parsing their records, touching no Python
//! object (so it runs with the interpreter lock released).
//!
//! The reference is groupclient/consumer/records.py (`sections`, `_decode_v2`), field for field.
//! Where the input is anything but well formed (a record running past its batch, a varint of
//! more than ten bytes, a number past 64 bits, a header key that is not UTF-8), the answer is
//! `Err(Fallback)`: the Python path decodes that batch instead and raises what it raises, so the
//! two paths give the same records and the same errors.

use crate::codecs;

pub const HEADER: usize = 61;
const CRC_START: usize = 21;
const MAGIC_AT: usize = 16;
const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_MASK: i16 = 0x08;
const CONTROL_MASK: i16 = 0x20;

/// The batch is the Python path's to decode (see the module doc).
#[derive(Debug)]
pub struct Fallback;

/// A key, value or header value: where it is in the records section, or None (a negative
/// length, kept as the serialized size).
#[derive(Clone, Copy)]
pub struct Span {
    pub start: usize,
    pub len: i64,
}

pub struct Header {
    pub key: std::ops::Range<usize>, // checked UTF-8
    pub value: Span,
}

pub struct Record {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Span,
    pub value: Span,
    /// this record's headers in `Parsed::headers`; None when the record has none (its header
    /// count byte is 0)
    pub headers: Option<std::ops::Range<usize>>,
    pub header_size: i64,
}

/// What the next step of the walk found.
pub enum Step {
    /// the end of the complete batches
    End,
    /// a batch with records (some maybe before the fetch offset: see `Parsed::records`)
    Batch(Parsed),
    /// a batch the Python path decodes: an old message format, a CRC mismatch, an unknown codec,
    /// malformed records
    Python,
    /// (`one` only) a batch without records to hand out: before the fetch offset, or a
    /// transaction marker; the next batch starts at the position given
    Skip(usize),
}

pub struct Parsed {
    pub epoch: i32,
    pub timestamp_type: i64,
    /// the records section (decompressed if it was compressed), which the spans index
    pub section: Section,
    /// the records at or after the fetch offset, in order
    pub records: Vec<Record>,
    pub headers: Vec<Header>,
    /// where the next batch starts
    pub next: usize,
}

pub enum Section {
    /// `buf[start..end]`, uncompressed in the answer itself
    InPlace { start: usize, end: usize },
    Owned(Vec<u8>),
}

impl Section {
    pub fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self {
            Section::InPlace { start, end } => &buf[*start..*end],
            Section::Owned(data) => data,
        }
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The next batch at or after `pos` with records from the fetch offset on, or where the walk
/// ends.  `Step::Batch` with no records is a batch whose records all come before the fetch
/// offset (the Python path yields an empty list for it too).
pub fn step(buf: &[u8], pos: usize, fetch_offset: i64, check_crcs: bool) -> Step {
    let mut pos = pos;
    loop {
        match one(buf, pos, fetch_offset, check_crcs) {
            Step::Skip(next) => pos = next,
            found => return found,
        }
    }
}

/// Where the batch at `pos` ends, without reading it; None where `one` answers End or Python
/// from the same checks (the walk cannot step over it).
pub fn batch_end(buf: &[u8], pos: usize) -> Option<usize> {
    if pos + MAGIC_AT + 1 > buf.len() {
        return None;
    }
    let length = be_i32(buf, pos + 8) as i64;
    let batch_end = pos as i64 + 12 + length;
    if batch_end > buf.len() as i64 || buf[pos + MAGIC_AT] < 2 || length < (HEADER - 12) as i64 {
        return None;
    }
    Some(batch_end as usize)
}

/// The batch at `pos` only: `Step::Skip` for one without records to hand out.
pub fn one(buf: &[u8], pos: usize, fetch_offset: i64, check_crcs: bool) -> Step {
    let end = buf.len();
    {
        if pos + MAGIC_AT + 1 > end {
            return Step::End;
        }
        let base_offset = be_i64(buf, pos);
        let length = be_i32(buf, pos + 8) as i64;
        let batch_end = pos as i64 + 12 + length;
        if batch_end > end as i64 {
            return Step::End; // a partial batch: fetched again next time
        }
        if buf[pos + MAGIC_AT] < 2 || length < (HEADER - 12) as i64 {
            return Step::Python;
        }
        let batch_end = batch_end as usize;
        let epoch = be_i32(buf, pos + 12);
        let crc = be_u32(buf, pos + 17);
        let attributes = be_i16(buf, pos + 21);
        let last_delta = be_i32(buf, pos + 23) as i64;
        let base_ts = be_i64(buf, pos + 27);
        let max_ts = be_i64(buf, pos + 35);
        let count = be_i32(buf, pos + 57);
        let Some(last_offset) = base_offset.checked_add(last_delta) else {
            return Step::Python;
        };
        if last_offset < fetch_offset {
            return Step::Skip(batch_end);
        }
        if check_crcs && crc32c::crc32c(&buf[pos + CRC_START..batch_end]) != crc {
            return Step::Python; // it raises the CRC error, after the batches before it
        }
        if attributes & CONTROL_MASK != 0 {
            return Step::Skip(batch_end); // transaction markers are not records
        }
        let codec = (attributes & COMPRESSION_MASK) as u16;
        let section = if codec == 0 {
            Section::InPlace { start: pos + HEADER, end: batch_end }
        } else {
            match codecs::decompress(codec, &buf[pos + HEADER..batch_end]) {
                Some(data) => Section::Owned(data),
                None => return Step::Python,
            }
        };
        let log_append = attributes & TIMESTAMP_TYPE_MASK != 0;
        let batch = BatchFields { base_offset, base_ts, max_ts, log_append, count, fetch_offset };
        match parse_records(section.bytes(buf), &batch) {
            Ok((records, headers)) => Step::Batch(Parsed {
                epoch,
                timestamp_type: if log_append { 1 } else { 0 },
                section,
                records,
                headers,
                next: batch_end,
            }),
            Err(Fallback) => Step::Python,
        }
    }
}

struct BatchFields {
    base_offset: i64,
    base_ts: i64,
    max_ts: i64,
    log_append: bool,
    count: i32,
    fetch_offset: i64,
}

/// A zigzag varint of at most ten bytes whose value fits 64 bits (Python's arbitrary-precision
/// decoding gives the same number then).
fn varint(b: &[u8], p: &mut usize) -> Result<i64, Fallback> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let byte = *b.get(*p).ok_or(Fallback)?;
        *p += 1;
        if i == 9 && byte > 1 {
            return Err(Fallback);
        }
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte < 0x80 {
            return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
        }
    }
    Err(Fallback)
}

/// A key or value: its length, then its bytes, all within the section.
fn span(b: &[u8], p: &mut usize) -> Result<Span, Fallback> {
    let len = varint(b, p)?;
    let start = *p;
    if len >= 0 {
        let stop = start.checked_add(usize::try_from(len).map_err(|_| Fallback)?).ok_or(Fallback)?;
        if stop > b.len() {
            return Err(Fallback);
        }
        *p = stop;
    }
    Ok(Span { start, len })
}

fn parse_records(b: &[u8], batch: &BatchFields) -> Result<(Vec<Record>, Vec<Header>), Fallback> {
    let count = usize::try_from(batch.count).unwrap_or(0);
    // a count the section cannot hold (a record is at least 7 bytes) is malformed
    if count > b.len() / 7 + 1 {
        return Err(Fallback);
    }
    let mut records = Vec::with_capacity(count);
    let mut headers = Vec::new();
    let mut p = 0usize;
    for _ in 0..count {
        // the record length (not needed: every field is read in turn), then the attributes
        while *b.get(p).ok_or(Fallback)? & 0x80 != 0 {
            p += 1;
        }
        p += 2;
        let ts_delta = varint(b, &mut p)?;
        let offset_delta = varint(b, &mut p)?;
        let key = span(b, &mut p)?;
        let value = span(b, &mut p)?;
        let mut header_size = -1i64;
        let mut range = None;
        if *b.get(p).ok_or(Fallback)? == 0 {
            p += 1; // no headers: the usual case
        } else {
            let header_count = varint(b, &mut p)?;
            header_size = 0;
            let first = headers.len();
            for _ in 0..header_count.max(0) {
                let key_len = varint(b, &mut p)?;
                let key_len = usize::try_from(key_len).map_err(|_| Fallback)?;
                let key_end = p.checked_add(key_len).ok_or(Fallback)?;
                let key_bytes = b.get(p..key_end).ok_or(Fallback)?;
                std::str::from_utf8(key_bytes).map_err(|_| Fallback)?;
                let key = p..key_end;
                p = key_end;
                let value = span(b, &mut p)?;
                header_size = header_size
                    .checked_add(key_len as i64 + value.len.max(0))
                    .ok_or(Fallback)?;
                headers.push(Header { key, value });
            }
            range = Some(first..headers.len());
        }
        let offset = batch.base_offset.checked_add(offset_delta).ok_or(Fallback)?;
        if offset < batch.fetch_offset {
            continue;
        }
        let timestamp = if batch.log_append {
            batch.max_ts
        } else {
            batch.base_ts.checked_add(ts_delta).ok_or(Fallback)?
        };
        records.push(Record { offset, timestamp, key, value, headers: range, header_size });
    }
    Ok((records, headers))
}
