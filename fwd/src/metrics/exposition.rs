//! A strict reader of OpenMetrics 1.0 text, as this endpoint writes it:
//! metadata before samples, one block per family, sample names that are
//! their family's name plus the suffix its type allows (`_total` for a
//! counter, `_bucket`/`_sum`/`_count` for a histogram, `_info` for an
//! info), a unit that is the name's suffix, well-formed labels with no
//! duplicate, no duplicate series, cumulative histogram buckets ending in
//! `+Inf` at the count, and the closing `# EOF`. Timestamps and exemplars
//! (which the endpoint never writes) are refused.
//!
//! The tests read the endpoint's output back with it, and an operator's
//! tool may too.

use std::collections::{HashMap, HashSet};

/// A metric family's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    pub name: String,
    pub kind: String,
    pub unit: Option<String>,
    pub help: Option<String>,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The sample's name (with its suffix: `fwd_port_rx_packets_total`).
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A parsed exposition.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    pub families: Vec<Family>,
    pub points: Vec<Point>,
}

impl Exposition {
    /// The family named `name`.
    pub fn family(&self, name: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The value of the sample `name` with exactly the labels `labels`
    /// (in any order).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.points
            .iter()
            .find(|p| {
                p.name == name
                    && p.labels.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| p.labels.iter().any(|(pk, pv)| pk == k && pv == v))
            })
            .map(|p| p.value)
    }

    /// Samples named `name` whose labels include every one of `labels`.
    pub fn select<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Point> + 'a {
        self.points.iter().filter(move |p| {
            p.name == name
                && labels
                    .iter()
                    .all(|(k, v)| p.labels.iter().any(|(pk, pv)| pk == k && pv == v))
        })
    }

    /// The sum of [`Exposition::select`]'s values.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.select(name, labels).map(|p| p.value).sum()
    }
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || (colon && f == ':'))
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || (colon && x == ':'))
}

/// The suffixes a sample of a family of `kind` may carry.
fn suffixes(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "counter" => &["_total", "_created"],
        "gauge" | "unknown" => &[""],
        "histogram" => &["_bucket", "_sum", "_count", "_created"],
        "info" => &["_info"],
        _ => return None,
    })
}

/// Parses a quoted label value at the start of `s`; returns it and the rest.
fn label_value(s: &str) -> Result<(String, &str), String> {
    let s = s.strip_prefix('"').ok_or("a label value must be quoted")?;
    let mut out = String::new();
    let mut it = s.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match it.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                other => return Err(format!("bad escape {other:?} in a label value")),
            },
            '\n' => return Err("a raw newline in a label value".into()),
            c => out.push(c),
        }
    }
    Err("an unterminated label value".into())
}

fn value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ if s.is_empty() || s.contains(char::is_whitespace) => Err(format!("bad value {s:?}")),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// A sample line: `name{k="v",...} value`.
fn sample(line: &str) -> Result<Point, String> {
    let end = line.find(['{', ' ']).ok_or("a sample needs a value")?;
    let name = &line[..end];
    if !is_name(name, true) {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[end..];
    let mut labels: Vec<(String, String)> = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find('=').ok_or("a label needs '='")?;
            let k = &rest[..eq];
            if !is_name(k, false) || k.starts_with("__") {
                return Err(format!("bad label name {k:?}"));
            }
            if labels.iter().any(|(x, _)| x == k) {
                return Err(format!("label {k:?} given twice"));
            }
            let (v, r) = label_value(&rest[eq + 1..])?;
            labels.push((k.to_string(), v));
            rest = match r.strip_prefix(',') {
                Some(r) if !r.starts_with('}') => r,
                Some(_) => return Err("a trailing ',' in a label set".into()),
                None if r.starts_with('}') => r,
                None => return Err("labels must be separated by ','".into()),
            };
        }
    }
    let v = rest.strip_prefix(' ').ok_or("one space before the value")?;
    if v.contains(' ') {
        return Err("timestamps and exemplars are not expected".into());
    }
    Ok(Point {
        name: name.to_string(),
        labels,
        value: value(v)?,
    })
}

