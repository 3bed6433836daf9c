//! A scenario's errors: the field, its line and what is wrong, one line
//! each (the file format's and its `[tunables]` table's).

/// A scenario error: the field path, its line in the text it was read
/// from (when known) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}{}: {reason}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
pub struct ScenarioError {
    pub field: String,
    pub line: Option<usize>,
    pub reason: String,
}

pub(super) fn err(field: impl Into<String>, reason: impl Into<String>) -> ScenarioError {
    ScenarioError {
        field: field.into(),
        line: None,
        reason: reason.into(),
    }
}
