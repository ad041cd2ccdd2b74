//! Columnar result tables, handed to Python as typed arrays.

/// One column of values. Two columns are equal when their values are the same bits:
/// NaN, which stands for "none", equals NaN (runs compare their tables for determinism).
#[derive(Clone, Debug)]
pub enum Column {
    /// Unsigned 32-bit integers.
    U32(Vec<u32>),
    /// Unsigned 64-bit integers.
    U64(Vec<u64>),
    /// Signed 64-bit integers; `-1` stands for "none" where documented.
    I64(Vec<i64>),
    /// Floats; NaN stands for "none" where documented.
    F64(Vec<f64>),
    /// Strings.
    Str(Vec<String>),
}

impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        match (self, other) {
            (Column::U32(a), Column::U32(b)) => a == b,
            (Column::U64(a), Column::U64(b)) => a == b,
            (Column::I64(a), Column::I64(b)) => a == b,
            (Column::F64(a), Column::F64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Column::Str(a), Column::Str(b)) => a == b,
            _ => false,
        }
    }
}

impl Column {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table: named columns of equal length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Columns in order.
    pub columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// Adds a column.
    pub fn push(&mut self, name: &'static str, col: Column) -> &mut Self {
        debug_assert!(
            self.columns.first().is_none_or(|c| c.1.len() == col.len()),
            "column {name} has a different length"
        );
        self.columns.push((name, col));
        self
    }
    /// The column called `name`.
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.0 == name).map(|c| &c.1)
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.1.len())
    }
}
