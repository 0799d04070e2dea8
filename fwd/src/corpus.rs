//! The external benchmark corpora: ClassBench rule sets with their traces
//! (`classbench/`) and full Internet routing tables (`routing/`).
//!
//! They are not part of the repository. Tests and benchmarks find them through
//! one variable, [`VAR`] (`FWD_DATA`), naming the directory that holds both
//! sub-directories; nothing in the code names a path of one machine. The tests
//! that need them are `#[ignore]`d and named `corpus_*`: the test command
//! (`deploy/test.sh`) runs them explicitly when the data is there and says how
//! many it skipped otherwise. Generated data covers the same code in every run.

use std::path::PathBuf;

/// The one variable: a directory with `classbench/` and `routing/` inside.
pub const VAR: &str = "FWD_DATA";

/// `$FWD_DATA/sub`, or why it is not there.
pub fn dir(sub: &str) -> Result<PathBuf, String> {
    let root = std::env::var_os(VAR).ok_or_else(|| {
        format!("{VAR} is not set: point it at the directory holding classbench/ and routing/")
    })?;
    let d = PathBuf::from(root).join(sub);
    if d.is_dir() {
        Ok(d)
    } else {
        Err(format!("{} is not a directory (from {VAR})", d.display()))
    }
}

/// [`dir`] for a test that was asked to run (`--ignored`): a missing corpus
/// is a failure with the reason, never a silent pass.
#[cfg(test)]
pub(crate) fn require(sub: &str) -> PathBuf {
    dir(sub).unwrap_or_else(|e| panic!("this corpus test needs the data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_named() {
        // Only the error path is checked without touching the environment
        // of other tests: a sub-directory that cannot exist.
        if std::env::var_os(VAR).is_some() {
            let e = dir("no-such-corpus-\u{1}").unwrap_err();
            assert!(e.contains("is not a directory"), "{e}");
        } else {
            assert!(dir("routing").unwrap_err().contains("is not set"));
        }
    }
}
