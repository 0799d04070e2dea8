//! Minimal classic libpcap files (LINKTYPE_ETHERNET) for tests, benchmarks and the
//! demo generator. Writes little-endian, microsecond resolution; reads either byte
//! order and microsecond or nanosecond resolution (as written by DPDK's net_pcap and
//! tcpdump). pcapng is not supported. Not for the fast path.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Classic pcap magic, microsecond timestamps.
pub const MAGIC_USEC: u32 = 0xa1b2_c3d4;
/// Classic pcap magic, nanosecond timestamps.
pub const MAGIC_NSEC: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snapshot length written in the header, and the largest record accepted on read
/// (a bound so that a corrupt length cannot make the reader allocate gigabytes).
pub const SNAPLEN: u32 = 262_144;

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Streaming writer: a header, then one record per [`Writer::write_frame`].
pub struct Writer<W: Write> {
    out: W,
}

impl<W: Write> Writer<W> {
    /// Writes the file header.
    ///
    /// # Errors
    ///
    /// Any I/O error of `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_USEC.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone, sigfigs: 0
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(Self { out })
    }

    /// Appends one frame with a timestamp in microseconds.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a frame longer than [`SNAPLEN`]; any I/O error of the sink.
    pub fn write_frame(&mut self, ts_usec: u64, frame: &[u8]) -> io::Result<()> {
        self.write_cut(ts_usec, frame, frame.len() as u64)
    }

    /// Appends the first bytes of a frame that was `orig_len` bytes long on
    /// the wire (a capture cut to its snaplen).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for `data` longer than [`SNAPLEN`] or than `orig_len`;
    /// any I/O error of the sink.
    pub fn write_cut(&mut self, ts_usec: u64, data: &[u8], orig_len: u64) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .ok()
            .filter(|&l| l <= SNAPLEN && u64::from(l) <= orig_len)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "frame longer than snaplen or than its wire length",
                )
            })?;
        let orig = u32::try_from(orig_len).unwrap_or(u32::MAX);
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&((ts_usec / 1_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((ts_usec % 1_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&len.to_le_bytes());
        r[12..16].copy_from_slice(&orig.to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(data)
    }

    /// The sink (to take what was written so far out of a `Vec`).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the sink.
    ///
    /// # Errors
    ///
    /// Any I/O error of the flush.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One record read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp in nanoseconds since the epoch.
    pub ts_nsec: u64,
    /// Original length on the wire (>= `data.len()` when the capture was cut).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: Vec<u8>,
}

/// Streaming reader over classic pcap records.
pub struct Reader<R: Read> {
    inp: R,
    big_endian: bool,
    nsec: bool,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the file header.
    ///
    /// # Errors
    ///
    /// `InvalidData` for an unknown magic or a link type other than Ethernet; any I/O
    /// error (`UnexpectedEof` for a file shorter than the header).
    pub fn new(mut inp: R) -> io::Result<Self> {
        let mut h = [0u8; 24];
        inp.read_exact(&mut h)?;
        let magic = [h[0], h[1], h[2], h[3]];
        let (big_endian, nsec) = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic)) {
            (MAGIC_USEC, _) => (false, false),
            (MAGIC_NSEC, _) => (false, true),
            (_, MAGIC_USEC) => (true, false),
            (_, MAGIC_NSEC) => (true, true),
            _ => return Err(invalid("not a classic pcap file (bad magic)")),
        };
        let r = Self {
            inp,
            big_endian,
            nsec,
        };
        if r.u32_at(&h, 20) & 0x0fff_ffff != LINKTYPE_ETHERNET {
            return Err(invalid("pcap link type is not Ethernet"));
        }
        Ok(r)
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    }

    /// The next record, `Ok(None)` at a clean end of file.
    ///
    /// # Errors
    ///
    /// `UnexpectedEof` for a record cut short, `InvalidData` for a record longer than
    /// [`SNAPLEN`], any other I/O error.
    pub fn next_record(&mut self) -> io::Result<Option<Record>> {
        let mut r = [0u8; 16];
        let mut got = 0;
        while got < r.len() {
            match self.inp.read(&mut r[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let sec = u64::from(self.u32_at(&r, 0));
        let frac = u64::from(self.u32_at(&r, 4));
        let incl = self.u32_at(&r, 8);
        let orig_len = self.u32_at(&r, 12);
        if incl > SNAPLEN {
            return Err(invalid("pcap record longer than snaplen"));
        }
        let mut data = vec![0u8; incl as usize];
        self.inp.read_exact(&mut data)?;
        let ts_nsec = sec * 1_000_000_000 + if self.nsec { frac } else { frac * 1000 };
        Ok(Some(Record {
            ts_nsec,
            orig_len,
            data,
        }))
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Writes `frames` to a new file at `path`, timestamps 1 µs apart from 0.
///
/// # Errors
///
/// Any I/O error; `InvalidInput` for a frame longer than [`SNAPLEN`].
pub fn write(path: impl AsRef<Path>, frames: &[Vec<u8>]) -> io::Result<()> {
    let mut w = Writer::new(BufWriter::new(File::create(path)?))?;
    for (i, f) in frames.iter().enumerate() {
        w.write_frame(i as u64, f)?;
    }
    w.finish()?;
    Ok(())
}

/// Reads every frame of the file at `path`.
///
/// # Errors
///
/// Any I/O error; `InvalidData` for a file that is not a classic Ethernet pcap;
/// `UnexpectedEof` for a truncated record.
pub fn read(path: impl AsRef<Path>) -> io::Result<Vec<Vec<u8>>> {
    Reader::new(BufReader::new(File::open(path)?))?
        .map(|r| r.map(|r| r.data))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt::build::{self, FrameSpec};
    use std::net::Ipv4Addr;

    fn frames() -> Vec<Vec<u8>> {
        let spec = FrameSpec::default();
        (0..50u16)
            .map(|i| {
                build::udp4(
                    &spec,
                    Ipv4Addr::new(10, 0, 0, 1),
                    Ipv4Addr::new(10, 0, 1, i as u8),
                    1000 + i,
                    53,
                    &vec![i as u8; usize::from(i) * 7],
                )
            })
            .chain([Vec::new(), vec![0xab]])
            .collect()
    }

    #[test]
    fn write_then_read_round_trips_through_a_file() {
        let dir = std::env::temp_dir().join(format!("fwd-pkt-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rt.pcap");
        let fs = frames();
        write(&path, &fs).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(
            bytes.len(),
            24 + fs.iter().map(|f| 16 + f.len()).sum::<usize>()
        );
        assert_eq!(read(&path).unwrap(), fs);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_frame_keeps_its_wire_length() {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write_cut(7, &[1, 2, 3], 60).unwrap();
        assert!(w.write_cut(7, &[1, 2, 3], 2).is_err());
        let buf = std::mem::take(w.get_mut());
        let recs: Vec<Record> = Reader::new(&buf[..])
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap();
        assert_eq!(
            recs,
            vec![Record {
                ts_nsec: 7000,
                orig_len: 60,
                data: vec![1, 2, 3]
            }]
        );
        assert!(w.get_mut().is_empty());
    }

    #[test]
    fn timestamps_round_trip() {
        let mut w = Writer::new(Vec::new()).unwrap();
        w.write_frame(3_000_042, b"abc").unwrap();
        let buf = w.finish().unwrap();
        let recs: Vec<Record> = Reader::new(&buf[..])
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap();
        assert_eq!(
            recs,
            vec![Record {
                ts_nsec: 3_000_042_000,
                orig_len: 3,
                data: b"abc".to_vec()
            }]
        );
    }

    /// A big-endian nanosecond file, as another tool might write it.
    #[test]
    fn reads_big_endian_nanosecond_files() {
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC_NSEC.to_be_bytes());
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&4u16.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&65535u32.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&7u32.to_be_bytes());
        b.extend_from_slice(&5u32.to_be_bytes());
        b.extend_from_slice(&2u32.to_be_bytes());
        b.extend_from_slice(&60u32.to_be_bytes());
        b.extend_from_slice(&[1, 2]);
        let recs: Vec<Record> = Reader::new(&b[..])
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap();
        assert_eq!(
            recs,
            vec![Record {
                ts_nsec: 7_000_000_005,
                orig_len: 60,
                data: vec![1, 2]
            }]
        );
    }

    #[test]
    fn rejects_bad_files() {
        let good = {
            let mut w = Writer::new(Vec::new()).unwrap();
            w.write_frame(0, &[1, 2, 3, 4]).unwrap();
            w.finish().unwrap()
        };
        // Bad magic.
        let mut bad = good.clone();
        bad[0] ^= 0xff;
        assert_eq!(
            Reader::new(&bad[..]).err().unwrap().kind(),
            io::ErrorKind::InvalidData
        );
        // Not Ethernet.
        let mut bad = good.clone();
        bad[20] = 101;
        assert_eq!(
            Reader::new(&bad[..]).err().unwrap().kind(),
            io::ErrorKind::InvalidData
        );
        // Header cut short.
        assert_eq!(
            Reader::new(&good[..10]).err().unwrap().kind(),
            io::ErrorKind::UnexpectedEof
        );
        // Record cut short, in the record header and in the data.
        for cut in [good.len() - 1, 24 + 5] {
            let mut r = Reader::new(&good[..cut]).unwrap();
            assert_eq!(
                r.next_record().unwrap_err().kind(),
                io::ErrorKind::UnexpectedEof
            );
        }
        // Absurd record length: refused before allocating.
        let mut bad = good.clone();
        bad[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut r = Reader::new(&bad[..]).unwrap();
        assert_eq!(
            r.next_record().unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        // Empty capture.
        let empty = Writer::new(Vec::new()).unwrap().finish().unwrap();
        assert_eq!(Reader::new(&empty[..]).unwrap().count(), 0);
    }
}
