//! Any bytes as a protocol line, as the daemon and the client read them:
//! the bounded line reader, then decoding as every message type. Nothing
//! panics; a refused request line recovers its id only from a real `id`.
#![no_main]

use std::io::BufReader;

use ctl::codec::{self, LineRead};
use ctl::wire::{Change, HelloLine, HelloReply, ResponseLine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the line bound and the reader's buffer size, so
    // lines straddle buffer refills and the bound.
    let Some((&b, rest)) = data.split_first() else {
        return;
    };
    let limit = usize::from(b & 0x3f) * 4;
    let cap = usize::from(b >> 6) * 7 + 1;
    let mut r = BufReader::with_capacity(cap, rest);
    let mut buf = Vec::new();
    let mut consumed = 0usize;
    loop {
        match codec::read_line_limited(&mut r, &mut buf, limit).expect("a slice reader fails") {
            LineRead::Eof => break,
            LineRead::TooLong => assert!(buf.is_empty()),
            LineRead::Line => {
                assert!(buf.len() <= limit && !buf.contains(&b'\n'));
                consumed += buf.len();
            }
        }
        assert!(consumed <= rest.len());
    }

    match codec::decode_request(rest) {
        Ok(_) => {}
        Err((id, e)) => {
            assert_eq!(e.kind, ctl::ErrorKind::BadRequest);
            // (Skipped fields need not be valid UTF-8 for the id to be
            // recovered, so only a line that is valid JSON is compared.)
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
                if id != 0 {
                    assert_eq!(v.get("id").and_then(|x| x.as_u64()), Some(id), "{v}");
                }
            }
        }
    }
    let _ = codec::decode::<HelloLine>(rest);
    let _ = codec::decode::<HelloReply>(rest);
    let _ = codec::decode::<ResponseLine>(rest);
    let _ = codec::decode::<Change>(rest);
});
