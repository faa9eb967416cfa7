//! The frame format (README W2, W3): how one record, or the padding at the end of a segment, is
//! laid out in the log.
//!
//! ```text
//! offset 0   u32 LE  length field: bit 31 clear = record, bits 0..31 = body length
//!                                  exactly 0xC000_0008 = sync marker, 8-byte body (W8)
//!                                  bit 31 set otherwise = padding, bits 0..31 = padding length
//!                                  (whole frame)
//! offset 4   u32 LE  CRC-32C over (frame LSN as u64 LE, length field as u32 LE, body)
//! offset 8   body, then zero bytes up to a multiple of 8
//! ```

use swizzledb_sync::Lsn;

/// Bytes of a frame header; also the alignment of every frame (W2).
pub(crate) const HEADER: u64 = 8;

/// Set in the length field of a padding frame.
pub(crate) const PAD_FLAG: u32 = 1 << 31;

/// The whole length field of a sync marker (W8): bits 31 and 30 and a body of 8 bytes. No
/// padding has this field: padding is at most a segment (2^30 bytes) long, and a multiple of 8.
pub(crate) const MARK_FIELD: u32 = PAD_FLAG | (1 << 30) | 8;

/// Bytes of a sync marker frame: the header and the durable LSN it witnesses.
pub(crate) const MARK_LEN: u64 = HEADER + 8;

/// The first LSN of the log: bytes 0..8 of segment 0 hold no frame, so `Lsn(0)` is never a
/// record's LSN (W3).
pub(crate) const FIRST_LSN: u64 = HEADER;

/// `n` rounded up to a multiple of 8.
#[inline]
pub(crate) const fn round8(n: u64) -> u64 {
    (n + 7) & !7
}

/// Bytes a record with a body of `body_len` bytes takes in the log.
#[inline]
pub(crate) const fn frame_len(body_len: usize) -> u64 {
    HEADER + round8(body_len as u64)
}

/// The checksum of a frame at `lsn` with this length field and body (W2): the LSN is covered so
/// that a frame copied, or left over, at another offset never validates.
pub(crate) fn checksum(lsn: u64, len_field: u32, body: &[u8]) -> u32 {
    let mut head = [0u8; 12];
    head[..8].copy_from_slice(&lsn.to_le_bytes());
    head[8..].copy_from_slice(&len_field.to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&head), body)
}

/// The header of a record frame at `lsn`.
pub(crate) fn record_header(lsn: u64, body: &[u8]) -> [u8; 8] {
    let len_field = body_len_field(body.len());
    header_bytes(len_field, checksum(lsn, len_field, body))
}

/// Bytes of room in front of a body given to [`crate::LogManager::append_framed`], which writes
/// the frame's LSN and length field there and checksums them and the body in one pass (W2).
pub const FRAME_ROOM: usize = 12;

/// [`record_header`] for a body that follows [`FRAME_ROOM`] bytes of room in `frame`: the LSN
/// and the length field are written there, so that the checksum reads one run of bytes in one
/// call (the same checksum: CRC-32C continued over a second run equals it over both at once).
pub(crate) fn record_header_in_room(lsn: u64, frame: &mut [u8]) -> [u8; 8] {
    let len_field = body_len_field(frame.len() - FRAME_ROOM);
    frame[..8].copy_from_slice(&lsn.to_le_bytes());
    frame[8..FRAME_ROOM].copy_from_slice(&len_field.to_le_bytes());
    header_bytes(len_field, crc32c::crc32c(frame))
}

fn body_len_field(len: usize) -> u32 {
    let len_field = u32::try_from(len).expect("W2: bodies are checked against max_body first");
    debug_assert_eq!(len_field & PAD_FLAG, 0, "W2: a body length never sets the padding bit");
    len_field
}

/// The header of a padding frame at `lsn` that fills `len` bytes (the header included).
pub(crate) fn pad_header(lsn: u64, len: u64) -> [u8; 8] {
    let len_field = PAD_FLAG | u32::try_from(len).expect("W1: segments are below 2^31 bytes");
    header_bytes(len_field, checksum(lsn, len_field, &[]))
}

