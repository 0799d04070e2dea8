//! Aligned text tables that stream.
//!
//! Column widths come from the first [`Table::PROBE`] rows, which are
//! buffered; later rows print at once (a column widens if a later value is
//! wider). So a 900k-route dump starts printing at once and uses constant
//! memory, while small tables are perfectly aligned.

use std::io::{self, Write};

pub struct Table<W: Write> {
    out: W,
    headers: &'static [&'static str],
    /// Columns aligned to the right (numbers).
    right: u64,
    widths: Vec<usize>,
    pending: Vec<Vec<String>>,
    streaming: bool,
    line: String,
}

impl<W: Write> Table<W> {
    pub const PROBE: usize = 1000;

    /// `right` is a bit mask of right-aligned columns.
    pub fn new(out: W, headers: &'static [&'static str], right: u64) -> Self {
        Table {
            out,
            headers,
            right,
            widths: headers.iter().map(|h| h.len()).collect(),
            pending: Vec::new(),
            streaming: false,
            line: String::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) -> io::Result<()> {
        for (w, c) in self.widths.iter_mut().zip(&cells) {
            *w = (*w).max(c.chars().count());
        }
        if self.streaming {
            return self.write_row(&cells);
        }
        self.pending.push(cells);
        if self.pending.len() >= Self::PROBE {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Prints what is buffered; with no rows at all, the header alone (an
    /// empty listing says what it would have listed).
    pub fn finish(mut self) -> io::Result<W> {
        if !self.streaming {
            self.flush_pending()?;
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn flush_pending(&mut self) -> io::Result<()> {
        self.streaming = true;
        let headers: Vec<String> = self.headers.iter().map(|h| h.to_string()).collect();
        self.write_row(&headers)?;
        for row in std::mem::take(&mut self.pending) {
            self.write_row(&row)?;
        }
        Ok(())
    }

    fn write_row(&mut self, cells: &[String]) -> io::Result<()> {
        self.line.clear();
        let last = cells.len().saturating_sub(1);
        for (i, c) in cells.iter().enumerate() {
            let w = self.widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(c.chars().count());
            let right = i < 64 && self.right & (1 << i) != 0;
            if right {
                push_spaces(&mut self.line, pad);
            }
            self.line.push_str(c);
            if i != last {
                if !right {
                    push_spaces(&mut self.line, pad);
                }
                self.line.push_str("  ");
            }
        }
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())
    }
}

fn push_spaces(s: &mut String, n: usize) {
    for _ in 0..n {
        s.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_and_streams() {
        let mut t = Table::new(Vec::new(), &["NAME", "PKTS", "NOTE"], 0b010);
        t.row(vec!["p1".into(), "5".into(), "x".into()]).unwrap();
        t.row(vec!["port-two".into(), "12345".into(), "".into()])
            .unwrap();
        let out = String::from_utf8(t.finish().unwrap()).unwrap();
        assert_eq!(
            out,
            "NAME       PKTS  NOTE\np1            5  x\nport-two  12345  \n"
        );
        let t = Table::new(Vec::new(), &["A", "B"], 0);
        assert_eq!(String::from_utf8(t.finish().unwrap()).unwrap(), "A  B\n");
    }
}
