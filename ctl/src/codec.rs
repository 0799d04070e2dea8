//! Framing and JSON coding of protocol lines.
//!
//! Contract: one message per line, compact JSON (no newline inside, since
//! serde_json escapes control characters in strings), terminated by `\n`.
//! Readers bound the line length ([`read_line_limited`]) so a peer cannot
//! make the other side buffer without limit; the bound is the reader's
//! choice (the daemon's request bound must admit its largest batch, about
//! 90 bytes per `route_add`).
//!
//! [`ResponseLine`] is (de)serialized by hand: a derived internally tagged
//! or flattened enum would buffer every line into an intermediate tree,
//! and a dump is a million lines.

use std::fmt;
use std::io::{self, BufRead, Write};

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::wire::{
    Change, End, ErrorBody, ErrorKind, Item, Reply, Request, RequestLine, Response, ResponseLine,
};

/// The JSON text of one message, without the newline.
///
/// # Errors
/// Only if a `Serialize` impl fails, which the protocol types never do.
pub fn encode<T: Serialize + ?Sized>(msg: &T) -> serde_json::Result<String> {
    serde_json::to_string(msg)
}

/// Writes one message and its newline (does not flush).
///
/// # Errors
/// The writer's I/O error.
pub fn write_line<W: Write, T: Serialize + ?Sized>(w: &mut W, msg: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *w, msg).map_err(io::Error::from)?;
    w.write_all(b"\n")
}

/// Decodes one line (a trailing `\n` or `\r\n` is fine).
///
/// # Errors
/// A [`ErrorKind::BadRequest`] body whose message is serde's, naming the
/// field or variant and the column.
pub fn decode<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, ErrorBody> {
    serde_json::from_slice(line).map_err(|e| ErrorBody::new(ErrorKind::BadRequest, e.to_string()))
}

/// Decodes a request line for a server. On failure it still recovers the
/// `id` when the line is an object with a numeric `id`, so the error can be
/// addressed to it; otherwise the id is 0.
///
/// # Errors
/// `(id, bad_request error)`.
pub fn decode_request(line: &[u8]) -> Result<RequestLine, (u64, ErrorBody)> {
    decode::<RequestLine>(line).map_err(|e| {
        #[derive(Deserialize)]
        struct IdOnly {
            id: u64,
        }
        // A derived struct also deserializes from a JSON array (`[7]`);
        // only an object names an id.
        let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        let id = if object {
            serde_json::from_slice::<IdOnly>(line).map_or(0, |x| x.id)
        } else {
            0
        };
        (id, e)
    })
}

/// Decodes a line into an owned value (for readers reusing one buffer).
///
/// # Errors
/// As [`decode`].
pub fn decode_owned<T: DeserializeOwned>(line: &[u8]) -> Result<T, ErrorBody> {
    decode(line)
}

/// Outcome of [`read_line_limited`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRead {
    /// `buf` holds one line, without its `\n`.
    Line,
    /// The peer closed the stream before any byte of a new line.
    Eof,
    /// The line exceeded the limit; it was consumed up to and including its
    /// `\n` (or to EOF), so the next read starts at the next line. `buf` is
    /// empty.
    TooLong,
}