/// Parses and checks `text`.
///
/// # Errors
/// The first problem, with its line number.
pub fn parse(text: &str) -> Result<Exposition, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .ok_or("must end with \"# EOF\\n\"")?;
    let mut ex = Exposition::default();
    let mut closed: HashSet<String> = HashSet::new();
    let mut current: Option<usize> = None;
    let mut seen_sample = false;
    let mut series: HashSet<String> = HashSet::new();
    for (n, line) in body.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (what, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let arg = parts.next();
            if !is_name(name, true) {
                return Err(at(format!("bad family name {name:?}")));
            }
            let same = current.is_some_and(|i| ex.families[i].name == name);
            if !same {
                if closed.contains(name) {
                    return Err(at("family given in two blocks".into()));
                }
                if let Some(i) = current {
                    closed.insert(ex.families[i].name.clone());
                }
                ex.families.push(Family {
                    name: name.to_string(),
                    kind: "unknown".into(),
                    unit: None,
                    help: None,
                });
                current = Some(ex.families.len() - 1);
                seen_sample = false;
            } else if seen_sample {
                return Err(at("metadata after the family's samples".into()));
            }
            let f = ex.families.last_mut().expect("just pushed or current");
            match (what, arg) {
                ("TYPE", Some(k)) if suffixes(k).is_some() => f.kind = k.to_string(),
                ("TYPE", k) => return Err(at(format!("unknown type {k:?}"))),
                ("HELP", h) => f.help = Some(h.unwrap_or("").to_string()),
                ("UNIT", Some(u)) if is_name(u, false) && name.ends_with(&format!("_{u}")) => {
                    f.unit = Some(u.to_string());
                }
                ("UNIT", _) => return Err(at("a unit must be the name's suffix".into())),
                _ => return Err(at("unknown comment".into())),
            }
            continue;
        }
        let p = sample(line).map_err(at)?;
        let i = current.ok_or_else(|| at("a sample before any metadata".into()))?;
        let f = &ex.families[i];
        let suffix = p
            .name
            .strip_prefix(f.name.as_str())
            .ok_or_else(|| at(format!("not in family {}", f.name)))?;
        let allowed = suffixes(&f.kind).unwrap_or(&[""]);
        if !allowed.contains(&suffix) {
            return Err(at(format!(
                "suffix {suffix:?} not allowed for a {}",
                f.kind
            )));
        }
        if f.kind == "counter" && (p.value.is_nan() || p.value < 0.0) {
            return Err(at("a counter must be >= 0".into()));
        }
        let mut key: Vec<String> = p.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        key.sort();
        if !series.insert(format!("{}{{{}}}", p.name, key.join(","))) {
            return Err(at("the same series twice".into()));
        }
        seen_sample = true;
        ex.points.push(p);
    }
    check_histograms(&ex)?;
    Ok(ex)
}

type Labels = Vec<(String, String)>;

/// Buckets ascend in `le`, counts never fall, the last is `+Inf` and
/// equals `_count`.
fn check_histograms(ex: &Exposition) -> Result<(), String> {
    for f in ex.families.iter().filter(|f| f.kind == "histogram") {
        let bucket = format!("{}_bucket", f.name);
        // Buckets (le, count) by the series' other labels.
        let mut groups: HashMap<Labels, Vec<(f64, f64)>> = HashMap::new();
        for p in ex.points.iter().filter(|p| p.name == bucket) {
            let le = p
                .labels
                .iter()
                .find(|(k, _)| k == "le")
                .ok_or_else(|| format!("{bucket}: a bucket without le"))?;
            let le = value(&le.1)?;
            let rest: Vec<_> = p
                .labels
                .iter()
                .filter(|(k, _)| k != "le")
                .cloned()
                .collect();
            groups.entry(rest).or_default().push((le, p.value));
        }
        if groups.is_empty() {
            return Err(format!("{}: a histogram without buckets", f.name));
        }
        for (labels, b) in groups {
            if !b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1) {
                return Err(format!("{bucket}: buckets not ascending and cumulative"));
            }
            let last = b.last().expect("a group has a bucket");
            let want: Vec<(&str, &str)> = labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let count = ex.get(&format!("{}_count", f.name), &want);
            if last.0 != f64::INFINITY || count != Some(last.1) {
                return Err(format!("{bucket}: the +Inf bucket must equal _count"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# HELP a_bytes Bytes.\n# TYPE a_bytes counter\n# UNIT a_bytes bytes\n\
a_bytes_total{port=\"p\\\"0\"} 5\n# TYPE h_seconds histogram\n# UNIT h_seconds seconds\n\
h_seconds_sum 1.5\nh_seconds_count 2\nh_seconds_bucket{le=\"0.1\"} 1\n\
h_seconds_bucket{le=\"+Inf\"} 2\n# TYPE g gauge\ng 3\n# EOF\n";

    #[test]
    fn reads_what_is_well_formed() {
        let ex = parse(GOOD).unwrap();
        assert_eq!(ex.get("a_bytes_total", &[("port", "p\"0")]), Some(5.0));
        assert_eq!(
            ex.family("h_seconds").unwrap().unit.as_deref(),
            Some("seconds")
        );
        assert_eq!(ex.get("g", &[]), Some(3.0));
    }

    #[test]
    fn refuses_what_is_not() {
        for (bad, why) in [
            (GOOD.replace("# EOF\n", ""), "no EOF"),
            (
                GOOD.replace("a_bytes_total{", "a_bytes{"),
                "counter without _total",
            ),
            (
                GOOD.replace("# UNIT a_bytes bytes", "# UNIT a_bytes seconds"),
                "unit not suffix",
            ),
            (GOOD.replace("} 5", "} -5"), "negative counter"),
            (GOOD.replace("} 5", "} 5 123"), "timestamp"),
            (GOOD.replace("port=\"p", "port=p"), "unquoted value"),
            (
                GOOD.replace("{port=", "{port=\"x\",port="),
                "duplicate label",
            ),
            (
                GOOD.replace("h_seconds_count 2", "h_seconds_count 3"),
                "+Inf != count",
            ),
            (
                GOOD.replace("le=\"0.1\"} 1", "le=\"0.1\"} 3"),
                "not cumulative",
            ),
            (GOOD.replace("g 3\n", "g 3\ng 4\n"), "duplicate series"),
            (
                format!(
                    "{}# TYPE g gauge\ng 1\n# EOF\n",
                    GOOD.replace("# EOF\n", "")
                ),
                "two blocks",
            ),
            (
                GOOD.replace("# TYPE g gauge", "# TYPE g summary"),
                "unsupported type",
            ),
            (GOOD.replace("g 3", "x 3"), "sample outside its family"),
        ] {
            assert!(parse(&bad).is_err(), "{why} accepted:\n{bad}");
        }
    }
}
