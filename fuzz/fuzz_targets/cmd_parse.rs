//! Any text as `fwdctl` command words and as a batch file: the parser
//! never panics, its errors name a word of the input or a line of the file,
//! and the collecting and streaming batch parsers agree.
#![no_main]

use ctl::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let mut words = Vec::new();
    let first = input.lines().next().unwrap_or("");
    text::split_words(first, &mut words);
    if let Err(e) = text::parse_command(&words) {
        let _ = e.to_string();
    }
    if let Some(w) = words.first() {
        let _ = text::usage(Some(w));
    }

    let lines = input.lines().count();
    match text::parse_batch(input) {
        Ok(batch) => {
            assert_eq!(batch.changes.len(), batch.lines.len());
            assert!(batch.lines.windows(2).all(|w| w[0] < w[1]));
            assert!(batch.lines.iter().all(|&l| l >= 1 && l <= lines));
            let mut n = 0;
            let counted = text::for_each_change(input, |line, c| {
                assert_eq!(Some(&line), batch.lines.get(n));
                assert_eq!(Some(&c), batch.changes.get(n));
                n += 1;
            });
            assert_eq!(counted.ok(), Some(batch.changes.len()));
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
            let _ = e.to_string();
            assert!(text::for_each_change(input, |_, _| {}).is_err());
        }
    }
});
