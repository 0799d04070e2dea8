//! Linear-scan reference classifier: the definition the fast structures are
//! tested against, and a baseline in the benchmark.

use super::chain::MAX_CONTINUE;
use super::compiled::Compiled;
use super::rule::{Key, Rule};

/// Rules sorted by precedence, scanned in order.
#[derive(Clone, Debug)]
pub struct Linear {
    rules: Vec<(Compiled, usize)>,
}

impl Linear {
    /// Index into `rules` of each rule is what [`Linear::classify`] returns.
    pub fn new(rules: &[Rule]) -> Self {
        let mut v: Vec<(u64, Compiled, usize)> = rules
            .iter()
            .enumerate()
            .map(|(i, r)| (r.order(), Compiled::new(&r.matches), i))
            .collect();
        v.sort_by_key(|x| x.0);
        Linear {
            rules: v.into_iter().map(|(_, c, i)| (c, i)).collect(),
        }
    }

    /// Index (in the slice given to `new`) of the first matching rule.
    pub fn classify(&self, k: &Key) -> Option<usize> {
        self.rules.iter().find(|(c, _)| c.matches(k)).map(|x| x.1)
    }
}

/// The definitional reference: minimum `(priority, id)` among rules whose
/// [`super::RuleMatch::matches`] holds.
pub fn first_match<'a>(rules: impl IntoIterator<Item = &'a Rule>, k: &Key) -> Option<&'a Rule> {
    rules
        .into_iter()
        .filter(|r| r.matches.matches(k))
        .min_by_key(|r| r.order())
}

/// The definitional evaluation of `k`: the rules it applies, in precedence
/// order (the matched rules without a verdict, then the first matched rule
/// with one), and whether it was cut at [`MAX_CONTINUE`] rules without a
/// verdict (a further one matched). What [`super::Classifier::chain`] must
/// return.
pub fn effective<'a>(rules: impl IntoIterator<Item = &'a Rule>, k: &Key) -> (Vec<&'a Rule>, bool) {
    let mut matched: Vec<&Rule> = rules.into_iter().filter(|r| r.matches.matches(k)).collect();
    matched.sort_by_key(|r| r.order());
    let mut applied = Vec::new();
    for r in matched {
        if r.has_verdict() {
            applied.push(r);
            return (applied, false);
        }
        if applied.len() == MAX_CONTINUE {
            return (applied, true);
        }
        applied.push(r);
    }
    (applied, false)
}