/// The sync marker frame at `lsn` saying that every record below `durable` was synced (W8).
pub(crate) fn marker(lsn: u64, durable: u64) -> [u8; MARK_LEN as usize] {
    let body = durable.to_le_bytes();
    let mut m = [0u8; MARK_LEN as usize];
    m[..8].copy_from_slice(&header_bytes(MARK_FIELD, checksum(lsn, MARK_FIELD, &body)));
    m[8..].copy_from_slice(&body);
    m
}

/// The durable LSN a sync marker at `lsn` with this checksum and body witnesses, if the marker
/// is valid: its checksum matches and it claims no more than the position it was written at.
pub(crate) fn marker_durable(lsn: u64, crc: u32, body: &[u8]) -> Option<u64> {
    let durable = u64::from_le_bytes(body.try_into().ok()?);
    (checksum(lsn, MARK_FIELD, body) == crc && durable <= lsn).then_some(durable)
}

fn header_bytes(len_field: u32, crc: u32) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&len_field.to_le_bytes());
    h[4..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// What every ring word of a free place holds (W5): the header word of a padding frame of length
/// zero, which no frame has (padding is at least a header long). A frame's appender overwrites
/// each word of its place and its header last, so the header word at a frame boundary of the
/// ring is either this (not published) or the published frame's header.
pub(crate) const FREE_WORD: u64 = PAD_FLAG as u64;

/// The length of the frame whose header word (the header's 8 bytes as a little-endian u64) is
/// `word`, if `word` could be a published frame's: `None` for [`FREE_WORD`] and for padding
/// of a length no padding has.
#[inline]
pub(crate) fn published_len(word: u64) -> Option<u64> {
    match Header::parse(&word.to_le_bytes()) {
        Header::Record { len, .. } => Some(frame_len(len as usize)),
        Header::Mark { .. } => Some(MARK_LEN),
        Header::Pad { len, .. } => {
            let len = u64::from(len);
            (len >= HEADER && len.is_multiple_of(HEADER)).then_some(len)
        }
    }
}

/// A decoded frame header; the checksum still has to be checked against the body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// A record with a body of `len` bytes.
    Record { len: u32, crc: u32 },
    /// Padding of `len` bytes (header included) up to the end of the segment.
    Pad { len: u32, crc: u32 },
    /// A sync marker: an 8-byte body holding the durable LSN it witnesses (W8).
    Mark { crc: u32 },
}

impl Header {
    /// Splits the 8 header bytes.
    pub(crate) fn parse(bytes: &[u8]) -> Header {
        let len_field = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if len_field & PAD_FLAG == 0 {
            Header::Record { len: len_field, crc }
        } else if len_field == MARK_FIELD {
            Header::Mark { crc }
        } else {
            Header::Pad { len: len_field & !PAD_FLAG, crc }
        }
    }

    /// Whether a padding header at `lsn` carries the right checksum.
    pub(crate) fn pad_is_valid(lsn: u64, len: u32, crc: u32) -> bool {
        checksum(lsn, PAD_FLAG | len, &[]) == crc
    }
}

