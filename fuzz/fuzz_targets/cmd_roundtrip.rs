//! The command language's round trip, which `config save` relies on: every
//! change a batch line parses to prints (`Display`) as one line that parses
//! back to the same change; and its JSON round-trips too.
#![no_main]

use ctl::codec;
use ctl::text;
use ctl::wire::Change;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(batch) = text::parse_batch(input) else {
        return;
    };
    for c in &batch.changes {
        let line = c.to_string();
        assert!(!line.contains('\n'), "{line:?}");
        let mut words = Vec::new();
        text::split_words(&line, &mut words);
        let back = text::parse_change(&words)
            .unwrap_or_else(|e| panic!("'{line}' does not parse back: {e}\nfrom {c:?}"));
        assert_eq!(&back, c, "'{line}'");
        let json = codec::encode(c).expect("encode");
        let back: Change = codec::decode_owned(json.as_bytes())
            .unwrap_or_else(|e| panic!("{json} does not decode: {e}"));
        assert_eq!(&back, c, "{json}");
    }
});
