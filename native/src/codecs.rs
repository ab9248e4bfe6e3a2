//! Decompressing a v2 batch's records section, as groupclient/consumer/codecs.py does.
//!
//! `None` is "not here": an unknown codec, a frame these decoders refuse, or a shape the Python
//! decoders might read differently (trailing bytes after a gzip member, an odd xerial block).
//! The caller then hands the batch to the Python path, which decodes it or raises its own error,
//! so both paths answer malformed input the same way.

use std::io::Read;

pub const GZIP: u16 = 1;
pub const SNAPPY: u16 = 2;
pub const LZ4: u16 = 3;
pub const ZSTD: u16 = 4;

/// The most output a byte of input can give (codecs.py's LZ4_MOST_PER_BYTE and
/// SNAPPY_MOST_PER_BYTE): a frame declaring more is malformed, and is not allocated for.
const LZ4_MOST_PER_BYTE: u64 = 256;
const SNAPPY_MOST_PER_BYTE: u64 = 22;
/// deflate gives at most ~1032 bytes a byte: a trailer size past that is not trusted
const GZIP_MOST_PER_BYTE: u64 = 1032;

/// Kafka's Java producer writes snappy in xerial's block framing: this 8-byte magic, a version
/// and a compat int, then blocks of a 4-byte big-endian length and a raw snappy block.
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: usize = 16;

pub fn decompress(codec: u16, data: &[u8]) -> Option<Vec<u8>> {
    match codec {
        GZIP => gzip(data),
        SNAPPY => snappy(data),
        LZ4 => lz4(data),
        ZSTD => zstd(data),
        _ => None,
    }
}

fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    // Producers write one member: its trailer's last 4 bytes are its size (mod 2**32), and
    // libdeflate inflates it in one call into a buffer of that size (about twice zlib-rs's
    // speed); a size that does not fit, or anything after the member, fails that call
    if let Some(size) = data.len().checked_sub(4).map(|at| u32::from_le_bytes(data[at..].try_into().expect("4 bytes"))) {
        let size = size as usize;
        if size as u64 <= GZIP_MOST_PER_BYTE * data.len() as u64 {
            let mut out = vec![0u8; size];
            if let Ok(written) = libdeflater::Decompressor::new().gzip_decompress(data, &mut out) {
                if written == size {
                    return Some(out);
                }
            }
        }
    }
    // else the first gzip member streamed, as zlib.decompress(data, 16 + MAX_WBITS) reads it
    // (what follows it is ignored there too)
    let mut out = Vec::with_capacity(data.len() * 4);
    flate2::bufread::GzDecoder::new(data).read_to_end(&mut out).ok()?;
    Some(out)
}

fn snappy(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() > XERIAL_HEADER && &data[..8] == XERIAL_MAGIC {
        let blocks = &data[XERIAL_HEADER..];
        let mut out = Vec::new();
        let mut decoder = snap::raw::Decoder::new();
        let mut cursor = 0usize;
        while cursor < blocks.len() {
            let size = i32::from_be_bytes(blocks.get(cursor..cursor + 4)?.try_into().ok()?);
            cursor += 4;
            let size = usize::try_from(size).ok()?;
            let block = blocks.get(cursor..cursor.checked_add(size)?)?;
            out.extend_from_slice(&decoder.decompress_vec(possible_snappy(block)?).ok()?);
            cursor += size;
        }
        return Some(out);
    }
    snap::raw::Decoder::new().decompress_vec(possible_snappy(data)?).ok()
}

/// `block`, unless the length it declares is more than it can hold.
fn possible_snappy(block: &[u8]) -> Option<&[u8]> {
    let declared = snap::raw::decompress_len(block).ok()? as u64;
    (declared <= SNAPPY_MOST_PER_BYTE * block.len() as u64 + 32).then_some(block)
}

fn lz4(data: &[u8]) -> Option<Vec<u8>> {
    // the first frame, as lz4.frame.decompress reads it (what follows it is ignored there too)
    let frame = &data[..lz4_frame_length(data)?];
    let mut out = Vec::with_capacity(data.len() * 3);
    lz4_flex::frame::FrameDecoder::new(frame).read_to_end(&mut out).ok()?;
    Some(out)
}

/// The length of the LZ4 frame at the start of `data`, from its descriptor and block sizes
/// (the blocks are checked by the decoder).
fn lz4_frame_length(data: &[u8]) -> Option<usize> {
    const MAGIC: u32 = 0x184D_2204;
    if u32::from_le_bytes(data.get(..4)?.try_into().ok()?) != MAGIC {
        return None;
    }
    let flags = *data.get(4)?;
    if flags & 0x08 != 0 {
        let declared = u64::from_le_bytes(data.get(6..14)?.try_into().ok()?);
        if declared > LZ4_MOST_PER_BYTE * data.len() as u64 {
            return None;
        }
    }
    let block_checksums = flags & 0x10 != 0;
    let content_size = flags & 0x08 != 0;
    let content_checksum = flags & 0x04 != 0;
    let dictionary_id = flags & 0x01 != 0;
    // magic, FLG, BD, the optional content size and dictionary id, the header checksum
    let mut at = 4 + 2 + if content_size { 8 } else { 0 } + if dictionary_id { 4 } else { 0 } + 1;
    loop {
        let size = u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if size == 0 {
            break; // the end mark
        }
        at = at.checked_add((size & 0x7FFF_FFFF) as usize + if block_checksums { 4 } else { 0 })?;
    }
    if content_checksum {
        at += 4;
    }
    (at <= data.len()).then_some(at)
}

fn zstd(data: &[u8]) -> Option<Vec<u8>> {
    // every frame (producers may write several), without the content size
    zstd::stream::decode_all(data).ok()
}
