//! Plain-text tables: columns padded to their widest cell, no borders, so that output reads
//! well in a terminal and in journald and still splits on whitespace.

#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let right = vec![false; header.len()];
        Self {
            header,
            rows: Vec::new(),
            right,
        }
    }

    /// Aligns the given column to the right.
    pub fn right(mut self, col: usize) -> Self {
        if let Some(r) = self.right.get_mut(col) {
            *r = true;
        }
        self
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn render(&self, indent: &str) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::from(indent);
            for (i, c) in r.iter().enumerate().take(cols) {
                let pad = widths[i] - c.chars().count();
                let last = i + 1 == cols;
                if self.right[i] {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    if !last {
                        line.push_str(&" ".repeat(pad));
                    }
                }
                if !last {
                    line.push_str("  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_and_aligns_numbers_right() {
        let mut t = Table::new(["ID", "N"]).right(1);
        t.row(["a", "10"]);
        t.row(["long-id", "2"]);
        assert_eq!(t.render(""), "ID        N\na        10\nlong-id   2\n");
    }
}
