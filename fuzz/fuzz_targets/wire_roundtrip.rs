//! Whatever a peer's line decodes to encodes to one line that decodes to
//! the same value (decode, encode, decode), for every message type; and a
//! batch encoded change by change is byte-identical to the whole request.
#![no_main]

use std::fmt::Debug;

use ctl::codec::{self, BatchEncoder, EncodedRequest};
use ctl::wire::{Change, HelloLine, HelloReply, Request, RequestLine, ResponseLine};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(line: &[u8]) -> Option<T> {
    let v: T = codec::decode_owned(line).ok()?;
    let text = codec::encode(&v).expect("encode");
    assert!(!text.contains('\n'), "a newline inside a line: {text}");
    let w: T = codec::decode_owned(text.as_bytes())
        .unwrap_or_else(|e| panic!("own encoding refused: {e}: {text}"));
    assert_eq!(v, w, "{text}");
    let mut framed = Vec::new();
    codec::write_line(&mut framed, &v).expect("write to a Vec");
    assert_eq!(framed, format!("{text}\n").into_bytes());
    Some(v)
}

fuzz_target!(|line: &[u8]| {
    if let Some(r) = round_trip::<RequestLine>(line) {
        if let Request::Batch { changes } = &r.request {
            let mut enc = BatchEncoder::default();
            for c in changes {
                enc.push(c).expect("encode a change");
            }
            assert_eq!(enc.len(), changes.len());
            assert_eq!(
                enc.finish(),
                EncodedRequest::new(&r.request).expect("encode")
            );
        }
    }
    round_trip::<ResponseLine>(line);
    round_trip::<HelloLine>(line);
    round_trip::<HelloReply>(line);
    round_trip::<Change>(line);
});