/// Reads one `\n`-terminated line into `buf` (cleared first), never
/// holding more than `limit` bytes. A final line without `\n` before EOF
/// counts as a line.
///
/// # Errors
/// The reader's I/O error.
pub fn read_line_limited<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    buf.clear();
    let mut over = false;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(match (any, over) {
                (false, _) => LineRead::Eof,
                (true, true) => LineRead::TooLong,
                (true, false) => LineRead::Line,
            });
        }
        any = true;
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], i + 1),
            None => (avail, avail.len()),
        };
        let found_newline = done > chunk.len();
        if !over {
            if buf.len() + chunk.len() > limit {
                over = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        r.consume(done);
        if found_newline {
            return Ok(if over {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// The JSON of one [`Request`], encoded ahead of sending; only built from
/// typed values ([`EncodedRequest::new`], [`BatchEncoder`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedRequest(Vec<u8>);

impl EncodedRequest {
    /// # Errors
    /// Only if a `Serialize` impl fails, which the protocol types never do.
    pub fn new(req: &Request) -> serde_json::Result<Self> {
        serde_json::to_vec(req).map(EncodedRequest)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Encodes a [`Request::Batch`] one change at a time, byte-identical to
/// encoding the whole request, so a client can encode each change as it
/// parses it instead of holding a million [`Change`]s first.
pub struct BatchEncoder {
    buf: Vec<u8>,
    count: usize,
}

const BATCH_HEAD: &[u8] = b"{\"batch\":{\"changes\":[";
const BATCH_TAIL: &[u8] = b"]}}";

impl Default for BatchEncoder {
    fn default() -> Self {
        BatchEncoder::with_capacity(0)
    }
}

impl BatchEncoder {
    /// With room for about `bytes` of JSON.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.max(BATCH_HEAD.len() + BATCH_TAIL.len()));
        buf.extend_from_slice(BATCH_HEAD);
        BatchEncoder { buf, count: 0 }
    }

    /// Appends one change.
    ///
    /// # Errors
    /// Only if a `Serialize` impl fails, which the protocol types never do.
    pub fn push(&mut self, c: &Change) -> serde_json::Result<()> {
        if self.count > 0 {
            self.buf.push(b',');
        }
        serde_json::to_writer(&mut self.buf, c)?;
        self.count += 1;
        Ok(())
    }

    /// Changes pushed so far.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn finish(mut self) -> EncodedRequest {
        self.buf.extend_from_slice(BATCH_TAIL);
        EncodedRequest(self.buf)
    }
}

// ------------------------------------------------------- ResponseLine serde

impl Serialize for ResponseLine {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("id", &self.id)?;
        match &self.body {
            Reply::Ok(r) => m.serialize_entry("ok", r)?,
            Reply::Error(e) => m.serialize_entry("error", e)?,
            Reply::Item(i) => m.serialize_entry("item", i)?,
            Reply::End(e) => m.serialize_entry("end", e)?,
        }
        m.end()
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Id,
    Ok,
    Error,
    Item,
    End,
}

impl<'de> Deserialize<'de> for ResponseLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResponseLine;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with \"id\" and one of \"ok\", \"error\", \"item\", \"end\"")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResponseLine, A::Error> {
                let mut id = None;
                let mut body = None;
                while let Some(k) = map.next_key::<Key>()? {
                    let b = match k {
                        Key::Id => {
                            if id.is_some() {
                                return Err(de::Error::duplicate_field("id"));
                            }
                            id = Some(map.next_value::<u64>()?);
                            continue;
                        }
                        Key::Ok => Reply::Ok(map.next_value::<Response>()?),
                        Key::Error => Reply::Error(map.next_value::<ErrorBody>()?),
                        Key::Item => Reply::Item(map.next_value::<Item>()?),
                        Key::End => Reply::End(map.next_value::<End>()?),
                    };
                    if body.is_some() {
                        return Err(de::Error::custom("more than one body key"));
                    }
                    body = Some(b);
                }
                Ok(ResponseLine {
                    id: id.ok_or_else(|| de::Error::missing_field("id"))?,
                    body: body.ok_or_else(|| {
                        de::Error::custom("missing body key (ok, error, item or end)")
                    })?,
                })
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read_all(input: &[u8], limit: usize) -> Vec<(LineRead, String)> {
        let mut r = io::BufReader::with_capacity(4, Cursor::new(input.to_vec()));
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let x = read_line_limited(&mut r, &mut buf, limit).unwrap();
            out.push((x, String::from_utf8(buf.clone()).unwrap()));
            if x == LineRead::Eof {
                return out;
            }
        }
    }

    #[test]
    fn lines_are_bounded_and_resync() {
        let got = read_all(b"abc\n0123456789\nxy\nlast", 5);
        assert_eq!(
            got,
            vec![
                (LineRead::Line, "abc".into()),
                (LineRead::TooLong, "".into()),
                (LineRead::Line, "xy".into()),
                (LineRead::Line, "last".into()),
                (LineRead::Eof, "".into()),
            ]
        );
        // Exactly at the limit is fine; an over-long final line without \n
        // is still reported as too long.
        let got = read_all(b"12345\n123456", 5);
        assert_eq!(got[0], (LineRead::Line, "12345".into()));
        assert_eq!(got[1], (LineRead::TooLong, "".into()));
        assert_eq!(read_all(b"", 5), vec![(LineRead::Eof, "".into())]);
        assert_eq!(read_all(b"\n", 5)[0], (LineRead::Line, "".into()));
    }

    #[test]
    fn response_line_rejects_malformed() {
        for bad in [
            r#"{"ok":{"done":{"generation":1,"changes":1}}}"#,
            r#"{"id":1}"#,
            r#"{"id":1,"end":{"count":1},"end":{"count":2}}"#,
            r#"{"id":1,"id":2,"end":{"count":1}}"#,
            r#"{"id":1,"bogus":{}}"#,
            r#"[1]"#,
        ] {
            assert!(decode::<ResponseLine>(bad.as_bytes()).is_err(), "{bad}");
        }
        // Key order does not matter.
        let l: ResponseLine = decode(br#"{"end":{"count":3},"id":9}"#).unwrap();
        assert_eq!(l, ResponseLine::end(9, 3));
    }

    #[test]
    fn batch_encoder_matches_the_whole_request() {
        use crate::wire::{Route, RouteTarget};
        let changes: Vec<Change> = (0..3u8)
            .map(|i| {
                Change::RouteAdd(Route {
                    linkdown: false,
                    proto: None,
                    prefix: format!("10.{i}.0.0/16").parse().unwrap(),
                    table: u32::from(i),
                    target: RouteTarget::Blackhole,
                })
            })
            .collect();
        for n in 0..=changes.len() {
            let mut enc = BatchEncoder::default();
            for c in &changes[..n] {
                enc.push(c).unwrap();
            }
            assert_eq!(enc.len(), n);
            let whole = Request::Batch {
                changes: changes[..n].to_vec(),
            };
            assert_eq!(enc.finish(), EncodedRequest::new(&whole).unwrap());
        }
    }

    #[test]
    fn request_errors_keep_the_id() {
        let (id, e) = decode_request(br#"{"id":42,"request":{"route_ad":{}}}"#).unwrap_err();
        assert_eq!(id, 42);
        assert_eq!(e.kind, ErrorKind::BadRequest);
        assert!(e.message.contains("route_ad"), "{}", e.message);
        let (id, _) = decode_request(b"not json").unwrap_err();
        assert_eq!(id, 0);
    }

    /// Found by the wire_decode fuzz target: an array is not an object
    /// with an id, though serde reads a struct from one.
    #[test]
    fn fuzz_regression_an_array_has_no_id() {
        let (id, _) = decode_request(b"\n[\n\n\n\n7\n ] ").unwrap_err();
        assert_eq!(id, 0);
        let (id, _) = decode_request(b" [7, {}]").unwrap_err();
        assert_eq!(id, 0);
        let (id, _) = decode_request(b" {\"id\":7}").unwrap_err();
        assert_eq!(id, 7);
    }
}