/// Whether `lsn` could be a record's LSN at all (W3): frames start at multiples of 8, from 8 on.
pub(crate) fn is_aligned(lsn: Lsn) -> bool {
    lsn.0 >= FIRST_LSN && lsn.0.is_multiple_of(HEADER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w2_frame_len_is_header_plus_body_rounded_to_8() {
        assert_eq!(frame_len(0), 8);
        assert_eq!(frame_len(1), 16);
        assert_eq!(frame_len(8), 16);
        assert_eq!(frame_len(9), 24);
        assert_eq!(frame_len(100), 8 + 104);
    }

    #[test]
    fn w2_record_header_round_trips_and_checks_lsn() {
        let body = b"hello log";
        let h = record_header(64, body);
        let Header::Record { len, crc } = Header::parse(&h) else {
            panic!("a record header parses as a record")
        };
        assert_eq!(len as usize, body.len());
        assert_eq!(crc, checksum(64, len, body));
        assert_ne!(crc, checksum(72, len, body), "W2: the same frame at another LSN must not validate");
        assert_ne!(crc, checksum(64, len, b"hello loG"), "a changed body must not validate");
    }

    #[test]
    fn w2_a_header_made_in_room_is_the_header_made_from_the_body() {
        for len in [0, 1, 3, 7, 8, 9, 12, 100, 777, 4096] {
            let body: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            for lsn in [8, 64, 1 << 20, (1 << 40) + 8] {
                let mut frame = vec![0xee; FRAME_ROOM];
                frame.extend_from_slice(&body);
                assert_eq!(record_header_in_room(lsn, &mut frame), record_header(lsn, &body));
                assert_eq!(&frame[FRAME_ROOM..], &body[..], "the body is left as it was");
            }
        }
    }

    #[test]
    fn w2_pad_header_round_trips() {
        let h = pad_header(4000, 96);
        let Header::Pad { len, crc } = Header::parse(&h) else {
            panic!("a padding header parses as padding")
        };
        assert_eq!(len, 96);
        assert!(Header::pad_is_valid(4000, len, crc));
        assert!(!Header::pad_is_valid(4008, len, crc), "W2: padding at another LSN must not validate");
        assert!(!Header::pad_is_valid(4000, 88, crc));
    }

    #[test]
    fn w5_the_free_word_is_no_frames_header_and_every_header_gives_its_frames_length() {
        let word = |h: [u8; 8]| u64::from_le_bytes(h);
        assert_eq!(published_len(FREE_WORD), None, "a free place reads as unpublished");
        assert_eq!(Header::parse(&FREE_WORD.to_le_bytes()), Header::Pad { len: 0, crc: 0 });
        for len in [0, 1, 7, 8, 100, 4096] {
            let body = vec![0xa5; len];
            for lsn in [8, 64, 1 << 20] {
                let h = word(record_header(lsn, &body));
                assert_ne!(h, FREE_WORD);
                assert_eq!(published_len(h), Some(frame_len(len)));
            }
        }
        // An empty record whose checksum is zero has the header word 0: still published.
        assert_eq!(published_len(0), Some(HEADER));
        assert_eq!(published_len(word(pad_header(4000, 96))), Some(96));
        assert_eq!(published_len(word(pad_header(4000, 8))), Some(8));
        assert_eq!(published_len(word(marker(4096, 4000)[..8].try_into().unwrap())), Some(MARK_LEN));
        assert_eq!(published_len(FREE_WORD | 4), None, "padding shorter than a header");
        assert_eq!(published_len(FREE_WORD | 12), None, "padding not a multiple of 8");
    }

    #[test]
    fn w2_all_zero_header_never_validates_at_real_lsns() {
        // A zero-filled hole (file extended but never written) reads as an empty record with
        // checksum 0; the LSN in the checksum makes that invalid.
        for lsn in (8..80_000u64).step_by(8) {
            assert_ne!(checksum(lsn, 0, &[]), 0, "a zero header would validate at LSN {lsn}");
        }
    }

    #[test]
    fn w8_marker_round_trips_and_checks_lsn_and_claim() {
        let m = marker(4096, 4000);
        let Header::Mark { crc } = Header::parse(&m) else { panic!("a marker parses as a marker") };
        assert_eq!(marker_durable(4096, crc, &m[8..]), Some(4000));
        assert_eq!(marker_durable(4104, crc, &m[8..]), None, "W2: a marker at another LSN is invalid");
        let mut body = m[8..].to_vec();
        body[0] ^= 1;
        assert_eq!(marker_durable(4096, crc, &body), None, "a changed claim is invalid");
        let beyond = marker(64, 72);
        let Header::Mark { crc } = Header::parse(&beyond) else { panic!("a marker") };
        assert_eq!(marker_durable(64, crc, &beyond[8..]), None, "a marker never claims beyond itself");
        // The longest padding (a whole 1 GiB segment) is still padding.
        assert!(
            matches!(Header::parse(&pad_header(1 << 30, 1 << 30)), Header::Pad { len, .. } if len == 1 << 30)
        );
    }

    #[test]
    fn w3_alignment() {
        assert!(!is_aligned(Lsn(0)));
        assert!(is_aligned(Lsn(8)));
        assert!(!is_aligned(Lsn(12)));
    }
}
