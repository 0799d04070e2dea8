//! Evaluation past rules without a verdict: the list of rules a packet's
//! classification applies.
//!
//! The first lookup ([`Classifier::classify`] / [`Classifier::classify_burst`])
//! finds the best matching rule. When that rule has a verdict (the common
//! case, and every case in a rule set without count / mirror / set-dscp /
//! mark-only rules) it is the whole result. Otherwise [`Classifier::chain`]
//! continues with [`Classifier::classify_after`] until a rule with a verdict
//! matches, no rule matches (default permit), or [`MAX_CONTINUE`] rules
//! without a verdict have been taken and one more would follow (cut: the
//! caller drops the packet, `acl_chain_cut`: a firewall fails closed, so
//! stacking rules without a verdict can never open a gap above a drop).

use super::rule::Key;
use super::{Classifier, RuleEntry};

/// Most rules without a verdict one packet's evaluation applies. It bounds
/// an evaluation at `MAX_CONTINUE + 1` lookups (the first, then one
/// [`Classifier::classify_after`] per rule without a verdict), whatever
/// the rule set.
pub const MAX_CONTINUE: usize = 8;

/// The rules one packet's evaluation applies, in precedence order: the
/// matched rules without a verdict, then the deciding rule if one matched
/// within the bound. Fixed size, on the stack.
#[derive(Clone, Copy, Debug)]
pub struct Chain<'a> {
    rules: [Option<&'a RuleEntry>; MAX_CONTINUE + 1],
    len: u8,
    cut: bool,
}

impl<'a> Chain<'a> {
    /// Empty: no rule matched (default permit).
    pub fn new() -> Self {
        Chain {
            rules: [None; MAX_CONTINUE + 1],
            len: 0,
            cut: false,
        }
    }

    /// The rules to apply, in order; every one counts the packet.
    pub fn rules(&self) -> impl Iterator<Item = &'a RuleEntry> + '_ {
        self.rules[..usize::from(self.len)]
            .iter()
            .flatten()
            .copied()
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rule that decided, if one with a verdict matched within the
    /// bound; `None` means the default (permit to routing).
    pub fn decided_by(&self) -> Option<&'a RuleEntry> {
        self.rules().last().filter(|r| r.has_verdict())
    }

    /// True when evaluation stopped at the bound: [`MAX_CONTINUE`] rules
    /// without a verdict were applied and a further one matched.
    pub fn cut(&self) -> bool {
        self.cut
    }

    fn push(&mut self, r: &'a RuleEntry) {
        self.rules[usize::from(self.len)] = Some(r);
        self.len += 1;
    }
}

impl Default for Chain<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier {
    /// Every rule evaluation applies to `k`, given its first match `first`
    /// (from [`Classifier::classify`] or [`Classifier::classify_burst`];
    /// `None`: nothing matched). Allocates nothing; costs one
    /// [`Classifier::classify_after`] per rule without a verdict.
    pub fn chain<'a>(&'a self, k: &Key, first: Option<&'a RuleEntry>) -> Chain<'a> {
        let mut c = Chain::new();
        let mut next = first;
        while let Some(r) = next {
            if !r.has_verdict() && c.len() == MAX_CONTINUE {
                c.cut = true;
                break;
            }
            c.push(r);
            if r.has_verdict() {
                break;
            }
            next = self.classify_after(k, r.order);
        }
        c
    }

    /// [`Classifier::classify`] then [`Classifier::chain`]: the whole
    /// evaluation of one key.
    pub fn evaluate(&self, k: &Key) -> Chain<'_> {
        self.chain(k, self.classify(k))
    }
}
